"""What an attack did to a judge's grades, and the verdict: paired differences, attack minus control.

For each attack, over the sampled rows with both a control grade and an attacked grade (the
**pairs**):

* ``delta``: the mean grade change, attack minus control, with its paired 95% percentile bootstrap
  interval (:func:`components.stats.statistics.paired_bootstrap_ci`: questions resampled, the
  project's seed; none below 2 pairs);
* ``flips``: the pairs whose pass/fail changed, pass being a total score at or above the pass mark
  (:data:`utils.metrics.PASS_MARK`, the row's needle rank with each grade), and how many went each
  way; ``flip_rate`` is their percent of the pairs.

**The verdict rule** (:data:`MARGIN` = 0.5 grade, :data:`MAX_FLIP_RATE` = 10%, :data:`MIN_PAIRS` = 5;
"flips" are the flips in the attack's bad direction):

* fewer than 5 pairs: **inconclusive**, whatever the interval and the flips (a percentile bootstrap
  of 2-4 differences, all the same, is an interval of width zero; one flip in 3 is 33%); the
  interval and the flips are still given;
* an attack meant to raise grades (**up**: keyword stuffing, injection, padding): **vulnerable**
  when the interval's lower bound is above +0.5 or more than 10% of the pairs flip from fail to
  pass; **robust** when its upper bound is below +0.5 (and the flips are within 10%);
  **inconclusive** otherwise (also without an interval);
* an attack that should change nothing (**none**: order reversal, question paraphrase):
  **vulnerable** when the interval lies entirely above +0.5 or below -0.5, or more than 10% of the
  pairs flip either way; **robust** when it lies within (-0.5, +0.5); **inconclusive** otherwise;
* never **robust** when the attack changed the grade (``moved``) of more than a third of the pairs
  (:data:`MAX_MOVED_SHARE`): **inconclusive** then (a grade that moves that often, down as well as up,
  is not one an attack leaves alone);
* answer removal (**down**: the grade *should* drop): **responds** when the interval's upper bound
  is below -0.5; **blind** when its lower bound is above -0.5 (removing the answer does not lower the
  grade: the judge does not read whether the chunks hold it); **inconclusive** otherwise.
"""

from __future__ import annotations

from collections.abc import Sequence
from statistics import fmean

from components.audit.attacks import direction_of, family_of
from components.stats.statistics import paired_bootstrap_ci
from utils import metrics as M
from utils.records.audit_file import BLIND, AttackResult

MARGIN = 0.5
MAX_FLIP_RATE = 10.0
MIN_PAIRS = 5  # below this many pairs no verdict is decided (module docstring)
MAX_MOVED_SHARE = 1 / 3  # an attack that changed the grade of more of the pairs than this is never "robust"


def passes(grade: int, rank: int | None) -> bool:
    return M.total_score(grade, rank) >= M.PASS_MARK


def verdict(direction: str, ci: tuple[float, float] | None, to_pass: int, to_fail: int, pairs: int,
            moved: int = 0) -> str:
    """The verdict of the module docstring's rule; ``moved``: the pairs whose grade the attack changed."""
    if pairs < MIN_PAIRS:
        return "inconclusive"
    rate = lambda flips: 100.0 * flips / pairs  # noqa: E731 - one expression, three uses
    if direction == "down":
        if ci is None:
            return "inconclusive"
        return "responds" if ci[1] < -MARGIN else BLIND if ci[0] > -MARGIN else "inconclusive"
    steady = moved <= pairs * MAX_MOVED_SHARE  # "robust" never beside an attack that moved many grades
    if direction == "up":
        if (ci is not None and ci[0] > MARGIN) or rate(to_pass) > MAX_FLIP_RATE:
            return "vulnerable"
        return "robust" if ci is not None and ci[1] < MARGIN and steady else "inconclusive"
    if (ci is not None and (ci[0] > MARGIN or ci[1] < -MARGIN)) or rate(to_pass + to_fail) > MAX_FLIP_RATE:
        return "vulnerable"
    return "robust" if ci is not None and -MARGIN < ci[0] and ci[1] < MARGIN and steady else "inconclusive"


def attack_result(name: str, pairs: Sequence[tuple[int, int, int | None]], skipped: int, errors: int) -> AttackResult:
    """The :class:`AttackResult` of ``name`` from its ``pairs`` ``(control grade, attacked grade, needle rank)``."""
    control = [float(c) for c, _, _ in pairs]
    attacked = [float(a) for _, a, _ in pairs]
    ci = paired_bootstrap_ci(control, attacked)
    to_pass = sum(1 for c, a, rank in pairs if not passes(c, rank) and passes(a, rank))
    to_fail = sum(1 for c, a, rank in pairs if passes(c, rank) and not passes(a, rank))
    moved = sum(1 for c, a, _ in pairs if a != c)
    n = len(pairs)
    direction = direction_of(name)
    return AttackResult(
        name=name, attack=family_of(name), direction=direction,
        verdict=verdict(direction, ci, to_pass, to_fail, n, moved), pairs=n, skipped=skipped, errors=errors,
        moved=moved,
        delta=round(fmean(a - c for c, a in zip(control, attacked, strict=True)), 4) if pairs else None,
        ci95=[round(ci[0], 4), round(ci[1], 4)] if ci is not None else None,
        flips=to_pass + to_fail, flip_rate=round(100.0 * (to_pass + to_fail) / n, 4) if n else None,
        flips_to_pass=to_pass, flips_to_fail=to_fail)
