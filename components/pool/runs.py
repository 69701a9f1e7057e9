"""The runs a pool is built from, and the pool itself: the union of their top ``depth`` items.

A run is a results file (its rows' retrieved chunks, with their text: a run written with
``--no-text`` is refused) or a TREC run file / ranx JSON run (documents only: ``--corpus`` gives
their text, each document judged whole as one item whose chunk id is its doc id). The questions
(text, expected answer, needles) come from the results files, or from ``--questions`` when every
run is a TREC run.

Every results file must hold the same question ids as the first; a TREC run may leave out a
question (it retrieved nothing) but may not name one the others do not have. The first difference
is named.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from utils.errors import InputError
from utils.records import trec
from utils.results import RunResult, load_run, read_json_file

RESULTS, TREC = "results", "trec"


@dataclass(frozen=True)
class PoolQuestion:
    id: str
    question: str
    expected_answer: str | None
    needle_doc_ids: tuple[str, ...]


@dataclass(frozen=True)
class PoolItem:
    """One retrieved item as the judge reads it: its ids and its text (``index_text``, as a run shows it)."""

    doc_id: str
    chunk_id: str
    index_text: str


@dataclass(frozen=True)
class PoolRun:
    """One run: where it came from, its kind (``results`` or ``trec``), and per question its items, best first."""

    source: str
    kind: str
    items: dict[str, list[PoolItem]]
    result: RunResult | None = field(default=None, repr=False)


@dataclass(frozen=True)
class Pair:
    """One pair of the pool: a question and an item, the runs that retrieved it, and its best rank."""

    question: PoolQuestion
    item: PoolItem
    runs: tuple[str, ...]
    rank: int


def read_run(path: str | Path, secrets: Sequence[str] = ()) -> RunResult | trec.Ranking:
    """A results file, or the rankings of a TREC run or a ranx JSON run. Raises :class:`InputError`."""
    path = Path(path)
    if path.suffix.lower() == ".json":
        doc = read_json_file(path)
        if trec.is_ranx_run(doc):
            return trec.ranx_run(doc, str(path))
        return RunResult.from_json(doc, str(path), secrets=secrets)
    try:
        return load_run(path, secrets)
    except InputError:
        return trec.read_trec_run(path)


def _results_items(result: RunResult, source: str) -> dict[str, list[PoolItem]]:
    items = {}
    for row in result.rows:
        if any(item.text is None for item in row.retrieved):
            raise InputError(f"{source}: the run was written without the chunks' text (--no-text), which the judges "
                             "read: run the benchmark again without --no-text, or give its TREC run with --corpus")
        items[row.question_id] = [PoolItem(i.doc_id, i.chunk_id, i.text or "") for i in row.retrieved]
    return items


def _trec_items(ranking: trec.Ranking, documents: dict[str, str], source: str) -> dict[str, list[PoolItem]]:
    out = {}
    for qid, docs in ranking.items():
        missing = next((d for d in docs if d not in documents), None)
        if missing is not None:
            raise InputError(f"{source}: question {qid} ranks document {missing!r}, which --corpus does not hold: "
                             "give the corpus the run retrieved from")
        out[qid] = [PoolItem(d, d, documents[d]) for d in docs]
    return out


def _documents(corpus: str | Path | None) -> dict[str, str]:
    from components.readers import load_corpus

    return {d.doc_id: f"{d.title}\n\n{d.text}" for d in load_corpus(corpus).documents}


def load_runs(paths: Sequence[str | Path], *, corpus: str | Path | None = None,
              secrets: Sequence[str] = ()) -> list[PoolRun]:
    """Every run of ``paths``; a TREC run needs ``corpus``. Raises :class:`InputError`."""
    runs, documents = [], None
    for path in paths:
        loaded = read_run(path, secrets)
        if isinstance(loaded, RunResult):
            runs.append(PoolRun(str(path), RESULTS, _results_items(loaded, str(path)), loaded))
            continue
        if corpus is None:
            raise InputError(f"{path} is a TREC run, which names documents without their text: give the corpus they "
                             "come from with --corpus")
        documents = _documents(corpus) if documents is None else documents
        runs.append(PoolRun(str(path), TREC, _trec_items(loaded, documents, str(path))))
    return runs


def pool_questions(runs: Sequence[PoolRun], questions: str | Path | None = None) -> list[PoolQuestion]:
    """The questions of the pool, checked the same across runs (module docstring)."""
    results = [r for r in runs if r.kind == RESULTS]
    if results:
        first = results[0]
        out = [PoolQuestion(r.question_id, r.question, r.expected_answer, tuple(r.needle_doc_ids))
               for r in first.result.rows]
    elif questions is not None:
        from components.readers import load_questions

        out = [PoolQuestion(q.id, q.question, q.expected_answer, tuple(q.needle_doc_ids))
               for q in load_questions(questions).questions]
    else:
        raise InputError("every run is a TREC run: give the questions they answer with --questions (their text and "
                         "needles), or add a results file")
    ids = [q.id for q in out]
    known = set(ids)
    for run in runs:
        _check_same(ids, known, run, results[0].source if results else str(questions))
    return out


def _check_same(ids: list[str], known: set[str], run: PoolRun, first: str) -> None:
    extra = next((q for q in run.items if q not in known), None)
    if extra is not None:
        raise InputError(f"the runs are over different question sets: {run.source} has question {extra!r}, which "
                         f"{first} does not: pool runs of the same questions")
    if run.kind == RESULTS:
        missing = next((q for q in ids if q not in run.items), None)
        if missing is not None:
            raise InputError(f"the runs are over different question sets: {run.source} has no question {missing!r}, "
                             f"which {first} has: pool runs of the same questions")


def check_depth(depth: object) -> int:
    if isinstance(depth, bool) or not isinstance(depth, int) or depth < 1:
        raise InputError(f"--depth {depth!r} is not a whole number of at least 1: give the items of each run to pool, "
                         "e.g. --depth 10")
    return depth


def build_pool(runs: Sequence[PoolRun], questions: Sequence[PoolQuestion], depth: int) -> list[Pair]:
    """The distinct (question, doc, chunk) pairs of the runs' top ``depth`` items, in question order,
    then by best rank, then by chunk id. Ids must be usable in TREC files."""
    out = []
    for q in questions:
        trec.check_id(q.id, "question id", "the pool", "rename it in the questions")
        found: dict[tuple[str, str], tuple[PoolItem, list[str], int]] = {}
        for run in runs:
            for rank, item in enumerate(run.items.get(q.id, [])[:depth], start=1):
                key = (item.doc_id, item.chunk_id)
                if key not in found:
                    trec.check_id(item.doc_id, "document id", run.source, "rename it in the corpus")
                    trec.check_id(item.chunk_id, "chunk id", run.source, "rename it in the corpus")
                    found[key] = (item, [], rank)
                entry = found[key]
                if run.source not in entry[1]:
                    entry[1].append(run.source)
                found[key] = (entry[0], entry[1], min(entry[2], rank))
        ordered = sorted(found.values(), key=lambda e: (e[2], e[0].doc_id, e[0].chunk_id))
        out += [Pair(q, item, tuple(sources), rank) for item, sources, rank in ordered]
    return out


def fingerprint_of(texts: Sequence[str]) -> str:
    """A corpus fingerprint: SHA-256 over its chunks' texts, in order."""
    h = hashlib.sha256()
    for text in texts:
        h.update(text.encode("utf-8", "surrogatepass"))
        h.update(b"\x00")
    return h.hexdigest()
