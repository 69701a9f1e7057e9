"""BM25Retriever's lean build gives the same index as bm25s's defaults."""

from __future__ import annotations

import bm25s
import numpy as np

from poc.bm25 import BM25Retriever


def test_index_matches_plain_bm25s():
    """The retriever tokenises into int32 arrays and builds the CSC matrix with scipy; bm25s by
    default keeps lists of ids and builds with numpy: same scores, same order, same vocabulary."""
    from components.core.chunking import chunk_corpus
    from components.readers import load_corpus

    chunks = chunk_corpus(load_corpus(None).documents)
    mine = BM25Retriever()
    mine.index(chunks)
    tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=mine._tokenizer.stemmer)
    plain = bm25s.BM25(k1=1.5, b=0.75)
    plain.index(tokenizer.tokenize([c.index_text for c in chunks], return_as="tuple", show_progress=False),
                show_progress=False)
    assert plain.csc_backend == "numpy" and mine._bm25.csc_backend == "scipy"
    for name in ("data", "indices", "indptr"):
        np.testing.assert_array_equal(mine._bm25.scores[name], plain.scores[name])
    assert mine._bm25.scores["indptr"][-1] > 10_000  # a real index, not an empty one
    assert mine._bm25.vocab_dict == plain.vocab_dict
    for query in ("decorator syntax", "try except finally"):
        np.testing.assert_array_equal(mine.scores(query), plain.get_scores(
            [w for w in tokenizer.tokenize([query], update_vocab=False, return_as="string",
                                           show_progress=False)[0] if w in plain.vocab_dict]))
