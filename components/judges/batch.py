"""What a judge provider's batch API and the run's ``--judge-batch`` engine
(:mod:`components.run.calls.judge_batch`) exchange: the transport's protocol (:class:`BatchAPI`), a
batch's status, one request's result (:class:`BatchEntry`), a failed create, and the bounded reading
of a batch's results lines (:func:`result_lines`).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

from components.judges.llm import LLMReply
from components.judges.retrieval_grader import GradeResult, grade_reply
from utils.errors import JudgeError

# A batch's results are read up to a byte budget of (2 x requests + this) line caps
# (see components.run.calls.judge_batch.MAX_UNMATCHED_LINES for the lines that match no request).
RESULTS_BUDGET_SLACK_LINES = 10


@dataclass(frozen=True)
class BatchEntry:
    """One request's result in a batch."""

    kind: str  # "succeeded" | "errored" | "expired" | "canceled" | "missing"
    batch_id: str
    custom_id: str
    reply: LLMReply | None = None
    error_type: str | None = None
    message: str | None = None
    transient: bool = False  # errored by a transient error: worth re-submitting once

    def grade(self, variant: str, latency_ms: float) -> GradeResult:
        """The :class:`GradeResult` this entry gives: a succeeded one is graded as a sequential
        reply; any other kind is a null grade with the reason."""
        if self.kind == "succeeded" and self.reply is not None:
            return grade_reply(self.reply, variant, latency_ms)
        if self.kind == "errored":
            error = f"batch_errored: {self.error_type}: {self.message}"
        elif self.kind == "expired":
            error = f"batch_expired: batch {self.batch_id} ended (24 h) before this request was processed"
        elif self.kind == "canceled":
            error = f"batch_canceled: batch {self.batch_id} was canceled before this request was processed"
        else:
            error = f"batch_errored: no result for this request in the results of batch {self.batch_id}"
        return GradeResult(None, None, latency_ms, error, None, variant)


@dataclass(frozen=True)
class BatchStatus:
    """A batch as the provider's batch API reports it."""

    id: str
    processing_status: str | None
    request_counts: dict
    ended: bool


class CreateFailed(JudgeError):
    """A batch create that failed; ``retryable`` when the API answered that nothing was created
    (it may be tried again). One that got no answer is not retryable: it may have created the batch."""

    def __init__(self, kind: str, message: str, *, fatal: bool, retry_after: float | None = None,
                 retryable: bool = False) -> None:
        super().__init__(kind, message, fatal=fatal, retry_after=retry_after)
        self.retryable = retryable


class BatchAPI(Protocol):
    """A judge provider's batch transport (:meth:`Provider.batch_api`)."""

    model: str
    max_line_bytes: int  # a results line longer than this is skipped (read in pieces and discarded)

    def request(self, custom_id: str, prompt: str) -> dict:
        """One request of the batch envelope: the same request as a sequential call."""

    def create(self, requests: list[dict]) -> BatchStatus:
        """Create a batch; raises :class:`CreateFailed`."""

    def retrieve(self, batch_id: str) -> BatchStatus:
        """Its status now; raises :class:`JudgeError`."""

    def results(self, batch_id: str, expected: int) -> Iterator[bytes | Skipped]:
        """Its raw results lines (:func:`result_lines`: a :class:`Skipped` stands for a line not
        delivered); raises :class:`JudgeError` when they cannot be read."""

    def entry(self, batch_id: str, line: object) -> BatchEntry | None:
        """One decoded results line as a :class:`BatchEntry`; None when it names no request."""


@dataclass(frozen=True)
class Skipped:
    """A results line :func:`result_lines` does not deliver: ``over_line_cap`` (its bytes were
    discarded), or ``budget`` (the byte budget is spent: the last item)."""

    reason: str


def result_lines(chunks: Iterator[bytes], cap: int, budget: int | None = None) -> Iterator[bytes | Skipped]:
    """The non-empty lines of a byte stream, in order. A line over ``cap`` bytes is read in pieces
    and discarded (never held whole): ``Skipped("over_line_cap")`` stands in its place. Past
    ``budget`` bytes read, ``Skipped("budget")`` is given and the reading stops."""
    buf = bytearray()
    discarding = False  # inside a line over the cap
    total = 0
    for chunk in chunks:
        total += len(chunk)
        if budget is not None and total > budget:
            yield Skipped("budget")
            return
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end == -1 else chunk[start:end]
            if not discarding and len(buf) + len(piece) > cap:
                discarding = True
                buf.clear()
            if not discarding:
                buf += piece
            if end == -1:
                break
            if discarding:
                discarding = False
                yield Skipped("over_line_cap")
            elif buf.strip():
                yield bytes(buf)
            buf.clear()
            start = end + 1
    if discarding:
        yield Skipped("over_line_cap")
    elif buf.strip():
        yield bytes(buf)
