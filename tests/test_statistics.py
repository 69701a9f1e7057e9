"""components.stats.statistics against scipy.stats (same stream for the bootstrap, exact or Monte
Carlo for the sign-flip test) and hand-pinned tiny cases."""

from __future__ import annotations

import math

import numpy as np
import pytest

from components.stats import statistics as S

stats = pytest.importorskip("scipy.stats")


def scipy_ci(data, seed=S.BOOTSTRAP_SEED, paired=False, n_resamples=S.RESAMPLES):
    if paired:
        res = stats.bootstrap(data, lambda a, b, axis: np.mean(b - a, axis=axis), paired=True, method="percentile",
                              n_resamples=n_resamples, rng=np.random.default_rng(seed))
    else:
        res = stats.bootstrap((data,), np.mean, method="percentile", n_resamples=n_resamples,
                              rng=np.random.default_rng(seed))
    return res.confidence_interval.low, res.confidence_interval.high


@pytest.mark.parametrize("n", [2, 7, 40, 1000])
def test_bootstrap_ci_is_scipys_percentile_bootstrap(n):
    x = np.random.default_rng(n).random(n)
    assert S.bootstrap_ci(x) == pytest.approx(scipy_ci(x), rel=1e-12, abs=1e-12)
    # another seed, another stream: the two intervals agree within the resampling error
    lo, hi = S.bootstrap_ci(x, seed=7)
    slo, shi = scipy_ci(x, seed=123)
    width = shi - slo
    assert abs(lo - slo) < 0.1 * width + 1e-12 and abs(hi - shi) < 0.1 * width + 1e-12


def test_bootstrap_on_binary_values_and_levels():
    hits = [1, 0, 1, 1, 0, 1, 1, 1, 0, 1] * 3
    assert S.bootstrap_ci(hits, level=0.9) == pytest.approx(
        stats.bootstrap((np.array(hits, float),), np.mean, method="percentile", confidence_level=0.9,
                        rng=np.random.default_rng(S.BOOTSTRAP_SEED)).confidence_interval, abs=1e-12)


def test_bootstrap_cis_share_resamples_and_equal_single_calls():
    rng = np.random.default_rng(3)
    cols = [rng.random(30), rng.integers(0, 2, 30), rng.integers(1, 11, 30)]
    together = S.bootstrap_cis(cols)
    for joint, alone in zip(together, [S.bootstrap_ci(c) for c in cols], strict=True):
        assert joint == pytest.approx(alone, rel=1e-12)  # equal up to the matrix product's rounding


def test_paired_bootstrap_is_scipys_paired_bootstrap():
    rng = np.random.default_rng(5)
    a, b = rng.random(25), rng.random(25)
    assert S.paired_bootstrap_ci(a, b) == pytest.approx(scipy_ci((a, b), paired=True), abs=1e-12)


def test_bootstrap_empty_and_single():
    assert S.bootstrap_ci([]) is None
    assert S.bootstrap_ci([3.0]) is None
    assert S.bootstrap_cis([[1.0], [2.0]]) == [None, None]
    assert S.bootstrap_ci([2.0, 2.0, 2.0]) == (2.0, 2.0)
    assert np.isnan(S.bootstrap_means([[]], resamples=3)).all()


def test_two_level_bootstrap_follows_the_documented_stream():
    values = [[4, 8], [5], [7, 9, 2]]
    rng = np.random.default_rng(11)
    idx = rng.integers(0, 3, (4, 3))
    u = rng.random((4, 3))
    counts = np.array([2, 1, 3])
    rows = [values[i] for i in range(3)]
    expected = [np.mean([rows[i][int(u[r, c] * counts[i])] for c, i in enumerate(idx[r])]) for r in range(4)]
    assert S.bootstrap_means([values], resamples=4, seed=11)[:, 0] == pytest.approx(expected)


def test_two_level_bootstrap_includes_judge_noise():
    # every question's repeated grades are 4 and 8: the questions agree, the judge does not
    values = [[4.0, 8.0]] * 100
    assert S.bootstrap_ci([6.0] * 100) == (6.0, 6.0)  # one level: no spread at all
    lo, hi = S.bootstrap_ci(values)
    half = 1.959964 * 2.0 / math.sqrt(100)  # a draw has SD 2; the mean of 100 draws SD 0.2
    assert lo == pytest.approx(6.0 - half, abs=0.06) and hi == pytest.approx(6.0 + half, abs=0.06)


