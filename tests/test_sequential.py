"""components.stats.sequential against independent computations: scipy's multivariate normal
integration for the α each look spends, published boundaries, hand-worked looks (boundaries from the
closed form of a first look, Hall's inverse by root finding), the exact sign-flip rule, and a small
seeded simulation of the confidence sequence's time-uniform coverage."""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
from scipy import optimize, stats

from components.stats import sequential as Q
from utils.errors import InputError

Z975 = stats.norm.isf(0.025)  # 1.959964


def obf(t, alpha=0.05):
    """O'Brien-Fleming-type spending written out with scipy: 2 − 2Φ(z_{1−α/2}/√t)."""
    return 2.0 - 2.0 * stats.norm.cdf(stats.norm.ppf(1.0 - alpha / 2.0) / np.sqrt(t))


def continuation(bounds, fractions, rng):
    """P(|Z_j| < c_j for every look j given), (Z_j) multivariate normal with corr √(t_i/t_j)."""
    t = np.asarray(fractions)
    c = np.asarray(bounds)
    if len(t) == 1:
        return 1.0 - 2.0 * stats.norm.sf(c[0])
    cov = np.sqrt(np.minimum.outer(t, t) / np.maximum.outer(t, t))
    return stats.multivariate_normal(np.zeros(len(t)), cov).cdf(c, lower_limit=-c, rng=rng)


def test_spending_is_lan_demets_obrien_fleming_type():
    t = np.array([0.1, 0.25, 0.5, 0.9, 1.0])
    assert Q.spending(t, 0.05) == pytest.approx(obf(t), rel=1e-12)
    assert Q.spending(1.0, 0.05) == pytest.approx(0.05, rel=1e-12)
    assert Q.spending(0.0, 0.05) == 0.0


def test_look_counts_equal_blocks_of_a_tenth_at_least_five():
    assert Q.look_counts(400) == tuple(range(40, 401, 40))
    assert Q.look_counts(57) == (6, 12, 18, 24, 30, 36, 42, 48, 54, 57)
    assert Q.look_counts(7) == (5, 7)
    assert Q.look_counts(3) == (3,)
    assert Q.look_counts(400, block=150) == (150, 300, 400)
    with pytest.raises(InputError):
        Q.plan(0)
    with pytest.raises(InputError):
        Q.block_size(10, 0)


def test_first_boundary_is_the_closed_form():
    # α*(t_1) is all spent at look 1: c_1 = z_{1−α*(t_1)/2} = z_{1−α/2}/√t_1
    design = Q.plan(400)
    assert design.bounds[0] == pytest.approx(Z975 / math.sqrt(0.1), rel=1e-10)  # 6.19795
    assert Q.plan(10).bounds[0] == pytest.approx(Z975 * math.sqrt(2.0), rel=1e-10)


@pytest.mark.parametrize("questions, metrics", [(25, 1), (25, 3)])
def test_each_look_spends_the_spending_functions_increment(questions, metrics):
    """Direct multivariate-normal integration (scipy, Genz's algorithm) of the boundaries' crossing
    probabilities: P(continue to k−1) − P(continue to k) = α*(t_k) − α*(t_{k−1})."""
    design = Q.plan(questions, metrics=metrics)
    t = design.fractions
    alpha = 0.05 / metrics
    rng = np.random.default_rng(1)
    previous = continuation(design.bounds[:1], t[:1], rng)
    assert 1.0 - previous == pytest.approx(obf(t[0], alpha), rel=1e-9)
    for k in range(2, design.looks + 1):
        current = continuation(design.bounds[:k], t[:k], rng)
        assert previous - current == pytest.approx(obf(t[k - 1], alpha) - obf(t[k - 2], alpha), abs=2e-5)
        previous = current
    assert 1.0 - previous == pytest.approx(alpha, abs=2e-5)  # the whole α is spent by the last look


def test_boundaries_reproduce_published_per_side_spending_values():
    """The recursion with the α/2-per-side O'Brien-Fleming-type spending 4 − 4Φ(z_{1−α/4}/√t) of R's
    ldbounds and gsDesign reproduces their tabulated two-sided α = .05 boundaries."""
    for looks, published in ((5, [4.8769, 3.3569, 2.6803, 2.2898, 2.0310]), (4, [4.3326, 2.9631, 2.3590, 2.0141])):
        t = np.arange(1, looks + 1) / looks
        per_side = 4.0 - 4.0 * stats.norm.cdf(stats.norm.ppf(1.0 - 0.05 / 4.0) / np.sqrt(t))
        assert Q.boundaries(t, per_side) == pytest.approx(published, abs=1.5e-4)


