"""The judge's signal check (components/analysis/judge_signal.py): the grade gap between questions whose needle
was in the top k and the others, its Welch interval (checked against scipy), the share of the most common grade,
Spearman's ρ of grade with 1/rank, and the verdict rule; the run's judge and a panel's judges get it."""

from __future__ import annotations

import numpy as np
import pytest

from components.analysis.aggregate import build_report
from components.analysis.judge_signal import judge_signal, verdict
from components.analysis.panel import panel_section, summary_lines
from components.stats.statistics import auc, paired_t_ci, welch_ci
from tests.panel_fixtures import panel_row
from utils.console import summary_table
from utils.records.judge_signal import JudgeSignal, member_signals, signal_of
from utils.results import JudgeInfo, QuestionResult, RunInfo, RunResult

FOUND = [9, 8, 10, 9, 9]
MISSED = [3, 2, 4, 3, 3]


def test_the_figures_by_hand():
    # gap 9 - 3 = 6; each side's variance 0.5, se = √(0.1 + 0.1), Welch df = 0.04 / (2 · 0.01 / 4) = 8,
    # t(8, 0.975) = 2.306004 → half-width 1.031276
    s = judge_signal(FOUND + MISSED, [1] * 5 + [None] * 5, k=5)
    assert (s.n_found, s.n_missed, s.mean_found, s.mean_missed, s.gap) == (5, 5, 9.0, 3.0, 6.0)
    assert s.ci95 == pytest.approx([6 - 1.031276, 6 + 1.031276], abs=1e-6)
    assert s.verdict == "informative"
    assert (s.top_grade, s.top_grade_share) == (3, 0.3)  # 9 and 3 thrice each: the lower one
    # ranks of the grades [8, 6, 10, 8, 8, 3, 1, 5, 3, 3], of 1/rank [8]*5 + [3]*5: ρ = 62.5 / √(62.5 · 78.5)
    assert s.spearman_rr == pytest.approx(62.5 / (62.5 * 78.5) ** 0.5, abs=1e-6)


def test_a_judge_answering_8_to_everything_is_uninformative():
    s = judge_signal([8] * 20, [1] * 10 + [None] * 10, k=5)
    assert (s.verdict, s.gap, s.ci95, s.top_grade, s.top_grade_share, s.spearman_rr) == \
        ("uninformative", 0.0, [0.0, 0.0], 8, 1.0, None)
    warning = s.warning("the judge openai qwen")
    assert warning.startswith("WARNING: the judge openai qwen is uninformative") and "100% of grades are 8" in warning
    assert judge_signal(FOUND + MISSED, [1] * 5 + [None] * 5, k=5).warning("x") is None


@pytest.mark.parametrize(("found", "missed", "expected"), [
    (5, 4, "inconclusive"),  # fewer than 5 missed, however large the gap
    (4, 5, "inconclusive"),
    (5, 0, "inconclusive"),  # every needle found: inconclusive, never uninformative
    (5, 5, "informative"),
])
def test_each_group_needs_five_questions(found, missed, expected):
    s = judge_signal([10] * found + [1] * missed, [2] * found + [None] * missed, k=5)
    assert s.verdict == expected


def test_the_rule_at_its_bounds():
    assert verdict([0.2, 0.99], 5, 5) == "uninformative"
    assert verdict([0.2, 1.0], 5, 5) == "inconclusive"  # the upper end is not under 1
    assert verdict([1.0, 3.0], 5, 5) == "informative"  # the lower end is at least 1
    assert verdict([-4.0, -2.0], 5, 5) == "uninformative"  # graded the wrong way round: no gap of 1 upward
    assert verdict(None, 5, 5) == "inconclusive"


def test_found_means_within_the_top_k_and_ungraded_rows_are_left_out():
    s = judge_signal([9, 9, None, 2], [1, 6, 2, None], k=5)  # rank 6 is beyond k = 5: not found
    assert (s.n_found, s.n_missed, s.gap) == (1, 2, 9 - 5.5)


def test_the_intervals_match_scipy():
    stats = pytest.importorskip("scipy.stats")
    rng = np.random.default_rng(7)
    for _ in range(5):
        a, b = rng.integers(1, 11, 9).astype(float), rng.integers(1, 11, 13).astype(float)
        expected = stats.ttest_ind(a, b, equal_var=False).confidence_interval(0.95)
        assert welch_ci(a, b) == pytest.approx((expected.low, expected.high), abs=1e-9)
        expected = stats.ttest_1samp(a - 5, 0).confidence_interval(0.95)
        assert paired_t_ci(a - 5) == pytest.approx((expected.low, expected.high), abs=1e-9)
        u = stats.mannwhitneyu(a, b, alternative="two-sided").statistic
        assert auc(a, b) == pytest.approx(u / (len(a) * len(b)))
    assert welch_ci([1.0], [1.0, 2.0]) is None and paired_t_ci([3.0]) is None
    assert paired_t_ci([2.0, 2.0, 2.0]) == (2.0, 2.0) and auc([], [1.0]) is None
    assert auc([3, 3], [3, 1]) == 0.75  # (0.5 + 1 + 0.5 + 1) / 4


