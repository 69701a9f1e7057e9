"""Sequential judging: the statistics that decide when enough questions have been graded.

Stateless and pure (numpy and scipy only): every function takes what it needs and caches nothing.
Two procedures, each with its guarantee:

**1. A group-sequential comparison with a baseline** (judging until the verdict is known).
The N questions are judged in a random order, in blocks; after each block ("look") every gated
metric is tested on the paired differences d_i = new − baseline seen so far.

- *Looks.* Block size b = max(5, ⌈N/10⌉) unless given; looks at the cumulative counts
  n_k = min(k·b, N), k = 1..K; information fraction t_k = n_k / N.
- *α spending* (Lan & DeMets 1983, "Discrete sequential boundaries for clinical trials",
  Biometrika 70:659-663), O'Brien-Fleming type (O'Brien & Fleming 1979, Biometrics 35:549-556),
  in Lan & DeMets's two-sided form: α*(t) = 2 − 2Φ(z_{1−α/2} / √t), so α*(1) = α. (Some software,
  e.g. R's ldbounds and gsDesign, spends α/2 on each side instead, α*(t) = 4 − 4Φ(z_{1−α/4} / √t):
  :func:`boundaries` takes any cumulative spending; the tests reproduce their published values.)
- *Bonferroni across metrics*: with m gated metrics each metric's design spends α/m, so the chance
  that any metric declares a difference that is not there is at most α.
- *Boundaries* c_1..c_K on the z scale solve, one look at a time,
  P(|Z_1| < c_1, …, |Z_{k−1}| < c_{k−1}, |Z_k| ≥ c_k) = α*(t_k) − α*(t_{k−1}),
  where (Z_1..Z_K) is multivariate normal with corr(Z_j, Z_k) = √(t_j / t_k) (j ≤ k): the
  standardised partial sums of independent increments. Computed by the recursive numerical
  integration of Armitage, McPherson & Rowe (1969, JRSS-A 132:235-244; Jennison & Turnbull 2000,
  *Group Sequential Methods*, ch. 19): on the score scale S_k = Z_k √t_k (a Brownian motion at
  times t_k) the sub-density of S_k on the continuation region |s| < c_k √t_k is
  g_1(s) = φ(s / √t_1) / √t_1 and g_k(s) = ∫ g_{k−1}(u) φ((s − u)/σ_k) / σ_k du, σ_k = √(t_k − t_{k−1});
  the probability of stopping at look k is ∫ g_{k−1}(u) [Φ((−c√t_k − u)/σ_k) + Φ((u − c√t_k)/σ_k)] du,
  solved for c by Brent's method; integrals by Simpson's rule on a grid finer than σ_k / 16.
  c_1 = z_{1 − α*(t_1)/2} exactly. A look that may spend nothing (α*(t_k) − α*(t_{k−1}) = 0 in
  floating point) gets c_k = ∞.
- *The statistic at a look* (n differences, mean d̄, standard deviation s with ddof 1,
  se = s/√n, skewness γ̂ = k_3 / s³ with k_3 = n Σ(d_i − d̄)³ / ((n−1)(n−2)), 0 below 3 differences):
  T(θ) = (d̄ − θ)/se, and Hall's skewness-corrected statistic (Hall 1992, "On the removal of
  skewness by transformation", JRSS-B 54:221-228; a monotone refinement of Johnson 1978, JASA
  73:536-544) H(θ) = g(T(θ)) with g(x) = x + a x²/3 + a² x³/27 + a/6, a = γ̂/√n, whose inverse is
  g⁻¹(y) = 3 ((1 + a (y − a/6))^{1/3} − 1) / a (real cube root; g⁻¹(y) = y when a = 0).
- *Critical value*: Student's t quantile with n − 1 degrees of freedom at the boundary's nominal
  one-sided level, q_k = F⁻¹_{t, n−1}(Φ(c_k)) (≥ c_k; equal as n grows).
- *Repeated confidence interval* (RCI; Jennison & Turnbull 1989, "Interim analyses: the repeated
  confidence interval approach", JRSS-B 51:305-361) at look k: the θ not rejected by either
  statistic, i.e. the hull of the Student interval d̄ ± q_k·se and of Hall's interval
  [d̄ − se·g⁻¹(q_k), d̄ − se·g⁻¹(−q_k)]:
  low = d̄ − se·max(q_k, g⁻¹(q_k)), high = d̄ + se·max(q_k, −g⁻¹(−q_k)), clipped to [−span, span]
  (span: the largest possible |difference| of the metric). The RCIs of all looks cover the true
  mean difference simultaneously with probability ≈ 1 − α/m, so the interval at the look where
  judging stops is valid whatever the stopping rule.
  *Why both statistics* (the small-sample remedy, chosen by the simulation in bench/sequential.py;
  figures in docs/measured.md): with the plain z statistic, skewed discrete differences declared a
  difference that was not there in about 6.5% of runs (−3/0/+1 with probabilities .1/.6/.3) and 9%
  (−5/0/+1, .05/.7/.25) instead of 5%: the early boundaries sit far in the tail, where the
  Studentised mean of a skewed variable is far from normal. Student quantiles, a first look at 3
  blocks and a sign-flip test at each look (which assumes symmetric differences) leave 5.3-6.2% and
  8-9%; Hall's correction alone brings them to 5.3% and 6.2%, but on sparse symmetric differences
  (pass indicators that rarely change) its skewness estimate follows the mean and raises false
  positives to 6.9%. Requiring both to reject keeps each one's protection (4.1% skewed, 5.2%
  strongly skewed, 5.3% sparse, 4.7% normal), at a cost in judge calls only when the differences
  are skewed against the direction of the change.
- *Decision* (strict inequalities): without a margin, *better* when low > 0, *worse* when
  high < 0; with a non-inferiority margin M ≥ 0 (in the metric's unit, as ``compare --margin``),
  *non-inferior* when low > −M, *inferior* when high < −M. Otherwise *not yet*; at the last look,
  *no detectable difference* (without a margin) or *not shown non-inferior* (with one), except that
  there low = −M is non-inferior, as for ``compare --margin`` (identical runs pass a margin of 0).
- *Degenerate variance* (every difference equal to δ₀, or fewer than two): no spread to
  Studentise with, so the exact paired sign-flip test (Fisher 1935) decides: against any θ ≠ δ₀
  all n deviations have one sign and one size, p = 2^{1−n}; against θ = δ₀, p = 1. The RCI is
  therefore [δ₀, δ₀] when 2^{1−n} ≤ 2(1 − Φ(c_k)) (the look's nominal two-sided level), else the
  whole range [−span, span]. Nothing is divided by s.

**2. An anytime-valid confidence sequence for one mean** (``--target-ci W``: judge until the
interval's half-width is at most W, with no number of looks fixed). The betting confidence sequence
of Waudby-Smith & Ramdas (2024, "Estimating means of bounded random variables by betting",
JRSS-B 86(1):1-27; hedged capital process, their section 4), for values in a known range [lo, hi]
rescaled to x_i ∈ [0, 1], in the order they were judged:

- μ̂_t = (1/2 + Σ_{i≤t} x_i)/(t + 1), σ̂²_t = (1/4 + Σ_{i≤t} (x_i − μ̂_i)²)/(t + 1), σ̂²_0 = 1/4;
- bets λ_t = √(2 log(2/α) / (σ̂²_{t−1} · t · log(1 + t))) (predictable: they use the past only),
  truncated per candidate mean m: λ⁺_t(m) = min(λ_t, c/m), λ⁻_t(m) = min(λ_t, c/(1 − m)), c = 1/2;
- capital K⁺_t(m) = Π_{i≤t} (1 + λ⁺_i(m)(x_i − m)), K⁻_t(m) = Π_{i≤t} (1 − λ⁻_i(m)(x_i − m)),
  K_t(m) = max(K⁺_t(m), K⁻_t(m)) / 2;
- the set {m : K_s(m) < 1/α for every s ≤ t} (the running intersection), on a grid of m with step
  1/breaks, reported as [first − step, last + step] ∩ [0, 1] and scaled back to [lo, hi].

Guarantee: for the true mean μ, (K⁺ + K⁻)/2 ≥ K is a non-negative martingale starting at 1, so by
Ville's inequality P(∃t: μ ∉ C_t) ≤ α: the interval covers μ at every look at once, hence at any
stopping time, whatever rule chose it (for values whose conditional mean given the past is μ, e.g.
questions of a population judged in a random order). Any predictable bets keep it; these only make
the interval narrow. A run of identical values is no special case (σ̂² never vanishes).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from utils.errors import InputError

ALPHA = 0.05
BLOCKS = 10  # default number of blocks: block size ⌈N / BLOCKS⌉ ...
MIN_BLOCK = 5  # ... and at least this many questions
PROCEDURE = ("group-sequential test: Lan-DeMets alpha spending with O'Brien-Fleming-type boundaries, "
             "alpha split across the gated metrics (Bonferroni), repeated confidence intervals from "
             "Student's t and Hall's skewness-corrected t (the wider of the two)")
CS_PROCEDURE = "betting confidence sequence (Waudby-Smith & Ramdas 2024, hedged capital), anytime-valid"
BETTING_TRUNCATION = 0.5  # c: the largest fraction of the capital a bet may risk
BREAKS = 2000  # grid steps of the confidence sequence over the value range

BETTER, WORSE, SAME = "better", "worse", "no detectable difference"
NON_INFERIOR, INFERIOR, NOT_SHOWN = "non-inferior", "inferior", "not shown non-inferior"
NOT_YET = "not yet"
RULE_STUDENTISED = "Student and skewness-corrected t"
RULE_TIED = "exact sign-flip (every difference equal)"

_SIMPSON_STEPS = 16  # grid points per standard deviation of a look's increment (at least)
_MIN_GRID = 401
_TAIL_SD = 8.5  # the continuation region is cut at this many standard deviations of S_k


# ---- the design -------------------------------------------------------------------------------

def block_size(questions: int, block: int | None = None) -> int:
    """The questions judged between two looks: ``block`` when given, else max(5, ⌈N/10⌉)."""
    if block is not None:
        if block < 1:
            raise InputError(f"a block of {block} questions: give a block size of 1 or more")
        return int(block)
    return max(MIN_BLOCK, math.ceil(questions / BLOCKS))


def look_counts(questions: int, block: int | None = None) -> tuple[int, ...]:
    """Cumulative questions judged at each look: b, 2b, …, N (the last block may be smaller); N ≥ 1."""
    b = block_size(questions, block)
    return tuple(min(k * b, questions) for k in range(1, math.ceil(questions / b) + 1))


def spending(fraction: float | np.ndarray, alpha: float) -> float | np.ndarray:
    """Lan-DeMets O'Brien-Fleming-type cumulative two-sided α spent by information fraction t:
    α*(t) = 2 − 2Φ(z_{1−α/2}/√t) (0 at t = 0)."""
    from scipy import special  # here, not at the top: a run without a sequential plan never needs scipy

    t = np.asarray(fraction, dtype=float)
    with np.errstate(divide="ignore"):
        out = 2.0 * special.ndtr(special.ndtri(alpha / 2.0) / np.sqrt(t))
    return float(out) if out.ndim == 0 else out


def _simpson(half_width: float, step: float) -> tuple[np.ndarray, np.ndarray]:
    """Nodes and composite Simpson weights on [−half_width, half_width], at most ``step`` apart."""
    m = max(_MIN_GRID, 2 * math.ceil(half_width / step) + 1)
    x = np.linspace(-half_width, half_width, m)
    w = np.ones(m)
    w[1:-1:2], w[2:-1:2] = 4.0, 2.0
    return x, w * (x[1] - x[0]) / 3.0


def boundaries(fractions: Sequence[float], spent: Sequence[float]) -> np.ndarray:
    """Two-sided z-scale boundaries c_1..c_K for information fractions 0 < t_1 < … < t_K ≤ 1 and the
    cumulative α spent by each look (non-decreasing), by recursive numerical integration (see the
    module docstring). Any spending function: :func:`spending` gives the O'Brien-Fleming type."""
    from scipy import optimize, special

    t = np.asarray(fractions, dtype=float)
    cum = np.asarray(spent, dtype=float)
    if t.ndim != 1 or not len(t) or t.shape != cum.shape:
        raise ValueError("boundaries: give one cumulative α per information fraction")
    if t[0] <= 0 or t[-1] > 1 or np.any(np.diff(t) <= 0):
        raise ValueError("boundaries: information fractions must increase strictly within (0, 1]")
    increments = np.diff(np.concatenate([[0.0], cum]))
    if np.any(increments < 0) or cum[-1] >= 1:
        raise ValueError("boundaries: the cumulative α must not decrease and must stay below 1")
    out = np.empty(len(t))
    out[0] = -special.ndtri(increments[0] / 2.0)
    # sub-density of S_1 = Z_1 √t_1 on its continuation region
    x, w = _simpson(min(out[0], _TAIL_SD) * math.sqrt(t[0]), math.sqrt(t[0]) / _SIMPSON_STEPS)
    g = np.exp(-x * x / (2.0 * t[0])) / math.sqrt(2.0 * math.pi * t[0])
    for k in range(1, len(t)):
        sd = math.sqrt(t[k] - t[k - 1])
        gw = g * w
        root_t = math.sqrt(t[k])
        if increments[k] <= 0.0:
            out[k] = math.inf
        else:
            out[k] = optimize.brentq(_stop_excess, 0.0, 60.0, args=(root_t, gw, x, sd, increments[k]),
                                     xtol=1e-12, rtol=4 * np.finfo(float).eps)
        half = min(out[k], _TAIL_SD) * root_t
        xn, wn = _simpson(half, min(sd, root_t) / _SIMPSON_STEPS)
        g = (np.exp(-(xn[:, None] - x[None, :]) ** 2 / (2.0 * sd * sd)) / (sd * math.sqrt(2.0 * math.pi))) @ gw
        x, w = xn, wn
    return out


