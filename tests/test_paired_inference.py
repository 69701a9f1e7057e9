"""One inference per compared metric: the exact tests against scipy, their inverted intervals against the
tests themselves, and the hand-computed example of a run with the needle at rank 1 on 5 more of 27
questions."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from components.stats.paired_inference import (BOOTSTRAP, MCNEMAR, SIGN_FLIP_EXACT, SIGN_FLIP_MC, TEST_INVERSION,
                                               binary_unit, disagrees, mcnemar_exact, paired_inference,
                                               sign_flip_exact)


def _scipy_exact_p(d):
    res = stats.permutation_test((np.asarray(d),), np.mean, permutation_type="samples", n_resamples=np.inf,
                                 alternative="two-sided")
    return res.pvalue


@pytest.mark.parametrize("d", [[1.0, 2.0, -0.5, 3.0, 0.0, 1.5, 2.5], [0.3, -0.2, 0.1, 0.4, -0.1, 0.2, 0.5, 0.6, -0.3],
                               [2.0, 1.0, 1.0, 3.0, 1.0, 2.0, 4.0, 1.0, 2.0, 1.0, 3.0, 1.0]])
def test_exact_sign_flip_p_is_scipys(d):
    p, _ = sign_flip_exact(d)
    assert p == pytest.approx(_scipy_exact_p(d), abs=1e-12)


def test_the_inverted_interval_is_where_the_test_does_not_reject():
    d = [1.0, 2.0, -0.5, 3.0, 0.0, 1.5, 2.5, 0.8, -0.2, 1.1]
    p, (lo, hi) = sign_flip_exact(d)
    assert lo < np.mean(d) < hi
    eps = 1e-6
    for inside in (lo + eps, hi - eps, (lo + hi) / 2):
        assert sign_flip_exact([x - inside for x in d])[0] >= 0.05
    for outside in (lo - eps, hi + eps):
        assert sign_flip_exact([x - outside for x in d])[0] < 0.05
    assert (lo > 0) == (p < 0.05)  # the interval and the p read the same way


def test_hand_computed_exact_interval():
    # n = 6: r = ceil(0.05 · 64 / 2) − 1 = 1: the interval is [smallest, largest] single value (subset mean)
    d = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    p, ci = sign_flip_exact(d)
    assert p == pytest.approx(2 / 64)
    assert ci == (1.0, 6.0)
    # n = 5: the smallest possible p is 2/32 > .05: no shift is ever rejected
    assert sign_flip_exact([1.0, 2.0, 3.0, 4.0, 5.0]) == (pytest.approx(2 / 32), None)


def test_mcnemar_on_five_more_at_rank_1_of_27():
    """The new run has the needle at rank 1 on 5 more of 27 questions, none fewer: hit@1 +18.5 points.
    The exact p is 2/32 = 0.0625 (a Monte-Carlo estimate said 0.067), and the interval by inversion,
    [(2 · 0.025^(1/5) − 1) · 5/27 · 100, 5/27 · 100], includes 0 beside "no detectable difference"."""
    d = [100.0] * 5 + [0.0] * 22
    p, (lo, hi) = mcnemar_exact(d, 100.0)
    assert p == pytest.approx(0.0625)
    assert lo == pytest.approx((2 * 0.025 ** 0.2 - 1) * 5 / 27 * 100) and lo < 0
    assert hi == pytest.approx(500 / 27)
    inference = paired_inference(d, unit=100.0)
    assert (inference.test, inference.ci_method) == (MCNEMAR, TEST_INVERSION)
    assert not disagrees(inference.ci95, inference.p, 0.05)


@pytest.mark.parametrize("b,c,n", [(7, 1, 30), (3, 3, 12), (12, 2, 40), (0, 4, 10)])
def test_mcnemar_is_scipys_binomtest(b, c, n):
    d = [1.0] * b + [-1.0] * c + [0.0] * (n - b - c)
    p, (lo, hi) = mcnemar_exact(d, 1.0)
    test = stats.binomtest(b, b + c)
    assert p == pytest.approx(test.pvalue)
    ci = test.proportion_ci(confidence_level=0.95, method="exact")
    scale = (b + c) / n
    assert lo == pytest.approx((2 * ci.low - 1) * scale) and hi == pytest.approx((2 * ci.high - 1) * scale)
    assert (lo > 0 or hi < 0) == (p < 0.05)


def test_no_discordant_pair():
    assert mcnemar_exact([0.0, 0.0, 0.0], 1.0) == (1.0, (0.0, 0.0))


def test_the_choice_of_test():
    assert binary_unit([0.0, 100.0, 100.0, None, 0.0]) == 100.0
    assert binary_unit([0.0, 1.0, 0.5]) is None and binary_unit([0.0, -1.0]) is None
    assert binary_unit([0.0, 0.0]) is None
    small = paired_inference([0.5, 1.0, 0.2, 0.9, 1.1, 0.3, 0.7])
    assert (small.test, small.ci_method, small.p_mc_se) == (SIGN_FLIP_EXACT, TEST_INVERSION, None)
    large = paired_inference([0.1] * 25, mc_p=0.04, permutations=10_000)
    assert (large.test, large.ci_method, large.ci95) == (SIGN_FLIP_MC, BOOTSTRAP, None)
    assert large.p_mc_se == pytest.approx(math.sqrt(0.04 * 0.96 / 10_000))
    with pytest.raises(ValueError, match="1 to 20"):
        sign_flip_exact([0.1] * 21)


@pytest.mark.parametrize("ci,p,expected", [((0.1, 0.5), 0.08, True), ((-0.1, 0.5), 0.01, True),
                                           ((0.1, 0.5), 0.01, False), ((-0.1, 0.5), 0.3, False),
                                           (None, 0.3, False), ((0.1, 0.5), None, False)])
def test_disagrees(ci, p, expected):
    assert disagrees(ci, p, 0.05) is expected


@pytest.mark.parametrize("q,a,b", [(0.025, 5, 1), (0.975, 12, 3), (0.5, 2.5, 7.0), (0.001, 40, 200), (0.999, 1, 1)])
def test_the_beta_quantile_and_cdf_are_scipys(q, a, b):
    from components.stats.statistics import beta_cdf, beta_quantile

    assert beta_quantile(q, a, b) == pytest.approx(stats.beta.ppf(q, a, b), rel=1e-9, abs=1e-12)
    assert beta_cdf(0.3, a, b) == pytest.approx(stats.beta.cdf(0.3, a, b), rel=1e-9, abs=1e-14)


def test_mcnemar_beyond_the_exact_integer_sum_is_scipys(monkeypatch):
    """Past EXACT_TAIL_MAX discordant questions the tail is the incomplete beta: the same p as scipy."""
    import components.stats.paired_inference as PI

    d = [1.0] * 70 + [-1.0] * 45 + [0.0] * 85
    exact = mcnemar_exact(d, 1.0)
    monkeypatch.setattr(PI, "EXACT_TAIL_MAX", 10)
    approx = mcnemar_exact(d, 1.0)
    assert exact[0] == pytest.approx(stats.binomtest(70, 115).pvalue, rel=1e-12)
    assert approx[0] == pytest.approx(exact[0], rel=1e-9) and approx[1] == exact[1]
