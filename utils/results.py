"""Typed records of a benchmark run, the one writer of its results and the one reader.

A results file is a self-describing dump of a :class:`RunResult`::

    {"schema_version": 2, "run": RunInfo, <each metric's aggregate at top level>, <counts>,
     "ci95": {...}, "bootstrap": {...}, "groups": {...}, "diagnosis_counts": {...}, "results": [QuestionResult]}

* :func:`components.analysis.aggregate.build_report` is the only place a run's results are made;
* :meth:`RunResult.to_json` is the file's content and :meth:`RunResult.save` the (strict,
  redacted, atomic) write;
* :meth:`RunResult.from_json` / :func:`load_run` the one reader (schema 1 and 2), used by
  ``compare``, ``report``, the console summary and ``--resume``: every field is checked against
  its type on read, so a hand-edited or hostile file is refused with one line naming the file,
  the field and the fix (:class:`InputError`, through :mod:`utils.records.typecheck`), never a crash
  later. A field a file lacks takes its default (schema-1 files lack most), a metric it lacks is
  absent (never guessed).
* the sections beside the rows (``bootstrap``, ``judge_consistency``, ``order_check``,
  ``quality_bands``, ``targets``, ``panel``, ``adaptive``) are records of :mod:`utils.records.sections`,
  read by the same reader and written back key for key.

The JSON Schema of a results file is :func:`utils.records.schema.json_schema`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path
from typing import Any

from utils import metrics as M
from utils.errors import InputError
from utils.files.lines import open_regular
from utils.files.output import StrictJSON, strict_json_value, write_json_atomic
from utils.redaction import Redactor, environment_secrets
from utils.records.json_record import to_json
from utils.records.sections import (AdaptiveSection, Bootstrap, JudgeConsistency, OrderCheck, PanelSection,
                                    QualityBand, TargetCheck, no_bootstrap)
from utils.records.typecheck import convert, hints, record

SCHEMA_VERSION = 2
READABLE_SCHEMAS = (1, 2)
MAX_RESULTS_BYTES = 1 << 30  # a results file larger than this is refused (1 GiB)
MAX_READ_DEPTH = 64  # JSON nested deeper than this in a results file is refused
_FIX = "pass a results file written by benchmark.py"
RETRIEVAL_ERROR = "retrieval_error"  # the grade_error kind of a question whose retrieval failed


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
class JudgeGrade:
    """One judge's grade of one question in a panel run (``grades_by_judge``): as ``llm_grade``,
    ``llm_reasoning``, ``grade_error`` and ``llm_raw_reply`` are for the run's one judge."""

    grade: int | None = None
    reasoning: str | None = None
    error: str | None = None  # "<kind>: <message>", as grade_error
    raw_reply: str | None = None
    model: str | None = None  # the model id the reply names
    grades: list[int | None] | None = None  # with --judge-repeats: every grade of this judge
    input_tokens: int | None = None
    output_tokens: int | None = None
    cost_usd: float | None = None  # this judge's calls for this question (null: no price known, or offline)
    latency_ms: float = 0.0


