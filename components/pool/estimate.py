"""What a pool's calls would cost (``pool --estimate``, and the check before ``--max-cost``): the
calls left after the judgment store served what it holds, each prompt built as it would be sent,
input tokens approximated (characters / 4), the output assumed as a run's relevance call, priced
from the judge's provider's price table. A judge that calls no model costs nothing."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.pool.judging import JudgePlan
from components.run.estimate import ASSUMED_OUTPUT_TOKENS, approximate_tokens


@dataclass(frozen=True)
class PoolEstimate:
    judge: str
    served: int  # judgments the store serves
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None  # None: no price known for the model

    def line(self) -> str:
        head = f"  {self.judge}: {self.served} judgment(s) from the store"
        if not self.calls:
            return head + ", no call"
        cost = "unknown (no price for the model)" if self.usd is None else f"${self.usd:.4f}"
        return (f"{head}, {self.calls} call(s), ~{self.input_tokens:,} input and ~{self.output_tokens:,} output "
                f"tokens: {cost}")


def estimate_pool(plans: Sequence[JudgePlan]) -> list[PoolEstimate]:
    out = []
    for plan in plans:
        judge = plan.judge
        served = len(plan.served)
        if not judge.calls_models:
            out.append(PoolEstimate(judge.name, served, 0, 0, 0, 0.0))
            continue
        tokens = sum(approximate_tokens(c.prompt()) for c in plan.calls)
        output = ASSUMED_OUTPUT_TOKENS["relevance"] * len(plan.calls)
        usd = judge.setup.judge_provider.prices.cost_usd(judge.setup.judge.model, tokens, output) if plan.calls else 0.0
        out.append(PoolEstimate(judge.name, served, len(plan.calls), tokens, output, usd))
    return out


def total_usd(estimates: Sequence[PoolEstimate]) -> float | None:
    values = [e.usd for e in estimates]
    return None if any(v is None for v in values) else sum(values)


def estimate_table(pairs: int, estimates: Sequence[PoolEstimate]) -> str:
    total = total_usd(estimates)
    lines = [f"Pool estimate: {pairs} pair(s)", *(e.line() for e in estimates),
             f"  total: {'unknown' if total is None else f'${total:.4f}'}"]
    return "\n".join(lines) + "\n"
