"""``--judge-batch``: the run's grading requests through the Message Batches API, at half price.

:func:`run_batch` replaces ``BenchmarkLoop.run`` for the LLM judge (sequential stays the default):

1. **Retrieval** of every question, in order, one at a time, exactly as a sequential run (the
   loop's own ``_retrieve``; a retrieval error or any exception becomes that row's error).
2. **Requests**: one per question (``--judge-repeats N``: N), with the SAME prompt
   (:func:`build_prompt`) and request settings (:meth:`ModelSettings.request_params`) as a
   sequential call. The API takes custom ids of 1-64 characters ``[A-Za-z0-9_-]`` and question
   ids may hold anything, so each request is named ``q<index>`` (``q<index>r<repeat>`` with
   repeats; index = the question's 0-based position in the run) and the mapping custom id →
   question id is kept. With ``--repeat-where uncertain`` the first batch holds each question's
   first request (``r0``) only; once it is collected, the repeats the rule asks for
   (:func:`components.run.repeat_where.more_repeats`) go in a second batch (:func:`_round`).
3. **One batch**, split above :data:`MAX_BATCH_REQUESTS` requests or :data:`MAX_BATCH_BYTES` of
   request JSON. As soon as a batch is created, its id and mapping are written to the journal
   (``{"batch": {"id": …, "custom_ids": {…}, "status": "submitted", …}}``), signals deferred from
   the create call to that line: from then on an interruption loses nothing, and ``--resume``
   collects that batch without submitting it again.
4. **Polling** (``messages.batches.retrieve``) at growing intervals (:class:`PollSchedule`: 1 s
   doubling to 60 s, ``BENCHMARK_BATCH_POLL_MAX``), one progress line (INFO) per poll, until the
   batch has ended; then its results (JSON lines, any order) are matched to rows by custom id.
   Lines that match no request (an unknown custom id, a custom id seen before — its first result
   is kept —, not JSON, over the one-reply cap) are skipped with a warning and counted in the
   batch's ``skipped_lines``; the reading is bounded (:meth:`BatchJudge.collect`), and a few bad
   lines never cost the batch.
5. **Entries**: ``succeeded`` → graded exactly like a sequential reply (:func:`parse_message`,
   then :func:`grade_reply`: stop reason, then the grade parser); ``errored`` → null grade
   ``batch_errored: <error type>: <message>``; ``expired`` → ``batch_expired: …``; ``canceled`` →
   ``batch_canceled: …``; a custom id absent from the results → ``batch_errored: no result …``.
   An entry errored by a transient error (``overloaded_error``, ``api_error``,
   ``rate_limit_error``, ``timeout_error``) is re-submitted once, in a second, smaller batch; a
   grade it brings marks the row ``recovered``.
6. **Rows** are finished in question order (journal first, then the console line) and have the
   same fields as a sequential run's; cost at batch prices (``Usage(batch=True)``: half).
   ``request_id`` is ``<batch id>:<custom id>`` (what locates the request), and
   ``grading_latency_ms`` the batch's wall time in this process, submit (or adoption on resume)
   to results.

Failures of the batch calls themselves. A create is not idempotent, so the SDK does not retry it: a
create answered 429/503/529 created nothing and is tried again (:data:`CREATE_ATTEMPTS`); one that
timed out or lost its connection may have created the batch and is not repeated (its rows say so,
with a ``timeout``/``connection`` error). A create that fails fatally (401/403, a 400, an endpoint
without the Message Batches API) makes the judge unusable (exit 3), its rows written ungraded with
the error; a transient one costs those rows their grade (``<kind>: …``, finished later with
``--resume``). While polling, a transient failure is logged and polling goes on;
:data:`MAX_POLL_FAILURES` in a row, a fatal one, or results that cannot be read (the SDK retries the
retrieve and results calls) stop the collection: the rows of that batch are written with
``batch_pending: …`` and the run ends ``judge_failed`` (exit 3) — ``--resume`` collects the batch.

**Interruption** (Ctrl-C, SIGTERM/SIGHUP, the stop flag) at any point: rows taken over from
``--resume`` and rows already complete are finished as usual; every retrieved question not yet
graded goes into the results (not the journal) with ``grade_error: "batch_pending: …"``; the run
ends ``interrupted`` and ``run.judge_batch`` lists each batch (id, status, request counts,
mapping). ``--resume`` (results file or journal) adopts, in submission order, every batch that
holds a question it runs and is not yet ``collected`` (and the earlier batches of those
questions, which hold their other repeats): those questions are collected from them (retrieve/
poll/results, no new create); the other questions are submitted anew; the other earlier batches are
carried into the new results as they were. A batch collected by a run that selected fewer
questions (``--limit``/``--ids``) is ``partial``: a later ``--resume`` collects the rest from it.
A killed process (``kill -9``) between the create call's answer and the journal line loses that
batch's id (the one window left; the requests are then submitted again on resume).

``--max-cost`` is refused with ``--judge-batch`` (:func:`check_batch_options`): a batch is paid as a
whole once submitted and cannot stop at a budget; estimate with a sequential ``--limit`` run.
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any

from loguru import logger

from components.core import Question
from components.judges.batch import BatchAPI, BatchEntry, CreateFailed, Skipped
from components.judges.retrieval_grader import GradeResult, build_prompt, prompt_variant
from components.run.partial import Partial, combine_grades, typed_rows
from components.run.repeat_where import more_repeats
from components.run.calls.batch_blocks import in_blocks, set_unjudged
from utils.errors import InputError, JudgeError
from utils.metrics import RetrievalMetrics as M
from utils.settings import DEFAULT_BATCH_POLL_MAX_S

if TYPE_CHECKING:
    from components.core import Chunk
    from components.run.benchmark_loop import BenchmarkLoop
    from components.run.judge import LoopJudge

MAX_BATCH_REQUESTS = 100_000  # the API's limit per batch
MAX_BATCH_BYTES = 256_000_000  # 256 MB of request JSON per batch (the API's limit), measured ASCII-escaped
# A create answered 429, 503 or 529 created nothing and is tried again (at most this many calls,
# waiting its retry-after or 2 s, 4 s …). A create that timed out or lost its connection may have
# created the batch: it is never repeated (the SDK's own retries are off for it).
CREATE_ATTEMPTS = 4
MAX_POLL_FAILURES = 10  # transient failures in a row while polling before the collection stops
# Reading a batch's results. A line that names no request of the batch (an unknown custom id, a
# custom id seen before, not JSON, over the line cap) is skipped, logged and counted; the reading
# stops after this many such lines, or past a byte budget of (2 x requests + 10) line caps, keeping
# what was matched: a hostile endpoint cannot stream forever, and a few bad lines never cost the batch.
MAX_UNMATCHED_LINES = 1_000
_WARNED_PER_REASON = 10  # skipped lines of one reason logged one by one at WARNING; the rest at DEBUG
_CUSTOM_ID = re.compile(r"q(\d+)(?:r(\d+))?")


def check_batch_options(*, judge: str, judge_batch: bool, max_cost_usd: float | None,
                        chunk_relevance: bool | None) -> None:
    """Start-up check of ``--judge-batch`` against the other options; raises :class:`InputError`."""
    if not judge_batch:
        return
    from components.judges.providers import provider_class, providers

    if not provider_class(judge).supports_batch:
        able = [name for name, cls in providers().items() if cls.supports_batch]
        keys = " or ".join(providers()[name].missing_key() for name in able) or "a provider's key"
        raise InputError("--judge-batch needs the LLM judge of a provider with a batch API "
                         f"({', '.join(able) or 'none registered'}: set {keys} and leave BENCHMARK_JUDGE unset or "
                         "that provider), or run without --judge-batch")
    if max_cost_usd is not None:
        raise InputError("--max-cost cannot be enforced with --judge-batch (a batch is paid as a whole once "
                         "submitted): run without --max-cost, or without --judge-batch")
    if chunk_relevance:
        raise InputError("--chunk-relevance is not sent through --judge-batch: run without one of them")


def warn_uncollected(previous_run: dict, judge_batch: bool) -> None:
    """One warning when the run ``--resume`` continues left batches uncollected and this run will
    not collect them (no ``--judge-batch``): their questions would be graded (and paid) again."""
    pending = [b.id for b in map(BatchRecord.from_json, previous_run.get("judge_batch") or [])
               if b is not None and b.status != "collected"]
    if pending and not judge_batch:
        logger.warning("the run you continue left batch(es) {} uncollected: add --judge-batch to collect them "
                       "instead of grading those questions again", ", ".join(pending))


def _row_repeats(row: object) -> int | None:
    """How many grades a graded row (a dict or a result record) holds: ``llm_grades``' length, 1
    without it; None when it is not graded."""
    def field_of(name: str) -> object:
        return row.get(name) if isinstance(row, dict) else getattr(row, name, None)

    if field_of("llm_grade") is None:
        return None
    grades = field_of("llm_grades")
    return len(grades) if isinstance(grades, (list, tuple)) else 1


def resumed_repeats(previous_run: dict, rows: dict[str, dict]) -> int | None:
    """``--judge-repeats`` of the run ``--resume`` continues: the most common grade count of its
    graded rows (what ``--resume`` keeps), else its ``judge.repeats``; None when neither says."""
    counts = Counter(n for n in map(_row_repeats, rows.values()) if n is not None)
    if counts:
        return counts.most_common(1)[0][0]
    judge = previous_run.get("judge") if isinstance(previous_run, dict) else None
    recorded = judge.get("repeats") if isinstance(judge, dict) else None
    return recorded if isinstance(recorded, int) and not isinstance(recorded, bool) and recorded >= 1 else None


def check_resume_repeats(previous_run: dict, rows: dict[str, dict], repeats: int, path: object = None) -> None:
    """Raise :class:`InputError` when ``--resume`` (of ``path``) would keep rows graded another
    number of times than ``--judge-repeats`` asks (the run would record one count while its rows
    hold another)."""
    from utils.console import escape_control

    recorded = resumed_repeats(previous_run, rows)
    if recorded is not None and recorded != repeats:
        where = f"--resume {escape_control(str(path))}" if path is not None else "--resume"
        raise InputError(f"{where}: the run you continue graded each question "
                         f"{recorded} time(s), this one asks --judge-repeats {repeats}: run with --judge-repeats "
                         f"{recorded}, or start a new run without --resume")


def custom_id(index: int, repeat: int = 0, repeats: int = 1) -> str:
    """The custom id of question ``index`` (0-based position in the run), repeat ``repeat``."""
    return f"q{index}" if repeats == 1 else f"q{index}r{repeat}"


def repeat_of(cid: str) -> int:
    m = _CUSTOM_ID.fullmatch(cid)
    return int(m.group(2)) if m and m.group(2) else 0


@dataclass(frozen=True)
class PollSchedule:
    """Waits between polls: ``first_s``, times ``factor`` each poll, at most ``max_s``."""

    first_s: float = 1.0
    max_s: float = DEFAULT_BATCH_POLL_MAX_S
    factor: float = 2.0

    def waits(self) -> Iterator[float]:
        wait = min(self.first_s, self.max_s)
        while True:
            yield wait
            wait = min(wait * self.factor, self.max_s)


@dataclass(frozen=True)
class BatchRequest:
    custom_id: str
    question_id: str
    params: dict  # the ``messages.create`` parameters, messages included

    def to_json(self) -> dict:
        return {"custom_id": self.custom_id, "params": self.params}


@dataclass
class BatchRecord:
    """One batch as the journal and ``run.judge_batch`` record it."""

    id: str
    custom_ids: dict[str, str]  # custom id → question id
    # "submitted" | "collected" | "partial" (collected, but it holds questions the run did not select:
    # --resume collects those from it) | "failed" (collection stopped; --resume retries)
    status: str = "submitted"
    processing_status: str | None = None  # the API's, at the last poll
    request_counts: dict = field(default_factory=dict)  # the API's, at the last poll
    retry: bool = False  # the second batch: transient failures of the first, re-submitted once
    resumed: bool = False  # adopted from --resume: collected without a new create
    # results lines skipped at collection, by reason (unknown_custom_id, duplicate_custom_id, not_json,
    # no_custom_id, over_line_cap; stopped_early when the reading stopped at its bounds); empty: none
    skipped_lines: dict = field(default_factory=dict)
    judge: str | None = None  # a panel of judges: the judge whose batch it is (absent for the run's one judge)

    def to_json(self) -> dict:
        data = asdict(self)
        if data["judge"] is None:
            del data["judge"]
        return data

    @classmethod
    def from_json(cls, data: object) -> BatchRecord | None:
        """A record from a journal line or ``run.judge_batch``; None when it is not one."""
        if not isinstance(data, dict) or not isinstance(data.get("id"), str):
            return None
        ids = data.get("custom_ids")
        if not isinstance(ids, dict) or not all(isinstance(k, str) and isinstance(v, str) for k, v in ids.items()):
            return None
        counts = data.get("request_counts")
        skipped = data.get("skipped_lines")
        return cls(id=data["id"], custom_ids=dict(ids), status=str(data.get("status") or "submitted"),
                   processing_status=data.get("processing_status") if isinstance(data.get("processing_status"), str)
                   else None, request_counts=counts if isinstance(counts, dict) else {},
                   retry=bool(data.get("retry")), resumed=bool(data.get("resumed")),
                   skipped_lines=skipped if isinstance(skipped, dict) else {},
                   judge=data.get("judge") if isinstance(data.get("judge"), str) else None)


def split_requests(requests: Sequence[BatchRequest], max_requests: int = MAX_BATCH_REQUESTS,
                   max_bytes: int = MAX_BATCH_BYTES) -> list[list[BatchRequest]]:
    """``requests`` in order, cut into batches of at most ``max_requests`` requests and
    ``max_bytes`` of JSON (``{"requests": [...]}`` included). A single request larger than
    ``max_bytes`` is a batch of its own (the API then refuses it, with its own message)."""
    envelope = len('{"requests": []}')
    batches: list[list[BatchRequest]] = []
    current: list[BatchRequest] = []
    size = envelope
    for r in requests:
        n = len(json.dumps(r.to_json())) + 2  # ", " between requests
        if current and (len(current) >= max_requests or size + n > max_bytes):
            batches.append(current)
            current, size = [], envelope
        current.append(r)
        size += n
    if current:
        batches.append(current)
    return batches


class BatchJudge:
    """Submit, poll and read the results of batches through a provider's :class:`BatchAPI`.

    ``record`` receives each journal line (``{"batch": {...}}``) — the run's journal; ``sleep``
    and ``schedule`` are injectable so tests poll fast; ``should_stop`` is asked before each wait."""

    def __init__(self, api: BatchAPI, *, schedule: PollSchedule = PollSchedule(),
                 sleep: Callable[[float], None] = time.sleep,
                 should_stop: Callable[[], bool] = lambda: False, record: Callable[[dict], None] = lambda line: None,
                 deferred: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
                 max_requests: int = MAX_BATCH_REQUESTS, max_bytes: int = MAX_BATCH_BYTES,
                 judge: str | None = None) -> None:
        self.api = api
        self.judge = judge  # a panel's judge: its name goes in each batch's record
        self.model = api.model
        self.schedule, self.sleep, self.should_stop, self.record = schedule, sleep, should_stop, record
        self.deferred = deferred  # signals wait while a batch is created and journaled
        self.max_requests, self.max_bytes = max_requests, max_bytes
        self.records: list[BatchRecord] = []  # the batches this run submitted or adopted
        self.carried: list[BatchRecord] = []  # earlier batches this run does not collect, recorded as they were
        self._started: dict[str, float] = {}  # batch id → when it was submitted or adopted (monotonic)

    def run(self, loop: BenchmarkLoop, questions: Sequence[Question], done: dict | None,
            previous: Sequence[object] = (),
            grouped: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
            blocks: Sequence[int] = ()) -> list:
        """The run's questions graded through this engine (:func:`run_batch`)."""
        return run_batch(loop, questions, done, self, previous, grouped=grouped, blocks=blocks)

    def request(self, cid: str, question_id: str, prompt: str) -> BatchRequest:
        """The same request as a sequential call."""
        envelope = self.api.request(cid, prompt)
        return BatchRequest(cid, question_id, envelope["params"])

    def _journal(self, record: BatchRecord) -> None:
        try:
            self.record({"batch": record.to_json()})
        except OSError as err:  # a full disk: the id is still in the results and the log
            logger.error("could not write batch {} to the journal: {}", record.id, err)

    # ------------------------------------------------------------------ submit

    def submit(self, requests: Sequence[BatchRequest], *, retry: bool = False) -> BatchRecord:
        """Create one batch of ``requests`` (already split) and journal its id and mapping, with
        signals deferred in between (an interrupt cannot lose the id of a batch the API created).
        Raises :class:`JudgeError` (fatal or transient) when the API refuses or cannot be reached;
        see :data:`CREATE_ATTEMPTS` for what is tried again."""
        body = [r.to_json() for r in requests]
        for attempt in range(1, CREATE_ATTEMPTS + 1):
            try:
                with self.deferred():
                    batch = self.api.create(body)
                    record = BatchRecord(id=batch.id, custom_ids={r.custom_id: r.question_id for r in requests},
                                         processing_status=batch.processing_status,
                                         request_counts=dict(batch.request_counts), retry=retry, judge=self.judge)
                    self._started[record.id] = time.monotonic()
                    self.records.append(record)
                    self._journal(record)
                break
            except CreateFailed as err:
                if not err.retryable or attempt == CREATE_ATTEMPTS or self.should_stop():
                    raise
                wait = min(err.retry_after or 2.0 * 2 ** (attempt - 1), self.schedule.max_s)
                logger.warning("Batch not created ({}: {}); trying again in {:g}s", err.kind, err, wait)
                self.sleep(wait)
        logger.info("Submitted batch {} ({:,} grading request(s){})", record.id, len(requests),
                    ", transient failures re-submitted" if retry else "")
        return record

    def adopt(self, record: BatchRecord) -> BatchRecord:
        """A batch an earlier run submitted (``--resume``): collect it, never create it again."""
        record = replace(record, resumed=True, status="submitted")
        self._started[record.id] = time.monotonic()
        self.records.append(record)
        self._journal(record)
        logger.info("Resuming batch {} ({:,} request(s)) without submitting it again", record.id,
                    len(record.custom_ids))
        return record

    def carry(self, record: BatchRecord) -> None:
        """An earlier batch this run does not collect: recorded as it was (journal and results),
        so that a later ``--resume`` still knows it."""
        self.carried.append(record)
        self._journal(record)

    @property
    def all_records(self) -> list[BatchRecord]:
        """Every batch the run knows: submitted or adopted, then carried over."""
        return [*self.records, *self.carried]

    def mark(self, record: BatchRecord, status: str) -> None:
        record.status = status
        self._journal(record)

    def elapsed_ms(self, record: BatchRecord) -> float:
        return (time.monotonic() - self._started.get(record.id, time.monotonic())) * 1000

    # ------------------------------------------------------------------ poll

    def wait(self, record: BatchRecord) -> None:
        """Poll until the batch has ended, one progress line per poll. Raises KeyboardInterrupt
        when a stop is requested, and a fatal :class:`JudgeError` after a fatal failure or
        :data:`MAX_POLL_FAILURES` transient ones in a row."""
        total = len(record.custom_ids)
        failures = 0
        for wait in self.schedule.waits():
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            try:
                batch = self.api.retrieve(record.id)
            except JudgeError as judge_err:
                failures += 1
                if judge_err.fatal or failures >= MAX_POLL_FAILURES:
                    raise JudgeError(judge_err.kind, f"could not poll batch {record.id} ({judge_err}); --resume "
                                     "collects it later", fatal=True) from None
                logger.warning("Batch {}: poll failed ({}: {}); next check in {:g}s", record.id, judge_err.kind,
                               judge_err, wait)
            else:
                failures = 0
                counts = dict(batch.request_counts)
                record.processing_status, record.request_counts = batch.processing_status, counts
                done = total - int(counts.get("processing") or 0)
                if batch.ended:
                    logger.info("Batch {}: ended, {:,}/{:,} requests processed ({} succeeded, {} errored, {} expired, "
                                "{} canceled)", record.id, done, total, counts.get("succeeded"), counts.get("errored"),
                                counts.get("expired"), counts.get("canceled"))
                    return
                logger.info("Batch {}: {}, {:,}/{:,} requests processed; next check in {:g}s", record.id,
                            batch.processing_status, done, total, wait)
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            self.sleep(wait)
        raise AssertionError("unreachable: the schedule never ends")  # pragma: no cover

    # ------------------------------------------------------------------ results

    def collect(self, record: BatchRecord) -> dict[str, BatchEntry]:
        """The ended batch's results, custom id → :class:`BatchEntry`. Raises a fatal
        :class:`JudgeError` when they cannot be read (``--resume`` collects the batch later).

        What can be matched is collected, whatever else the results hold: a line for a custom id
        not in the batch, a line without a custom id, a line that is not JSON, and a line over the
        one-reply cap (read in pieces and discarded) are skipped; a custom id seen twice keeps its
        FIRST result (one warning naming it). Each is logged and counted in ``record.skipped_lines``.
        The reading stops, keeping what was matched, after :data:`MAX_UNMATCHED_LINES` skipped lines
        or past the byte budget (:func:`result_lines`): the requests left without a result are
        ``missing`` (``batch_errored: no result …``)."""
        entries: dict[str, BatchEntry] = {}
        skipped: Counter[str] = Counter()
        where = f"Batch {record.id}"
        lines = iter(self.api.results(record.id, len(record.custom_ids)))
        try:
            try:
                for line in lines:
                    reason = self._match(record, line, entries, skipped)
                    if reason is None:
                        continue
                    if reason == "budget":
                        logger.warning("{}: the results passed their byte budget; reading stopped, {:,} of {:,} "
                                       "requests matched", where, len(entries), len(record.custom_ids))
                        skipped["stopped_early"] += 1
                        break
                    skipped[reason] += 1
                    if sum(n for k, n in skipped.items() if k != "stopped_early") >= MAX_UNMATCHED_LINES:
                        logger.warning("{}: {:,} results lines matched no request; reading stopped, {:,} of {:,} "
                                       "requests matched", where, MAX_UNMATCHED_LINES, len(entries),
                                       len(record.custom_ids))
                        skipped["stopped_early"] += 1
                        break
            finally:
                close = getattr(lines, "close", None)
                if close is not None:  # a stream stopped early is closed now, not when collected
                    close()
        except JudgeError as judge_err:
            raise JudgeError(judge_err.kind, f"could not read the results of batch {record.id} ({judge_err}); "
                             "--resume collects it later", fatal=True) from None
        record.skipped_lines = dict(sorted(skipped.items()))
        if skipped:
            logger.warning("{}: {:,} results line(s) skipped ({}); {:,} of {:,} requests matched", where,
                           sum(n for k, n in skipped.items() if k != "stopped_early"),
                           ", ".join(f"{k} {n:,}" for k, n in sorted(skipped.items())), len(entries),
                           len(record.custom_ids))
        return entries

    def _match(self, record: BatchRecord, line: bytes | Skipped, entries: dict[str, BatchEntry],
               skipped: Counter[str]) -> str | None:
        """Put one results line into ``entries``; else the reason it was skipped (or ``budget``),
        logged as a warning for the first :data:`_WARNED_PER_REASON` lines of each reason."""
        from utils.console import escape_control

        if isinstance(line, Skipped):
            reason, why = line.reason, f"a results line passed {self.api.max_line_bytes:,} bytes; skipped"
        else:
            try:
                entry = self.api.entry(record.id, json.loads(line))
            except (ValueError, RecursionError):
                entry, reason, why = None, "not_json", "a results line is not JSON; skipped"
            else:
                reason, why = "no_custom_id", "a results line names no custom id; skipped"
            if entry is not None:
                shown = escape_control(entry.custom_id[:80])
                if entry.custom_id not in record.custom_ids:
                    reason, why = "unknown_custom_id", f"a results line for custom id {shown!r}, which is not in " \
                                                       "the batch; skipped"
                elif entry.custom_id in entries:
                    reason, why = "duplicate_custom_id", f"custom id {shown} has a second result; the first one " \
                                                         "is kept"
                else:
                    entries[entry.custom_id] = entry
                    return None
        if reason != "budget":
            level = "WARNING" if skipped[reason] < _WARNED_PER_REASON else "DEBUG"
            logger.log(level, "Batch {}: {}", record.id, why)
        return reason