def _row(qid: str, grade: int, rank: int | None) -> QuestionResult:
    return QuestionResult(qid, f"q {qid}", needle_doc_id="d", needle_doc_ids=["d"], rank=rank,
                          needle_found=rank is not None, llm_grade=grade, total_score=float(grade))


def test_the_run_records_it_and_the_summary_warns():
    rows = [_row(f"f{i}", 8, 1) for i in range(6)] + [_row(f"m{i}", 8, None) for i in range(6)]
    result = build_report(RunInfo(judge=JudgeInfo("openai", "qwen")), rows)
    doc = result.to_json()
    assert doc["run"]["judge"]["judge_signal"]["verdict"] == "uninformative"
    again = RunResult.from_json(doc, "r.json")
    assert signal_of(again.run.judge) == JudgeSignal.from_json(doc["run"]["judge"]["judge_signal"])
    text = summary_table(again, proxy=False)
    assert "judge signal       uninformative: grade gap +0.00 [+0.00, +0.00]" in text
    assert "WARNING: the judge openai qwen is uninformative" in text
    good = build_report(RunInfo(judge=JudgeInfo("openai", "qwen")),
                        [_row(f"f{i}", 9, 1) for i in range(6)] + [_row(f"m{i}", 2, None) for i in range(6)])
    text = summary_table(good, proxy=False)
    assert "judge signal       informative" in text and "WARNING" not in text


def test_each_judge_of_a_panel_gets_its_own():
    rows = [panel_row(f"f{i}", {"offline": 9, "qj": 8}, rank=1) for i in range(5)] + \
        [panel_row(f"m{i}", {"offline": 2, "qj": 8}, rank=None) for i in range(5)]
    panel = panel_section(rows, ["offline", "qj"], "median", 5)
    signals = member_signals(panel)
    assert {n: s.verdict for n, s in signals.items()} == {"offline": "informative", "qj": "uninformative"}
    lines = summary_lines(panel)
    assert any(line.startswith("  qj ") and "signal uninformative (grade gap +0.00 [+0.00, +0.00])" in line
               for line in lines)
    assert lines[-1].startswith("WARNING: the panel's judge qj is uninformative")
    assert not any("judge offline is uninformative" in line for line in lines)


def test_the_report_warns_of_an_uninformative_judge_and_shows_each_judges_signal():
    from components.report.page import render_report

    rows = [_row(f"f{i}", 8, 1) for i in range(6)] + [_row(f"m{i}", 8, None) for i in range(6)]
    page = render_report([build_report(RunInfo(judge=JudgeInfo("openai", "qwen")), rows)], ["constant"])
    assert "WARNING: the judge openai qwen is uninformative" in page and "judge signal" in page
    good = [_row(f"f{i}", 9, 1) for i in range(6)] + [_row(f"m{i}", 2, None) for i in range(6)]
    assert "WARNING" not in render_report([build_report(RunInfo(judge=JudgeInfo("openai", "qwen")), good)], ["good"])
    panel_rows = [panel_row(f"f{i}", {"offline": 9, "qj": 8}, rank=1) for i in range(5)] + \
        [panel_row(f"m{i}", {"offline": 2, "qj": 8}, rank=None) for i in range(5)]
    result = build_report(RunInfo(judge=JudgeInfo("panel", "offline,qj")), panel_rows)
    result.panel = panel_section(result.rows, ["offline", "qj"], "median", 5)
    page = render_report([result], ["panel"])
    assert "WARNING: the panel&#x27;s judge qj is uninformative" in page
    assert "<td class=bad title=" in page and ">uninformative</td>" in page and ">informative</td>" in page


@pytest.mark.parametrize("df", [1, 1.5, 2.7, 5, 7.3, 30, 99.5, 1000, 1e6])
@pytest.mark.parametrize("level", [0.8, 0.95, 0.99, 0.999])
def test_the_t_quantile_is_scipys_without_scipy(df, level):
    from scipy.special import stdtrit

    from components.stats.statistics import t_quantile

    assert t_quantile(df, level) == pytest.approx(float(stdtrit(df, 1 - (1 - level) / 2)), rel=1e-8)
