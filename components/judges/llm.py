"""What every LLM call returns, whichever provider made it: :class:`LLMReply` and the :class:`LLM` protocol.

The grader, the chunk-relevance judge and the query rewriter are given an :class:`LLM` (a client
object: a provider's model client, or a scripted one in tests) and never name a vendor. Every
failure of a call is a :class:`utils.errors.JudgeError` whose ``kind`` is one of the taxonomy's
tokens; :data:`TRANSIENT_KINDS` are the ones worth another attempt later.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from utils.pricing import Price

TRANSIENT_KINDS = frozenset({"timeout", "rate_limit", "overloaded", "server_error", "connection"})


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