# --------------------------------------------------------------------------- the run


@dataclass
class _Item:
    """One question of the run: a row taken over (``done``), a finished row (``row``), or a
    question retrieved and waiting for its grade(s)."""

    index: int  # 0-based position in the run
    q: Question
    done: dict | None = None
    row: Any = None  # a QuestionResult already complete (retrieval error, internal error)
    partial: Any = None  # the loop's Partial
    chunks: list[Chunk] = field(default_factory=list)
    rank: int | None = None
    entries: dict[int, BatchEntry] = field(default_factory=dict)  # repeat → entry
    sources: list[BatchRecord] = field(default_factory=list)  # the batches its requests went to, in order
    error: str | None = None  # the whole question's grade error (a create that failed)
    recovered: bool = False
    latency_ms: float = 0.0

    @property
    def waiting(self) -> bool:
        return self.done is None and self.row is None

    @property
    def batch(self) -> BatchRecord | None:
        """The batch of its latest submission."""
        return self.sources[-1] if self.sources else None


NOT_SUBMITTED = "batch_pending: not submitted (the run stopped first); --resume submits it"


def finished(row: object) -> bool:
    """Whether ``row`` holds any work: not a question the run stopped before submitting (a run
    whose rows are all such writes nothing, as a sequential run that finished no question)."""
    error = row.get("grade_error") if isinstance(row, dict) else getattr(row, "grade_error", None)
    return error != NOT_SUBMITTED