def _stop_excess(c: float, root_t: float, gw, x, sd: float, increment: float) -> float:
    """The probability of stopping at a look with boundary ``c`` (the continuation sub-density ``gw``
    at ``x`` carried one increment of standard deviation ``sd``), less the α ``increment`` it may spend."""
    from scipy import special

    b = c * root_t
    return float(gw @ (special.ndtr((-b - x) / sd) + special.ndtr((x - b) / sd))) - increment


@dataclass(frozen=True)
class Design:
    """A group-sequential plan for N questions: the looks, each metric's α and its boundaries.

    ``counts[k-1]`` questions are judged at look k; ``bounds[k-1]`` is c_k (z scale) and
    ``spent[k-1]`` = α*(t_k), both for one metric, whose two-sided α is ``alpha / metrics``."""

    questions: int
    counts: tuple[int, ...]
    alpha: float
    metrics: int
    bounds: tuple[float, ...]
    spent: tuple[float, ...]

    @property
    def looks(self) -> int:
        return len(self.counts)

    @property
    def alpha_per_metric(self) -> float:
        """Bonferroni: each of the m gated metrics is tested at α/m."""
        return self.alpha / self.metrics

    @property
    def fractions(self) -> tuple[float, ...]:
        return tuple(n / self.questions for n in self.counts)

    def nominal(self, index: int) -> float:
        """Two-sided nominal level of look ``index`` (1-based): 2(1 − Φ(c_k))."""
        from scipy import special

        return float(2.0 * special.ndtr(-self.bounds[index - 1]))


