"""The ``beir`` and ``beir-queries`` readers: BEIR folders in, a corpus and its queries as the
benchmark's documents and questions.

A BEIR folder holds ``corpus.jsonl``, ``queries.jsonl`` and ``qrels/<split>.tsv`` (BEIR's own
``GenericDataLoader`` layout; MTEB's retrieval sets export to it). ``--corpus`` takes the folder
or a ``corpus.jsonl`` (any ``*.jsonl`` file), ``--questions`` the folder or a ``queries.jsonl``;
the qrels are ``--qrels PATH``, else ``qrels/<split>.tsv`` of the folder (beside the queries
file), ``--split`` naming it (default ``test``).

The mapping:

============================  ===============================================================
BEIR                          benchmark
============================  ===============================================================
corpus line ``_id``           ``Document.doc_id`` (the doc id of the results and TREC files)
corpus line ``title``         ``Document.title`` (empty when absent: nothing is made up)
corpus line ``text``          ``Document.text``: plain text, chunked like Markdown
corpus line ``metadata``      ``Document.metadata``
query line ``_id``            ``Question.id``
query line ``text``           ``Question.question``
query ``expected_answer``     ``Question.expected_answer`` when the line has one (not BEIR's:
                              without it the judge grades reference-free)
other query fields            the question's own fields (``metadata`` ...), kept in the rows
qrels grade ≥ 1               a needle with that grade (``needle_grades``), best graded first
qrels grade ≤ 0               judged non-relevant: not a needle
============================  ===============================================================

Queries without a relevant document in the qrels are skipped, counted in ONE warning line.

Ids must be usable in TREC files (:func:`utils.records.trec.check_id`: no whitespace, not empty): one
that is not is refused with one line naming the file, the line and the id. A JSON number as an
id is taken as its text. The same ``_id`` twice keeps the last line, as BEIR's loader does (one
warning line says how many); qrels duplicates likewise (:func:`utils.records.trec.read_qrels`).

Reading is streamed one line at a time and bounded: a corpus file over
:data:`MAX_CORPUS_BYTES` or a line over :data:`MAX_DOCUMENT_BYTES` is one error, never a memory
blow-up. The corpus digest (``Corpus.sha256``, and the index cache's key) is the SHA-256 of the
file's lines, so it changes when the file does.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from components.core import Corpus, Document, Question, QuestionSet
from components.readers import CORPUS, QUESTIONS, Reader, register_reader
from components.readers.questions_json import STDIN
from utils.errors import InputError
from utils.files.lines import decode, iter_lines
from utils.records.trec import check_id, read_qrels

CORPUS_FILE = "corpus.jsonl"
QUERIES_FILE = "queries.jsonl"
QRELS_FOLDER = "qrels"
DEFAULT_SPLIT = "test"
MAX_CORPUS_BYTES = 8 << 30  # 8 GiB (BEIR's largest corpus, MS MARCO's, is 3 GB)
MAX_DOCUMENT_BYTES = 16 << 20  # one corpus line
MAX_QUERIES_BYTES = 1 << 30
MAX_QUERY_BYTES = 1 << 20  # one queries line
_NAMED = 3  # examples in a warning line
CORPUS_FIX = 'write one document a line: {"_id": "doc1", "title": "...", "text": "..."}'
QUERIES_FIX = 'write one query a line: {"_id": "q1", "text": "..."}'
_SPLIT = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


# --------------------------------------------------------------------------- where the files are

def corpus_file(path: Path) -> Path | None:
    """The ``corpus.jsonl`` that ``--corpus path`` names (the folder's, or the ``*.jsonl`` file
    itself), or None when ``path`` is a Markdown corpus (or nothing)."""
    if path.is_dir():
        candidate = path / CORPUS_FILE
        return candidate if candidate.exists() or candidate.is_symlink() else None
    return path if path.suffix.lower() == ".jsonl" else None


def is_queries(path: Path) -> bool:
    """Whether ``--questions path`` names BEIR queries: a folder with ``queries.jsonl``, or a ``*.jsonl`` file."""
    if path.is_dir():
        return (path / QUERIES_FILE).exists()
    return path.suffix.lower() == ".jsonl"


def qrels_file(path: Path, qrels: Path | None, split: str | None) -> Path:
    """The qrels of the queries at ``path``: ``qrels``, else ``qrels/<split>.tsv`` of the folder (of
    the queries file's folder)."""
    if qrels is not None:
        if split is not None:
            raise InputError("--qrels names the qrels file and --split one of a BEIR folder's: give one of them")
        return qrels
    split = DEFAULT_SPLIT if split is None else split
    if not _SPLIT.fullmatch(split):
        raise InputError(f"--split {split!r} is not a split name: give the stem of a file in qrels/ (e.g. test, dev)")
    folder = path if path.is_dir() else path.parent
    candidate = folder / QRELS_FOLDER / f"{split}.tsv"
    if not candidate.exists():
        have = sorted(p.stem for p in (folder / QRELS_FOLDER).glob("*.tsv")) if (folder / QRELS_FOLDER).is_dir() else []
        hint = f"choose --split among {', '.join(have)}" if have else "pass --qrels PATH"
        raise InputError(f"BEIR queries {path}: no qrels file {candidate}: {hint}")
    return candidate


# --------------------------------------------------------------------------- reading lines

def _records(file: Path, *, what: str, fix: str, max_bytes: int, max_line: int,
             digest: Any = None) -> Iterator[tuple[int, str, dict]]:
    """``(line number, id, object)`` of each non-blank line of a BEIR JSON-lines file, its id
    checked; ``digest`` (a hashlib object) is fed every line."""
    for number, raw in iter_lines(file, what=what, fix=fix, max_bytes=max_bytes, max_line_bytes=max_line):
        if digest is not None:
            digest.update(raw + b"\n")
        if not raw.strip():
            continue
        try:
            obj = json.loads(raw)
        except json.JSONDecodeError as err:
            raise InputError(f"{file}: line {number} is not valid JSON ({err.msg}, column {err.colno}): "
                             f"{fix}") from None
        except (UnicodeDecodeError, RecursionError, ValueError):
            decode(raw, file, number, fix)
            raise InputError(f"{file}: line {number} cannot be read as JSON: {fix}") from None
        if not isinstance(obj, dict):
            raise InputError(f"{file}: line {number} is {type(obj).__name__}, not an object: {fix}")
        raw_id = obj.get("_id")
        if isinstance(raw_id, int) and not isinstance(raw_id, bool):
            raw_id = str(raw_id)
        if raw_id is None:
            raise InputError(f"{file}: line {number} has no \"_id\": {fix}")
        doc_id = check_id(raw_id, "id", f"{file}: line {number}", "give it an id without whitespace")
        yield number, doc_id, obj


def _text(obj: dict, name: str, file: Path, number: int, fix: str) -> str:
    """The string field ``name`` of a line ('' when absent); lone surrogates (``\\ud800``, which
    strict JSON output cannot carry) become U+FFFD."""
    value = obj.get(name)
    if value is None:
        return ""
    if not isinstance(value, str):
        raise InputError(f"{file}: line {number}: \"{name}\" is {type(value).__name__}, not a string: {fix}")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "surrogatepass").decode("utf-8", "replace")
    return value