def _pending_error(item: _Item) -> str:
    if item.batch is None:
        return NOT_SUBMITTED
    return f"batch_pending: in batch {item.batch.id}, not collected; --resume collects it without submitting it again"


def run_batch(loop: BenchmarkLoop, questions: Sequence[Question], done: dict[str, dict] | None,
              judge: BatchJudge, previous: Sequence[object] = (),
              grouped: Callable[[], contextlib.AbstractContextManager] = contextlib.nullcontext,
              blocks: Sequence[int] = ()) -> list:
    """Every question with ``loop`` (retrieval, rows, journal) and its grades from ``judge``
    (module docstring). ``done``: rows taken over from ``--resume``; ``previous``: the batches
    that run recorded (``run.judge_batch`` or the journal's batch lines); ``grouped``: the
    journal's :meth:`Journal.grouped`, under which the graded rows are written (one fsync per
    second instead of one per row: until then the batch holds them); ``blocks``: adaptive judging's
    cumulative block ends, one batch per block (:mod:`components.run.calls.batch_blocks`). Returns ``loop.results``;
    raises KeyboardInterrupt after writing what is done, as ``BenchmarkLoop.run`` does."""
    if not loop.repeat_rule.selective:  # an uncertain run's rows hold 1 or N grades (checked at start-up)
        check_resume_repeats({}, done or {}, loop.repeats)
    loop.begin()
    loop.judges.batch_mode()
    loop.judges.first.batch = judge  # the judge's own engine
    done = typed_rows(done)
    items: list[_Item] = []
    n = len(questions)
    try:
        owned = _adopt(judge, previous, {q.id for q in questions if q.id not in done}, loop.repeats)
        retrieve_all(loop, questions, done, items, owned)
        for block in in_blocks(items, blocks):  # one block unless judged adaptively
            set_unjudged(loop, block)
            waiting = [it for it in block if it.waiting]
            if waiting:
                _grade(loop, judge, waiting, adopted=bool(owned), settled=set(done))
                more = more_repeats(loop, waiting, first_grades)  # --repeat-where uncertain: the second round
                if more:
                    _round(loop, judge, waiting, [it for it in waiting if it.q.id in more], more, set(done))
            with grouped():
                for it in block:
                    loop.finish(it.index + 1, n, _final_row(loop, judge, it))
        for record in judge.records:
            if record.status in ("collected", "partial"):
                judge.mark(record, record.status)  # the journal learns what --resume need not collect again
    except KeyboardInterrupt:
        # Items are finished in order and each row is kept before anything else (loop.finish):
        # the ones past len(loop.results) are exactly those not finished yet.
        _write_unfinished(loop, judge, items[len(loop.results):], n)
        raise
    return loop.results


