"""``--strategy recorded``: grade and score the items a question set recorded (what its own system
retrieved, :mod:`components.readers.recorded`), without running a retriever.

Each question's ``retrieved`` list, best first, is what "retrieval" returns for it (cut at k): the
needle's rank is its position there, the judge grades those texts. Without ``--corpus`` no corpus
is loaded (not the built-in one either): the recorded items are the run's chunks
(:func:`recorded_index`, corpus source :data:`RECORDED_SOURCE`), needles are matched against them
only, and there is no diagnosis (it needs the documents). With ``--corpus`` the corpus is loaded
and chunked as for any strategy: the needles are checked against it and the diagnosis uses it.
"""

from __future__ import annotations

import hashlib
import json

from components.core import Chunk, QuestionSet, ScoredChunk, Strategy
from components.readers.recorded import RecordedItem, recorded_items
from components.run.retrieval.index_cache import PreparedIndex
from utils.errors import InputError

RECORDED = "recorded"
RECORDED_SOURCE = "<recorded retrievals>"  # run.corpus.source of a recorded run without --corpus


def _chunk(item: RecordedItem, position: int) -> Chunk:
    return Chunk(doc_id=item.doc_id, chunk_id=item.id, title=item.title or item.doc_id, heading_path=(),
                 text=item.text, position=position)


class RecordedRetriever:
    """What each question's system retrieved, by the question's text."""

    def __init__(self, by_query: dict[str, list[ScoredChunk]]) -> None:
        self._by_query = by_query

    def index(self, chunks) -> None:  # nothing to index: the retrieval happened already
        pass

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        return self._by_query.get(query, [])[:k]


def _by_query(qset: QuestionSet) -> dict[str, list[ScoredChunk]]:
    items = recorded_items(qset, warn=False)
    out: dict[str, list[ScoredChunk]] = {}
    owner: dict[str, str] = {}
    for q in qset.questions:
        scored = [ScoredChunk(_chunk(item, j), item.score) for j, item in enumerate(items[q.id])]
        if q.question in out and out[q.question] != scored:
            raise InputError(f"{qset.path}: questions {owner[q.question]!r} and {q.id!r} ask the same text with "
                             "different recorded items: a recorded run finds them by their text, so make the texts "
                             "differ (or merge the questions)")
        out[q.question], owner[q.question] = scored, q.id
    return out


def recorded_strategy(qset: QuestionSet) -> Strategy:
    """The ``recorded`` strategy of ``qset`` (every question's items checked first)."""
    by_query = _by_query(qset)
    return Strategy(RECORDED, lambda: RecordedRetriever(by_query))


def recorded_index(qset: QuestionSet) -> PreparedIndex:
    """The recorded items as the run's chunks, no corpus loaded (module docstring)."""
    by_query = _by_query(qset)
    chunks = list({s.chunk.chunk_id: s.chunk for scored in by_query.values() for s in scored}.values())
    digest = hashlib.sha256(json.dumps([[c.doc_id, c.chunk_id, c.title, c.text] for c in chunks]).encode())
    return PreparedIndex(RECORDED_SOURCE, digest.hexdigest(), frozenset(c.doc_id for c in chunks), chunks,
                         RecordedRetriever(by_query), "off", None, load_s=0.0, index_s=0.0, save_s=0.0)


def source_for(strategy: Strategy, qset: QuestionSet, corpus: object) -> Strategy | PreparedIndex:
    """What the run prepares for ``strategy``: the recorded items themselves when it is ``recorded``
    and no corpus is given, else the strategy (its corpus loaded and chunked as usual)."""
    return recorded_index(qset) if strategy.name == RECORDED and corpus is None else strategy
