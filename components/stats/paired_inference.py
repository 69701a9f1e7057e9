"""One inference per compared metric: the test that gives its p, and an interval that agrees with it.

A paired comparison of two runs gives, for one metric, the per-question deltas ``d`` (other − baseline).
Which test and which interval, by what is cheap to compute exactly (:func:`paired_inference`):

- **mcnemar-exact** — a binary metric (every per-question value is 0 or one value ``u``: hit@k, pass ≥ 7):
  only the discordant questions carry information; with ``b`` of them up and ``c`` down, under the null
  ``b ~ Binomial(b + c, 1/2)``. The two-sided p doubles the smaller tail (the sign-flip test's exact p on
  such deltas, for any n). The interval inverts the same test: the Clopper-Pearson interval
  ``[θ_lo, θ_hi]`` of ``θ = b / (b + c)`` at the same level, as a difference ``(2θ − 1)(b + c) u / n``.
- **sign-flip-exact** — n ≤ :data:`EXACT_MAX_N` (at most 2^20 sign patterns): the sign-flip test over
  every pattern, computed from the 2^n subset sums (flipping the questions of a subset S moves the
  statistic by −2 Σ_S d). Its inversion under a shift is exact too: δ is in the interval iff the test
  of ``d − δ`` gives p ≥ α, which holds iff δ lies between the r-th smallest and the r-th largest mean
  of a non-empty subset, r = ⌈α 2^(n−1)⌉ − 1. With so few questions that no pattern count can reach α
  (n ≤ 5 at α 0.05), r is 0 and the interval is unbounded: ``ci95`` None.
- **sign-flip-mc** — otherwise: the sign-flip test on :data:`~components.stats.statistics.PERMUTATIONS`
  random patterns (``p`` is an estimate: ``p_mc_se`` = √(p (1 − p) / B) gives its standard error), and the
  percentile bootstrap interval (``ci_method`` ``bootstrap-percentile``), computed elsewhere. These two can
  disagree near α: :func:`disagrees` says when, and the comparison marks that line ``borderline``.

The exact p-values equal ``scipy.stats.permutation_test((d,), np.mean, permutation_type='samples',
n_resamples=inf)`` and ``scipy.stats.binomtest(b, b + c).pvalue``; the McNemar interval equals
``binomtest(b, b + c).proportion_ci(method='exact')`` mapped to a difference (tests/test_paired_inference.py).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np

from components.stats import statistics as S

EXACT_MAX_N = 20  # 2^20 sign patterns: the exact sign-flip test and its inversion stay under a second
MCNEMAR, SIGN_FLIP_EXACT, SIGN_FLIP_MC = "mcnemar-exact", "sign-flip-exact", "sign-flip-mc"
TEST_INVERSION, BOOTSTRAP = "test-inversion", "bootstrap-percentile"
_TOL = 1e-9


@dataclass(frozen=True)
class Inference:
    """The test of one compared metric: its p (None: no question), its interval where the test gives one
    (``ci_method`` test-inversion; None with bootstrap-percentile: the caller's bootstrap), and ``p_mc_se``
    when ``p`` is a Monte-Carlo estimate."""

    test: str
    ci_method: str
    p: float | None
    ci95: tuple[float, float] | None = None
    p_mc_se: float | None = None


def binary_unit(values: Iterable[float | None]) -> float | None:
    """``u`` when every present value (both runs' per-question values) is 0 or ``u`` (> 0), else None."""
    unit = None
    for v in values:
        if v is None or abs(v) <= _TOL:
            continue
        if v < 0 or (unit is not None and abs(v - unit) > _TOL * max(1.0, unit)):
            return None
        unit = v if unit is None else unit
    return unit


def _subset_sums(d: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The sums and sizes of the 2^n subsets of ``d`` (the empty one first)."""
    sums = np.zeros(1)
    sizes = np.zeros(1, dtype=np.int8)
    for x in d:
        sums = np.concatenate((sums, sums + x))
        sizes = np.concatenate((sizes, sizes + 1))
    return sums, sizes


def sign_flip_exact(deltas: Iterable[float], alpha: float = 0.05) -> tuple[float, tuple[float, float] | None]:
    """The exact two-sided sign-flip p of mean(deltas) = 0 and the interval of the shift it does not reject
    at ``alpha`` (None: unbounded). n at most :data:`EXACT_MAX_N` (ValueError beyond)."""
    d = np.asarray(list(deltas), dtype=float)
    n = d.size
    if n == 0 or n > EXACT_MAX_N:
        raise ValueError(f"the exact sign-flip test takes 1 to {EXACT_MAX_N} questions, not {n}")
    sums, sizes = _subset_sums(d)
    gamma = 100 * np.finfo(float).eps * np.abs(d).sum()
    total = sums.size
    up = int((sums >= -gamma).sum())  # flipping S leaves the statistic ≤ the observed one (∅ included)
    down = int((sums <= gamma).sum())
    p = min(1.0, 2.0 * min(up, down) / total)
    r = math.ceil(alpha * total / 2) - 1
    if r <= 0:
        return p, None
    means = sums[1:] / sizes[1:]
    low, high = r - 1, means.size - r  # the r-th smallest and the r-th largest: a partition, not a sort
    means = np.partition(means, (low, high))
    return p, (float(means[low]), float(means[high]))


EXACT_TAIL_MAX = 20_000  # discordant questions up to which the binomial tail is summed in integers


def _binomial_half_cdf(k: int, m: int) -> float:
    """P(B ≤ k) for B ~ Binomial(m, ½): the sum of C(m, i) / 2^m in integers (exact, correctly rounded) up to
    :data:`EXACT_TAIL_MAX` trials, else the incomplete beta I_½(m − k, k + 1)."""
    if k >= m:
        return 1.0
    if m > EXACT_TAIL_MAX:
        return S.beta_cdf(0.5, m - k, k + 1)
    term = total = 1
    for i in range(1, k + 1):
        term = term * (m - i + 1) // i
        total += term
    return total / 2 ** m


def mcnemar_exact(deltas: Iterable[float], unit: float, alpha: float = 0.05) -> tuple[float, tuple[float, float]]:
    """The exact McNemar test of paired binary values (deltas in {−unit, 0, +unit}) and its inverted
    interval as a mean difference (module docstring). Without scipy (compare does not import it): the
    binomial tail summed exactly (:func:`_binomial_half_cdf`), the Clopper-Pearson bounds the quantiles of
    the beta distributions (:func:`components.stats.statistics.beta_quantile`)."""
    d = np.asarray(list(deltas), dtype=float)
    n = d.size
    b, c = int((d > _TOL).sum()), int((d < -_TOL).sum())
    m = b + c
    if m == 0:
        return 1.0, (0.0, 0.0)
    p = min(1.0, 2.0 * _binomial_half_cdf(min(b, c), m))  # the smaller tail, doubled (B and m − B alike)
    lo = 0.0 if b == 0 else S.beta_quantile(alpha / 2, b, c + 1)
    hi = 1.0 if c == 0 else S.beta_quantile(1 - alpha / 2, b + 1, c)
    scale = m * unit / n
    return float(p), ((2 * lo - 1) * scale, (2 * hi - 1) * scale)


def monte_carlo_se(p: float | None, permutations: int) -> float | None:
    """The standard error of a Monte-Carlo p over ``permutations`` patterns."""
    return None if p is None else math.sqrt(p * (1 - p) / permutations)


def paired_inference(deltas: Iterable[float], *, unit: float | None = None, alpha: float = 0.05,
                     mc_p: float | None = None, permutations: int | None = None) -> Inference:
    """The inference of one metric (module docstring): ``unit`` the binary metric's value (None: not
    binary); ``mc_p`` the Monte-Carlo sign-flip p already computed for it over ``permutations`` patterns,
    used when no exact test applies."""
    d = [float(x) for x in deltas]
    if not d:
        return Inference(SIGN_FLIP_EXACT, TEST_INVERSION, None, None)
    if unit is not None:
        p, ci = mcnemar_exact(d, unit, alpha)
        return Inference(MCNEMAR, TEST_INVERSION, p, ci)
    if len(d) <= EXACT_MAX_N:
        p, ci = sign_flip_exact(d, alpha)
        return Inference(SIGN_FLIP_EXACT, TEST_INVERSION, p, ci)
    se = monte_carlo_se(mc_p, permutations) if permutations else None
    return Inference(SIGN_FLIP_MC, BOOTSTRAP, mc_p, None, se)


def disagrees(ci95: tuple[float, float] | None, p: float | None, alpha: float) -> bool:
    """Whether an interval and a p read differently: the interval excludes 0 while p ≥ α, or includes
    0 while p < α (a Holm-adjusted p included: the interval is not adjusted)."""
    if ci95 is None or p is None:
        return False
    excludes = ci95[0] > 0 or ci95[1] < 0
    return excludes != (p < alpha)