def retrieve_all(loop: BenchmarkLoop, questions: Sequence[Question], done: dict, items: list[_Item],
                 owned: dict[str, list[BatchRecord]] | None = None) -> None:
    """Every question in order into ``items``: a row taken over (``done``), or retrieved, with the
    earlier batches that hold it (``owned``); raises KeyboardInterrupt once a stop is asked, the
    items so far kept."""
    for index, q in enumerate(questions):
        if q.id in done:
            items.append(_Item(index, q, done=done[q.id]))
            continue
        if loop.should_stop():
            raise KeyboardInterrupt("stop requested")
        item = _retrieve(loop, index, q)
        if loop.should_stop():  # a signal during this retrieval: its error may be the signal's
            raise KeyboardInterrupt("stop requested")
        if item.waiting and owned:
            item.sources.extend(owned.get(q.id, ()))
        items.append(item)


def _retrieve(loop: BenchmarkLoop, index: int, q: Question) -> _Item:
    item = _Item(index, q, partial=Partial(q))
    p = item.partial
    try:
        error = loop.retrieve(p)
        item.chunks = [s.chunk for s in p.retrieved]
        item.rank = M.calculate_rank(p.retrieved, q.needle_doc_ids)
        if error is not None:
            p.grade = GradeResult(None, None, 0.0, error, None)
            item.row = _annotated(loop, item, loop.row(p, item.rank, None))
    except (Exception, SystemExit) as err:
        loop.stop_if_signalled(err)
        item.row = loop.failed_row(p, err)
    return item


