"""Typed records of a benchmark run, the one writer of its results and the one reader.

A results file is a self-describing dump of a :class:`RunResult`::

    {"schema_version": 2, "run": RunInfo, <each metric's aggregate at top level>, <counts>,
     "ci95": {...}, "bootstrap": {...}, "groups": {...}, "diagnosis_counts": {...}, "results": [QuestionResult]}

* :func:`build_report` is the only place a run's results are made: the aggregates, intervals and
  groups of every metric of the registry (:mod:`utils.metrics`), the diagnosis counts, the counts;
* :meth:`RunResult.to_json` is the file's content and :meth:`RunResult.save` the (strict,
  redacted, atomic) write;
* :meth:`RunResult.from_json` / :func:`load_run` the one reader (schema 1 and 2), used by
  ``compare``, ``report``, the console summary and ``--resume``: every field is checked against
  its type on read, so a hand-edited or hostile file is refused with one line naming the file,
  the field and the fix (:class:`InputError`), never a crash later. A field a file lacks takes
  its default (schema-1 files lack most), a metric it lacks is absent (never guessed).
"""

from __future__ import annotations

import json
import os
import stat
import statistics as _stats
import types
import typing
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import MISSING, asdict, dataclass, field, fields, is_dataclass, replace
from pathlib import Path
from typing import Any, Union

from utils import metrics as M
from utils.errors import InputError
from utils.lines import file_kind
from utils.output import write_json_atomic

SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)
GROUP_FIELDS = ("category", "difficulty", "type", "section")  # grouped by default when the rows carry them
MISSING_GROUP = "(none)"  # the group of rows that lack the field
MAX_RESULTS_BYTES = 1 << 30  # a results file larger than this is refused (1 GiB)
MAX_READ_DEPTH = 64  # JSON nested deeper than this in a results file is refused
_ROW_METRIC_FIELDS = ("doc_rank", "hit_at_k", "rr", "rr_doc", "ndcg_at_k", "recall_at_k", "ap_at_k",
                      "context_precision")
_FIX = "pass a results file written by benchmark.py"


@dataclass(frozen=True)
class RetrievedItem:
    rank: int
    doc_id: str
    chunk_id: str
    score: float | None = None
    title: str | None = None
    heading_path: list[str] | None = None
    text: str | None = None  # the chunk's indexed text, as shown to the judge (None with --no-text)