def plan(questions: int, *, alpha: float = ALPHA, metrics: int = 1, block: int | None = None,
         counts: Sequence[int] | None = None) -> Design:
    """The design for ``questions`` paired questions, ``metrics`` gated metrics sharing the two-sided
    ``alpha`` (Bonferroni), looks every ``block`` questions (default max(5, ⌈N/10⌉)) or at the given
    cumulative ``counts`` (strictly increasing, at most N: e.g. the counts actually reached when judge
    errors left a block short; α spending allows any schedule, and a look's boundary depends only on
    the looks before it)."""
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha {alpha!r}: give a two-sided significance level between 0 and 1, e.g. 0.05")
    if metrics < 1:
        raise InputError(f"{metrics} gated metrics: a sequential comparison needs at least one metric to test")
    if questions < 1:
        raise InputError("a sequential design needs at least 1 question: give a question set that is not empty")
    if counts is None:
        looks = look_counts(questions, block)
    else:
        looks = tuple(int(n) for n in counts)
        if (not looks or looks[0] < 1 or looks[-1] > questions
                or any(b <= a for a, b in zip(looks, looks[1:], strict=False))):
            raise InputError(f"look counts {list(looks)}: give strictly increasing counts between 1 and "
                             f"{questions} (the questions)")
    fractions = np.array(looks, dtype=float) / questions
    spent = np.atleast_1d(spending(fractions, alpha / metrics))
    bounds = boundaries(fractions, spent)
    return Design(questions, looks, float(alpha), int(metrics), tuple(float(c) for c in bounds),
                  tuple(float(s) for s in spent))


