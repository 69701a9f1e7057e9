"""How a compared metric's inference reads on the console (``compare``'s verdict lines and table, the
gate's lines): its interval (``unbounded (too few questions)`` when the exact test cannot bound it), its
p (``p ≈ 0.067 ± 0.003`` when a Monte-Carlo estimate, with its standard error), the test that gave it,
and the ``borderline`` mark of a line whose interval and p read differently
(:func:`components.stats.paired_inference.disagrees`): never an unmarked interval that excludes 0
beside "no detectable difference", nor one that includes 0 beside "better" or "worse".
"""

from __future__ import annotations

from components.analysis.paired import MetricResult
from components.stats import paired_inference as PI

UNBOUNDED = "unbounded (too few questions)"
TESTS = {PI.MCNEMAR: "exact McNemar", PI.SIGN_FLIP_EXACT: "exact sign-flip", PI.SIGN_FLIP_MC: "sign-flip"}


def number(value: float | None, digits: int, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def p_value(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def interval(r: MetricResult, digits: int) -> str:
    """``[+0.01, +0.09]``, ``unbounded (too few questions)`` (an exact test that no pattern count can bring
    below α), or ``-`` (no question)."""
    if r.ci95 is None:
        return UNBOUNDED if r.n and r.ci_method == PI.TEST_INVERSION else "-"
    return f"[{number(r.ci95[0], digits, True)}, {number(r.ci95[1], digits, True)}]"


def estimated(r: MetricResult) -> bool:
    return r.test == PI.SIGN_FLIP_MC and r.p is not None


def p_cell(p: float | None, r: MetricResult) -> str:
    """A p in the table: ``≈0.067`` when a Monte-Carlo estimate."""
    return ("≈" if estimated(r) and p is not None else "") + p_value(p)


def p_text(r: MetricResult) -> str:
    """``exact McNemar p 0.062``, ``sign-flip p ≈ 0.067 ± 0.003``, with ``, Holm …`` when adjusted."""
    if r.p is None:
        return "p -"
    if estimated(r):
        se = "" if r.p_mc_se is None else f" ± {r.p_mc_se:.3f}" if r.p_mc_se >= 0.001 else f" ± {r.p_mc_se:.1g}"
        text = f"{TESTS[r.test]} p ≈ {p_value(r.p)}{se}"
    else:
        text = f"{TESTS.get(r.test, r.test)} p {p_value(r.p)}"
    if r.p_holm is not None:
        text += f", Holm {'≈ ' if estimated(r) else ''}{p_value(r.p_holm)}"
    return text


def borderline(r: MetricResult, alpha: float) -> str:
    """`` — borderline (bootstrap CI and permutation p disagree)`` (or why else the interval and the
    verdict's p disagree), or ``""``."""
    if not r.borderline:
        return ""
    if r.ci_method == PI.BOOTSTRAP and PI.disagrees(r.ci95, r.p, alpha):
        which = "McNemar" if r.test == PI.MCNEMAR else "permutation"
        return f" — borderline (bootstrap CI and {which} p disagree)"
    return " — borderline (the 95% CI is not Holm-adjusted and the Holm-adjusted p disagrees with it)"