# the fields of a panel run's rows, left out of a single judge's rows (whose files stay as they were)
PANEL_ROW_FIELDS = ("grades_by_judge", "panel_grade", "panel_graded")


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
    grade_clamped_from: float | None = None  # the judge's grade when it was outside 1-10 (llm_grade: clamped)
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
    judge_repeats: int | None = None  # --repeat-where uncertain: the grades asked of each judge here, 1 or N
    # annotations added by the run's annotators, null when not computed
    needle_best_chunk: dict | None = None
    diagnosis: dict | None = None
    chunk_relevance: list[int] | None = None
    chunk_relevance_error: str | None = None
    chunk_relevance_raw: str | None = None
    # --order-check: the grade of the same chunks shown in reverse order (null: not checked)
    llm_grade_reversed: int | None = None
    order_check_error: str | None = None
    # a panel of judges (--judges): each judge's grade; llm_grade is panel_grade rounded half up
    grades_by_judge: dict[str, JudgeGrade] | None = None
    panel_grade: float | None = None  # the panel's aggregate (median or mean) of the judges that graded
    panel_graded: int | None = None  # how many of the panel's judges graded the question

    @property
    def retrieval_failed(self) -> bool:
        """Whether the retriever failed (or passed its deadline) on this question: ``grade_error``
        ``retrieval_error: …``."""
        return (self.grade_error or "").startswith(RETRIEVAL_ERROR + ":")

    @property
    def relevance(self) -> dict[str, int]:
        """``{doc id: grade}`` of the row's needles (grade 1 each unless ``needle_grades`` says)."""
        grades = self.needle_grades or {}
        return {d: grades.get(d, 1) for d in self.needle_doc_ids}

    def to_json(self) -> dict:
        row = asdict(self)
        for name in PANEL_ROW_FIELDS:  # absent from a single judge's rows
            if row[name] is None:
                del row[name]
        extra = row.pop("extra")
        row.update({k: v for k, v in extra.items() if k not in row})
        return row

    @classmethod
    def from_json(cls, row: object, where: str = "row") -> QuestionResult:
        """The inverse of :meth:`to_json`, checked field by field (see the module docstring):
        known fields by name, the question's own fields back into ``extra``. Raises
        :class:`InputError` naming ``where`` and the field."""
        result = record(cls, row, where, _FIX, extra="extra")
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
    repeat_where: dict | None = None  # --repeat-where uncertain: {rule, pass_marks, near, disagree}; null: all
    details: dict = field(default_factory=dict)

    @property
    def identity(self) -> tuple[str, str, str | None]:
        """Which judge this is: provider, model and endpoint (the host ``details`` records, ``base_url_host``;
        None: the provider's public API). Never the model alone: two endpoints may serve one model id."""
        host = self.details.get("base_url_host")
        return self.provider, self.model, host if isinstance(host, str) else None

    def to_json(self) -> dict:
        data = asdict(self)
        details = data.pop("details")
        data.update({k: v for k, v in details.items() if k not in data})
        return data

    @classmethod
    def from_json(cls, data: object, where: str = "run.judge") -> JudgeInfo:
        return record(cls, data, where, _FIX, extra="details")


BUILTIN_PREFIX = "builtin:"  # a corpus shipped inside a package (components.core.corpus.BUILTIN_SOURCE): no folder


@dataclass(frozen=True)
class CorpusInfo:
    source: str | None = None  # the --corpus folder (or BEIR file) as given, or builtin:<module>
    documents: int | None = None
    chunks: int | None = None
    sha256: str | None = None

    @property
    def path(self) -> str | None:
        """The corpus folder (or file) the run read, as recorded; None for a built-in corpus or none recorded."""
        return self.source if self.source and not self.source.startswith(BUILTIN_PREFIX) else None


@dataclass(frozen=True)
class UsageInfo:
    """One role's LLM calls in ``run.usage`` (``{"judge": {...}, "rewriter": {...}}``): what the reader
    checks in each of them. ``run.usage`` itself stays the objects as written."""

    calls: int = 0
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cost_usd: float | None = None
    models: list[str] = field(default_factory=list)
    batch: bool = False
    unreported: int = 0
    extra: dict = field(default_factory=dict)  # fields of a file this version does not know