@dataclass(frozen=True)
class QuestionResult:
    question_id: str
    question: str = ""
    expected_answer: str | None = None
    needle_doc_id: str = ""  # the first needle; all of them in needle_doc_ids
    needle_doc_ids: list[str] = field(default_factory=list)  # the relevant documents (grade >= 1)
    needle_grades: dict[str, int] | None = None  # {doc id: grade} of graded needles; null when every grade is 1
    needle_found: bool = False
    rank: int | None = None
    hit_at_1: bool = False
    hit_at_5: bool = False
    llm_grade: int | None = None
    llm_reasoning: str | None = None
    grade_error: str | None = None  # "<kind>: <message>", see the results documentation
    llm_raw_reply: str | None = None
    prompt_variant: str = "reference"  # "reference" | "reference_free"
    total_score: float | None = None
    latency_ms: float = 0.0  # retrieval
    grading_latency_ms: float = 0.0
    retrieved: list[RetrievedItem] = field(default_factory=list)
    extra: dict = field(default_factory=dict)  # the question's own fields (category, reference_ranks...)
    # per-question metrics (utils.metrics.row_metrics); None = not computed (derived on aggregation)
    doc_rank: int | None = None  # document level: position among the distinct documents of the top k
    hit_at_k: bool | None = None  # chunk rank <= k
    rr: float | None = None  # chunk level: 1/rank, 0 when not found
    rr_doc: float | None = None  # document level: 1/doc_rank, 0 when not found
    ndcg_at_k: float | None = None  # document level
    recall_at_k: float | None = None  # document level
    ap_at_k: float | None = None  # document level (pytrec_eval map_cut_k)
    context_precision: float | None = None  # chunk level: share of the top k chunks from a needle doc
    # the judge call: what the API said about it
    stop_reason: str | None = None
    request_id: str | None = None
    judge_model: str | None = None  # the model id the reply names
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cost_usd: float | None = None  # the judge calls of this row (null: no price known, or offline)
    # the query: the rewritten query, or the question when it was not rewritten
    query_used: str | None = None
    query_rewrite_error: str | None = None
    recovered: bool = False  # graded by the retry pass after a transient failure
    # judge repeats: every grade when the question was graded more than once
    llm_grades: list[int | None] | None = None
    grade_spread: int | None = None  # max - min of the repeated grades
    grade_sd: float | None = None  # their population standard deviation
    # annotations added by the run's annotators, null when not computed
    needle_best_chunk: dict | None = None
    diagnosis: dict | None = None
    chunk_relevance: list[int] | None = None
    chunk_relevance_error: str | None = None
    chunk_relevance_raw: str | None = None
    # --order-check: the grade of the same chunks shown in reverse order (null: not checked)
    llm_grade_reversed: int | None = None
    order_check_error: str | None = None

    @property
    def relevance(self) -> dict[str, int]:
        """``{doc id: grade}`` of the row's needles (grade 1 each unless ``needle_grades`` says)."""
        grades = self.needle_grades or {}
        return {d: grades.get(d, 1) for d in self.needle_doc_ids}

    def to_json(self) -> dict:
        row = asdict(self)
        extra = row.pop("extra")
        row.update({k: v for k, v in extra.items() if k not in row})
        return row

    @classmethod
    def from_json(cls, row: object, where: str = "row") -> QuestionResult:
        """The inverse of :meth:`to_json`, checked field by field (see the module docstring):
        known fields by name, the question's own fields back into ``extra``. Raises
        :class:`InputError` naming ``where`` and the field."""
        result = _record(cls, row, where, extra="extra")
        if not result.needle_doc_ids and result.needle_doc_id:
            result = replace(result, needle_doc_ids=[result.needle_doc_id])
        if result.needle_grades is not None:
            stray = [d for d in result.needle_grades if d not in result.needle_doc_ids]
            bad = [d for d, g in result.needle_grades.items() if g < M.RELEVANT_MIN]
            if stray or bad:
                detail = (f"grades {stray[0]!r}, which is not in needle_doc_ids" if stray
                          else f"gives {bad[0]!r} grade {result.needle_grades[bad[0]]}, below {M.RELEVANT_MIN}")
                raise InputError(f"{where}.needle_grades {detail}: {_FIX} (or correct that field)")
        if "rank" not in row:  # a file without ranks: derived from what was retrieved, as the run computes it
            rank = M.chunk_rank(result.retrieved, result.needle_doc_ids)
            result = replace(result, rank=rank, needle_found=rank is not None, hit_at_1=rank == 1,
                             hit_at_5=rank is not None and rank <= 5)
        return result


@dataclass(frozen=True)
class JudgeInfo:
    """Which judge graded, what was asked of it, and what answered (the query rewriter has the
    same record in ``run.rewriter``). ``details`` are the provider's own settings (e.g. thinking,
    effort, max_tokens, lifecycle), written beside the common fields."""

    provider: str = "?"  # a provider's name ("offline", "anthropic", ...)
    model: str = "?"  # the requested model id, or the offline judge's name
    prompt_sha256: str | None = None
    reference_free_prompt_sha256: str | None = None
    timeout_s: float | None = None
    note: str | None = None
    mode: str = "sequential"  # "sequential" | "batch"
    requested_model: str | None = None
    reply_models: list[str] = field(default_factory=list)  # the model ids the replies named
    repeats: int = 1
    relevance_prompt_sha256: str | None = None  # the chunk-relevance prompt, when chunks were rated
    concurrency: dict | None = None  # --concurrency: {requested, peak, final_limit, lowered}; null: sequential
    details: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        data = asdict(self)
        details = data.pop("details")
        data.update({k: v for k, v in details.items() if k not in data})
        return data

    @classmethod
    def from_json(cls, data: object, where: str = "run.judge") -> JudgeInfo:
        return _record(cls, data, where, extra="details")