def _warn_duplicates(file: Path, what: str, ids: list[str]) -> None:
    if ids:
        logger.warning("{}: {} {} id{} appear{} again ({}{}): the last line of each is kept, as BEIR's loader does",
                       file, len(ids), what, "" if len(ids) == 1 else "s", "s" if len(ids) == 1 else "",
                       ", ".join(ids[:_NAMED]), ", …" if len(ids) > _NAMED else "")


# --------------------------------------------------------------------------- the corpus

def _corpus_file_or_error(path: Path) -> Path:
    file = corpus_file(path)
    if file is None:
        raise InputError(f"{path} is not a BEIR corpus: pass --corpus a folder with {CORPUS_FILE}, or a .jsonl file")
    return file


def fingerprint_corpus(path: Path) -> tuple[frozenset[str], str]:
    """``(doc ids, sha256)`` of a BEIR corpus, as :func:`load_corpus` gives them, without building
    any document (the index cache's fingerprint)."""
    file = _corpus_file_or_error(path)
    digest = hashlib.sha256()
    ids = {doc_id for _, doc_id, _ in _records(file, what="corpus file", fix=CORPUS_FIX, max_bytes=MAX_CORPUS_BYTES,
                                              max_line=MAX_DOCUMENT_BYTES, digest=digest)}
    if not ids:
        raise InputError(f"corpus file {file} holds no document: {CORPUS_FIX}")
    return frozenset(ids), digest.hexdigest()


def load_corpus(path: Path) -> Corpus:
    """The :class:`~components.core.Corpus` of a BEIR corpus (see the module docstring)."""
    file = _corpus_file_or_error(path)
    digest = hashlib.sha256()
    documents: dict[str, Document] = {}
    repeated: list[str] = []
    for number, doc_id, obj in _records(file, what="corpus file", fix=CORPUS_FIX, max_bytes=MAX_CORPUS_BYTES,
                                        max_line=MAX_DOCUMENT_BYTES, digest=digest):
        metadata = obj.get("metadata")
        if doc_id in documents:
            repeated.append(doc_id)
        documents[doc_id] = Document(doc_id=doc_id, title=_text(obj, "title", file, number, CORPUS_FIX).strip(),
                                     text=_text(obj, "text", file, number, CORPUS_FIX).strip(),
                                     metadata=metadata if isinstance(metadata, dict) else {})
    if not documents:
        raise InputError(f"corpus file {file} holds no document: {CORPUS_FIX}")
    _warn_duplicates(file, "document", repeated)
    return Corpus(source=str(path), documents=list(documents.values()), sha256=digest.hexdigest())


