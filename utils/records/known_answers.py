"""The records of the known-answers check (``run.known_answers`` in a results file) and its line in words.

The check itself (which questions, the two grades, the rule) is :mod:`components.run.known_answers`; the records
live on the ground floor so that the results' schema and readers can name them.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

DISCRIMINATES, BLIND, INCONCLUSIVE = "discriminates", "blind", "inconclusive"
VERDICTS = (DISCRIMINATES, BLIND, INCONCLUSIVE)
METHOD = "paired t"
FIELD = "known_answers"  # its name in the results' run record


@dataclass(frozen=True)
class KnownAnswer:
    """One question's two grades (None: the call gave no grade; ``error`` says why)."""

    question_id: str
    needle_grade: int | None
    other_grade: int | None
    needle_chunks: list[str] = field(default_factory=list)  # chunk ids shown
    other_chunks: list[str] = field(default_factory=list)
    error: str | None = None


@dataclass(frozen=True)
class KnownAnswers:
    """One judge's known-answers check (module docstring)."""

    verdict: str  # discriminates | blind | inconclusive
    questions: int  # N asked for
    pairs: int  # questions both calls graded
    separation: float | None  # mean(needle grade − other grade) over the pairs
    ci95: list[float] | None  # its 95% interval (one-sample t); null below 2 pairs
    auc: float | None  # P(a needle grade > an other grade), ties half
    mean_needle: float | None
    mean_other: float | None
    calls: int  # grading calls made (2 per question)
    rows: list[KnownAnswer] = field(default_factory=list)
    judge: str | None = None  # a panel's judge name; null for the run's one judge
    method: str = METHOD

    def to_json(self) -> dict:
        return asdict(self)

    def line(self) -> str:
        """What it graded right and wrong, in one line."""
        who = f"judge {self.judge}" if self.judge else "judge"
        if not self.pairs:
            return f"known answers: the {who} graded none of the {self.questions} pair(s): {self.verdict}"
        ci = f" [95% CI {self.ci95[0]:+.2f}, {self.ci95[1]:+.2f}]" if self.ci95 else ""
        shown_auc = "n/a" if self.auc is None else f"{self.auc:.2f}"
        return (f"known answers: on {self.pairs} question(s) the {who} graded the needle's chunks "
                f"{self.mean_needle:.1f} and other documents' chunks {self.mean_other:.1f} on average: separation "
                f"{self.separation:+.2f}{ci}, AUC {shown_auc}: {self.verdict}")


def known_answers_lines(record: object) -> list[str]:
    """The summary's lines of ``run.known_answers`` (one judge's check, or a panel's: a line per judge); [] without
    one. The verdict first, then the figures."""
    if not isinstance(record, Mapping):
        return []
    checks = record.get("judges") if isinstance(record.get("judges"), Mapping) else {None: record}
    lines = []
    for name, check in checks.items():
        if not isinstance(check, Mapping):
            continue
        ci, auc = check.get("ci95"), check.get("auc")
        separation = check.get("separation")
        figures = "no pair graded" if separation is None else (
            f"separation {separation:+.2f}" + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
            + (f", AUC {auc:.2f}" if auc is not None else "") + f" over {check.get('pairs')} question(s)")
        lines.append((f"{name}: " if name is not None else "") + f"{check.get('verdict')}: {figures}")
    return lines
