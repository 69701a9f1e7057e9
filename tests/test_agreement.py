"""The agreement statistics of ``calibrate``: hand-computed figures pinned, scipy as a reference,
and the coverage of the prediction-powered interval by simulation."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from components.stats.agreement import (average_ranks, normal_mean, pass_confusion, passes, ppi_mean,
                                           spearman_rho, weighted_kappa)

HUMAN = [2, 4, 6, 8, 10]
JUDGE = [3, 4, 7, 6, 10]


def closed_form_kappa(h, j) -> float:
    """Quadratic κ without a table: 1 − Σ(h − j)² / (n · (var_h + var_j + (mean_h − mean_j)²)), population variances."""
    h, j = np.asarray(h, float), np.asarray(j, float)
    return 1 - ((h - j) ** 2).sum() / (len(h) * (h.var() + j.var() + (h.mean() - j.mean()) ** 2))


def test_weighted_kappa_hand_computed():
    # Σd² = 1+0+1+4+0 = 6; means 6 and 6; population variances 8 and 6 → κ = 1 − 6 / (5 · 14) = 64/70
    assert weighted_kappa(HUMAN, JUDGE) == pytest.approx(64 / 70, abs=1e-12)


def test_weighted_kappa_matches_the_closed_form_on_random_grades():
    rng = np.random.default_rng(7)
    for _ in range(50):
        n = int(rng.integers(2, 80))
        h = rng.integers(1, 11, n).tolist()
        j = np.clip(np.asarray(h) + rng.integers(-3, 4, n), 1, 10).tolist()
        if len(set(h) | set(j)) == 1:
            continue
        assert weighted_kappa(h, j) == pytest.approx(closed_form_kappa(h, j), abs=1e-12)


def test_linear_kappa_matches_the_pairwise_form_on_random_grades():
    """Linear κ = 1 − mean |h − j| over the rows / mean |h − j'| over every (human, judge) pair of rows."""
    rng = np.random.default_rng(11)
    for _ in range(50):
        n = int(rng.integers(2, 60))
        h = rng.integers(1, 11, n)
        j = np.clip(h + rng.integers(-3, 4, n), 1, 10)
        if len(set(h.tolist()) | set(j.tolist())) == 1:
            continue
        chance = np.abs(h[:, None] - j[None, :]).mean()
        assert weighted_kappa(h.tolist(), j.tolist(), weights="linear") == pytest.approx(
            1 - np.abs(h - j).mean() / chance, abs=1e-12)
    with pytest.raises(ValueError, match="quadratic, linear"):
        weighted_kappa([1, 2], [1, 2], weights="cubic")


def test_kappa_edges():
    assert weighted_kappa([5, 5, 5], [5, 5, 5]) is None  # no chance disagreement: undefined
    assert weighted_kappa([1, 10], [1, 10]) == pytest.approx(1.0)
    assert weighted_kappa([1, 10], [10, 1]) == pytest.approx(-1.0)  # 1 − 2·81 / (2 · (20.25 + 20.25))
    assert weighted_kappa([], []) is None


def test_spearman_hand_computed_and_against_scipy():
    # judge ranks [1, 2, 4, 3, 5]: Σd² = 2 → ρ = 1 − 6·2 / (5·24) = 0.9
    assert spearman_rho(HUMAN, JUDGE) == pytest.approx(0.9, abs=1e-12)
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(3, 60))
        a, b = rng.integers(1, 11, n), rng.integers(1, 11, n)  # many ties
        if len(set(a)) == 1 or len(set(b)) == 1:
            continue
        assert spearman_rho(a.tolist(), b.tolist()) == pytest.approx(stats.spearmanr(a, b).statistic, abs=1e-12)
        assert average_ranks(a.tolist()) == pytest.approx(stats.rankdata(a))
    assert spearman_rho([3, 3, 3], [1, 2, 3]) is None


