"""How far a judge's grades are from people's: agreement statistics and prediction-powered estimates.

Stateless, numpy only; each formula is defined here once and used by ``calibrate``
(:mod:`components.calibration.calibrate`).

- :func:`weighted_kappa` — Cohen's κ with quadratic (or linear) weights on the 1-10 grade scale:
  κ = 1 − Σᵢⱼ wᵢⱼ Oᵢⱼ / Σᵢⱼ wᵢⱼ Eᵢⱼ with wᵢⱼ = (i − j)² (linear: |i − j|), O the n × n-normalised
  10 × 10 table of (human, judge) grade pairs (:func:`grade_table`) and E = the outer product of its
  margins (what two raters with these grade distributions would agree by chance). The weights are
  the distance between the grade *values* (1 and 10 are 9 apart whether or not the grades between
  occur), which is ``sklearn.metrics.cohen_kappa_score(h, j, weights="quadratic", labels=range(1, 11))``
  (``weights="linear"``). None when the chance disagreement is 0 (both raters gave one and the same
  grade to every row). Quadratic weights forgive a one-point slip and punish a far miss; linear
  weights count every point of distance alike. :func:`weighted_kappa_ci` adds a percentile bootstrap
  over rows: an interval that holds 0 means the grades do not agree beyond chance.
- :func:`spearman_rho` — Spearman's ρ: Pearson's correlation of the average ranks (ties share the
  mean of their positions), ``scipy.stats.spearmanr``. None when either side is constant.
- :func:`pass_confusion` — pass/fail at the pass mark of human and judge on the same rows
  (pass = ``utils.metrics.total_score(grade, rank) >= PASS_MARK``), with the judge's sensitivity
  (of the rows the human passes, the share the judge passes) and specificity (of the rows the
  human fails, the share the judge fails).
- :func:`ppi_mean` — the prediction-powered estimate (Angelopoulos et al., 2023) of the mean a
  human would give over every graded row, from the judge's value on all N rows and the human's
  on the n labelled rows::

      θ̂ = mean_N(judge) + mean_n(human − judge)
      Var(θ̂) ≈ var_N(judge) / N + var_n(human − judge) / n      (sample variances, ddof 1)
      95% interval: θ̂ ± z₀.₉₇₅ · √Var(θ̂)                         (normal; z₀.₉₇₅ = 1.959964)

  The labelled rows must be a random sample of the graded rows (``label``'s proportional
  stratified sample is one, up to the rounding of each band's share). They are also part of the
  N; the formula leaves out the covariance this adds, which is small when n ≪ N and makes the
  interval wider (conservative) when the judge's errors do not grow with its grade.
- :func:`normal_mean` — the judge-only figure: mean over N with the first term alone,
  mean ± z · sd / √N.
- :meth:`Estimate.within` — a normal interval can pass the end of the figure's scale (a mean grade
  of 10 ± 1.4); its bounds are clipped to the scale, and the estimate says which were.

Between judges (a panel, :mod:`components.analysis.panel`):

- :func:`pass_agreement` — the share of rows two judges put on the same side of a pass mark
  (total score = grade × the row's rank weight ≥ the mark).
- :func:`krippendorff_alpha` — Krippendorff's α, ordinal level (Krippendorff, *Content
  Analysis*, 2004, ch. 11), over units (questions) each rated by any number of judges (a missing
  grade is left out; a unit with fewer than 2 grades pairs nothing). The coincidence matrix
  o_ck = Σ_u (number of ordered pairs (c, k) of unit u's grades, i ≠ j) / (m_u − 1), its margins
  n_c, n = Σ n_c; the ordinal distance δ²_ck = (Σ_{g=c..k} n_g − (n_c + n_k) / 2)²;
  α = 1 − (n − 1) · Σ o_ck δ²_ck / Σ n_c n_k δ²_ck. This is ``krippendorff.alpha(data,
  level_of_measurement="ordinal")``. None when every pairable grade is the same (no expected
  disagreement). :func:`krippendorff_alpha_ci` adds a percentile bootstrap over units.
- :func:`kendall_tau` — Kendall's τ-b of two scorings of the same items (ties counted as τ-b
  counts them): (concordant − discordant) / √((n₀ − n₁)(n₀ − n₂)), ``scipy.stats.kendalltau``.
  None below 2 items or when either side is constant.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from statistics import NormalDist

import numpy as np

from utils.metrics import PASS_MARK, total_score

GRADES = tuple(range(1, 11))
LEVEL = 0.95


def _z(level: float = LEVEL) -> float:
    return NormalDist().inv_cdf(1.0 - (1.0 - level) / 2.0)


KAPPA_WEIGHTS = ("quadratic", "linear")


def grade_table(human: Sequence[int], judge: Sequence[int], categories: Sequence[int] = GRADES) -> list[list[int]]:
    """The counts of (human, judge) grade pairs: one row per human grade, one column per judge grade,
    in the order of ``categories``."""
    if len(human) != len(judge):
        raise ValueError("grade_table: one judge grade per human grade")
    index = {c: i for i, c in enumerate(categories)}
    table = [[0] * len(categories) for _ in categories]
    for h, j in zip(human, judge, strict=True):
        table[index[h]][index[j]] += 1
    return table


def weighted_kappa(human: Sequence[int], judge: Sequence[int], categories: Sequence[int] = GRADES,
                   weights: str = "quadratic") -> float | None:
    """Weighted Cohen's κ of two raters over the same rows, ``weights`` quadratic or linear (module docstring)."""
    if weights not in KAPPA_WEIGHTS:
        raise ValueError(f"weighted_kappa: weights is one of {', '.join(KAPPA_WEIGHTS)}, not {weights!r}")
    table = grade_table(human, judge, categories)
    if not human:
        return None
    observed = np.asarray(table, dtype=float)
    observed /= observed.sum()
    expected = np.outer(observed.sum(axis=1), observed.sum(axis=0))
    values = np.asarray(categories, dtype=float)
    distance = np.abs(values[:, None] - values[None, :])
    weights = distance ** 2 if weights == "quadratic" else distance
    chance = float((weights * expected).sum())
    if chance == 0.0:
        return None
    return 1.0 - float((weights * observed).sum()) / chance


