"""``--estimate`` and ``--max-cost``'s estimate of a panel run (``--judges``): each judge priced, and the total.

The requests are built once (:func:`components.run.estimate.requests`: retrieval runs, nothing is
sent) and priced for each judge with its own provider, model and price table
(:func:`components.run.estimate.estimate`): every judge sends every grading request (with its
``--judge-repeats``); chunk relevance and the query rewriter are the first judge's alone. The
total is the sum over the judges; it is unknown when a judge with calls has no price.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from components.run.estimate import KNOWN_ANSWERS, CostEstimate, RoleEstimate, estimate, requests


@dataclass
class PanelEstimate:
    strategy: str
    questions: int
    judges: list[tuple[str, CostEstimate]] = field(default_factory=list)

    @property
    def roles(self) -> list[RoleEstimate]:
        return [r for _, est in self.judges for r in est.roles]

    @property
    def usd(self) -> float | None:
        costs = [est.usd for _, est in self.judges]
        return None if any(c is None for c in costs) else sum(costs)

    @property
    def usd_batch(self) -> float | None:
        costs = [est.usd_batch for _, est in self.judges]
        return None if any(c is None for c in costs) else sum(costs)

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "questions": self.questions, "usd": self.usd, "usd_batch": self.usd_batch,
                "judges": [{"name": name, **est.to_json()} for name, est in self.judges]}

    def table(self) -> str:
        parts = [f"Panel of {len(self.judges)} judges: each one's estimate, then the total\n"]
        for name, est in self.judges:
            parts.append(f"[judge {name}] " + est.table())

        def money(value: float | None) -> str:
            return "unknown" if value is None else f"${value:.4f}"
        calls = sum(r.calls for _, est in self.judges if not est.free for r in est.roles)  # a free judge calls no model
        batch = "—" if self.usd_batch is None and self.usd is not None else money(self.usd_batch)
        parts.append(f"Panel total: {calls:,} calls, {money(self.usd)} sequential, {batch} with --judge-batch\n")
        return "".join(parts)


def estimate_panel(retriever, questions: Sequence, k: int, judging, *, strategy: str = "?", repeats: int = 1,
                   relevance: bool = False, rewrites: bool = False, known_answers: int | None = None) -> PanelEstimate:
    """The :class:`PanelEstimate` of running ``questions`` with the panel of ``judging`` (module docstring)."""
    first = judging.members[0].setup
    wanted = requests(retriever, questions, k, repeats=repeats, relevance=relevance,
                      rewrites=rewrites and first.rewriter is not None, known_answers=known_answers)
    # every judge grades and is checked on the known answers; the first alone rates chunks and rewrites
    grading_only = {role: (prompts if role in ("grading", KNOWN_ANSWERS) else {}) for role, prompts in wanted.items()}
    out = PanelEstimate(strategy, len(questions))
    for i, (member, judge) in enumerate(zip(judging.settings.panel, judging.members, strict=True)):
        out.judges.append((member.name, estimate(retriever, questions, k, judge.setup, strategy=strategy,
                                                 repeats=repeats, wanted=wanted if i == 0 else grading_only)))
    return out