@dataclass(frozen=True)
class CorpusInfo:
    source: str | None = None
    documents: int | None = None
    chunks: int | None = None
    sha256: str | None = None


@dataclass(frozen=True)
class RunInfo:
    started_at: str | None = None
    finished_at: str | None = None
    status: str | None = None  # completed | interrupted | judge_failed | rate_limited | budget_exhausted
    strategy: str | None = None
    k: int = 5
    quick: bool = False
    questions_file: str | None = None
    questions_sha256: str | None = None
    qrels_file: str | None = None  # BEIR queries: the qrels file their needles came from (--qrels/--split)
    corpus: CorpusInfo = field(default_factory=CorpusInfo)
    judge: JudgeInfo = field(default_factory=JudgeInfo)
    python: str | None = None
    packages: dict[str, str] = field(default_factory=dict)
    judge_failure: str | None = None  # the fatal judge error, when status is "judge_failed"
    log_file: str | None = None
    id: str | None = None  # "<UTC time>_<strategy>", the name of its file under runs/
    rewriter: JudgeInfo | None = None  # the query rewriter's model, when the strategy rewrites
    usage: dict = field(default_factory=dict)  # {"judge": {...}, "rewriter": {...}}: calls, tokens, cost
    cost_usd: float | None = None  # all LLM calls of the run; null when a price is unknown
    cost_note: str | None = None
    max_cost_usd: float | None = None
    recovered: int = 0  # rows the retry pass graded after a transient failure
    resumed_from: str | None = None
    resumed_rows: int = 0  # rows taken over from --resume without a new judge call
    journal: str | None = None  # the run's journal (deleted once the results are written)
    runs_dir: str | None = None  # the folder of the run's history (runs/ beside its output)
    selection: dict = field(default_factory=dict)  # {"limit": N, "ids": [...]} when questions were selected
    index: dict | None = None  # {"cache": "hit" | "miss" | "off", "key": str | None}
    # --judge-batch: each batch (id, status, processing_status, request_counts, retry, resumed,
    # custom_ids {custom id: question id}); null in a sequential run
    judge_batch: list[dict] | None = None
    extra: dict = field(default_factory=dict)  # fields of a file this version does not know, kept

    def to_json(self) -> dict:
        data = {f.name: getattr(self, f.name) for f in fields(self) if f.name != "extra"}
        data["corpus"] = asdict(self.corpus)
        data["judge"] = self.judge.to_json()
        data["rewriter"] = self.rewriter.to_json() if self.rewriter is not None else None
        data.update({k: v for k, v in self.extra.items() if k not in data})
        return data

    @classmethod
    def from_json(cls, data: object, where: str = "run") -> RunInfo:
        return _record(cls, data, where, extra="extra")