def weighted_kappa_ci(human: Sequence[int], judge: Sequence[int], *, resamples: int = 2_000, seed: int = 0,
                      level: float = LEVEL, weights: str = "quadratic") -> tuple[float, float] | None:
    """The percentile bootstrap interval of :func:`weighted_kappa` over rows (resampled with replacement,
    ``resamples`` times, ``numpy.random.default_rng(seed)``); None below 2 rows or when κ is undefined in more
    than 1 resample in 20."""
    n = len(human)
    if n < 2 or len(judge) != n:
        return None
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, n, size=(resamples, n))
    h, j = np.asarray(human), np.asarray(judge)
    kappas = [weighted_kappa(h[d].tolist(), j[d].tolist(), weights=weights) for d in draws]
    defined = np.array([k for k in kappas if k is not None])
    if len(defined) < 0.95 * resamples:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    return float(np.percentile(defined, tail)), float(np.percentile(defined, 100.0 - tail))


def average_ranks(values: Sequence[float]) -> np.ndarray:
    """1-based ranks of ``values``, ties given the mean of the positions they share."""
    x = np.asarray(values, dtype=float)
    order = np.argsort(x, kind="mergesort")
    ranks = np.empty(len(x))
    sorted_x = x[order]
    start = 0
    while start < len(x):
        end = start
        while end + 1 < len(x) and sorted_x[end + 1] == sorted_x[start]:
            end += 1
        ranks[order[start:end + 1]] = (start + end) / 2.0 + 1.0
        start = end + 1
    return ranks