# --------------------------------------------------------------------------- the queries

@dataclass(frozen=True)
class _Query:
    number: int
    text: str
    expected_answer: str | None
    extra: dict


def load_queries(path: Path, *, qrels: Path | None = None, split: str | None = None) -> QuestionSet:
    """The :class:`~components.core.QuestionSet` of BEIR queries and their qrels (see the module
    docstring). Raises :class:`InputError`."""
    file = path / QUERIES_FILE if path.is_dir() else path
    _refuse_own_questions(file)
    judgments_file = qrels_file(path, qrels, split)
    judgments = read_qrels(judgments_file)
    digest = hashlib.sha256()
    queries: dict[str, _Query] = {}
    repeated: list[str] = []
    for number, qid, obj in _records(file, what="queries file", fix=QUERIES_FIX, max_bytes=MAX_QUERIES_BYTES,
                                     max_line=MAX_QUERY_BYTES, digest=digest):
        text = _text(obj, "text", file, number, QUERIES_FIX).strip()
        if not text:
            raise InputError(f"{file}: line {number} (id {qid!r}) has no query text: fill in \"text\"")
        expected = _text(obj, "expected_answer", file, number, QUERIES_FIX).strip() or None
        if qid in queries:
            repeated.append(qid)
        queries[qid] = _Query(number, text, expected,
                              {k: v for k, v in obj.items() if k not in ("_id", "text", "expected_answer")})
    _warn_duplicates(file, "query", repeated)
    if not queries:
        raise InputError(f"queries file {file} holds no query: {QUERIES_FIX}")
    questions, skipped = [], []
    for qid, q in queries.items():
        relevant = {d: g for d, g in judgments.get(qid, {}).items() if g >= 1}
        if not relevant:
            skipped.append(qid)
            continue
        needles = sorted(relevant, key=lambda d: -relevant[d])  # best graded first, then qrels order
        grades = {d: relevant[d] for d in needles} if any(g != 1 for g in relevant.values()) else None
        questions.append(Question(id=qid, question=q.text, expected_answer=q.expected_answer,
                                  needle_doc_ids=tuple(needles), extra=q.extra, needle_grades=grades))
    if skipped:
        logger.warning("{}: {} of {} queries have no relevant document in {} and are skipped ({}{})", file,
                       len(skipped), len(queries), judgments_file, ", ".join(skipped[:_NAMED]),
                       ", …" if len(skipped) > _NAMED else "")
    unknown = [qid for qid in judgments if qid not in queries]
    if unknown:
        logger.debug("{}: {} judged queries are not in {} (e.g. {})", judgments_file, len(unknown), file, unknown[0])
    if not questions:
        raise InputError(f"{file}: no query has a relevant document in {judgments_file}: check --qrels or --split "
                         "(the qrels' query ids must be the queries' _id)")
    digest.update(b"\0qrels\0")
    with open(judgments_file, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return QuestionSet(path=str(path), sha256=digest.hexdigest(), questions=questions, qrels=str(judgments_file))


def _refuse_own_questions(file: Path) -> None:
    """Raise :class:`InputError` when the first record of ``file`` is one of the benchmark's own questions
    (a ``question`` field, no ``text``) rather than a BEIR query: the message says how to give them."""
    try:
        with open(file, "rb") as fh:
            first = fh.readline(MAX_QUERY_BYTES).strip()
        record = json.loads(first.decode("utf-8-sig")) if first else None
    except (OSError, ValueError):
        return  # the reader proper names the problem
    if isinstance(record, dict) and "question" in record and "text" not in record:
        raise InputError(f"{file}: its first line has a \"question\" field and no \"text\": these are the benchmark's "
                         "own questions as JSON Lines, not BEIR queries: put them in a JSON file as "
                         "{\"questions\": [...]} (docs/formats.md), or give BEIR queries (\"_id\", \"text\") with "
                         "their qrels")


# --------------------------------------------------------------------------- the readers

def _read_queries(path: str | Path, *, qrels: str | Path | None = None, split: str | None = None) -> QuestionSet:
    return load_queries(Path(path), qrels=Path(qrels) if qrels is not None else None, split=split)


def _is_queries(path: Path | None) -> bool:
    return path is not None and str(path) != STDIN and is_queries(path)


CORPUS_READER = register_reader(Reader("beir", CORPUS, lambda path: path is not None and corpus_file(path) is not None,
                                       load_corpus, fingerprint_corpus))
QUERIES_READER = register_reader(Reader("beir-queries", QUESTIONS, _is_queries, _read_queries))
