"""The record of a judge's signal check (``judge_signal`` in a results file) and what it says in words.

It lives on the ground floor so that the console summary, the report and ``compare`` can read it; the
check itself (the grade gap, its interval, the verdict rule) is :mod:`components.analysis.judge_signal`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from utils.records.json_record import JsonRecord
from utils.records.typecheck import EXTRA, record

MIN_GROUP = 5  # questions in each group (needle in the top k, not) below which no verdict is decided
GAP = 1.0  # grade points: the gap a judge that tells right from wrong chunks shows at least
INFORMATIVE, UNINFORMATIVE, INCONCLUSIVE = "informative", "uninformative", "inconclusive"
VERDICTS = (INFORMATIVE, UNINFORMATIVE, INCONCLUSIVE)
METHOD = "welch-t"
FIELD = "judge_signal"  # its name in run.judge and in a panel's per_judge
DOCS = 'docs/judges.md, "Does the judge tell right from wrong?"'
_FIX = "pass a results file written by benchmark.py"


@dataclass(frozen=True)
class JudgeSignal(JsonRecord):
    """One judge's signal check (:mod:`components.analysis.judge_signal`)."""

    verdict: str  # informative | uninformative | inconclusive
    gap: float | None  # mean grade, needle in the top k − not; null when a group is empty
    ci95: list[float] | None  # Welch's 95% interval of the gap; null below 2 questions in a group
    n_found: int  # graded questions whose needle was in the top k
    n_missed: int  # graded questions whose needle was not
    mean_found: float | None = None
    mean_missed: float | None = None
    top_grade: int | None = None  # the most common grade (the lowest of those tied)
    top_grade_share: float | None = None  # its share of the graded questions, 0-1
    spearman_rr: float | None = None  # Spearman's ρ of grade with 1/rank (0: not found); null: one side constant
    k: int = 5
    method: str = METHOD

    @classmethod
    def from_json(cls, data: object, where: str = FIELD, fix: str = _FIX) -> JudgeSignal:
        return record(cls, data, where, fix, extra=EXTRA)

    def figures(self) -> str:
        """``grade gap +0.00 [+0.00, +0.00] (needle in the top 5: 10 question(s), not: 10); 100% of grades are 8``"""
        gap = "n/a" if self.gap is None else f"{self.gap:+.2f}"
        ci = f" [{self.ci95[0]:+.2f}, {self.ci95[1]:+.2f}]" if self.ci95 else ""
        parts = [f"grade gap {gap}{ci} (needle in the top {self.k}: {self.n_found} question(s), not: {self.n_missed})"]
        if self.top_grade is not None and self.top_grade_share is not None:
            parts.append(f"{100 * self.top_grade_share:.0f}% of grades are {self.top_grade}")
        if self.spearman_rr is not None:
            parts.append(f"Spearman ρ(grade, 1/rank) {self.spearman_rr:+.2f}")
        return "; ".join(parts)

    def why(self) -> str:
        """Why the verdict is what it is, in words."""
        if min(self.n_found, self.n_missed) < MIN_GROUP:
            few = "had" if self.n_found < MIN_GROUP else "missed"
            return f"fewer than {MIN_GROUP} graded questions {few} their needle in the top {self.k}"
        if self.verdict == UNINFORMATIVE:
            return f"its grades are not {GAP:g} point higher where the needle was retrieved than where it was not"
        if self.verdict == INFORMATIVE:
            return f"its grades are at least {GAP:g} point higher where the needle was retrieved"
        return f"the gap's interval holds both less and more than {GAP:g} point"

    def line(self) -> str:
        """The summary's line: the verdict, then the figures."""
        return f"{self.verdict}: {self.figures()}"

    def warning(self, judge: str) -> str | None:
        """The WARNING line of an uninformative judge (None otherwise); ``judge`` names it (the caller escapes the
        line for a console)."""
        if self.verdict != UNINFORMATIVE:
            return None
        return (f"WARNING: {judge} is uninformative: {self.why()} ({self.figures()}): avg grade, avg total "
                f"and the pass rates measure the judge, not the retrieval ({DOCS})")


def signal_of(judge: object, where: str = f"run.judge.{FIELD}") -> JudgeSignal | None:
    """The check ``run.judge`` holds (a :class:`utils.results.JudgeInfo`, in its details, or its JSON object); None
    when it holds none (a file written before the check)."""
    details = getattr(judge, "details", judge)
    data = details.get(FIELD) if isinstance(details, Mapping) else None
    return JudgeSignal.from_json(data, where) if isinstance(data, Mapping) else None


def member_signals(panel: object) -> dict[str, JudgeSignal]:
    """Each judge's check in a panel run's ``panel`` section (:class:`utils.records.sections.PanelSection`: the
    judges that have one); {} without a panel."""
    per = getattr(panel, "per_judge", None) or {}
    return {str(name): figures.judge_signal for name, figures in per.items()
            if getattr(figures, FIELD, None) is not None}


def run_judge_name(judge: object, panel: object = None) -> str:
    """How a warning names the run's judge: ``the judge <provider> <model>``, or the panel's aggregate."""
    if panel is not None:
        return "the panel's aggregate grade"
    return f"the judge {getattr(judge, 'provider', '?')} {getattr(judge, 'model', '?')}"
