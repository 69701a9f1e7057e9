"""BM25 over chunk texts with bm25s (Lucene variant, English stopwords, Snowball stemming).

``save``/``load`` persist the index with bm25s's own files (score matrix as ``.npy``, memory-mapped
on load) plus the tokenizer's vocabulary, so that a warm start neither tokenises nor scores the
corpus again (see :mod:`components.run.retrieval.index_cache`).
"""

from __future__ import annotations

import json
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import Stemmer

from components.core import Chunk, ScoredChunk, top_k
from utils.bm25s_loader import load_bm25s


class BM25Retriever:
    def __init__(self, k1: float = 1.5, b: float = 0.75) -> None:
        self.k1, self.b = k1, b
        self._chunks: list[Chunk] = []

    def index(self, chunks: Sequence[Chunk]) -> None:
        self._chunks = list(chunks)
        bm25s = load_bm25s()
        self._tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
        # Texts made one at a time, token ids kept as 4-byte arrays rather than lists of 8-byte
        # pointers: at 100k pages a list of all texts is most of a gigabyte, lists of ids another.
        stream = self._tokenizer.tokenize((c.index_text for c in self._chunks), return_as="stream",
                                          show_progress=False)
        tokens = bm25s.tokenization.Tokenized(ids=[array("i", ids) for ids in stream],
                                              vocab=self._tokenizer.get_vocab_dict())
        # scipy's COO-to-CSC transpose: the same matrix as bm25s's default numpy build (which sorts
        # packed int64 keys, then copies the scores once more), with only its output arrays as
        # temporary memory: at 100k synthetic pages (63M postings) ~1.5 GB less at the peak.
        self._bm25 = bm25s.BM25(k1=self.k1, b=self.b, csc_backend="scipy")
        self._bm25.index(tokens, show_progress=False)
        self._vocab_inverse = {i: w for w, i in tokens.vocab.items()}

    def save(self, folder: Path) -> None:
        """Write the index built by :meth:`index` into ``folder`` (created if needed)."""
        folder = Path(folder)
        self._bm25.save(folder, show_progress=False)  # no corpus copy: the cache keeps the chunks
        self._tokenizer.save_vocab(folder)
        (folder / "bm25.json").write_text(json.dumps({"chunks": len(self._chunks), "k1": self.k1, "b": self.b}))

    def load(self, folder: Path, chunks: Sequence[Chunk]) -> None:
        """Restore the index :meth:`save` wrote for these ``chunks`` (same list, same order).
        Raises ``ValueError`` (or ``OSError``) when ``folder`` does not hold such an index."""
        folder = Path(folder)
        chunks = list(chunks)
        saved = json.loads((folder / "bm25.json").read_text())
        bm25s = load_bm25s()
        if saved != {"chunks": len(chunks), "k1": self.k1, "b": self.b}:
            raise ValueError(f"BM25 index for {saved.get('chunks')} chunks (k1={saved.get('k1')}, b={saved.get('b')}),"
                             f" expected {len(chunks)} (k1={self.k1}, b={self.b})")
        tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=Stemmer.Stemmer("english"))
        tokenizer.load_vocab(folder)
        bm25 = bm25s.BM25.load(folder, mmap=True, show_progress=False)
        if bm25.scores["num_docs"] != len(chunks) or len(bm25.scores["indptr"]) != len(bm25.vocab_dict) + 1:
            raise ValueError(f"BM25 score matrix of {bm25.scores['num_docs']} documents and "
                             f"{len(bm25.scores['indptr']) - 1} terms does not match {len(chunks)} chunks and "
                             f"{len(bm25.vocab_dict)} terms")
        self._chunks, self._tokenizer, self._bm25 = chunks, tokenizer, bm25
        self._vocab_inverse = {i: w for w, i in bm25.vocab_dict.items()}

    def scores(self, query: str) -> np.ndarray:
        """BM25 score of every indexed chunk (zeros when no query term is in the corpus)."""
        ids = self._tokenizer.tokenize([query], update_vocab=False, return_as="ids", show_progress=False)[0]
        words = [self._vocab_inverse[i] for i in ids if i in self._vocab_inverse]
        if not words:
            return np.zeros(len(self._chunks), dtype=np.float32)
        return self._bm25.get_scores(words)

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        return top_k(self._chunks, self.scores(query), k)