# ---- a look -----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Moments:
    """Sample summaries along the last axis: count, mean, SD (ddof 1), skewness k_3/s³, and whether
    every value is equal (or there are fewer than two). Arrays (or 0-d arrays) of one shape."""

    n: np.ndarray
    mean: np.ndarray
    sd: np.ndarray
    skew: np.ndarray
    tied: np.ndarray


def moments(differences: np.ndarray | Sequence[float]) -> Moments:
    """:class:`Moments` of the paired differences along the last axis (rows of a 2-d array are
    independent samples: the simulation passes many at once)."""
    d = np.asarray(differences, dtype=float)
    n = d.shape[-1]
    if n == 0:
        raise ValueError("moments: no differences")
    mean = d.mean(axis=-1)
    centred = d - mean[..., None]
    tied = (d.max(axis=-1) == d.min(axis=-1)) | (n < 2)
    ss = (centred ** 2).sum(axis=-1)
    sd = np.sqrt(ss / (n - 1)) if n > 1 else np.zeros_like(mean)
    if n > 2:
        k3 = n * (centred ** 3).sum(axis=-1) / ((n - 1) * (n - 2))
        with np.errstate(divide="ignore", invalid="ignore"):
            skew = np.where(tied, 0.0, k3 / sd ** 3)
    else:
        skew = np.zeros_like(mean)
    return Moments(np.full(mean.shape, n), mean, np.where(tied, 0.0, sd), skew, tied)


