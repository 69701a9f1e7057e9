"""The statistics of the benchmark, each defined once, stateless, seeded, vectorised with numpy.

Everything resamples **questions**: a question is the unit of observation.

- :func:`bootstrap_ci` — percentile bootstrap CI of a mean over questions (``scipy.stats.bootstrap``
  with ``method='percentile'`` and ``rng=np.random.default_rng(seed)`` draws the same resamples and
  gives the same interval). Fewer than 2 questions → None.
- **Judge noise (two-level bootstrap)**: a question's value may be a list of repeated measurements
  (the grades of ``--judge-repeats N``). Then each resample first draws n questions with
  replacement, then, independently for every drawn question, one of that question's repeats,
  uniformly; the statistic is the mean of the drawn values. The interval so covers both the
  sampling of questions and the judge's grade-to-grade spread. (The resample stream then differs
  from scipy's single-level one.)
- :func:`paired_bootstrap_ci` — CI of the mean paired delta ``b - a`` (same question resampled for
  both runs; with repeats, one repeat of each run is drawn independently, which is drawing one of
  the question's ``len(a_i) × len(b_i)`` pairwise differences).
- :func:`sign_flip_test` — two-sided p of a paired randomization test of the mean delta: under the
  null each question's delta is as likely to have the other sign. Exact (every sign pattern once)
  when ``2**n <= permutations``, else ``permutations`` random sign patterns with p =
  (count + 1) / (permutations + 1); two-sided p = min(1, 2 · min(P(null ≤ obs), P(null ≥ obs))).
  This is ``scipy.stats.permutation_test((d,), mean, permutation_type='samples')``.
- :func:`holm` — Holm's step-down adjustment of a family of p-values.
- :func:`min_detectable_delta` / :func:`questions_needed` — normal approximation for a paired
  design: with s the sample SD (ddof 1) of the paired deltas, z = z(1 - α/2) + z(power),
  MDE = z · s / √n and N = ⌈(z · s / effect)²⌉.

Seeds are fixed (:data:`BOOTSTRAP_SEED`, :data:`PERMUTATION_SEED`) and recorded in results files.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from statistics import NormalDist

import numpy as np

BOOTSTRAP_SEED = 20251113
PERMUTATION_SEED = 20251114
RESAMPLES = 10_000
PERMUTATIONS = 10_000
LEVEL = 0.95
METHOD = "percentile"
_BATCH_CELLS = 2_000_000  # resamples × questions held in memory at once (16 MB of float64)

Value = float | Sequence[float]  # one measurement, or a question's repeated measurements


@dataclass(frozen=True)
class Samples:
    """Per-question values: ``matrix`` is n × r (NaN-padded), row i holds question i's ``counts[i]``
    repeated measurements (1 when not repeated)."""

    matrix: np.ndarray
    counts: np.ndarray

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])

    @property
    def repeated(self) -> bool:
        return bool(self.n and self.counts.max() > 1)

    @property
    def point(self) -> np.ndarray:
        """Each question's mean over its repeats."""
        if not self.repeated:
            return self.matrix[:, 0] if self.n else np.zeros(0)
        return np.nanmean(self.matrix, axis=1)

    @classmethod
    def of(cls, values: Iterable[Value]) -> Samples:
        """Build from numbers and/or non-empty sequences of numbers (a question's repeats)."""
        values = list(values)
        if all(isinstance(v, (int, float, np.number)) for v in values):  # the common, single-level case
            flat = np.asarray(values, dtype=float).reshape(len(values), 1)
            return cls(flat, np.ones(len(values), dtype=np.int64))
        rows = [[float(v)] if isinstance(v, (int, float, np.number)) else [float(x) for x in v] for v in values]
        if any(not r for r in rows):
            raise ValueError("a question's repeated values must not be empty")
        counts = np.array([len(r) for r in rows], dtype=np.int64)
        width = int(counts.max()) if rows else 1
        matrix = np.full((len(rows), width), np.nan)
        for i, r in enumerate(rows):
            matrix[i, : len(r)] = r
        return cls(matrix, counts)