@dataclass
class RunResult:
    """A finished (or interrupted) run: what it was, every question's row, and its aggregates.

    ``metrics`` holds each metric of the run by its registry key (in the metric's unit: percent
    for rates); ``ci95`` its 95% bootstrap interval; ``groups`` the same per value of a question
    field. The counts and ``diagnosis_counts`` summarise the rows."""

    run: RunInfo
    rows: list[QuestionResult]
    metrics: dict[str, float | None] = field(default_factory=dict)
    ci95: dict[str, list[float] | None] = field(default_factory=dict)
    bootstrap: dict = field(default_factory=dict)  # {resamples, seed, method}
    groups: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # field → value → {count, ...}
    question_count: int = 0
    graded_count: int = 0
    ungraded_count: int = 0
    grade_errors: dict[str, int] = field(default_factory=dict)  # error kind → count
    avg_latency_ms: float | None = None  # retrieval
    index_time_s: float | None = None
    diagnosis_counts: dict[str, int] | None = None
    chunk_relevance_count: int | None = None  # questions whose chunks were rated
    judge_consistency: dict | None = None  # with --judge-repeats: how much the grades moved
    order_check: dict | None = None  # with --order-check: how much reversing the chunks moved the grade
    schema_version: int = SCHEMA_VERSION
    extra: dict = field(default_factory=dict)  # top-level fields of a file this version does not know
    source: str | None = field(default=None, compare=False)  # the file it was read from

    @property
    def k(self) -> int:
        return self.run.k

    def to_json(self) -> dict:
        """The results file's content (the aggregates at top level, as the user's plan names them)."""
        out: dict[str, Any] = {"schema_version": self.schema_version, "run": self.run.to_json()}
        out.update(self.metrics)
        out.update(question_count=self.question_count, graded_count=self.graded_count,
                   ungraded_count=self.ungraded_count, grade_errors=dict(self.grade_errors),
                   avg_latency_ms=self.avg_latency_ms, index_time_s=self.index_time_s, ci95=dict(self.ci95),
                   bootstrap=dict(self.bootstrap), groups=self.groups)
        for name in ("diagnosis_counts", "chunk_relevance_count", "judge_consistency", "order_check"):
            if getattr(self, name) is not None:
                out[name] = getattr(self, name)
        out.update({k: v for k, v in self.extra.items() if k not in out and k != "results"})
        out["results"] = [r.to_json() for r in self.rows]
        return out

    def save(self, path: str | os.PathLike, secrets: Iterable[str] = ()) -> Path:
        """Write the results file: strict JSON, atomically (see :func:`utils.output.write_json_atomic`),
        with ``secrets`` and every judge provider's secrets found in the environment redacted (as
        the command line writes it). Returns the path."""
        from utils.settings import secrets_in

        path = Path(path)
        write_json_atomic(path, self.to_json(), secrets=(*secrets, *secrets_in(os.environ)))
        return path

    @classmethod
    def from_json(cls, doc: object, source: str = "results") -> RunResult:
        """A results dict (a parsed results file, schema 1 or 2) as a checked :class:`RunResult`;
        raises :class:`InputError` naming ``source``, the field and the fix."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("results"), list):
            raise InputError(f"{source}: not a results file (no \"results\" list): {_FIX}")
        version = doc.get("schema_version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version not in READABLE_SCHEMAS:
            newer = isinstance(version, int) and not isinstance(version, bool) and version > max(READABLE_SCHEMAS)
            raise InputError(f"{source}: schema_version {version!r} is not one this version reads "
                             f"({', '.join(map(str, READABLE_SCHEMAS))}): "
                             + ("upgrade the benchmark to read it" if newer else _FIX))
        _check_json(doc, source)
        rows, seen = [], set()
        for i, raw in enumerate(doc["results"]):
            if not isinstance(raw, Mapping) or raw.get("question_id") in (None, ""):
                raise InputError(f"{source}: result #{i + 1} has no question_id: {_FIX}")
            row = QuestionResult.from_json(raw, f"{source}: results[{i}]")
            if row.question_id in seen:
                raise InputError(f"{source}: question id {row.question_id!r} appears twice: {_FIX}")
            seen.add(row.question_id)
            rows.append(row)
        run = RunInfo.from_json(doc.get("run") or {}, f"{source}: run")
        registered = M.METRICS
        metric_values = {key: _convert(float | None, doc[key], f"{source}: {key}") for key in registered if key in doc}
        known = {f.name for f in fields(cls)} | set(registered) | {"results"}
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in ("run", "rows", "metrics", "extra", "source", "schema_version") or f.name not in doc:
                continue
            values[f.name] = _convert(_hints(cls)[f.name], doc[f.name], f"{source}: {f.name}")
        return cls(run=run, rows=rows, metrics=metric_values, schema_version=version, source=source,
                   extra={k: v for k, v in doc.items() if k not in known}, **values)


# --------------------------------------------------------------------------- building a run's results

def with_row_metrics(result: QuestionResult | Mapping, k: int) -> QuestionResult:
    """``result`` with every per-row metric field set: kept when present, else derived from
    ``retrieved`` + ``needle_doc_ids`` and their grades (rows built before those fields existed). A row given as a
    mapping (a journal line taken over by ``--resume``) is read with :meth:`QuestionResult.from_json`."""
    if isinstance(result, Mapping):
        result = QuestionResult.from_json(result)
    if all(getattr(result, name) is not None for name in _ROW_METRIC_FIELDS):
        return result
    derived = M.row_metrics(result.retrieved, result.relevance, k)
    return replace(result, **{name: derived[name] for name in _ROW_METRIC_FIELDS if getattr(result, name) is None})


def run_metrics(rows: Sequence[QuestionResult], relevance: bool) -> list[M.Metric]:
    """The registry's metrics a run has: all, less those needing a field the run did not fill
    (the proxy metrics without chunk relevance)."""
    return [m for m in M.metrics() if m.requires is None or (m.requires == "chunk_relevance" and relevance)]


def confidence_intervals(rows: Sequence[QuestionResult], k: int, chosen: Sequence[M.Metric]
                         ) -> tuple[dict[str, list[float] | None], dict[str, Any]]:
    """95% percentile-bootstrap CI of each metric's mean over questions, in its unit, and the
    bootstrap's record ``{resamples, seed, method}``. A metric resamples the questions that have a
    value (the graded ones for the average grade); with judge repeats (``llm_grades``) the
    grade-based metrics are two-level (components.analysis.statistics). Pooled metrics (not a mean
    over questions) and fewer than 2 questions → null."""
    from components.analysis import statistics as S

    columns: dict[str, list] = {}
    for m in chosen:
        if m.pooled is not None:
            continue
        values = []
        for r in rows:
            v = m.value(r, k)
            if v is None:
                values.append(None)
                continue
            repeats = m.repeats(r, k) if m.repeats is not None else None
            values.append(repeats if repeats else v)
        columns[m.key] = values
    by_mask: dict[tuple[bool, ...], list[str]] = {}
    for name, values in columns.items():
        by_mask.setdefault(tuple(v is not None for v in values), []).append(name)
    ci95: dict[str, list[float] | None] = {}
    for mask, names in by_mask.items():
        cols = [[v for v in columns[name] if v is not None] for name in names]
        for name, interval in zip(names, S.bootstrap_cis(cols, resamples=S.RESAMPLES, seed=S.BOOTSTRAP_SEED)):
            ci95[name] = [round(interval[0], 6), round(interval[1], 6)] if interval else None
    two_level = any(M.grade_repeats(r) is not None for r in rows)
    record = {"resamples": S.RESAMPLES, "seed": S.BOOTSTRAP_SEED,
              "method": S.METHOD + ("-two-level" if two_level else "")}
    return {m.key: ci95.get(m.key) for m in chosen}, record


def _group_value(result: QuestionResult, name: str) -> str:
    value = result.extra[name] if name in result.extra else getattr(result, name, None)
    if value is None:
        return MISSING_GROUP
    return value if isinstance(value, str) else json.dumps(value, sort_keys=True)


def group_metrics(rows: Sequence[QuestionResult], k: int, group_by: Sequence[str] | None = None,
                  chosen: Sequence[M.Metric] | None = None) -> dict[str, dict[str, dict[str, Any]]]:
    """``{field: {value: {count, <each metric's aggregate>}}}``; values sorted, rows lacking the
    field under ``"(none)"``. ``group_by`` None → each of category/difficulty/type/section that at
    least one row carries in ``extra``."""
    chosen = list(chosen) if chosen is not None else run_metrics(rows, False)
    names = [f for f in GROUP_FIELDS if any(f in r.extra for r in rows)] if group_by is None else group_by
    groups: dict[str, dict[str, dict[str, Any]]] = {}
    for name in names:
        members: dict[str, list[QuestionResult]] = {}
        for r in rows:
            members.setdefault(_group_value(r, name), []).append(r)
        groups[name] = {value: {"count": len(rs), **{m.key: m.aggregate(rs, k) for m in chosen}}
                        for value, rs in sorted(members.items())}
    return groups


def judge_consistency(rows: Sequence[QuestionResult]) -> dict | None:
    """With judge repeats: how many questions were graded more than once, the share (percent) whose
    grade moved by 2 or more between repeats, and the mean standard deviation of their grades.
    None when no row has repeated grades."""
    spreads = [(r.grade_spread, r.grade_sd) for r in rows if r.grade_spread is not None]
    if not spreads:
        return None
    return {"questions": len(spreads),
            "moved_2_or_more_rate": round(100.0 * sum(1 for s, _ in spreads if s >= 2) / len(spreads), 4),
            "mean_sd": round(_stats.fmean(sd for _, sd in spreads if sd is not None), 4)}


def order_check(rows: Sequence[QuestionResult]) -> dict | None:
    """With ``--order-check``: over the questions graded in both orders, the mean absolute grade
    change when the chunks are reversed, the share (percent) whose pass/fail at the pass mark flips,
    and the mean signed change (reversed − original) with its paired 95% bootstrap interval. None
    when no question was checked."""
    from components.analysis import statistics as S

    pairs = [(r.llm_grade, r.llm_grade_reversed, r.rank) for r in rows
             if r.llm_grade is not None and r.llm_grade_reversed is not None]
    if not pairs:
        return None
    changes = [float(b - a) for a, b, _ in pairs]
    flips = sum(1 for a, b, rank in pairs
                if (M.total_score(a, rank) >= M.PASS_MARK) != (M.total_score(b, rank) >= M.PASS_MARK))
    ci = S.bootstrap_ci(changes)
    return {"questions": len(pairs), "mean_abs_change": round(_stats.fmean(abs(c) for c in changes), 4),
            "flip_rate": round(100.0 * flips / len(pairs), 4), "mean_change": round(_stats.fmean(changes), 4),
            "mean_change_ci95": [round(ci[0], 4), round(ci[1], 4)] if ci else None,
            "errors": sum(1 for r in rows if r.order_check_error)}


def build_report(run: RunInfo, rows: Iterable[QuestionResult | Mapping], *, index_time_s: float | None = None,
                 group_by: Sequence[str] | None = None, relevance: bool = False) -> RunResult:
    """The run's :class:`RunResult`: every metric of the registry the run has (see
    :func:`run_metrics`), their intervals and groups, the counts and the diagnosis counts.
    Rows without the per-row metric fields get them derived."""
    from components.analysis.diagnosis import count_tags

    k = run.k
    rows = [with_row_metrics(r, k) for r in rows]
    chosen = run_metrics(rows, relevance)
    ci95, record = confidence_intervals(rows, k, chosen)
    graded = [r for r in rows if r.llm_grade is not None]
    errors = Counter(r.grade_error.split(":", 1)[0] for r in rows if r.grade_error)
    return RunResult(
        run=run, rows=rows, metrics={m.key: m.aggregate(rows, k) for m in chosen}, ci95=ci95, bootstrap=record,
        groups=group_metrics(rows, k, group_by, [m for m in chosen if m.pooled is None]),
        question_count=len(rows), graded_count=len(graded), ungraded_count=len(rows) - len(graded),
        grade_errors=dict(sorted(errors.items())), avg_latency_ms=M.average(r.latency_ms for r in rows),
        index_time_s=index_time_s, diagnosis_counts=count_tags(rows),
        chunk_relevance_count=sum(1 for r in rows if r.chunk_relevance is not None) if relevance else None,
        judge_consistency=judge_consistency(rows), order_check=order_check(rows))


# --------------------------------------------------------------------------- reading

def read_json_file(path: str | os.PathLike, what: str = "results file", max_bytes: int = MAX_RESULTS_BYTES,
                   fix: str = _FIX) -> object:
    """The JSON document of ``path``: a regular file (a FIFO, device or folder is refused before
    anything is read) of at most ``max_bytes``, UTF-8 with or without a BOM, strict JSON (no NaN
    or Infinity), nested at most :data:`MAX_READ_DEPTH` deep. Raises :class:`InputError`."""
    path = Path(path)
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise InputError(f"{path}: no such {what}: give the path of one") from None
    except IsADirectoryError:
        raise InputError(f"{path} is a folder, not a {what}: give a file") from None
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror}): check the path and its permissions") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else f"{file_kind(info.st_mode)}, not a regular file"
            raise InputError(f"{path} is {kind}: give a {what}")
        if info.st_size > max_bytes:
            raise InputError(f"{path} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit of a {what}: {fix}")
        fh = os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise
    with fh:
        data = fh.read(max_bytes + 1)
    if len(data) > max_bytes:
        raise InputError(f"{path} is over the {max_bytes:,}-byte limit of a {what}: {fix}")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not valid UTF-8 (byte {err.start}): {fix}") from None
    return parse_json(text, str(path), fix)


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def parse_json(text: str, where: str, fix: str = _FIX) -> object:
    """Strict JSON of ``text``; every way it can fail is one :class:`InputError` naming ``where``."""
    try:
        return json.loads(text, parse_constant=_no_constant)
    except json.JSONDecodeError as err:
        raise InputError(f"{where}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}): {fix}") from None
    except RecursionError:
        raise InputError(f"{where}: the JSON is nested too deeply to read: {fix}") from None
    except ValueError as err:  # NaN/Infinity, or an integer with more digits than Python converts
        raise InputError(f"{where}: {str(err).split(';')[0]}: {fix}") from None


def load_run(path: str | os.PathLike) -> RunResult:
    """A results file as a checked :class:`RunResult` (see :func:`read_json_file`, :meth:`RunResult.from_json`)."""
    return RunResult.from_json(read_json_file(path), str(path))


# --------------------------------------------------------------------------- typed checking

class _Bad(Exception):
    def __init__(self, where: str, message: str) -> None:
        super().__init__(f"{where} {message}")


def describe_json(value: object) -> str:
    """What a JSON value is, in words, for messages: "null", "a boolean", "a number", "a string", "a list", "an object"."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object" if isinstance(value, Mapping) else type(value).__name__


def _expected(tp: Any) -> str:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if origin in (Union, types.UnionType):
        return " or ".join(_expected(a) for a in args)
    if tp is type(None):
        return "null"
    if origin is list or tp is list:
        return "a list"
    if origin is dict or tp is dict or is_dataclass(tp):
        return "an object"
    return {str: "a string", int: "a whole number", float: "a number", bool: "true or false"}.get(tp, str(tp))


_HINTS: dict[type, dict[str, Any]] = {}


def _hints(cls: type) -> dict[str, Any]:
    if cls not in _HINTS:
        _HINTS[cls] = typing.get_type_hints(cls)
    return _HINTS[cls]


def _convert(tp: Any, value: object, where: str) -> Any:
    """``value`` checked against ``tp`` (and converted: int → float, dataclasses built); raises
    :class:`InputError` naming ``where``."""
    try:
        return _as(tp, value, where)
    except _Bad as err:
        raise InputError(f"{err}: {_FIX} (or correct that field)") from None


def _as(tp: Any, value: object, where: str) -> Any:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return value
    if origin in (Union, types.UnionType):
        if value is None and type(None) in args:
            return None
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _as(arg, value, where)
            except _Bad:
                continue
        raise _Bad(where, f"is {describe_json(value)}, not {_expected(tp)}")
    if tp is str:
        if not isinstance(value, str):
            raise _Bad(where, f"is {describe_json(value)}, not a string")
        return value
    if tp is bool:
        if not isinstance(value, bool):
            raise _Bad(where, f"is {describe_json(value)}, not true or false")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise _Bad(where, f"is {describe_json(value)}, not a whole number")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise _Bad(where, f"is {describe_json(value)}, not a number")
        return float(value)
    if origin is list or tp is list:
        if not isinstance(value, list):
            raise _Bad(where, f"is {describe_json(value)}, not a list")
        item = args[0] if args else Any
        return [_as(item, v, f"{where}[{i}]") for i, v in enumerate(value)]
    if origin is dict or tp is dict:
        if not isinstance(value, Mapping):
            raise _Bad(where, f"is {describe_json(value)}, not an object")
        item = args[1] if args else Any
        return {k: _as(item, v, f"{where}.{k}") for k, v in value.items()}
    if is_dataclass(tp):
        return _record_bad(tp, value, where)
    raise _Bad(where, f"has a type this reader does not know ({tp})")  # pragma: no cover - a programming error


def _record_bad(cls: type, data: object, where: str, extra: str | None = None) -> Any:
    if not isinstance(data, Mapping):
        raise _Bad(where, f"is {describe_json(data)}, not an object")
    hints = _hints(cls)
    names = {f.name for f in fields(cls)} - ({extra} if extra else set())
    values = {}
    for f in fields(cls):
        if f.name == extra or f.name not in data:
            continue
        values[f.name] = _as(hints[f.name], data[f.name], f"{where}.{f.name}")
    if extra:
        values[extra] = {k: v for k, v in data.items() if k not in names}
    for f in fields(cls):  # a required field a file lacks
        if f.name not in values and f.default is MISSING and f.default_factory is MISSING:
            raise _Bad(where, f"has no {f.name}")
    return cls(**values)


def _record(cls: type, data: object, where: str, extra: str | None = None) -> Any:
    try:
        return _record_bad(cls, data, where, extra)
    except _Bad as err:
        raise InputError(f"{err}: {_FIX} (or correct that field)") from None


def _check_json(doc: object, source: str) -> None:
    """Every string of ``doc`` is valid Unicode (no lone surrogate) and it nests at most
    :data:`MAX_READ_DEPTH` deep. Iterative: cannot overflow the stack itself."""
    stack: list[tuple[object, int]] = [(doc, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise InputError(f"{source}: a text holds a lone surrogate ({value[:40]!r}…), which is not valid "
                                 f"Unicode: {_FIX}") from None
        elif isinstance(value, (dict, list)):
            if depth >= MAX_READ_DEPTH:
                raise InputError(f"{source}: the JSON is nested more than {MAX_READ_DEPTH} levels deep: {_FIX}")
            children = [*value.keys(), *value.values()] if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children)


# --------------------------------------------------------------------------- the JSON Schema of a results file

SCHEMA_ID = "https://retrieval-benchmark.invalid/results.schema.json"


def _type_schema(tp: Any) -> dict:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return {}
    if origin in (Union, types.UnionType):
        return {"anyOf": [_type_schema(a) for a in args]}
    if tp is type(None):
        return {"type": "null"}
    simple = {str: "string", int: "integer", float: "number", bool: "boolean"}
    if tp in simple:
        return {"type": simple[tp]}
    if origin is list or tp is list:
        return {"type": "array", **({"items": _type_schema(args[0])} if args else {})}
    if origin is dict or tp is dict:
        return {"type": "object", **({"additionalProperties": _type_schema(args[1])} if args else {})}
    if is_dataclass(tp):
        return _record_schema(tp)
    raise TypeError(f"no JSON Schema for {tp}")  # pragma: no cover - a programming error


def _record_schema(cls: type, flattened: str | None = None) -> dict:
    hints = _hints(cls)
    names = [f.name for f in fields(cls) if f.name not in ("extra", "details", "source")]
    return {"type": "object", "properties": {n: _type_schema(hints[n]) for n in names}, "required": names,
            "additionalProperties": True}


def json_schema() -> dict:
    """The JSON Schema (draft 2020-12) of a results file this version writes, derived from the
    records' types and the metric registry; ``docs/results.schema.json`` is this, as JSON."""
    number = {"type": ["number", "null"]}
    metrics = {m.key: {**number, "description": f"{m.label} ({M.UNITS[m.unit]}; {m.level} level): {m.description}"}
               for m in M.metrics()}
    hints = _hints(RunResult)
    top = {name: _type_schema(hints[name]) for name in ("question_count", "graded_count", "ungraded_count",
                                                        "grade_errors", "avg_latency_ms", "index_time_s", "bootstrap",
                                                        "groups", "diagnosis_counts", "chunk_relevance_count",
                                                        "judge_consistency", "order_check")}
    top["ci95"] = {"type": "object", "additionalProperties": {
        "anyOf": [{"type": "null"}, {"type": "array", "items": {"type": "number"}, "minItems": 2, "maxItems": 2}]}}
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
        "title": "Retrieval benchmark results", "type": "object",
        "properties": {"schema_version": {"const": SCHEMA_VERSION}, "run": _record_schema(RunInfo), **metrics, **top,
                       "results": {"type": "array", "items": _record_schema(QuestionResult)}},
        "required": ["schema_version", "run", "question_count", "graded_count", "ungraded_count", "ci95", "results"],
        "additionalProperties": True,
    }
