"""What every LLM call returns, whichever provider made it: :class:`LLMReply` and the :class:`LLM` protocol.

The grader, the chunk-relevance judge and the query rewriter are given an :class:`LLM` (a client
object: a provider's model client, or a scripted one in tests) and never name a vendor. Every
failure of a call is a :class:`utils.errors.JudgeError` whose ``kind`` is one of the taxonomy's
tokens; :data:`TRANSIENT_KINDS` cost only their question (the run goes on), and :data:`RETRIED_KINDS`,
all of them but a timeout, are the ones worth another attempt later (the run's retry pass): a call that
ran out of time would most likely run out of it again, at the full price of the timeout each time.

A row's ``grade_error`` starts with the kind: :data:`CONTEXT_WINDOW` (the prompt did not fit the
model's context window: that question only) and :data:`TRUNCATED` (the reply was cut at its output
cap: never a grade, whatever the cut text holds) are among them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from utils.pricing import Price

TRANSIENT_KINDS = frozenset({"timeout", "rate_limit", "overloaded", "server_error", "connection",
                             "connection_refused"})
# what the run's retry pass calls again: rate limits (after their retry-after), an overloaded or failing
# server (5xx), a connection cut or refused; never a timeout (the same call would wait as long again)
RETRIED_KINDS = TRANSIENT_KINDS - {"timeout"}
CONTEXT_WINDOW = "context_window_exceeded"  # the prompt (and the reply's cap) passed the model's window
TRUNCATED = "truncated"  # the reply was cut at the output cap (finish_reason length, stop_reason max_tokens)


@dataclass(frozen=True)
class LLMReply:
    """One answered call: the reply's text, and what the API said about the call."""

    text: str
    stop_reason: str | None = None
    model: str | None = None  # the model id the reply names
    request_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None
    cost_usd: float | None = None  # priced by the provider; None: no price known (or not priced)
    # what the server says is left of its rate limits, when it says: requests_remaining,
    # tokens_remaining_calls (its tokens left, in calls the size of this one), reset_s
    rate_limit: dict | None = None


@dataclass(frozen=True)
class OutputCap:
    """The output-token cap a request sends: the parameter as the API names it, and its value."""

    parameter: str  # "max_tokens" | "max_completion_tokens"
    tokens: int


class LLM(Protocol):
    """A model to call, its request settings already chosen.

    ``complete`` sends ``prompt`` as one user message and returns the :class:`LLMReply`; every
    failure raises :class:`utils.errors.JudgeError` (``fatal`` or transient). Tests pass scripted
    objects with this shape.

    What ``--max-cost`` reads to bound a call before it is made (:mod:`components.run.calls.budget`):
    ``output_cap``, the :class:`OutputCap` the next request sends, and ``price``, the model's
    :class:`~utils.pricing.Price` (None when the provider's price table has none). A client that has
    neither can be called, but not under ``--max-cost``."""

    model: str  # the model id requested
    output_cap: OutputCap | None
    price: Price | None

    def complete(self, prompt: str) -> LLMReply: ...


def clean_text(text: str) -> str:
    """Lone surrogates (a reply may carry ``"\\ud800"``) become U+FFFD, so any text can be written."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def non_negative_int(value: object) -> int | None:
    """A token count as the API gave it, or None when it is not a count."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None