def _annotated(loop: BenchmarkLoop, item: _Item, row):
    if loop.annotate is None:
        return row
    return replace(row, **loop.annotate(item.q, item.chunks, row))


def _requests(loop: BenchmarkLoop, judge: BatchJudge, items: Sequence[_Item]) -> list[BatchRequest]:
    """The requests of ``items``; a question whose request cannot be built gets an
    ``internal_error`` row (contained, as in a sequential run) and sends nothing."""
    out = []
    for it in items:
        try:
            prompt = build_prompt(it.q.question, it.q.expected_answer, it.chunks)
            logger.trace("[retrieval-grader] prompt for {} ({}):\n{}", it.q.id, custom_id(it.index), prompt)
            out.extend([judge.request(custom_id(it.index, r, loop.repeats), it.q.id, prompt)
                        for r in range(loop.repeats)])
        except Exception as err:  # noqa: BLE001 - one question's failure stays in its row
            loop.stop_if_signalled(err)
            it.row = loop.failed_row(it.partial, err)
    return out


def _submit(loop: BenchmarkLoop, judge: BatchJudge, items: Sequence[_Item], *, retry: bool = False,
            only: dict[str, set[int]] | None = None, member: LoopJudge | None = None) -> list[BatchRecord]:
    """Submit the requests of ``items`` (``only``: question id → the repeats to send), split as
    needed. A failed create leaves its items' ``error`` set (fatal: the judge, ``member`` of a
    panel, becomes unusable)."""
    member = member or loop.judges.first
    by_id = {it.q.id: it for it in items}
    requests = [r for r in _requests(loop, judge, items)
                if only is None or repeat_of(r.custom_id) in only.get(r.question_id, ())]
    records = []
    for chunk in split_requests(requests, judge.max_requests, judge.max_bytes):
        if loop.should_stop():
            raise KeyboardInterrupt("stop requested")
        targets = list({r.question_id: by_id[r.question_id] for r in chunk}.values())
        if member.failure is not None:
            error = f"judge_unusable: not graded after an earlier {member.failure.kind} error"
        else:
            try:
                record = judge.submit(chunk, retry=retry)
            except JudgeError as err:
                logger.error("Batch not submitted ({}): {}", err.kind, err)
                if err.fatal:
                    member.failure = err
                error = f"{err.kind}: {err}"
            else:
                records.append(record)
                for it in targets:
                    if not it.sources or it.sources[-1] is not record:
                        it.sources.append(record)
                continue
        for it in targets:
            if not retry:
                it.error = error
    return records