def critical_value(bound: float, n: int | np.ndarray) -> np.ndarray:
    """Student's t quantile with n − 1 degrees of freedom at the boundary's one-sided nominal level:
    F⁻¹_{t,n−1}(Φ(c)) (∞ below two differences)."""
    from scipy import special, stats

    n = np.asarray(n, dtype=float)
    with np.errstate(invalid="ignore"):
        q = stats.t.isf(special.ndtr(-bound), np.maximum(n - 1.0, 1.0))
    return np.where(n >= 2, q, np.inf)


def hall(x: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Hall's (1992) transformation g(x) = x + a x²/3 + a² x³/27 + a/6 (a = γ̂/√n), increasing in x."""
    return x + a * x * x / 3.0 + a * a * x ** 3 / 27.0 + a / 6.0


def hall_inverse(y: np.ndarray, a: np.ndarray) -> np.ndarray:
    """g⁻¹(y) = 3((1 + a(y − a/6))^{1/3} − 1)/a, computed without cancellation; y when a = 0."""
    y, a = np.broadcast_arrays(np.asarray(y, dtype=float), np.asarray(a, dtype=float))
    z = a * (y - a / 6.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        # expm1/log1p keep small z exact; far from 0 the plain cube root has no cancellation
        root_minus_one = np.where(z > -0.5, np.expm1(np.log1p(np.maximum(z, -0.5)) / 3.0), np.cbrt(1.0 + z) - 1.0)
        x = 3.0 * root_minus_one / a
    return np.where(a == 0.0, y, x)


def repeated_interval(m: Moments, design: Design, index: int, *, span: float) -> tuple[np.ndarray, np.ndarray]:
    """The repeated confidence interval (low, high) of the mean difference at look ``index``
    (1-based) of ``design``, for samples summarised by ``m`` (see the module docstring; degenerate
    samples by the exact sign-flip rule), clipped to [−span, span]."""
    bound = design.bounds[index - 1]
    q = critical_value(bound, m.n)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        se = m.sd / np.sqrt(m.n)
        a = m.skew / np.sqrt(m.n)
        low = m.mean - se * np.maximum(q, hall_inverse(q, a))
        high = m.mean + se * np.maximum(q, -hall_inverse(-q, a))
    exact = np.power(2.0, 1.0 - m.n) <= design.nominal(index)  # the sign-flip test rejects every θ ≠ δ₀
    low = np.where(m.tied, np.where(exact, m.mean, -span), low)
    high = np.where(m.tied, np.where(exact, m.mean, span), high)
    return np.clip(low, -span, span), np.clip(high, -span, span)


def decide(low: np.ndarray | float, high: np.ndarray | float, margin: float | None = None,
           final: bool = False) -> np.ndarray:
    """+1 (better, or non-inferior with a margin), −1 (worse / inferior) or 0 (not decided) from an
    interval: low > 0 / high < 0, or low > −margin / high < −margin. At the last look a lower bound
    equal to −margin is non-inferior too, as in ``compare --margin`` (identical runs pass a margin of 0)."""
    threshold = 0.0 if margin is None else -float(margin)
    low, high = np.asarray(low), np.asarray(high)
    above = (low > threshold) | ((low == threshold) & (final and margin is not None))
    return np.where(above, 1, np.where(high < threshold, -1, 0))


@dataclass(frozen=True)
class Look:
    """One metric at one look. ``low``/``high`` is the repeated confidence interval of the mean
    paired difference (new − baseline); ``verdict`` one of better, worse, non-inferior, inferior,
    not yet, and at the last look no detectable difference / not shown non-inferior."""

    look: int  # 1-based
    looks: int  # K, the looks planned
    n: int  # questions (paired differences) so far
    questions: int  # N
    estimate: float  # mean paired difference
    low: float
    high: float
    verdict: str
    decided: bool  # the interval excludes 0 (or clears −margin either way)
    final: bool  # the last planned look
    margin: float | None
    boundary: float  # c_k, z scale
    critical: float | None  # Student t quantile used; None for a degenerate sample
    statistic: float | None  # Studentised statistic at θ₀ (0, or −margin); None when degenerate
    corrected: float | None  # Hall's skewness-corrected statistic at θ₀
    alpha_spent: float  # α*(t_k) of this metric
    rule: str

    @property
    def fraction(self) -> float:
        return self.n / self.questions

    def summary(self, digits: int = 2) -> str:
        """One line, e.g. 'decided at look 3 of 10 after 120 of 400 questions: better, Δ +0.42, interval
        [+0.11, +0.73]'."""
        figures = (f"Δ {self.estimate:+.{digits}f}, interval [{self.low:+.{digits}f}, {self.high:+.{digits}f}]")
        where = f"look {self.look} of {self.looks} after {self.n} of {self.questions} questions"
        if self.decided:
            return f"decided at {where}: {self.verdict}, {figures}"
        if self.final:
            return f"{self.verdict} at {where}, {figures}"
        return f"not decided at {where}, {figures}"


def look(differences: Sequence[float] | np.ndarray, design: Design, index: int, *, span: float,
         margin: float | None = None) -> Look:
    """Test one metric at look ``index`` (1-based) of ``design``: ``differences`` are its paired
    differences new − baseline on the ``design.counts[index-1]`` questions judged so far (any
    order); ``span`` the largest possible |difference| (9 for grades 1-10, 10 for total scores, 100
    for pass rates in points); ``margin`` a non-inferiority margin in the same unit."""
    if not 1 <= index <= design.looks:
        raise ValueError(f"look {index}: the design has looks 1 to {design.looks}")
    d = np.asarray(differences, dtype=float)
    if d.ndim != 1 or len(d) != design.counts[index - 1]:
        raise ValueError(f"look {index}: {d.size} differences, the design expects {design.counts[index - 1]}; "
                         "plan the design with the counts reached (plan(N, counts=...))")
    if not np.all(np.isfinite(d)):
        raise ValueError("look: the differences must be finite numbers")
    if not span > 0:
        raise ValueError("look: span (the largest possible |difference|) must be positive")
    if margin is not None and not (math.isfinite(margin) and margin >= 0):
        raise InputError(f"margin {margin!r}: give a non-inferiority margin of 0 or more, in the metric's unit")
    m = moments(d)
    low, high = (float(v) for v in repeated_interval(m, design, index, span=span))
    final = index == design.looks
    code = int(decide(low, high, margin, final))
    if margin is None:
        verdict = {1: BETTER, -1: WORSE}.get(code, SAME if final else NOT_YET)
    else:
        verdict = {1: NON_INFERIOR, -1: INFERIOR}.get(code, NOT_SHOWN if final else NOT_YET)
    null = 0.0 if margin is None else -float(margin)
    tied = bool(m.tied)
    if tied:
        critical = statistic = corrected = None
    else:
        critical = float(critical_value(design.bounds[index - 1], m.n))
        statistic = float((m.mean - null) / (m.sd / math.sqrt(len(d))))
        corrected = float(hall(np.float64(statistic), m.skew / math.sqrt(len(d))))
    return Look(index, design.looks, len(d), design.questions, float(m.mean), low, high, verdict, code != 0, final,
                None if margin is None else float(margin), design.bounds[index - 1], critical, statistic, corrected,
                design.spent[index - 1], RULE_TIED if tied else RULE_STUDENTISED)


# ---- the confidence sequence --------------------------------------------------------------------

@dataclass(frozen=True)
class ConfidenceSequence:
    """The anytime-valid interval of a mean after ``n`` values: [low, high] covers the mean at
    every look at once with probability ≥ 1 − alpha."""

    n: int
    estimate: float | None  # the sample mean; None before the first value
    low: float
    high: float
    alpha: float

    @property
    def half_width(self) -> float:
        return (self.high - self.low) / 2.0


def _bets(x: np.ndarray, alpha: float) -> np.ndarray:
    """Predictable plug-in bets λ_t = √(2 log(2/α) / (σ̂²_{t−1} t log(1 + t)))."""
    t = np.arange(1, len(x) + 1, dtype=float)
    mu = (0.5 + np.cumsum(x)) / (t + 1.0)
    var = (0.25 + np.cumsum((x - mu) ** 2)) / (t + 1.0)
    previous = np.concatenate([[0.25], var[:-1]])
    return np.sqrt(2.0 * math.log(2.0 / alpha) / (previous * t * np.log1p(t)))


def confidence_sequence(values: Sequence[float] | np.ndarray, *, scale: tuple[float, float], alpha: float = ALPHA,
                        breaks: int = BREAKS) -> ConfidenceSequence:
    """Betting confidence sequence (Waudby-Smith & Ramdas 2024; module docstring) for the mean of
    ``values`` (in the order judged) that lie in ``scale`` = (lo, hi): grades (1, 10), pass
    indicators (0, 1). Computed afresh from all values each time (running intersection included)."""
    lo, hi = float(scale[0]), float(scale[1])
    if not hi > lo:
        raise ValueError(f"confidence_sequence: scale {scale!r} must be (low, high) with low < high")
    if not 0.0 < alpha < 1.0:
        raise InputError(f"alpha {alpha!r}: give a significance level between 0 and 1, e.g. 0.05")
    v = np.asarray(values, dtype=float)
    if v.size and (not np.all(np.isfinite(v)) or v.min() < lo or v.max() > hi):
        raise ValueError(f"confidence_sequence: every value must lie in [{lo:g}, {hi:g}]")
    if not v.size:
        return ConfidenceSequence(0, None, lo, hi, float(alpha))
    x = (v - lo) / (hi - lo)
    grid = np.linspace(0.0, 1.0, breaks + 1)
    bets = _bets(x, alpha)
    with np.errstate(divide="ignore"):
        cap_up, cap_down = BETTING_TRUNCATION / grid, BETTING_TRUNCATION / (1.0 - grid)
    log_k_up = np.zeros(len(grid))
    log_k_down = np.zeros(len(grid))
    worst = np.full(len(grid), -np.inf)  # running maximum of log K_s(m) over s ≤ t
    rows = max(1, 2_000_000 // len(grid))
    for start in range(0, len(x), rows):
        xs, bs = x[start:start + rows, None], bets[start:start + rows, None]
        gap = xs - grid[None, :]
        up = log_k_up + np.cumsum(np.log1p(np.minimum(bs, cap_up) * gap), axis=0)
        down = log_k_down + np.cumsum(np.log1p(-np.minimum(bs, cap_down) * gap), axis=0)
        worst = np.maximum(worst, np.maximum(up, down).max(axis=0) - math.log(2.0))
        log_k_up, log_k_down = up[-1], down[-1]
    inside = np.flatnonzero(worst < math.log(1.0 / alpha))
    step = 1.0 / breaks
    low, high = (max(0.0, grid[inside[0]] - step), min(1.0, grid[inside[-1]] + step)) if inside.size else (0.0, 1.0)
    return ConfidenceSequence(len(v), float(v.mean()), float(lo + low * (hi - lo)), float(lo + high * (hi - lo)),
                              float(alpha))
