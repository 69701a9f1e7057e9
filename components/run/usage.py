"""What the LLM calls of one role (the judge, one judge of a panel, the query rewriter) used: counts,
tokens and dollars, as ``run.usage`` and a panel's ``run.judge.judges[].usage`` record them."""

from __future__ import annotations

from dataclasses import dataclass, field

from components.judges.llm import LLMReply


@dataclass
class Usage:
    """LLM calls of one role (judge or rewriter): counts, tokens and dollars."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cache_creation_input_tokens: int = 0
    cache_read_input_tokens: int = 0
    cost_usd: float | None = 0.0  # None once a call had no known price
    models: list[str] = field(default_factory=list)  # the model ids the replies named
    batch: bool = False  # the calls went through a batch API (priced as such by the provider)
    unreported: int = 0  # calls whose reply named no token usage (their tokens count 0, the cost is unknown)

    def add(self, reply: LLMReply | None) -> float | None:
        """Count ``reply``; return its cost as its provider priced it (None: unknown price, or no reply)."""
        if reply is None:
            return None
        self.calls += 1
        if reply.input_tokens is None and reply.output_tokens is None:
            self.unreported += 1
        for name in ("input_tokens", "output_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"):
            setattr(self, name, getattr(self, name) + (getattr(reply, name) or 0))
        if reply.model and reply.model not in self.models:
            self.models.append(reply.model)
        cost = reply.cost_usd
        self.cost_usd = None if cost is None or self.cost_usd is None else self.cost_usd + cost
        return cost

    def to_json(self) -> dict:
        return dict(self.__dict__)