def _matches_repeats(record: BatchRecord, repeats: int) -> bool:
    """Whether the custom ids of ``record`` are those of a run with ``repeats`` grades a question."""
    for cid in record.custom_ids:
        m = _CUSTOM_ID.fullmatch(cid)
        if m is None or (m.group(2) is None) != (repeats == 1) or repeat_of(cid) >= repeats:
            return False
    return True


def _adopt(judge: BatchJudge, previous: Sequence[object], wanted: set[str],
           repeats: int) -> dict[str, list[BatchRecord]]:
    """The batches an earlier run submitted that this run collects, in their submission order:
    for each question of ``wanted`` held by a batch not yet ``collected``, every batch holding it
    (an earlier, collected one included: with ``--judge-repeats`` it holds the other repeats).
    They are adopted (journaled at once, so an interruption during retrieval keeps them); the
    other earlier batches are carried over as they were. A batch whose custom ids are those of
    another ``--judge-repeats`` is not adopted: its questions are submitted anew. Returns question
    id → its adopted batches, in submission order."""
    records = [r for r in map(BatchRecord.from_json, previous) if r is not None]
    holders: dict[str, list[BatchRecord]] = {}
    for record in records:
        for qid in dict.fromkeys(record.custom_ids.values()):
            holders.setdefault(qid, []).append(record)
    chosen: set[str] = set()  # question ids collected from earlier batches
    for qid, held in holders.items():
        if qid not in wanted or all(r.status == "collected" for r in held):
            continue
        if all(_matches_repeats(r, repeats) for r in held):
            chosen.add(qid)
        else:
            logger.warning("[{}] an earlier batch holds it with another --judge-repeats: submitted anew", qid)
    adopted: dict[str, BatchRecord] = {}
    for record in records:  # submission order: the last batch holding a question is its latest submission
        if any(qid in chosen for qid in record.custom_ids.values()):
            adopted[record.id] = judge.adopt(record)
        else:
            judge.carry(record)
    return {qid: [adopted[r.id] for r in holders[qid]] for qid in chosen}


