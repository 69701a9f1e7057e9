"""What an audit would cost (``audit-judge --estimate``): the calls of :func:`components.audit.judge_audit.run_audit`
priced without being made."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.audit.attacks import row_chunks
from components.audit.judge_audit import Plan, calls_per_row
from components.audit.judges import AuditedJudge
from components.judges.retrieval_grader import build_prompt
from components.run.estimate import ASSUMED_OUTPUT_TOKENS, approximate_tokens


@dataclass(frozen=True)
class AuditEstimate:
    """What an audit would send each judge: calls, tokens (input approximated: characters / 4; output
    assumed as a run's grading call), and dollars (None: no price known; 0 for a judge that calls no model)."""

    judge: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None

    def line(self) -> str:
        if not self.calls:
            return f"  {self.judge}: calls no model and costs nothing"
        cost = "unknown (no price for the model)" if self.usd is None else f"${self.usd:.4f}"
        return (f"  {self.judge}: {self.calls} calls, ~{self.input_tokens:,} input and ~{self.output_tokens:,} "
                f"output tokens: {cost}")


def estimate_audit(plan: Plan, judges: Sequence[AuditedJudge]) -> list[AuditEstimate]:
    """The price of :func:`run_audit`'s calls, without making them (every call assumed to succeed)."""
    prompts = []
    for row, attacked in zip(plan.rows, plan.attacked, strict=True):
        prompts.append(build_prompt(row.question, row.expected_answer, row_chunks(row)))
        prompts += [build_prompt(a.question, row.expected_answer, a.chunks) for a in attacked.values() if a]
    tokens = sum(approximate_tokens(p) for p in prompts)
    out = []
    for judge in judges:
        setup = judge.judging.setup
        if not setup.calls_models:
            out.append(AuditEstimate(judge.name, 0, 0, 0, 0.0))
            continue
        output = ASSUMED_OUTPUT_TOKENS["grading"] * len(prompts)
        usd = setup.judge_provider.prices.cost_usd(setup.judge.model, tokens, output)
        out.append(AuditEstimate(judge.name, len(prompts), tokens, output, usd))
    return out


def estimate_table(plan: Plan, estimates: Sequence[AuditEstimate]) -> str:
    total = [e.usd for e in estimates]
    money = "unknown" if any(u is None for u in total) else f"${sum(total):.4f}"
    lines = [f"Audit estimate: {len(plan.rows)} row(s) of {plan.source}, {len(plan.variants)} attack variant(s): "
             f"at most {calls_per_row(plan)} calls per row and judge (1 control + 1 per attack that applies)",
             *(e.line() for e in estimates), f"  total: {money}"]
    return "\n".join(lines) + "\n"