def spearman_rho(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Spearman's rank correlation (module docstring); None below 2 rows or when a side is constant."""
    if len(a) != len(b):
        raise ValueError("spearman_rho: the two sides need the same rows")
    if len(a) < 2:
        return None
    ra, rb = average_ranks(a), average_ranks(b)
    da, db = ra - ra.mean(), rb - rb.mean()
    denominator = math.sqrt(float((da * da).sum()) * float((db * db).sum()))
    if denominator == 0.0:
        return None
    return float((da * db).sum()) / denominator


def passes(grade: int, rank: int | None) -> bool:
    """Whether a row passes with ``grade`` at its ``rank``: total score (grade × rank weight) ≥ the pass mark."""
    return total_score(grade, rank) >= PASS_MARK


@dataclass(frozen=True)
class Confusion:
    """Pass/fail of the judge against the human on the same rows (the human is the reference)."""

    both_pass: int  # judge passes, human passes
    judge_only_pass: int  # judge passes, human fails (a false pass)
    human_only_pass: int  # judge fails, human passes (a false fail)
    both_fail: int

    @property
    def n(self) -> int:
        return self.both_pass + self.judge_only_pass + self.human_only_pass + self.both_fail

    @property
    def sensitivity(self) -> float | None:
        """Of the rows the human passes, the share the judge passes; None when the human passes none."""
        human_pass = self.both_pass + self.human_only_pass
        return self.both_pass / human_pass if human_pass else None

    @property
    def specificity(self) -> float | None:
        """Of the rows the human fails, the share the judge fails; None when the human fails none."""
        human_fail = self.both_fail + self.judge_only_pass
        return self.both_fail / human_fail if human_fail else None

    @property
    def agreement(self) -> float | None:
        return (self.both_pass + self.both_fail) / self.n if self.n else None

    def to_json(self) -> dict:
        return {**asdict(self), "sensitivity": self.sensitivity, "specificity": self.specificity,
                "agreement": self.agreement}


def pass_confusion(human: Sequence[int], judge: Sequence[int], ranks: Sequence[int | None]) -> Confusion:
    """The :class:`Confusion` of pass/fail at the pass mark, each row at its own rank weight."""
    counts = {(True, True): 0, (True, False): 0, (False, True): 0, (False, False): 0}
    for h, j, rank in zip(human, judge, ranks, strict=True):
        counts[(passes(j, rank), passes(h, rank))] += 1
    return Confusion(counts[(True, True)], counts[(True, False)], counts[(False, True)], counts[(False, False)])


@dataclass(frozen=True)
class Estimate:
    """A mean with its standard error and normal ``level`` interval; ``clipped`` names the bounds
    (``"low"``, ``"high"``) :meth:`within` moved to the end of the scale, ``unclipped`` the interval
    before that."""

    value: float
    se: float
    ci95: tuple[float, float]
    clipped: tuple[str, ...] = ()
    unclipped: tuple[float, float] | None = None

    def within(self, low: float, high: float) -> Estimate:
        """This estimate with its interval clipped to the scale [``low``, ``high``] of the figure."""
        lo, hi = self.ci95
        clipped = (*(("low",) if lo < low else ()), *(("high",) if hi > high else ()))
        if not clipped:
            return self
        return Estimate(self.value, self.se, (max(lo, low), min(hi, high)), clipped, self.ci95)

    def to_json(self) -> dict:
        return {"value": self.value, "se": self.se, "ci95": list(self.ci95), "clipped": list(self.clipped),
                "ci95_unclipped": list(self.unclipped or self.ci95)}


def _estimate(value: float, variance: float, level: float) -> Estimate:
    se = math.sqrt(max(variance, 0.0))
    half = _z(level) * se
    return Estimate(value, se, (value - half, value + half))


def normal_mean(values: Sequence[float], level: float = LEVEL) -> Estimate | None:
    """Mean of ``values`` with the normal interval mean ± z · sd(ddof 1) / √N; None below 2 values."""
    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return None
    return _estimate(float(x.mean()), float(x.var(ddof=1)) / len(x), level)


def ppi_mean(judge_all: Sequence[float], judge_labelled: Sequence[float], human_labelled: Sequence[float],
             level: float = LEVEL) -> Estimate | None:
    """The prediction-powered estimate of the human mean over all rows (module docstring):
    ``judge_all`` the judge's value on every row (N), ``judge_labelled``/``human_labelled`` both
    values on the labelled rows (n, paired). None when N < 2 or n < 2."""
    f = np.asarray(judge_all, dtype=float)
    fj = np.asarray(judge_labelled, dtype=float)
    fh = np.asarray(human_labelled, dtype=float)
    if len(fj) != len(fh):
        raise ValueError("ppi_mean: one human value per labelled judge value")
    if len(f) < 2 or len(fh) < 2:
        return None
    rectifier = fh - fj
    value = float(f.mean()) + float(rectifier.mean())
    variance = float(f.var(ddof=1)) / len(f) + float(rectifier.var(ddof=1)) / len(rectifier)
    return _estimate(value, variance, level)


# --------------------------------------------------------------------------- between judges

def pass_agreement(a: Sequence[int], b: Sequence[int], ranks: Sequence[int | None],
                   mark: float = PASS_MARK) -> float | None:
    """The share of rows on which the two graders agree whether the row passes ``mark``; None
    without rows."""
    if not ranks:
        return None
    same = sum(1 for x, y, r in zip(a, b, ranks, strict=True)
               if (total_score(x, r) >= mark) == (total_score(y, r) >= mark))
    return same / len(ranks)


def _unit_coincidences(units: Sequence[Sequence[int | None]], values: Sequence[int]) -> np.ndarray:
    """Each unit's contribution to the coincidence matrix (N × V × V; a unit with fewer than 2
    grades contributes nothing)."""
    index = {v: i for i, v in enumerate(values)}
    out = np.zeros((len(units), len(values), len(values)))
    for u, grades in enumerate(units):
        present = [index[g] for g in grades if g is not None]
        m = len(present)
        if m < 2:
            continue
        counts = np.bincount(present, minlength=len(values)).astype(float)
        out[u] = (np.outer(counts, counts) - np.diag(counts)) / (m - 1)
    return out


def _alpha_of(coincidences: np.ndarray) -> np.ndarray:
    """Ordinal α of each coincidence matrix of ``coincidences`` (R × V × V); NaN where undefined."""
    n_c = coincidences.sum(axis=2)  # R × V
    n = n_c.sum(axis=1)
    cum = np.cumsum(n_c, axis=1)
    idx = np.arange(n_c.shape[1])
    low, high = np.minimum(idx[:, None], idx[None, :]), np.maximum(idx[:, None], idx[None, :])
    span = cum[:, high] - cum[:, low] + n_c[:, low]  # Σ_{g = min(c, k) .. max(c, k)} n_g
    delta = (span - (n_c[:, :, None] + n_c[:, None, :]) / 2.0) ** 2
    observed = (coincidences * delta).sum(axis=(1, 2))
    expected = (n_c[:, :, None] * n_c[:, None, :] * delta).sum(axis=(1, 2))
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(expected > 0, 1.0 - (n - 1) * observed / np.where(expected > 0, expected, 1.0), np.nan)


def krippendorff_alpha(units: Sequence[Sequence[int | None]]) -> float | None:
    """Krippendorff's ordinal α of ``units`` (module docstring); None when undefined."""
    values = sorted({g for grades in units for g in grades if g is not None})
    if not values:
        return None
    alpha = float(_alpha_of(_unit_coincidences(units, values).sum(axis=0)[None])[0])
    return None if math.isnan(alpha) else alpha


def krippendorff_alpha_ci(units: Sequence[Sequence[int | None]], *, resamples: int = 2_000, seed: int = 0,
                          level: float = LEVEL) -> tuple[float, float] | None:
    """The percentile bootstrap interval of :func:`krippendorff_alpha` over units (resampled with
    replacement, ``resamples`` times, ``numpy.random.default_rng(seed)``); None below 2 pairable
    units or when α is undefined in too many resamples (more than 1 in 20)."""
    values = sorted({g for grades in units for g in grades if g is not None})
    per_unit = _unit_coincidences(units, values)
    if not values or sum(1 for grades in units if sum(g is not None for g in grades) > 1) < 2:
        return None
    rng = np.random.default_rng(seed)
    flat = per_unit.reshape(len(units), -1)
    alphas = []
    for start in range(0, resamples, 500):
        draws = rng.integers(0, len(units), size=(min(500, resamples - start), len(units)))
        counts = np.zeros((len(draws), len(units)))
        np.add.at(counts, (np.arange(len(draws))[:, None], draws), 1.0)
        alphas.append(_alpha_of((counts @ flat).reshape(len(draws), len(values), len(values))))
    distribution = np.concatenate(alphas)
    defined = distribution[~np.isnan(distribution)]
    if len(defined) < 0.95 * resamples:
        return None
    tail = (1.0 - level) / 2.0 * 100.0
    return float(np.percentile(defined, tail)), float(np.percentile(defined, 100.0 - tail))


def kendall_tau(a: Sequence[float], b: Sequence[float]) -> float | None:
    """Kendall's τ-b of two scorings of the same items (module docstring)."""
    if len(a) != len(b):
        raise ValueError("kendall_tau: the two sides need the same items")
    n = len(a)
    if n < 2:
        return None
    concordant = discordant = ties_a = ties_b = 0
    for i in range(n):
        for j in range(i + 1, n):
            da, db = a[i] - a[j], b[i] - b[j]
            ties_a += da == 0
            ties_b += db == 0
            if da * db > 0:
                concordant += 1
            elif da * db < 0:
                discordant += 1
    pairs = n * (n - 1) / 2
    denominator = math.sqrt((pairs - ties_a) * (pairs - ties_b))
    return (concordant - discordant) / denominator if denominator else None