@dataclass(frozen=True)
class RunInfo:
    started_at: str | None = None
    finished_at: str | None = None
    # completed | interrupted | retrieval_failed | judge_failed | rate_limited | budget_exhausted
    status: str | None = None
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
    output: str | None = None  # the --output file, absolute: where --resume writes unless told otherwise
    selection: dict = field(default_factory=dict)  # {"limit": N, "ids": [...]} when questions were selected
    index: dict | None = None  # {"cache": "hit" | "miss" | "off", "key": str | None}
    # --judge-batch: each batch (id, status, processing_status, request_counts, retry, resumed,
    # custom_ids {custom id: question id}); null in a sequential run
    judge_batch: list[dict] | None = None
    # --max-cost: {spent_usd, calls, refused, overrun_usd, overrun_calls} (components/run/calls/budget.py); null without
    budget: dict | None = None
    # --suite: the configuration run (suite, file, name, strategy, chunk_size, chunk_overlap,
    # embedding_model, reranker, parameters); null outside a suite
    configuration: dict | None = None
    question_set: dict | None = None  # the question set's own version, name and description (those it gives)
    spec: dict | None = None  # the run's options as checked (components/run/spec.py RunSpec.to_json); null before
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
        info = record(cls, data, where, _FIX, extra="extra")
        for role, usage in info.usage.items():  # the token counts and cost the console and report print
            record(UsageInfo, usage, f"{where}.usage.{role}", _FIX, extra="extra")
        judges = {name: JudgeInfo.from_json(data[name], f"{where}.{name}")  # their details kept too
                  for name in ("judge", "rewriter") if isinstance(data.get(name), Mapping)}
        return replace(info, **judges) if judges else info


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
    bootstrap: Bootstrap = field(default_factory=no_bootstrap)  # {resamples, seed, method}
    groups: dict[str, dict[str, dict[str, Any]]] = field(default_factory=dict)  # field → value → {count, ...}
    question_count: int = 0
    graded_count: int = 0
    ungraded_count: int = 0
    grade_errors: dict[str, int] = field(default_factory=dict)  # error kind → count
    avg_latency_ms: float | None = None  # retrieval
    index_time_s: float | None = None
    diagnosis_counts: dict[str, int] | None = None
    chunk_relevance_count: int | None = None  # questions whose chunks were rated
    # the sections beside the rows (utils.records.sections)
    judge_consistency: JudgeConsistency | None = None  # with --judge-repeats: how much the grades moved
    order_check: OrderCheck | None = None  # with --order-check: how much reversing the chunks moved the grade
    quality_bands: dict[str, QualityBand] | None = None  # nDCG and precision in words (utils.quality_bands)
    targets: list[TargetCheck] | None = None  # with --targets: each target, met or not (components.analysis.targets)
    panel: PanelSection | None = None  # with a panel of judges: the aggregate, agreement and each judge's metrics
    # --until-decided / --target-ci: the procedure, its looks and verdicts, the calls saved (components/run/adaptive.py)
    adaptive: AdaptiveSection | None = None
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
                   bootstrap=self.bootstrap.to_json(), groups=self.groups)
        for name in ("diagnosis_counts", "chunk_relevance_count", "judge_consistency", "order_check",
                     "quality_bands", "targets", "panel", "adaptive"):
            if getattr(self, name) is not None:
                out[name] = to_json(getattr(self, name))
        out.update({k: v for k, v in self.extra.items() if k not in out and k != "results"})
        out["results"] = [r.to_json() for r in self.rows]
        return out

    def save(self, path: str | os.PathLike, secrets: Iterable[str] = ()) -> Path:
        """Write the results file: strict JSON, atomically (see :func:`utils.files.output.write_json_atomic`),
        with ``secrets`` and every judge provider's secrets found in the environment redacted (as
        the command line writes it; :func:`utils.redaction.environment_secrets`). Returns the path."""
        path = Path(path)
        write_json_atomic(path, self.strict_json(secrets))
        return path

    def strict_json(self, secrets: Iterable[str] = ()) -> StrictJSON:
        """The results file's content as :meth:`save` writes it, made once: ``write_json_atomic(path,
        content)`` writes it to each of several paths without cleaning it again."""
        return StrictJSON(strict_json_value(self.to_json(), (*secrets, *environment_secrets(os.environ))))

    @classmethod
    def from_json(cls, doc: object, source: str = "results", secrets: Iterable[str] = ()) -> RunResult:
        """A results dict (a parsed results file, schema 1 or 2) as a checked :class:`RunResult`,
        ``secrets`` redacted from every text; raises :class:`InputError` naming ``source``, the
        field and the fix."""
        if not isinstance(doc, Mapping) or not isinstance(doc.get("results"), list):
            raise InputError(f"{source}: not a results file (no \"results\" list): {_FIX}")
        version = doc.get("schema_version", 1)
        if not isinstance(version, int) or isinstance(version, bool) or version not in READABLE_SCHEMAS:
            newer = isinstance(version, int) and not isinstance(version, bool) and version > max(READABLE_SCHEMAS)
            raise InputError(f"{source}: schema_version {version!r} is not one this version reads "
                             f"({', '.join(map(str, READABLE_SCHEMAS))}): "
                             + ("upgrade the benchmark to read it" if newer else _FIX))
        _check_json(doc, source)
        doc = Redactor(secrets).json(doc)  # nested at most MAX_READ_DEPTH deep: checked above
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
        metric_values = {key: convert(float | None, doc[key], f"{source}: {key}", _FIX)
                         for key in registered if key in doc}
        known = {f.name for f in fields(cls)} | set(registered) | {"results"}
        values: dict[str, Any] = {}
        for f in fields(cls):
            if f.name in ("run", "rows", "metrics", "extra", "source", "schema_version") or f.name not in doc:
                continue
            values[f.name] = convert(hints(cls)[f.name], doc[f.name], f"{source}: {f.name}", _FIX)
        if values.get("adaptive") is not None:
            values["adaptive"].check(f"{source}: adaptive", _FIX)
        return cls(run=run, rows=rows, metrics=metric_values, schema_version=version, source=source,
                   extra={k: v for k, v in doc.items() if k not in known}, **values)


