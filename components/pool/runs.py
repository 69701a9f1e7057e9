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
from dataclasses import fields as dataclass_fields
from pathlib import Path

from components.core.chunk import TextChunk
from utils.errors import InputError
from utils.records import trec
from utils.results import READABLE_SCHEMAS, QuestionResult, read_json_file

RESULTS, TREC = "results", "trec"


@dataclass(frozen=True)
class PoolQuestion:
    id: str
    question: str
    expected_answer: str | None
    needle_doc_ids: tuple[str, ...]
    fields: dict = field(default_factory=dict, compare=False)  # the question's own other fields (category...)


_ROW_FIELDS = frozenset(f.name for f in dataclass_fields(QuestionResult)) | {"extra"}  # a results row's own


@dataclass(frozen=True)
class PoolRun:
    """One run: where it came from, its kind (``results`` or ``trec``), per question its items (best
    first), and for a results file its questions and the corpus it recorded (``run.corpus.source``)."""

    source: str
    kind: str
    items: dict[str, list[TextChunk]]
    questions: list[PoolQuestion] | None = None
    corpus: str | None = None


@dataclass(frozen=True)
class Pair:
    """One pair of the pool: a question and an item, the runs that retrieved it, and its best rank."""

    question: PoolQuestion
    item: TextChunk
    runs: tuple[str, ...]
    rank: int


_FIX = "pass a results file written by benchmark.py"


def _text(value: object, where: str, optional: bool = False) -> str | None:
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InputError(f"{where} is {type(value).__name__}, not text: {_FIX}")
    return value


def _question(raw: object, where: str) -> tuple[PoolQuestion, list]:
    if not isinstance(raw, dict) or not isinstance(raw.get("question_id"), str) or not raw["question_id"]:
        raise InputError(f"{where} has no question_id: {_FIX}")
    needles = raw.get("needle_doc_ids") or ([raw["needle_doc_id"]] if raw.get("needle_doc_id") else [])
    if not isinstance(needles, list) or not all(isinstance(d, str) for d in needles):
        raise InputError(f"{where}.needle_doc_ids is not a list of document ids: {_FIX}")
    retrieved = raw.get("retrieved") or []
    if not isinstance(retrieved, list):
        raise InputError(f"{where}.retrieved is not a list: {_FIX}")
    question = PoolQuestion(raw["question_id"], _text(raw.get("question", ""), f"{where}.question") or "",
                            _text(raw.get("expected_answer"), f"{where}.expected_answer", optional=True),
                            tuple(needles), {k: v for k, v in raw.items() if k not in _ROW_FIELDS})
    return question, retrieved


def _item(raw: object, where: str) -> TextChunk:
    if not isinstance(raw, dict):
        raise InputError(f"{where} is not an object: {_FIX}")
    doc = _text(raw.get("doc_id"), f"{where}.doc_id")
    chunk = _text(raw.get("chunk_id") or doc, f"{where}.chunk_id")
    text = raw.get("text")
    if text is None:
        raise InputError(f"{where}: the run was written without the chunks' text (--no-text), which the judges "
                         "read: run the benchmark again without --no-text, or give its TREC run with --corpus")
    return TextChunk(doc, chunk, _text(text, f"{where}.text"))


def _results_run(doc: dict, source: str) -> PoolRun:
    """The questions and items of a results file, only the fields the pool reads checked (a pool of
    two 1,000-question files reads them in well under a second)."""
    version = doc.get("schema_version", 1)
    if version not in READABLE_SCHEMAS or isinstance(version, bool):
        raise InputError(f"{source}: schema_version {version!r} is not one this version reads "
                         f"({', '.join(map(str, READABLE_SCHEMAS))}): {_FIX}")
    questions, items = [], {}
    for i, raw in enumerate(doc["results"]):
        where = f"{source}: results[{i}]"
        question, retrieved = _question(raw, where)
        if question.id in items:
            raise InputError(f"{source}: question id {question.id!r} appears twice: {_FIX}")
        questions.append(question)
        ranked = [_item(x, f"{where}.retrieved[{j}]") for j, x in enumerate(retrieved)]
        items[question.id] = [x for _, x in sorted(enumerate(ranked), key=lambda jx: _rank(retrieved[jx[0]], jx[0]))]
    run = doc.get("run") if isinstance(doc.get("run"), dict) else {}
    corpus = run.get("corpus") if isinstance(run.get("corpus"), dict) else {}
    source_corpus = corpus.get("source") if isinstance(corpus.get("source"), str) else None
    return PoolRun(source, RESULTS, items, questions, source_corpus)


def _rank(raw: dict, position: int) -> tuple[int, int]:
    rank = raw.get("rank")
    return (rank if isinstance(rank, int) and not isinstance(rank, bool) else position + 1, position)


def read_run(path: str | Path) -> PoolRun | trec.Ranking:
    """A results file's questions and items, or the rankings of a TREC run or a ranx JSON run.
    Raises :class:`InputError`."""
    path = Path(path)
    if path.suffix.lower() != ".json" and _first_byte(path) not in (b"{", b"["):
        return trec.read_trec_run(path)
    doc = read_json_file(path)
    if trec.is_ranx_run(doc):
        return trec.ranx_run(doc, str(path))
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise InputError(f"{path}: not a results file (no \"results\" list): {_FIX}")
    return _results_run(doc, str(path))


def _first_byte(path: Path) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    except OSError:
        return b""


def _trec_items(ranking: trec.Ranking, documents: dict[str, str], source: str) -> dict[str, list[TextChunk]]:
    out = {}
    for qid, docs in ranking.items():
        missing = next((d for d in docs if d not in documents), None)
        if missing is not None:
            raise InputError(f"{source}: question {qid} ranks document {missing!r}, which --corpus does not hold: "
                             "give the corpus the run retrieved from")
        out[qid] = [TextChunk(d, d, documents[d]) for d in docs]
    return out


def _documents(corpus: str | Path | None) -> dict[str, str]:
    from components.readers import load_corpus

    return {d.doc_id: f"{d.title}\n\n{d.text}" for d in load_corpus(corpus).documents}


def load_runs(paths: Sequence[str | Path], *, corpus: str | Path | None = None) -> list[PoolRun]:
    """Every run of ``paths``; a TREC run needs ``corpus``. Raises :class:`InputError`."""
    runs, documents = [], None
    for path in paths:
        loaded = read_run(path)
        if isinstance(loaded, PoolRun):
            runs.append(loaded)
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
        out = list(results[0].questions or [])
    elif questions is not None:
        from components.readers import load_questions

        out = [PoolQuestion(q.id, q.question, q.expected_answer, tuple(q.needle_doc_ids), dict(q.extra))
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
        found: dict[tuple[str, str], tuple[TextChunk, list[str], int]] = {}
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
