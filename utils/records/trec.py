"""TREC files, read and written: qrels, run files, and ranx's JSON runs.

* **qrels** — one judgment a line, ``qid 0 docid grade`` (TREC: four fields split on whitespace;
  the second is ignored) or ``query-id<TAB>corpus-id<TAB>score`` (BEIR's ``qrels/*.tsv``: three
  tab-separated fields, a first line that is not a judgment is its header). Grades are whole numbers:
  at least 1 is relevant (trec_eval's relevance level), 0 or below judged non-relevant.
* **run** — one retrieved document a line, ``qid Q0 docid rank score tag``. As trec_eval does,
  the order is by score, highest first, ties by doc id in reverse order; the rank field is not
  used.
* **ranx run** — JSON ``{"qid": {"docid": score, ...}, ...}``, ordered like a TREC run.

A line with whitespace inside an id cannot be told apart from one with more fields, so an id must
be free of whitespace and not empty (:func:`check_id`); the benchmark refuses such an id where it
reads one (a BEIR corpus or queries file) and where it would write one (``export-run``).

Duplicates are settled the same way every time and said in ONE warning line per file: in qrels,
the same (query, document) again keeps the last grade (BEIR's own loader does so); in a run, the
same (query, document) again keeps its highest score.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from loguru import logger

from utils.errors import InputError
from utils.files.lines import decode, iter_lines

Qrels = dict[str, dict[str, int]]  # query id → {doc id: grade}, every judgment (grade 0 included)
Ranking = dict[str, list[str]]  # query id → doc ids, best first

MAX_QRELS_BYTES = 1 << 30  # 1 GiB
MAX_RUN_BYTES = 4 << 30  # 4 GiB: 1,000 documents for each of 100,000 queries is about 5 GB less
MAX_LINE_BYTES = 64 * 1024
_WHITESPACE = re.compile(r"\s")
_NAMED = 3  # examples in a warning line
QRELS_FIX = ("write one judgment a line: `qid 0 docid grade` (TREC) or `query-id<TAB>corpus-id<TAB>score` "
             "(BEIR), grades whole numbers")
RUN_FIX = "write one document a line: `qid Q0 docid rank score tag` (a TREC run), or give a ranx JSON run"


def id_problem(value: object) -> str | None:
    """Why ``value`` cannot be a query or document id of a TREC file (None: it can)."""
    if not isinstance(value, str):
        return f"is {type(value).__name__}, not a string"
    if not value:
        return "is empty"
    if _WHITESPACE.search(value):
        return "holds whitespace"
    return None


def check_id(value: object, what: str, where: str, fix: str) -> str:
    """``value`` when it is a TREC-safe id, else one :class:`InputError`:
    ``<where>: <what> <value> holds whitespace, which TREC files cannot carry: <fix>``."""
    problem = id_problem(value)
    if problem is None:
        return value  # type: ignore[return-value]
    shown = f" {value!r}" if isinstance(value, str) else ""
    raise InputError(f"{where}: {what}{shown} {problem}, which TREC files cannot carry: {fix}")


def _warn_duplicates(path: Path, count: int, examples: list[str], rule: str) -> None:
    if count:
        logger.warning("{}: {} duplicate line{} ({}{}): {}", path, count, "" if count == 1 else "s",
                       ", ".join(examples[:_NAMED]), ", …" if count > _NAMED else "", rule)


# --------------------------------------------------------------------------- qrels

def read_qrels(path: str | os.PathLike) -> Qrels:
    """Every judgment of a TREC or BEIR qrels file (see the module docstring), in file order.
    Raises :class:`InputError` naming the file and line."""
    path = Path(path)
    qrels: Qrels = {}
    duplicates, examples = 0, []
    for number, raw in iter_lines(path, what="qrels file", fix=QRELS_FIX, max_bytes=MAX_QRELS_BYTES,
                                  max_line_bytes=MAX_LINE_BYTES):
        line = decode(raw, path, number, QRELS_FIX)
        if not line.strip():
            continue
        fields = line.split("\t") if "\t" in line else line.split()
        if len(fields) == 3:
            qid, doc, grade_text = fields
        elif len(fields) == 4:
            qid, _, doc, grade_text = fields
        else:
            raise InputError(f"{path}: line {number} has {len(fields)} fields: {QRELS_FIX}")
        grade_text = grade_text.strip()
        if not re.fullmatch(r"[+-]?\d{1,9}", grade_text):
            if number == 1 and len(fields) == 3:  # BEIR's header: query-id corpus-id score
                continue
            raise InputError(f"{path}: line {number}: the grade {grade_text[:20]!r} is not a whole number: {QRELS_FIX}")
        where = f"{path}: line {number}"
        check_id(qid, "query id", where, "rename it in the queries and the qrels")
        check_id(doc, "document id", where, "rename it in the corpus and the qrels")
        judged = qrels.setdefault(qid, {})
        if doc in judged:
            duplicates += 1
            examples.append(f"line {number}: {qid} {doc}")
        judged[doc] = int(grade_text)
    _warn_duplicates(path, duplicates, examples, "the same query and document again; the last grade is kept")
    return qrels


def write_qrels(path: str | os.PathLike, qrels: Iterable[tuple[str, Mapping[str, int]]]) -> str:
    """The TREC qrels text of ``(query id, {doc id: grade})`` pairs (``qid 0 docid grade``), written
    atomically to ``path``; returns the text."""
    from utils.files.output import write_text_atomic

    text = "".join(f"{qid} 0 {doc} {grade}\n" for qid, judged in qrels for doc, grade in judged.items())
    write_text_atomic(Path(path), text)
    return text


# --------------------------------------------------------------------------- runs

def _ordered(scores: Mapping[str, float]) -> list[str]:
    """Doc ids by score, highest first, ties by doc id in reverse order (trec_eval's order)."""
    by_doc = sorted(scores.items(), key=lambda ds: ds[0], reverse=True)  # the tie order
    return [d for d, _ in sorted(by_doc, key=lambda ds: -ds[1])]  # stable: ties keep it


def _finite(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def read_trec_run(path: str | os.PathLike) -> Ranking:
    """The rankings of a TREC run file (see the module docstring). Raises :class:`InputError`."""
    path = Path(path)
    scores: dict[str, dict[str, float]] = {}
    duplicates, examples = 0, []
    for number, raw in iter_lines(path, what="run file", fix=RUN_FIX, max_bytes=MAX_RUN_BYTES,
                                  max_line_bytes=MAX_LINE_BYTES):
        line = decode(raw, path, number, RUN_FIX)
        fields = line.split()
        if not fields:
            continue
        if not scores and fields[0].startswith("<"):  # markup: an HTML report, an XML file
            raise InputError(f"{path}: line {number} starts with {fields[0][:20]!r}: an HTML or XML file, not a run: "
                             f"{RUN_FIX}")
        if len(fields) != 6:
            raise InputError(f"{path}: line {number} has {len(fields)} fields, not 6: {RUN_FIX}")
        qid, _, doc, _, score_text, _ = fields
        try:
            score = _finite(float(score_text))
        except ValueError:
            score = None
        if score is None:
            raise InputError(f"{path}: line {number}: the score {score_text[:20]!r} is not a finite number: {RUN_FIX}")
        ranked = scores.setdefault(qid, {})
        if doc in ranked:
            duplicates += 1
            examples.append(f"line {number}: {qid} {doc}")
            score = max(score, ranked[doc])
        ranked[doc] = score
    _warn_duplicates(path, duplicates, examples, "the same query and document again; the highest score is kept")
    if not scores:
        raise InputError(f"run file {path} holds no ranking: {RUN_FIX}")
    return {qid: _ordered(ranked) for qid, ranked in scores.items()}


def ranx_run(doc: object, source: str) -> Ranking:
    """The rankings of a parsed ranx JSON run ``{qid: {docid: score}}``. Raises :class:`InputError`."""
    fix = 'a ranx run is {"query id": {"doc id": score, ...}, ...} with finite scores'
    if not isinstance(doc, Mapping) or not doc:
        raise InputError(f"{source}: not a ranx run (an object of queries): {fix}")
    out: Ranking = {}
    for qid, ranked in doc.items():
        if not isinstance(ranked, Mapping):
            raise InputError(f"{source}: query {qid!r} is not an object of documents: {fix}")
        scores = {}
        for d, s in ranked.items():
            value = _finite(s)
            if value is None:
                raise InputError(f"{source}: query {qid!r}, document {d!r}: the score {s!r} is not a finite number: "
                                 f"{fix}")
            scores[d] = value
        out[str(qid)] = _ordered(scores)
    return out


def is_ranx_run(doc: object) -> bool:
    """Whether a parsed JSON document is a ranx run (an object of objects of numbers, one at least)
    rather than a results file (whose ``run`` object holds strings, and which has a ``results`` list)."""
    if not isinstance(doc, Mapping) or "results" in doc or not doc:
        return False
    if not all(isinstance(v, Mapping) for v in doc.values()) or not any(doc.values()):
        return False
    return all(isinstance(s, (int, float)) and not isinstance(s, bool) for v in doc.values() for s in v.values())


def format_run(rankings: Iterable[tuple[str, Sequence[str]]], tag: str) -> str:
    """TREC run text: for each ``(query id, doc ids best first)``, one line per document,
    ``qid Q0 docid rank score tag`` with score = n − rank + 1 (n documents), so that every tool
    orders them as given."""
    lines = []
    for qid, docs in rankings:
        n = len(docs)
        lines += [f"{qid} Q0 {doc} {rank} {n - rank + 1} {tag}\n" for rank, doc in enumerate(docs, start=1)]
    return "".join(lines)


def write_run(path: str | os.PathLike, rankings: Iterable[tuple[str, Sequence[str]]], tag: str) -> str:
    """:func:`format_run` written atomically to ``path``; returns the text."""
    from utils.files.output import write_text_atomic

    text = format_run(rankings, tag)
    write_text_atomic(Path(path), text)
    return text