def test_boundaries_are_close_to_the_constant_shape_obrien_fleming_boundary():
    # the rough check: for 10 equal looks at α .05 the constant-shape boundary is about 2.09·√(10/k)
    k = np.arange(1, 11)
    rough = 2.09 * np.sqrt(10.0 / k)
    bounds = np.array(Q.plan(400).bounds)
    assert np.all(np.abs(bounds / rough - 1.0) < 0.07)
    assert np.all(np.diff(bounds) < 0)
    assert bounds[-1] == pytest.approx(2.09, abs=0.04)


def test_bonferroni_splits_alpha_across_metrics():
    three = Q.plan(400, metrics=3)
    assert three.alpha_per_metric == pytest.approx(0.05 / 3)
    assert three.bounds == pytest.approx(Q.plan(400, alpha=0.05 / 3).bounds, rel=1e-12)
    assert three.bounds[-1] > Q.plan(400).bounds[-1]
    assert three.spent[-1] == pytest.approx(0.05 / 3, rel=1e-12)


def test_a_look_can_follow_the_counts_reached():
    design = Q.plan(100, counts=[9, 20, 28, 100])
    assert design.counts == (9, 20, 28, 100)
    assert design.bounds[0] == pytest.approx(Z975 / math.sqrt(0.09), rel=1e-10)
    rng = np.random.default_rng(2)
    assert 1.0 - continuation(design.bounds, design.fractions, rng) == pytest.approx(0.05, abs=2e-5)
    for bad in ([0, 10], [10, 10], [20, 10], [10, 101]):
        with pytest.raises(InputError):
            Q.plan(100, counts=bad)
    with pytest.raises(InputError):
        Q.plan(100, alpha=1.5)
    with pytest.raises(InputError):
        Q.plan(100, metrics=0)


def hall_bounds(q, a):
    """g⁻¹(±q) by root finding (g(x) = x + a x²/3 + a² x³/27 + a/6), not by the closed form."""
    g = lambda x, y: x + a * x * x / 3 + a * a * x ** 3 / 27 + a / 6 - y  # noqa: E731
    return optimize.brentq(g, -100, 100, args=(q,), xtol=1e-14), optimize.brentq(g, -100, 100, args=(-q,), xtol=1e-14)


def test_a_single_look_worked_by_hand():
    # N = 5: one look, c = z_.975; d = 1 2 0 1 3: mean 1.4, s² = 5.2/4, k3 = 5·1.44/12 = 0.6
    d = [1, 2, 0, 1, 3]
    se = math.sqrt(1.3 / 5)
    q = stats.t.isf(0.025, 4)  # 2.776445
    a = 0.6 / 1.3 ** 1.5 / math.sqrt(5)
    up, down = hall_bounds(q, a)
    r = Q.look(d, Q.plan(5), 1, span=9)
    assert r.estimate == pytest.approx(1.4)
    assert r.critical == pytest.approx(q, rel=1e-9)
    assert r.statistic == pytest.approx(1.4 / se, rel=1e-12)
    # the hull: Student's lower bound (−0.0157) is below Hall's (+0.183), Hall's upper (3.18) above Student's
    assert r.low == pytest.approx(1.4 - q * se, rel=1e-9) and r.low < 0 < 1.4 - se * up
    assert r.high == pytest.approx(1.4 - se * down, rel=1e-9) and r.high > 1.4 + q * se
    assert (r.verdict, r.decided, r.final) == (Q.SAME, False, True)
    assert r.alpha_spent == pytest.approx(0.05)
    assert "no detectable difference" in r.summary()


