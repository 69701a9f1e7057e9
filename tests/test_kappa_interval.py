"""calibrate gives the quadratic κ's 95% interval and says when it includes 0: the judge's grades do not agree with
the labels beyond chance (a judge answering 8 to everything)."""

from __future__ import annotations

import numpy as np
import pytest

from components.calibration.calibrate import _kappa_ci, format_report, kappa_lines
from components.stats.agreement import weighted_kappa, weighted_kappa_ci

HUMAN = [2, 3, 9, 8, 1, 10, 7, 4, 9, 2, 5, 8]
NOTE = "the interval includes 0: the judge's grades do not agree with the labels beyond chance"


def test_a_judge_answering_8_has_kappa_0_in_every_resample():
    assert weighted_kappa(HUMAN, [8] * len(HUMAN)) == pytest.approx(0.0, abs=1e-12)
    assert weighted_kappa_ci(HUMAN, [8] * len(HUMAN), resamples=200, seed=1) == pytest.approx((0.0, 0.0), abs=1e-12)
    assert _kappa_ci(HUMAN, [8] * len(HUMAN)) == [0.0, 0.0]
    lines = kappa_lines({"kappa_quadratic": 0.0, "kappa_quadratic_ci95": [0.0, 0.0]})
    assert lines == ["  quadratic-weighted Cohen's kappa  0.000  [95% CI +0.000, +0.000]", f"    {NOTE}"]


def test_the_interval_is_the_percentiles_of_kappa_over_resampled_rows():
    judge = [h if i % 3 else min(10, h + 1) for i, h in enumerate(HUMAN)]
    ci = weighted_kappa_ci(HUMAN, judge, resamples=300, seed=5)
    draws = np.random.default_rng(5).integers(0, len(HUMAN), size=(300, len(HUMAN)))
    kappas = [weighted_kappa([HUMAN[i] for i in d], [judge[i] for i in d]) for d in draws]
    assert ci == pytest.approx((np.percentile(kappas, 2.5), np.percentile(kappas, 97.5)))
    assert ci[0] > 0.8  # a judge one point off on a third of the rows agrees well beyond chance
    assert NOTE not in "\n".join(kappa_lines({"kappa_quadratic": 0.9, "kappa_quadratic_ci95": list(ci)}))
    assert weighted_kappa_ci([5], [5]) is None


def test_the_report_prints_it():
    doc = {"judge": "openai/qwen", "run": "r.json", "labels": "l.jsonl", "labelled": 2, "graded": 2,
           "kappa_quadratic": 0.1, "kappa_quadratic_ci95": [-0.2, 0.4], "kappa_linear": 0.1, "spearman_rho": None,
           "mean_difference": {"value": 0.0, "ci95": None, "resamples": 10, "seed": 1}, "mean_abs_difference": 0.0,
           "grade_table": {"grades": list(range(1, 11)), "counts": [[0] * 10 for _ in range(10)]},
           "pass_fail": {"pass_mark": 7, "both_pass": 0, "judge_only_pass": 0, "human_only_pass": 0, "both_fail": 2,
                         "sensitivity": None, "specificity": 1.0, "agreement": 1.0},
           "estimates": {}, "ppi_formula": "", "not_yet_labelled": 0}
    from components.calibration import calibrate
    text = format_report({**doc, "estimates": {t.key: {"judge_only": None, "ppi": None, "human_labelled": None}
                                                for t in calibrate.TARGETS}})
    assert "quadratic-weighted Cohen's kappa  0.100  [95% CI -0.200, +0.400]" in text and NOTE in text
