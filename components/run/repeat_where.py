"""``--repeat-where``: which questions get the extra grades of ``--judge-repeats N``.

* ``all`` (the default): every question is graded N times, as ``--judge-repeats`` always did.
* ``uncertain``: every question is graded once; the other N − 1 grades are asked only for a question
  whose first grade is **uncertain**:

  - **near a pass mark**: the first grade g lies within one grade (:data:`NEAR`) of the grade that
    reaches a pass mark m at the question's rank, ``|g − m / weight(rank)| ≤ 1``. At rank 1 (weight 1)
    that is the grades m − 1 to m + 1 (6, 7 and 8 for the default mark 7); at rank 2-3 (0.95) the
    grades 7 and 8; at rank 4-5 (0.85) 8 and 9; a needle not retrieved (0.6) never reaches 7, so no
    grade is near it. The pass marks are :data:`utils.metrics.PASS_MARK` (7) and the mark of every
    pass rate ``--targets`` names (``pass_rate_8``: 8, ``pass_rate_6_5``: 6.5);
  - **a panel that disagrees** (``--judges``): the judges' first grades differ by 2 or more
    (:data:`DISAGREE`). A panel's first grade is the aggregate of the judges' first grades (median or
    mean, rounded half up, as ``llm_grade``), and it is near a pass mark as above. Judges one grade
    apart on both sides of a pass mark are repeated too: their aggregate lies between their grades,
    so it is near the mark;
  - **no first grade**: the first call brought no grade (a transient failure): nothing says the
    question is far from a mark, so its repeats are made as under ``all``.

  In a panel every judge grades once, the rule looks at the grades, then every judge makes its other
  N − 1 grades of an uncertain question (under ``all`` each judge makes its N grades in turn, as before).

With ``--judge-batch`` (:mod:`components.run.calls.judge_batch`, :mod:`components.run.panel.batch`) the
first grades go in one batch per judge; once collected, :func:`more_repeats` names the repeats of the
uncertain questions, which go in a second batch per judge (a ``--resume`` collects both again without
a new create).

Each row of an ``uncertain`` run records ``judge_repeats``: the grades asked of the judge (of each
judge of a panel) for that question, 1 or N; ``run.judge.repeat_where`` records the rule
(:meth:`RepeatRule.to_json`). ``--estimate`` and ``--max-cost``'s check price the worst case (every
question repeated). ``--resume`` continues with the same rule (a different one is refused) and keeps
the rows it finished as they are.

**The judge's noise.** With ``uncertain`` the two-level intervals and ``judge_consistency`` see the
judge's grade-to-grade spread only on the repeated questions (the others count with their one grade,
as if the judge never wavered there), and those are chosen by their first grade: the figures are
conditional on the first grade being near a pass mark (or the panel disagreeing), and are not an
estimate of the judge's noise over the whole set. ``judge_consistency`` then says so
(``repeat_where: "uncertain"``, ``graded``: the graded questions it was chosen from).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from components.run.panel.grading import MEDIAN, aggregate, round_half_up
from utils import metrics as M
from utils.console import escape_control
from utils.errors import InputError

ALL, UNCERTAIN = "all", "uncertain"
RULES = (ALL, UNCERTAIN)
OPTION = "--repeat-where"
NEAR = 1  # a first grade within this many grades of the grade that reaches a pass mark is near it
DISAGREE = 2  # a panel whose judges' first grades differ by at least this much disagrees
_PASS_MARKS = {f"pass_rate_{mark:g}".replace(".", "_"): mark for mark in M.PASS_THRESHOLDS}  # pass_rate_6_5: 6.5


@dataclass(frozen=True)
class RepeatRule:
    """Where the repeats of ``--judge-repeats`` go (module docstring)."""

    where: str = ALL
    marks: tuple[float, ...] = (M.PASS_MARK,)
    method: str = MEDIAN  # a panel's aggregate of its judges' first grades

    @property
    def selective(self) -> bool:
        """Whether the rule decides per question (``uncertain``): the first grade is made alone."""
        return self.where == UNCERTAIN

    def first_calls(self, repeats: int) -> int:
        """The grades each judge makes before the rule looks: ``repeats`` under ``all``, else 1."""
        return 1 if self.selective else repeats

    def wants_more(self, first: Sequence[int | None], rank: int | None) -> bool:
        """Whether a question whose judges' first grades are ``first`` (one per judge; None: no grade)
        at needle rank ``rank`` gets its other repeats (module docstring)."""
        graded = [g for g in first if g is not None]
        if not graded:
            return True
        if max(graded) - min(graded) >= DISAGREE:
            return True
        return self.near_mark(round_half_up(aggregate(graded, self.method)), rank)

    def near_mark(self, grade: float, rank: int | None) -> bool:
        """Whether ``grade`` at ``rank`` lies within :data:`NEAR` of the grade that reaches a pass mark
        (a mark that no grade reaches at that rank, 10 × the rank's weight below it, is never near)."""
        weight = M.rank_weight(rank)
        return any(abs(grade - mark / weight) <= NEAR + 1e-9 for mark in self.marks if 10 * weight >= mark)

    def to_json(self) -> dict | None:
        """``run.judge.repeat_where``: the rule of an ``uncertain`` run; None under ``all``."""
        if not self.selective:
            return None
        return {"rule": self.where, "pass_marks": list(self.marks), "near": NEAR, "disagree": DISAGREE}


def more_repeats(loop, items: Sequence, first: Callable[[Any], Sequence[int | None]]) -> dict[str, set[int]]:
    """``--judge-batch``: once the first grades are collected, question id → the repeats (1 to N − 1)
    still to send for each of ``items`` (``it.q``, ``it.rank``, ``it.partial``) whose judges' first
    grades ``first(it)`` the rule finds uncertain; each decided item's row records its repeats. Under
    ``all`` (its repeats already sent) nothing. An item whose first request was never answered (its
    batch not created or not collected) is not decided."""
    rule = loop.repeat_rule
    if not rule.selective:
        return {}
    more = {}
    for it in items:
        grades = first(it)
        if grades is None:
            continue
        wanted = rule.wants_more(grades, it.rank)
        it.partial.repeats_asked = loop.repeats if wanted else 1
        if wanted:
            more[it.q.id] = set(range(1, loop.repeats))
    return more


def pass_marks(targets: Iterable = ()) -> tuple[float, ...]:
    """The pass marks a run asks for: :data:`~utils.metrics.PASS_MARK` and the mark of each pass rate
    among ``targets`` (``--targets``' :class:`~components.analysis.targets.Target` items), sorted."""
    named = {_PASS_MARKS[t.metric.key] for t in targets if t.metric.key in _PASS_MARKS}
    return tuple(sorted({M.PASS_MARK, *named}))


def repeat_rule(where: str | None, repeats: int, marks: Sequence[float] = (M.PASS_MARK,),
                method: str = MEDIAN) -> RepeatRule:
    """The :class:`RepeatRule` of ``--repeat-where where`` with ``--judge-repeats repeats``; raises
    :class:`InputError` for an unknown rule, or ``uncertain`` without repeats to place."""
    where = ALL if where is None else where
    if where not in RULES:
        raise InputError(f"{OPTION} {where!r}: use {' or '.join(RULES)}")
    if where == UNCERTAIN and repeats < 2:
        raise InputError(f"{OPTION} {UNCERTAIN} places the extra grades of --judge-repeats: add --judge-repeats N "
                         f"with N of 2 or more, or leave {OPTION} out")
    return RepeatRule(where, tuple(sorted(set(marks))), method)


def recorded_rule(judge: object) -> str:
    """The rule a results file's ``run.judge`` recorded: ``all`` when it recorded none."""
    rule = judge.get("repeat_where") if isinstance(judge, dict) else None
    return rule.get("rule", ALL) if isinstance(rule, dict) else ALL


def check_resumed(previous: dict, repeats: int, path: object) -> None:
    """``--resume`` of an ``uncertain`` run: its rows hold 1 or N grades, so the N it was run with is
    its recorded ``repeats``; raise :class:`InputError` when this run asks another."""
    recorded = previous.get("repeats")
    if isinstance(recorded, int) and recorded != repeats:
        raise InputError(f"--resume {escape_control(str(path))}: the run you continue asked --judge-repeats "
                         f"{recorded} with {OPTION} {UNCERTAIN}, this one asks --judge-repeats {repeats}: run with "
                         f"--judge-repeats {recorded}, "
                         "or start a new run without --resume")


def estimate_note(where: str, repeats: int) -> str:
    """What ``--estimate`` says of an ``uncertain`` run's repeats (it prices the worst case); "" under ``all``."""
    if where != UNCERTAIN:
        return ""
    return (f"{OPTION} {UNCERTAIN}: priced at the worst case, every question graded {repeats} times; the run repeats "
            "only the questions whose first grade is near a pass mark (or whose judges disagree), so it costs less\n")