def test_an_early_look_worked_by_hand_decides_better():
    # N = 10 in blocks of 5: c_1 = z_.975 · √2; d = 2 3 2 4 3: mean 2.8, s² = 0.7, k3 = 5·0.72/12 = 0.3
    d = [2, 3, 2, 4, 3]
    c1 = Z975 * math.sqrt(2.0)
    se = math.sqrt(0.7 / 5)
    q = stats.t.isf(stats.norm.sf(c1), 4)
    a = 0.3 / 0.7 ** 1.5 / math.sqrt(5)
    up, _ = hall_bounds(q, a)
    r = Q.look(d, Q.plan(10), 1, span=9)
    assert r.boundary == pytest.approx(c1, rel=1e-10)
    assert r.low == pytest.approx(2.8 - se * max(q, up), rel=1e-9)  # 0.768 (Student's is the wider here)
    assert r.high == 9.0  # Hall's upper bound (10.8) clipped to the largest possible difference
    assert (r.verdict, r.decided, r.final, r.look, r.looks, r.n) == (Q.BETTER, True, False, 1, 2, 5)
    assert r.summary().startswith("decided at look 1 of 2 after 5 of 10 questions: better")
    worse = Q.look([-x for x in d], Q.plan(10), 1, span=9)
    assert worse.verdict == Q.WORSE and worse.low == -9.0 and worse.high == pytest.approx(-r.low, rel=1e-9)


def test_a_non_inferiority_margin():
    d = [0.5, -0.5, 0.0, 1.0, -1.0] * 8  # mean 0, 40 questions, symmetric
    design = Q.plan(40)  # blocks of 5
    final = Q.look(d, design, design.looks, span=9, margin=1.0)
    assert final.low > -1.0 and final.verdict == Q.NON_INFERIOR and final.margin == 1.0
    assert final.statistic == pytest.approx((0 + 1.0) / (np.std(d, ddof=1) / math.sqrt(40)))
    tight = Q.look(d, design, design.looks, span=9, margin=0.1)
    assert tight.low < -0.1 < tight.high and tight.verdict == Q.NOT_SHOWN
    early = Q.look(d[:5], design, 1, span=9, margin=0.1)
    assert early.verdict == Q.NOT_YET and not early.decided
    losing = Q.look([x - 3.0 for x in d], design, design.looks, span=9, margin=1.0)
    assert losing.high < -1.0 and losing.verdict == Q.INFERIOR and losing.decided
    with pytest.raises(InputError):
        Q.look(d, design, design.looks, span=9, margin=-1)


def test_degenerate_variance_is_judged_by_the_exact_sign_flip_rule():
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # nothing is divided by a zero standard deviation
        design = Q.plan(400)
        # 40 equal gains: p = 2^-39 = 1.8e-12 ≤ 2(1 − Φ(6.198)) = 5.7e-10: the interval is the point
        assert 2.0 ** -39 <= 2 * stats.norm.sf(Z975 / math.sqrt(0.1))
        win = Q.look(np.ones(40), design, 1, span=9)
        assert (win.low, win.high, win.verdict, win.rule) == (1.0, 1.0, Q.BETTER, Q.RULE_TIED)
        assert win.statistic is None and win.critical is None and win.corrected is None
        # three metrics: 2^-39 > 2(1 − Φ(7.570)) = 3.7e-14, nothing can be ruled out yet
        assert 2.0 ** -39 > 2 * stats.norm.sf(stats.norm.isf(0.05 / 6) / math.sqrt(0.1))
        wait = Q.look(np.ones(40), Q.plan(400, metrics=3), 1, span=9)
        assert (wait.low, wait.high, wait.verdict) == (-9.0, 9.0, Q.NOT_YET)
        # all ties: never better or worse; at the last look no detectable difference, [0, 0]
        ties = Q.look(np.zeros(400), design, 10, span=9)
        assert (ties.low, ties.high, ties.verdict, ties.estimate) == (0.0, 0.0, Q.SAME, 0.0)
        assert Q.look(np.zeros(400), design, 10, span=9, margin=0.5).verdict == Q.NON_INFERIOR
        # identical runs and a margin of 0: not decided on ties before the end; at the end, as compare, they pass
        assert Q.look(np.zeros(40), design, 1, span=9, margin=0.0).verdict == Q.NOT_YET
        assert Q.look(np.zeros(400), design, 10, span=9, margin=0.0).verdict == Q.NON_INFERIOR
        # five equal losses at a single look: p = 2^-4 = 0.0625 > 0.05, as compare's exact test says
        few = Q.look([-2.0] * 5, Q.plan(5), 1, span=9)
        assert (few.low, few.high, few.verdict) == (-9.0, 9.0, Q.SAME)
        # vectorised: a tied row among others
        m = Q.moments(np.array([[3.0, 3.0, 3.0], [1.0, 2.0, 4.0]]))
        assert m.tied.tolist() == [True, False] and m.sd[0] == 0.0 and m.skew[0] == 0.0