def test_pass_confusion_hand_computed():
    ranks = [1, 1, 1, 1, 3]
    # totals: human 2, 4, 6, 8, 9.5 ; judge 3, 4, 7, 6, 9.5 → pass at ≥ 7
    c = pass_confusion(HUMAN, JUDGE, ranks)
    assert (c.both_pass, c.judge_only_pass, c.human_only_pass, c.both_fail) == (1, 1, 1, 2)
    assert c.sensitivity == pytest.approx(1 / 2) and c.specificity == pytest.approx(2 / 3)
    assert c.agreement == pytest.approx(3 / 5)
    assert not passes(7, 2)  # 7 × 0.95 = 6.65: the rank weight counts
    assert passes(7, 1) and not passes(10, None)  # 10 × 0.6 = 6


def test_ppi_hand_computed():
    judge_all = [3, 4, 7, 6, 10, 5, 9]
    human = [2, 4, 6, 8, 9]  # the first five rows were labelled
    e = ppi_mean(judge_all, judge_all[:5], human)
    # 44/7 + mean(−1, 0, −1, 2, −1) = 44/7 − 1/5 = 213/35
    assert e.value == pytest.approx(213 / 35, abs=1e-12)
    # var_N(judge) = 46/7 (ddof 1) → /7 ; var_n(h − j) = 1.7 → /5 ; Var = 46/49 + 17/50 = 3133/2450
    assert e.se == pytest.approx(math.sqrt(3133 / 2450), abs=1e-12)
    half = 1.959963984540054 * math.sqrt(3133 / 2450)
    assert e.ci95 == pytest.approx((213 / 35 - half, 213 / 35 + half), abs=1e-9)
    assert e.ci95[0] == pytest.approx(3.8693, abs=1e-4) and e.ci95[1] == pytest.approx(8.3021, abs=1e-4)


def test_ppi_with_every_row_labelled_is_the_human_mean():
    judge = [3, 4, 7, 6, 10]
    assert ppi_mean(judge, judge, HUMAN).value == pytest.approx(np.mean(HUMAN))
    assert ppi_mean([1], [1], [2]) is None


def test_normal_mean_against_scipy():
    x = [3, 4, 7, 6, 10, 5, 9]
    e = normal_mean(x)
    lo, hi = stats.norm.interval(0.95, loc=np.mean(x), scale=stats.sem(x))
    assert e.ci95 == pytest.approx((lo, hi), abs=1e-12)


def _simulate(runs: int, big_n: int, n: int, seed: int):
    """Coverage of the 95% intervals for the true mean human grade, with a judge biased by +1.5 on
    average (and noisy), over ``runs`` simulated runs of ``big_n`` graded rows, ``n`` labelled."""
    rng = np.random.default_rng(seed)
    grades = np.arange(1, 11)
    p = np.array([4, 3, 4, 5, 6, 8, 10, 12, 14, 10], float)
    p /= p.sum()
    truth = float((grades * p).sum())
    ppi_hits = judge_hits = 0
    for _ in range(runs):
        human = rng.choice(grades, size=big_n, p=p)
        judge = np.clip(human + rng.choice([0, 1, 2, 3], size=big_n, p=[0.2, 0.3, 0.3, 0.2]), 1, 10)
        labelled = rng.choice(big_n, size=n, replace=False)
        e = ppi_mean(judge.tolist(), judge[labelled].tolist(), human[labelled].tolist())
        ppi_hits += e.ci95[0] <= truth <= e.ci95[1]
        j = normal_mean(judge.tolist())
        judge_hits += j.ci95[0] <= truth <= j.ci95[1]
    return ppi_hits / runs, judge_hits / runs


def test_ppi_interval_covers_95_percent_with_a_biased_judge():
    ppi_coverage, judge_coverage = _simulate(runs=2000, big_n=400, n=60, seed=20251125)
    assert 0.93 <= ppi_coverage <= 0.97
    assert judge_coverage < 0.05  # the judge alone is confidently wrong: what the correction is for