def test_paired_deltas_with_repeats_are_all_pairwise_differences():
    d = S.paired_deltas([[1, 2], 5], [[3], [6, 8]])
    assert sorted(d.matrix[0, : d.counts[0]].tolist()) == [1.0, 2.0]
    assert sorted(d.matrix[1, : d.counts[1]].tolist()) == [1.0, 3.0]
    assert d.point.tolist() == [1.5, 2.0]


def scipy_p(d, n_resamples=S.PERMUTATIONS, seed=0):
    return stats.permutation_test((np.asarray(d, float),), np.mean, permutation_type="samples", vectorized=True,
                                  n_resamples=n_resamples, rng=np.random.default_rng(seed)).pvalue


@pytest.mark.parametrize("d", [
    [1, 1, 1], [1, 2, 3, 4], [0.5, -0.25, 0, 0, 1 / 3, 1, -1, 0.2],
    [1 / 3, -1 / 2, 1 / 6, 1, 0, 0, -1 / 3, 1 / 2, 1, 1, -1 / 4, 0, 1 / 5],  # 13 deltas: exact, 8192 patterns
    [0, 0, 0, 0],
])
def test_sign_flip_exact_equals_scipy(d):
    assert S.sign_flip_test(d) == pytest.approx(scipy_p(d), abs=1e-12)


def test_sign_flip_by_hand():
    assert S.sign_flip_test([1, 1, 1]) == 0.25  # only +++ reaches 3: 2 × 1/8
    assert S.sign_flip_test([1, 2, 3, 4]) == 0.125  # only ++++ reaches 10: 2 × 1/16
    assert S.sign_flip_test([2, -1]) == 1.0  # sum 1: ++ (1) and +- (3) are ≥ 1: 2 × 2/4
    assert S.sign_flip_test([0.5]) == 1.0
    assert S.sign_flip_test([]) is None


@pytest.mark.parametrize("shift", [0.0, 0.1, 0.3])
def test_sign_flip_monte_carlo_agrees_with_scipy(shift):
    d = np.random.default_rng(int(shift * 10)).normal(shift, 1.0, 60)
    ours, theirs = S.sign_flip_test(d), scipy_p(d)
    # both estimate the same p from 10,000 random sign patterns: SE ≤ sqrt(p(1-p)/10^4) · 2 each
    assert abs(ours - theirs) < 0.04
    assert S.sign_flip_tests(np.column_stack([d, -d, np.zeros(60)])) == pytest.approx([ours, ours, 1.0])


def test_holm_by_hand():
    assert S.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert S.holm([0.02, None, 0.5]) == pytest.approx([0.04, None, 0.5]) and S.holm([0.02, None, 0.5])[1] is None
    assert S.holm([0.5, 0.6]) == [1.0, 1.0]
    assert S.holm([0.2]) == [0.2]
    assert S.holm([]) == []


def test_detectable_delta_and_questions_needed():
    d = [0, 1, 0, 1]  # SD (ddof 1) = 0.57735, n = 4
    z = stats.norm.ppf(0.975) + stats.norm.ppf(0.8)  # 2.801585
    assert S.min_detectable_delta(d) == pytest.approx(z * 0.5773503 / 2, abs=1e-6)
    assert S.min_detectable_delta(d) == pytest.approx(0.808748, abs=1e-6)
    assert S.questions_needed(d, 0.5) == 11  # (2.801585 · 0.57735 / 0.5)² = 10.47 → 11
    assert S.questions_needed(d, -0.5) == 11
    # at the MDE, a z-test on n deltas has the asked power
    s = np.std(d, ddof=1)
    assert stats.norm.cdf(S.min_detectable_delta(d) / (s / 2) - stats.norm.ppf(0.975)) == pytest.approx(0.8)
    assert S.min_detectable_delta([1.0]) is None and S.questions_needed([1.0], 0.1) is None
    assert S.min_detectable_delta([0.2, 0.2]) == 0.0 and S.questions_needed([0.2, 0.2], 0.1) is None
    with pytest.raises(ValueError):
        S.questions_needed(d, 0)


def test_against_says_where_an_interval_lies_against_a_bound():
    """The one rule of the signal check and the known answers: wholly under 1 grade, at or over it, or across it."""
    assert S.against((0.2, 0.99), 1.0) == S.UNDER
    assert S.against((1.0, 1.0), 1.0) == S.OVER  # the lower end at the bound counts as over
    assert S.against((1.2, 3.0), 1.0) == S.OVER
    assert S.against((0.5, 1.0), 1.0) == S.ACROSS  # the upper end at the bound is not under it
    assert S.against((-2.0, 2.0), 1.0) == S.ACROSS
    assert S.against(None, 1.0) is None