def _samples(values: Samples | Iterable[Value]) -> Samples:
    return values if isinstance(values, Samples) else Samples.of(values)


def bootstrap_means(columns: Sequence[Samples | Iterable[Value]], *, resamples: int = RESAMPLES,
                    seed: int = BOOTSTRAP_SEED) -> np.ndarray:
    """Bootstrap distribution (``resamples`` × len(columns)) of the mean of each column, every column
    resampled with the same question indices (the columns must describe the same n questions).

    The stream: ``rng = np.random.default_rng(seed)``; per batch of b resamples
    ``rng.integers(0, n, (b, n))`` (scipy's draw), then, only when a column is repeated,
    ``rng.random((b, n))`` to choose each drawn question's repeat. n = 0 → an array of NaN."""
    cols = [_samples(c) for c in columns]
    n = cols[0].n if cols else 0
    if any(c.n != n for c in cols):
        raise ValueError("bootstrap_means: every column must have one value per question")
    out = np.full((resamples, len(cols)), np.nan)
    if n == 0 or not cols:
        return out
    rng = np.random.default_rng(seed)
    flat = [j for j, c in enumerate(cols) if not c.repeated]
    nested = [j for j, c in enumerate(cols) if c.repeated]
    flat_matrix = np.column_stack([cols[j].matrix[:, 0] for j in flat]) if flat else None
    batch = max(1, _BATCH_CELLS // n)
    for start in range(0, resamples, batch):
        b = min(batch, resamples - start)
        idx = rng.integers(0, n, (b, n))
        if flat_matrix is not None:
            # counts of each question in each resample, then one matrix product for all columns
            weights = np.bincount((idx + (np.arange(b) * n)[:, None]).ravel(), minlength=b * n).reshape(b, n)
            out[start:start + b, flat] = weights @ flat_matrix / n
        if nested:
            u = rng.random((b, n))
            for j in nested:
                c = cols[j]
                pick = (u * c.counts[idx]).astype(np.int64)
                out[start:start + b, j] = c.matrix[idx, pick].mean(axis=1)
    return out


def percentile_interval(distribution: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    """The (1-level)/2 and 1-(1-level)/2 quantiles (linear interpolation, numpy's and scipy's default)."""
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(distribution, [tail, 1.0 - tail])
    return float(lo), float(hi)


def bootstrap_cis(columns: Sequence[Samples | Iterable[Value]], *, resamples: int = RESAMPLES,
                  seed: int = BOOTSTRAP_SEED, level: float = LEVEL) -> list[tuple[float, float] | None]:
    """:func:`bootstrap_ci` of several columns of the same questions at once (shared resamples);
    each interval equals the one :func:`bootstrap_ci` gives that column alone. None below 2 questions."""
    cols = [_samples(c) for c in columns]
    if not cols or cols[0].n < 2:
        return [None] * len(cols)
    dist = bootstrap_means(cols, resamples=resamples, seed=seed)
    return [percentile_interval(dist[:, j], level) for j in range(len(cols))]


def bootstrap_ci(values: Samples | Iterable[Value], *, resamples: int = RESAMPLES, seed: int = BOOTSTRAP_SEED,
                 level: float = LEVEL) -> tuple[float, float] | None:
    """Percentile bootstrap ``level`` CI of the mean of ``values`` over questions (two-level when an
    item is a list of repeats, see the module docstring). Fewer than 2 values → None."""
    return bootstrap_cis([values], resamples=resamples, seed=seed, level=level)[0]


def paired_deltas(a: Iterable[Value], b: Iterable[Value]) -> Samples:
    """Per question ``b - a``; with repeats, every pairwise difference ``b_j - a_i`` of the question
    (drawing one of them uniformly = drawing one repeat of each run independently)."""
    sa, sb = _samples(a), _samples(b)
    if sa.n != sb.n:
        raise ValueError("paired_deltas: both runs need one value per question")
    if not (sa.repeated or sb.repeated):
        return Samples((sb.matrix[:, :1] - sa.matrix[:, :1]) if sa.n else np.zeros((0, 1)), sa.counts.copy())
    rows = []
    for i in range(sa.n):
        ra, rb = sa.matrix[i, : sa.counts[i]], sb.matrix[i, : sb.counts[i]]
        rows.append((rb[None, :] - ra[:, None]).ravel().tolist())
    return Samples.of(rows)


def paired_bootstrap_ci(a: Iterable[Value], b: Iterable[Value], *, resamples: int = RESAMPLES,
                        seed: int = BOOTSTRAP_SEED, level: float = LEVEL) -> tuple[float, float] | None:
    """Paired percentile bootstrap CI of mean(b - a) over questions (``scipy.stats.bootstrap((a, b),
    lambda a, b, axis: mean(b - a), paired=True)``). Fewer than 2 pairs → None."""
    return bootstrap_ci(paired_deltas(a, b), resamples=resamples, seed=seed, level=level)


def _sign_patterns(n: int, permutations: int, rng: np.random.Generator, batch: int):
    """Yield (b, n) arrays of ±1: all 2**n patterns when that is ≤ ``permutations`` (exact test),
    else ``permutations`` random ones."""
    if 2 ** n <= permutations:
        codes = np.arange(2 ** n)[:, None]
        yield 1.0 - 2.0 * ((codes >> np.arange(n)[None, :]) & 1)
        return
    for start in range(0, permutations, batch):
        b = min(batch, permutations - start)
        yield 1.0 - 2.0 * rng.integers(0, 2, (b, n), dtype=np.int8)


def sign_flip_tests(columns: np.ndarray, *, permutations: int = PERMUTATIONS,
                    seed: int = PERMUTATION_SEED) -> list[float | None]:
    """:func:`sign_flip_test` of each column of an n × m array of paired deltas, sharing the sign
    patterns. n = 0 → None for every column."""
    d = np.asarray(columns, dtype=float)
    d = d[:, None] if d.ndim == 1 else d
    n, m = d.shape
    if n == 0:
        return [None] * m
    observed = d.sum(axis=0)
    # values that are equal in theory but not in floating point count as equal (scipy does the same
    # with 100 ulp of the observed value; the scale here is the sum of |d|, which bounds the rounding)
    gamma = 100 * np.finfo(float).eps * np.abs(d).sum(axis=0)
    exact = 2 ** n <= permutations
    rng = np.random.default_rng(seed)
    less = np.zeros(m, dtype=np.int64)
    greater = np.zeros(m, dtype=np.int64)
    total = 0
    for signs in _sign_patterns(n, permutations, rng, max(1, _BATCH_CELLS // n)):
        null = signs @ d
        less += (null <= observed + gamma).sum(axis=0)
        greater += (null >= observed - gamma).sum(axis=0)
        total += signs.shape[0]
    adjust = 0 if exact else 1
    p = np.minimum(1.0, 2.0 * np.minimum(less + adjust, greater + adjust) / (total + adjust))
    return [float(x) for x in p]


def sign_flip_test(deltas: Iterable[float], permutations: int = PERMUTATIONS, seed: int = PERMUTATION_SEED
                   ) -> float | None:
    """Two-sided p of the paired sign-flip randomization test of mean(deltas) = 0 (see the module
    docstring; scipy's ``permutation_test(permutation_type='samples')`` on one sample). Empty → None;
    one delta → 1.0."""
    return sign_flip_tests(np.asarray(list(deltas), dtype=float), permutations=permutations, seed=seed)[0]


def holm(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm step-down adjusted p-values, in the input order: the i-th smallest of m p-values is
    multiplied by (m - i + 1), made non-decreasing, capped at 1. None entries are left out of the
    family and stay None. Empty → []."""
    present = sorted((p, i) for i, p in enumerate(pvalues) if p is not None)
    m = len(present)
    out: list[float | None] = [None] * len(pvalues)
    running = 0.0
    for j, (p, i) in enumerate(present):
        running = max(running, min(1.0, (m - j) * p))
        out[i] = running
    return out


def _z(alpha: float, power: float) -> float:
    normal = NormalDist()
    return normal.inv_cdf(1.0 - alpha / 2.0) + normal.inv_cdf(power)


def _sd(deltas: Iterable[float]) -> tuple[int, float] | None:
    d = np.asarray(list(deltas), dtype=float)
    return (len(d), float(d.std(ddof=1))) if len(d) >= 2 else None


def min_detectable_delta(deltas: Iterable[float], alpha: float = 0.05, power: float = 0.8) -> float | None:
    """Smallest true mean delta a two-sided test at ``alpha`` detects with probability ``power``
    given these n paired deltas: (z(1-α/2) + z(power)) · sd(deltas, ddof=1) / √n (normal
    approximation). Fewer than 2 deltas → None; deltas that are all equal → 0.0."""
    sd = _sd(deltas)
    if sd is None:
        return None
    n, s = sd
    return _z(alpha, power) * s / math.sqrt(n)


def questions_needed(deltas: Iterable[float], effect: float, alpha: float = 0.05, power: float = 0.8
                     ) -> int | None:
    """About how many questions a paired comparison needs to detect a true mean delta of ``effect``
    (α two-sided, ``power``), with the spread estimated from these deltas:
    ⌈((z(1-α/2) + z(power)) · sd(deltas, ddof=1) / effect)²⌉, at least 2. None when there are fewer
    than 2 deltas or they are all equal (no spread to estimate)."""
    if effect == 0:
        raise ValueError("questions_needed: effect must be non-zero")
    sd = _sd(deltas)
    if sd is None or sd[1] == 0.0:
        return None
    return max(2, math.ceil((_z(alpha, power) * sd[1] / abs(effect)) ** 2))


# ---- t intervals and the AUC (the judge's signal check and its known answers)

def _beta_fraction(a: float, b: float, x: float) -> float:
    """The continued fraction of the regularized incomplete beta function (modified Lentz's method)."""
    tiny, c, d = 1e-300, 1.0, 1.0 - (a + b) * x / (a + 1.0)
    d = 1.0 / (d if abs(d) > tiny else tiny)
    h = d
    for m in range(1, 500):
        for num in (m * (b - m) * x / ((a + 2 * m - 1) * (a + 2 * m)),
                    -(a + m) * (a + b + m) * x / ((a + 2 * m) * (a + 2 * m + 1))):
            d = 1.0 + num * d
            d = 1.0 / (d if abs(d) > tiny else tiny)
            c = 1.0 + num / c
            c = c if abs(c) > tiny else tiny
            h *= d * c
        if abs(d * c - 1.0) < 1e-15:
            break
    return h


def _beta_regularized(a: float, b: float, x: float) -> float:
    """I_x(a, b), the regularized incomplete beta function, for 0 ≤ x ≤ 1."""
    if x <= 0.0 or x >= 1.0:
        return 0.0 if x <= 0.0 else 1.0
    front = math.exp(math.lgamma(a + b) - math.lgamma(a) - math.lgamma(b) + a * math.log(x) + b * math.log1p(-x))
    if x < (a + 1.0) / (a + b + 2.0):
        return front * _beta_fraction(a, b, x) / a
    return 1.0 - front * _beta_fraction(b, a, 1.0 - x) / b


def beta_cdf(x: float, a: float, b: float) -> float:
    """P(X ≤ x) for X ~ Beta(a, b): the regularized incomplete beta I_x(a, b) (``scipy.stats.beta.cdf``)."""
    return _beta_regularized(a, b, x)


def beta_quantile(q: float, a: float, b: float) -> float:
    """The ``q`` quantile of Beta(a, b) (``scipy.stats.beta.ppf``, to 1e-14): the root of :func:`beta_cdf` by
    bisection on [0, 1]."""
    return _bisect(lambda x: _beta_regularized(a, b, x) < q, 0.0, 1.0, 1e-15)


def _bisect(below_root: Callable[[float], bool], low: float, high: float, tolerance: float) -> float:
    """The point of [low, high] where ``below_root`` turns false (true below it), to ``tolerance``."""
    for _ in range(200):
        mid = (low + high) / 2.0
        low, high = (mid, high) if below_root(mid) else (low, mid)
        if high - low <= tolerance:
            break
    return (low + high) / 2.0


def t_upper_tail(t: float, df: float) -> float:
    """P(T > t) for Student's t with ``df`` degrees of freedom, t ≥ 0: I_{df/(df+t²)}(df/2, 1/2) / 2."""
    return 0.5 * _beta_regularized(df / 2.0, 0.5, df / (df + t * t))


def t_quantile(df: float, level: float = LEVEL) -> float:
    """The two-sided ``level`` quantile of Student's t with ``df`` degrees of freedom (the value of scipy's
    ``scipy.special.stdtrit(df, 1 - (1 - level) / 2)``, to a relative 1e-8; computed without scipy, whose
    import alone would cost a judged run most of its start-up): the root of :func:`t_upper_tail` by bisection."""
    tail = (1.0 - level) / 2.0
    low, high = 0.0, max(1.0, NormalDist().inv_cdf(1.0 - tail))
    while t_upper_tail(high, df) > tail:
        low, high = high, 2.0 * high
    return _bisect(lambda t: t_upper_tail(t, df) > tail, low, high, 1e-13 * high)


def welch_ci(a: Iterable[float], b: Iterable[float], level: float = LEVEL) -> tuple[float, float] | None:
    """Welch's ``level`` interval of mean(a) − mean(b) (unequal variances, Welch–Satterthwaite degrees of freedom):
    ``scipy.stats.ttest_ind(a, b, equal_var=False).confidence_interval(level)``. Fewer than 2 values on a side →
    None; no spread on either side → the difference itself, as both bounds."""
    x, y = np.asarray(list(a), dtype=float), np.asarray(list(b), dtype=float)
    if len(x) < 2 or len(y) < 2:
        return None
    diff = float(x.mean() - y.mean())
    vx, vy = float(x.var(ddof=1)) / len(x), float(y.var(ddof=1)) / len(y)
    if vx + vy == 0.0:
        return diff, diff
    df = (vx + vy) ** 2 / (vx ** 2 / (len(x) - 1) + vy ** 2 / (len(y) - 1))
    half = t_quantile(df, level) * math.sqrt(vx + vy)
    return diff - half, diff + half


def paired_t_ci(deltas: Iterable[float], level: float = LEVEL) -> tuple[float, float] | None:
    """The one-sample t ``level`` interval of mean(deltas) (n − 1 degrees of freedom):
    ``scipy.stats.ttest_1samp(deltas, 0).confidence_interval(level)``. Fewer than 2 deltas → None; deltas that are
    all equal → their value, as both bounds."""
    d = np.asarray(list(deltas), dtype=float)
    if len(d) < 2:
        return None
    mean, sd = float(d.mean()), float(d.std(ddof=1))
    if sd == 0.0:
        return mean, mean
    half = t_quantile(len(d) - 1, level) * sd / math.sqrt(len(d))
    return mean - half, mean + half


UNDER, OVER, ACROSS = "under", "over", "across"


def against(ci: Sequence[float] | None, bound: float) -> str | None:
    """Where the interval ``ci`` lies against ``bound``: :data:`UNDER` (its upper end below it), :data:`OVER`
    (its lower end at or above it), :data:`ACROSS` (neither); None without an interval. The rule of the checks
    that ask whether a judge's grades move by at least ``bound`` (the signal check, the known answers)."""
    if ci is None:
        return None
    if ci[1] < bound:
        return UNDER
    return OVER if ci[0] >= bound else ACROSS


def auc(positive: Iterable[float], negative: Iterable[float]) -> float | None:
    """The area under the ROC curve of ``positive`` against ``negative`` scores: the share of (positive, negative)
    pairs the positive wins, ties counting half (Mann-Whitney U / (n₊ · n₋)). None when a side is empty."""
    p, n = np.asarray(list(positive), dtype=float), np.asarray(list(negative), dtype=float)
    if not len(p) or not len(n):
        return None
    wins = (p[:, None] > n[None, :]).sum() + 0.5 * (p[:, None] == n[None, :]).sum()
    return float(wins) / (len(p) * len(n))