def _grade(loop: BenchmarkLoop, judge: BatchJudge, items: list[_Item], adopted: bool,
           settled: set[str] = frozenset(), member: LoopJudge | None = None) -> None:
    """Submit, collect, and re-submit transient failures once. ``settled``: question ids whose
    rows this run takes over (a batch holding only those and the ones collected is ``collected``)."""
    fresh = [it for it in items if not it.sources]
    first = loop.repeat_rule.first_calls(loop.repeats)  # --repeat-where uncertain: the first grades, alone
    logger.info("Retrieval done for {:,} question(s); {:,} grading request(s) go to the Message Batches API{}",
                len(items), len(fresh) * first,
                f" ({len(items) - len(fresh):,} collected from earlier batches)" if adopted else "")
    _round(loop, judge, items, fresh, {it.q.id: set(range(first)) for it in fresh}, settled, member)


def _round(loop: BenchmarkLoop, judge: BatchJudge, items: list[_Item], sent: list[_Item], only: dict[str, set[int]],
           settled: set[str] = frozenset(), member: LoopJudge | None = None) -> None:
    """Submit the repeats ``only`` names of ``sent``, collect every batch submitted (adopted ones too),
    and re-submit once the entries of ``items`` that failed transiently."""
    by_id = {it.q.id: it for it in items}
    member = member or loop.judges.first
    only = {q: {r for r in wanted if r not in by_id[q].entries} for q, wanted in only.items()}  # not collected yet
    _submit(loop, judge, [it for it in sent if only.get(it.q.id)], member=member, only=only)
    _collect(loop, judge, [r for r in judge.records if r.status == "submitted"], by_id, settled, member)
    # One more, smaller batch for the entries that failed transiently (never for a retry batch's).
    again: dict[str, set[int]] = {}
    for it in items:
        for r, entry in it.entries.items():
            if entry.transient and it.batch is not None and not it.batch.retry and r in only.get(it.q.id, (r,)):
                again.setdefault(it.q.id, set()).add(r)
    if again and member.failure is None:
        logger.info("Re-submitting {:,} request(s) whose batch entry failed transiently, in a second batch",
                    sum(len(v) for v in again.values()))
        retry_items = [by_id[qid] for qid in again]
        first = {it.q.id: dict(it.entries) for it in retry_items}
        records = _submit(loop, judge, retry_items, retry=True, only=again, member=member)
        _collect(loop, judge, records, by_id, settled, member)
        for it in retry_items:
            before = first[it.q.id]
            it.recovered = any(it.entries.get(r) is not None and it.entries[r].kind == "succeeded"
                               and before.get(r) is not None and before[r].transient for r in again[it.q.id])
            if it.recovered:
                loop.note_recovered()
        logger.info("Second batch: {} of {} question(s) recovered", sum(it.recovered for it in retry_items),
                    len(retry_items))