def test_moments_and_hall_inverse():
    d = np.random.default_rng(3).gamma(2.0, size=(4, 30))
    m = Q.moments(d)
    assert m.mean == pytest.approx(d.mean(axis=1))
    assert m.sd == pytest.approx(d.std(axis=1, ddof=1))
    assert m.skew == pytest.approx(stats.skew(d, axis=1, bias=False), rel=1e-9)  # k3 / k2^1.5
    x = np.linspace(-40, 40, 41)
    for a in (-1.5, -1e-9, 0.0, 1e-9, 0.3, 2.0):
        assert Q.hall_inverse(Q.hall(x, a), a) == pytest.approx(x, abs=1e-9)
        assert np.all(np.diff(Q.hall(x, a)) >= 0)


def test_look_refuses_a_mismatched_count():
    design = Q.plan(400)
    with pytest.raises(ValueError, match="counts"):
        Q.look(np.zeros(39), design, 1, span=9)
    with pytest.raises(ValueError):
        Q.look(np.zeros(40), design, 11, span=9)
    with pytest.raises(ValueError):
        Q.look([np.nan] * 40, design, 1, span=9)


def capital(x, m, alpha):
    """The hedged capital process of Waudby-Smith & Ramdas at one candidate mean, written as a loop."""
    mu, var, k_up, k_down, worst = 0.5, 0.25, 1.0, 1.0, 0.0
    total, squares = 0.0, 0.0
    for t, xi in enumerate(x, start=1):
        bet = math.sqrt(2 * math.log(2 / alpha) / (var * t * math.log(1 + t)))
        k_up *= 1 + min(bet, 0.5 / m) * (xi - m)
        k_down *= 1 - min(bet, 0.5 / (1 - m)) * (xi - m)
        worst = max(worst, max(k_up, k_down) / 2)
        total += xi
        mu = (0.5 + total) / (t + 1)
        squares += (xi - mu) ** 2
        var = (0.25 + squares) / (t + 1)
    return worst


def test_confidence_sequence_edges_are_where_the_capital_reaches_one_over_alpha():
    rng = np.random.default_rng(4)
    grades = rng.integers(1, 11, 60).astype(float)
    cs = Q.confidence_sequence(grades, scale=(1, 10), breaks=1000)
    x = (grades - 1) / 9
    low, high = (cs.low - 1) / 9, (cs.high - 1) / 9
    step = 1 / 1000
    assert capital(x, low + 2 * step, 0.05) < 20 and capital(x, high - 2 * step, 0.05) < 20
    assert capital(x, low - step / 2, 0.05) >= 20 and capital(x, high + step / 2, 0.05) >= 20
    assert cs.low < cs.estimate < cs.high and cs.n == 60 and cs.estimate == pytest.approx(grades.mean())


def test_confidence_sequence_covers_the_mean_at_every_look():
    """40 seeded sequences of 150 pass indicators (p 0.3) and 40 of grades: the interval after the
    last value is the running intersection, so it covers the mean only if every earlier one did."""
    rng = np.random.default_rng(5)
    misses = 0
    for _ in range(40):
        passes = (rng.random(150) < 0.3).astype(float)
        cs = Q.confidence_sequence(passes, scale=(0, 1), breaks=400)
        misses += not cs.low <= 0.3 <= cs.high
        grades = rng.choice(np.arange(1, 11), p=np.full(10, 0.1), size=150).astype(float)
        cs = Q.confidence_sequence(grades, scale=(1, 10), breaks=400)
        misses += not cs.low <= 5.5 <= cs.high
    assert misses <= 4  # ≤ 5% of 80 promised; a pointwise 95% interval checked at every look misses far more
    # and it narrows as values come in
    widths = [Q.confidence_sequence(grades[:n], scale=(1, 10), breaks=400).half_width for n in (10, 50, 150)]
    assert widths[0] > widths[1] > widths[2]


def test_confidence_sequence_degenerate_and_bad_input():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        same = Q.confidence_sequence([7.0] * 50, scale=(1, 10))
        assert same.low <= 7.0 <= same.high and 0 < same.half_width < 4.5
        empty = Q.confidence_sequence([], scale=(1, 10))
        assert (empty.n, empty.estimate, empty.low, empty.high) == (0, None, 1.0, 10.0)
    with pytest.raises(ValueError):
        Q.confidence_sequence([11.0], scale=(1, 10))
    with pytest.raises(ValueError):
        Q.confidence_sequence([1.0], scale=(10, 1))