def recorded_corpora(results: Iterable[RunResult]) -> list[str]:
    """The corpus folders (or files) ``results`` record: where no output of a command reading them
    may go (:func:`utils.files.output.check_output`'s ``recorded_corpora``)."""
    return list(dict.fromkeys(r.run.corpus.path for r in results if r.run.corpus.path))


# --------------------------------------------------------------------------- reading

#: How a JSON file that cannot be read is refused (:func:`utils.files.lines.open_regular`).
OPENING = {"missing": "{path}: no such {what}: give the path of one",
           "unreadable": "{path}: cannot be read ({reason}): check the path and its permissions",
           "folder": "{path} is a folder: give a {what}",
           "kind": "{path} is {kind}, not a regular file: give a {what}"}


def read_json_file(path: str | os.PathLike, what: str = "results file", max_bytes: int = MAX_RESULTS_BYTES,
                   fix: str = _FIX) -> object:
    """The JSON document of ``path``: a regular file (a FIFO, device or folder is refused before
    anything is read) of at most ``max_bytes``, UTF-8 with or without a BOM, strict JSON (no NaN
    or Infinity), nested at most :data:`MAX_READ_DEPTH` deep. Raises :class:`InputError`."""
    path = Path(path)
    fh, info = open_regular(path, messages=OPENING, what=what)
    with fh:
        if info.st_size > max_bytes:
            raise InputError(f"{path} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit of a {what}: {fix}")
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


def load_run(path: str | os.PathLike, secrets: Iterable[str] = ()) -> RunResult:
    """A results file as a checked :class:`RunResult` (see :func:`read_json_file`, :meth:`RunResult.from_json`),
    every ``secrets`` redacted from its text as it is read: whatever is made of it (a page, a run
    file, a table) is redacted before it is escaped."""
    return RunResult.from_json(read_json_file(path), str(path), secrets=secrets)


def _check_json(doc: object, source: str) -> None:
    """Every string of ``doc`` is valid Unicode (no lone surrogate) and it nests at most
    :data:`MAX_READ_DEPTH` deep. Iterative: cannot overflow the stack itself. The common case is fast: one
    C-encoded pass finds no lone surrogate, and only the containers are walked for the depth; a document that
    fails that pass is walked value by value, to name what is wrong."""
    try:
        json.dumps(doc, ensure_ascii=False, check_circular=False).encode("utf-8")
    except (UnicodeEncodeError, RecursionError, ValueError, TypeError):
        _check_json_values(doc, source)
        return
    containers: list[tuple[object, int]] = [(doc, 0)] if isinstance(doc, (dict, list)) else []
    while containers:
        value, depth = containers.pop()
        if depth >= MAX_READ_DEPTH:
            raise InputError(f"{source}: the JSON is nested more than {MAX_READ_DEPTH} levels deep: {_FIX}")
        children = value.values() if isinstance(value, dict) else value
        containers.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def _check_json_values(doc: object, source: str) -> None:
    """:func:`_check_json`, value by value."""
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
