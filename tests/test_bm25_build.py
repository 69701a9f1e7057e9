"""poc.bm25.lean_csc builds the same CSC arrays as bm25s's own builder, with less memory."""

from __future__ import annotations

import bm25s
import numpy as np
from bm25s.scoring import _np_csc_python

from poc.bm25 import BM25Retriever, lean_csc


def test_lean_csc_equals_bm25s_builder_on_random_postings():
    rng = np.random.default_rng(7)
    n_docs, n_terms = 300, 50
    rows, cols = [], []
    for doc in range(n_docs):  # rows ascending, each (term, doc) pair once, terms in any order
        terms = rng.choice(n_terms, size=int(rng.integers(0, 12)), replace=False)
        rows += [doc] * len(terms)
        cols += list(terms)
    rows, cols = np.array(rows, dtype=np.int32), np.array(cols, dtype=np.int32)
    data = rng.random(len(rows), dtype=np.float32)
    for mine, theirs in zip(lean_csc(data, rows, cols, (n_docs, n_terms)),
                            _np_csc_python(data, rows, cols, (n_docs, n_terms))):
        np.testing.assert_array_equal(mine, theirs)


def test_index_matches_plain_bm25s():
    from poc.chunking import chunk_corpus
    from poc.corpus import load_corpus

    chunks = chunk_corpus(load_corpus(None).documents)
    mine = BM25Retriever()
    mine.index(chunks)
    plain = bm25s.BM25(k1=1.5, b=0.75)
    plain.index(mine._tokenizer.tokenize([c.index_text for c in chunks], update_vocab=False, return_as="tuple",
                                         show_progress=False), show_progress=False)
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(mine._bm25.scores[name], plain.scores[name])
    assert mine._bm25.scores["indptr"][-1] > 10_000  # a real index, not an empty one