def _collect(loop: BenchmarkLoop, judge: BatchJudge, records: Sequence[BatchRecord],
             by_id: dict[str, _Item], settled: set[str] = frozenset(), member: LoopJudge | None = None) -> None:
    """Wait for each batch and give its entries to the questions it holds. A batch is then
    ``collected``, or ``partial`` when it holds questions this run neither grades nor takes over
    (a narrower ``--limit``/``--ids``): a later ``--resume`` collects those from it."""
    member = member or loop.judges.first
    for record in records:
        if member.failure is not None:
            break
        try:
            judge.wait(record)
            entries = judge.collect(record)
        except JudgeError as err:
            member.failure = err
            judge.mark(record, "failed")
            logger.error("judge unusable ({}): {}", err.kind, err)
            break
        unused = False
        for cid, qid in record.custom_ids.items():
            it = by_id.get(qid)
            if it is None or not any(s is record for s in it.sources):
                unused = unused or qid not in settled  # not graded here, and not taken over
                continue
            it.entries[repeat_of(cid)] = entries.get(cid) or BatchEntry("missing", record.id, cid)
            it.latency_ms = judge.elapsed_ms(it.sources[0])  # from its first submission
        record.status = "partial" if unused else "collected"


def first_grades(it: _Item) -> list[int | None] | None:
    """``[the grade of the first request of it]`` (None in it: no grade), for ``--repeat-where``; None
    when that request has no answer."""
    entry = it.entries.get(0)
    return None if entry is None else [entry.grade(prompt_variant(it.q.expected_answer), 0.0).grade]


def _final_row(loop: BenchmarkLoop, judge: BatchJudge, it: _Item):
    """The finished row of one question (a row taken over, complete, or graded from its entries)."""
    if it.done is not None:
        return it.done
    if it.row is not None:
        return it.row
    p = it.partial
    try:
        variant = prompt_variant(it.q.expected_answer)
        if it.entries:
            p.grades = [it.entries[r].grade(variant, it.latency_ms) for r in sorted(it.entries)]
        else:
            error = it.error or (f"judge_unusable: not graded after an earlier {loop.judge_failure.kind} error"
                                 if loop.judge_failure is not None and it.batch is None else _pending_error(it))
            p.grades = [GradeResult(None, None, 0.0, error, None, variant)]
        for g in p.grades:
            cost = loop.judge_usage.add(g.reply)
            if cost is not None:
                p.cost = (p.cost or 0.0) + cost
        p.grade = combine_grades(p.grades)
        row = loop.row(p, it.rank, None)
        if it.recovered and row.llm_grade is not None:
            row = replace(row, recovered=True)
        return _annotated(loop, it, row)
    except (Exception, SystemExit) as err:  # its grades are in hand: kept in the row, even after a signal
        return loop.failed_row(p, err)


def _write_unfinished(loop: BenchmarkLoop, judge: BatchJudge, items: Sequence[_Item], n: int) -> None:
    """After an interruption: rows taken over and complete rows are finished as usual (journal,
    console line); a question still waiting for its grade goes into the results only, as
    ``batch_pending``."""
    for it in items:
        graded = (len(it.entries) == (getattr(it.partial, "repeats_asked", None) or loop.repeats) and bool(it.sources)
                  and all(s.status in ("collected", "partial") for s in it.sources))
        if not it.waiting or graded:  # complete, or graded by batches all collected, not yet written
            loop.finish(it.index + 1, n, it.done if it.done is not None else it.row if it.row is not None
                         else _final_row(loop, judge, it))
            continue
        p = it.partial
        try:
            p.grade = GradeResult(None, None, 0.0, _pending_error(it), None, prompt_variant(it.q.expected_answer))
            loop.keep(loop.row(p, it.rank, None))
        except Exception as err:  # noqa: BLE001 - a row that cannot be built is left out
            logger.debug("[{}] pending row not written: {}: {}", it.q.id, type(err).__name__, err)
