"""The statistics of a panel checked by hand (κ, Krippendorff's α, Kendall τ), the results' ``panel``
section, the verdict certificate of ``compare`` on runs built by hand, panel runs beside
single-judge runs, and the gate's ``--require-agreement``."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from components.stats.agreement import kendall_tau, krippendorff_alpha, pass_agreement, weighted_kappa
from components.analysis.compare import compare_runs
from components.analysis.panel import judge_view, panel_section, reconcile
from tests.panel_fixtures import panel_row
from utils.results import JudgeInfo, RunInfo, RunResult

# ---- by hand


def test_quadratic_kappa_by_hand():
    """a = 1 2 3, b = 1 3 3: observed weighted disagreement (2−3)² / 3 = 1/3; expected, from the
    margins (a: 1/3 each of 1, 2, 3; b: 1/3 of 1, 2/3 of 3): 4·2/9 + 1/9 + 2/9 + 4/9 = 15/9;
    κ = 1 − (1/3) / (15/9) = 0.8."""
    assert weighted_kappa([1, 2, 3], [1, 3, 3]) == pytest.approx(0.8)


def test_krippendorff_ordinal_alpha_by_hand():
    """Units (1, 1), (2, 3), (3, 3): coincidences o11 = 2, o23 = o32 = 1, o33 = 2; n1 = 2, n2 = 1,
    n3 = 3, n = 6. Ordinal δ²: (1,2) (3 − 1.5)² = 2.25, (1,3) (6 − 2.5)² = 12.25, (2,3) (4 − 2)² = 4.
    Observed Σ o δ² = 8; expected Σ n_c n_k δ² = 2·(2·2.25 + 6·12.25 + 3·4) = 180;
    α = 1 − (n − 1)·8/180 = 7/9."""
    assert krippendorff_alpha([[1, 1], [2, 3], [3, 3]]) == pytest.approx(7 / 9)
    assert krippendorff_alpha([[4, 4], [4, None]]) is None  # one value only: no expected disagreement


def test_krippendorff_alpha_is_the_reference_packages():
    krippendorff = pytest.importorskip("krippendorff")
    rng = random.Random(3)
    for _ in range(50):
        units = [[rng.randint(1, 10) if rng.random() > 0.2 else None for _ in range(3)]
                 for _ in range(rng.randint(3, 15))]
        data = np.array([[np.nan if u[j] is None else u[j] for u in units] for j in range(3)], dtype=float)
        try:
            expected = krippendorff.alpha(reliability_data=data, level_of_measurement="ordinal")
        except ValueError:  # the package refuses data with one value only
            expected = math.nan
        mine = krippendorff_alpha(units)
        assert (mine is None and math.isnan(expected)) or mine == pytest.approx(expected)


def test_kendall_tau_by_hand_and_against_scipy():
    """1 2 3 4 against 1 3 2 4: five concordant pairs, one discordant (2, 3): τ = 4/6. With a tie
    (1 1 2 against 1 2 3): two concordant pairs, one tied in the first: τ-b = 2/√(2·3)."""
    from scipy.stats import kendalltau

    assert kendall_tau([1, 2, 3, 4], [1, 3, 2, 4]) == pytest.approx(4 / 6)
    assert kendall_tau([1, 1, 2], [1, 2, 3]) == pytest.approx(2 / math.sqrt(6))
    assert kendall_tau([1, 2], [2, 1]) == -1.0 and kendall_tau([1, 1], [1, 2]) is None
    rng = random.Random(5)
    for _ in range(100):
        a = [rng.randint(1, 4) for _ in range(6)]
        b = [rng.randint(1, 4) for _ in range(6)]
        expected = kendalltau(a, b).statistic
        assert (kendall_tau(a, b) is None and math.isnan(expected)) or kendall_tau(a, b) == pytest.approx(expected)


def test_pass_agreement_by_hand():
    # totals 8·1 = 8 vs 6·1 = 6 (differ at 7), 9·0.6 = 5.4 vs 4·0.6 = 2.4 (both fail), 7 vs 7 (both pass)
    assert pass_agreement([8, 9, 7], [6, 4, 7], [1, None, 1]) == pytest.approx(2 / 3)


def test_the_panel_section_is_the_hand_figures():
    rows = [panel_row("q1", {"a": 1, "b": 1}), panel_row("q2", {"a": 2, "b": 3}), panel_row("q3", {"a": 3, "b": 3})]
    section = panel_section(rows, ["a", "b"], "median", 5).to_json()
    (pair,) = section["agreement"]["pairs"]
    assert pair["kappa_quadratic"] == pytest.approx(0.8) and pair["n"] == 3
    assert pair["mean_difference"] == pytest.approx(1 / 3)
    assert section["agreement"]["alpha_ordinal"]["value"] == pytest.approx(7 / 9, abs=1e-6)
    assert section["per_judge"]["b"]["metrics"]["avg_llm_grade"] == pytest.approx(7 / 3)
    assert section["graded_by"] == {"2": 3}


# ---- the certificate on runs built by hand

GRADES = {  # run: (judge a, judge b, judge c) the same on each of its 8 questions; c = a, so the panel is a
    "r1": (8, 6, 8), "r2": (6, 8, 6), "r3": (4, 2, 4), "r4": (2, 4, 2)}


def run_of(label: str, grades: tuple[int, ...], judges=("a", "b", "c")) -> RunResult:
    rows = [panel_row(f"q{i}", dict(zip(judges, grades, strict=True))) for i in range(8)]
    info = JudgeInfo("panel", ",".join(judges), details={"aggregate": "median", "judges": [
        {"name": n, "provider": "scripted", "model": n, "judge": {"provider": "scripted", "model": n}}
        for n in judges]})
    return RunResult(RunInfo(strategy=label, k=5, status="completed", judge=info), rows)


def test_the_certificate_names_the_judges_that_disagree_and_ranks_the_runs():
    runs = [run_of(label, g) for label, g in GRADES.items()]
    comparison = compare_runs(runs, list(GRADES), metrics=["mrr", "avg_llm_grade"])
    cert = comparison.certificate
    assert cert.judges == ["a", "b", "c"] and {e.metric for e in cert.entries} == {"avg_llm_grade"}  # mrr: no grade
    r2 = cert.entry("r1", "r2", "avg_llm_grade")
    assert r2.panel.verdict == "worse" and r2.holds is False and r2.disagreeing == ["b"]
    assert r2.judges["b"].verdict == "better" and r2.judges["b"].delta == 2.0 and r2.judges["b"].ci95 == (2.0, 2.0)
    r3 = cert.entry("r1", "r3", "avg_llm_grade")
    assert r3.holds is True and r3.panel.verdict == "worse"
    text = str(comparison)
    assert "r2 vs r1, avg grade: depends on the judge: the panel says worse (Δ -2.00, 95% CI [-2.00, -2.00]); " \
           "b says better (Δ +2.00, 95% CI [+2.00, +2.00])" in text
    assert "r3 vs r1, avg grade: holds under every judge: worse" in text
    # by hand: the panel's means 8 6 4 2; b's 6 8 2 4: pairs (r1,r2) and (r3,r4) discordant, the four
    # others concordant: τ = (4 − 2)/6; in the panel's top half, at least 3 runs (r1, r2, r3; over two runs τ
    # is only ±1), b reverses (r1, r2) and keeps the two pairs with r3: τ = (2 − 1)/3
    (ranking,) = cert.rankings
    assert ranking.tau == {"a": 1.0, "b": pytest.approx(1 / 3), "c": 1.0}
    assert ranking.top == ["r1", "r2", "r3"] and ranking.tau_top == {"a": 1.0, "b": pytest.approx(1 / 3), "c": 1.0}
    assert "among the panel's top half (r1, r2, r3): a τ 1.00, b τ 0.33, c τ 1.00" in text
    assert comparison.to_json()["certificate"]["entries"][0]["conclusion"] == "depends on the judge"


def test_no_certificate_without_two_shared_judges_and_none_for_three_runs_top_half():
    single = [run_of("x", (7, 7, 7)), run_of("y", (6, 6, 6))]
    assert compare_runs([judge_view(r, "a") for r in single], ["x", "y"]).certificate is None
    three = compare_runs([run_of(label, g) for label, g in list(GRADES.items())[:3]], list(GRADES)[:3])
    assert all(r.top == [] for r in three.certificate.rankings)


# ---- panel runs beside single-judge runs


def test_a_panel_run_is_compared_on_the_judge_it_shares_with_a_single_judge_run():
    panel = run_of("p", (8, 3, 8))
    single = judge_view(run_of("s", (5, 5, 5)), "b")  # judge b alone: provider scripted, model b
    runs, warnings = reconcile([single, panel], ["s", "p"])
    assert runs[1].rows[0].llm_grade == 3 and runs[1].rows[0].grades_by_judge is None
    assert warnings == ["p is a panel run: compared on the grades of its judge b (scripted b), the judge every run has"]
    comparison = compare_runs([single, panel], ["s", "p"])
    assert comparison.certificate is None and comparison.runs[1].means["avg_llm_grade"] == 3.0


def test_a_panel_of_one_judge_is_read_as_that_judges_run():
    """``--judges b`` beside a panel that has b: compared on b's grades, as a single-judge run would be,
    not warned about as another judge."""
    one = run_of("one", (5,), judges=("b",))
    panel = run_of("p", (8, 3, 8))
    runs, warnings = reconcile([one, panel], ["one", "p"])
    assert [r.rows[0].llm_grade for r in runs] == [5, 3] and runs[0].run.judge.model == "b"
    assert warnings == ["p is a panel run: compared on the grades of its judge b (scripted b), the judge every run has"]
    comparison = compare_runs([one, panel], ["one", "p"])
    assert not any("judge differs" in w for w in comparison.warnings), comparison.warnings


def test_without_a_shared_judge_the_aggregate_is_compared_with_a_warning():
    panel = run_of("p", (8, 3, 8))
    other = RunResult(RunInfo(strategy="s", k=5, judge=JudgeInfo("scripted", "z")),
                      [panel_row(f"q{i}", {"z": 5}) for i in range(6)])
    other = judge_view(other, "z")
    comparison = compare_runs([other, panel], ["s", "p"])
    assert comparison.runs[1].means["avg_llm_grade"] == 8.0
    assert any("p is a panel run and s had one judge that is not in its panel: its grades are the panel's "
               "aggregate (median of a, b, c)" in w for w in comparison.warnings)


# ---- the gate


def test_require_agreement_fails_a_gated_verdict_that_depends_on_the_judge():
    runs = [run_of("r1", GRADES["r1"]), run_of("r2", GRADES["r2"])]
    comparison = compare_runs(runs, ["r1", "r2"])
    gate = comparison.gate(worse=["avg_llm_grade", "mrr"], require_agreement=True)
    (check,) = [c for c in gate.checks if c.rule == "agreement"]
    assert check.failed and check.metric == "avg_llm_grade" and not gate.passed
    assert "depends on the judge: b: better (Δ +2.00, 95% CI [+2.00, +2.00])" in check.line
    assert comparison.gate(worse=["mrr"], require_agreement=True).passed  # a rank metric cannot depend on the judge


def test_require_agreement_on_the_margin_check():
    """r2 against r1 with a margin of 1 point: the panel's CI lower bound −2 fails it, b's +2 passes it."""
    comparison = compare_runs([run_of("r1", GRADES["r1"]), run_of("r2", GRADES["r2"])], ["r1", "r2"])
    gate = comparison.gate(margins={"avg_llm_grade": 1.0}, require_agreement=True)
    (check,) = [c for c in gate.checks if c.rule == "agreement"]
    assert check.failed and "the margin check (fails under the panel) depends on the judge: b: better" in check.line


def test_require_agreement_on_runs_that_are_not_panel_runs_fails_as_a_check_that_cannot_be_judged():
    runs = [judge_view(run_of("x", (7, 7, 7)), "a"), judge_view(run_of("y", (6, 6, 6)), "a")]
    gate = compare_runs(runs, ["x", "y"]).gate(worse=True, require_agreement=True)
    failed = [c for c in gate.checks if c.rule == "agreement"]
    assert len(failed) == 1 and failed[0].failed and not failed[0].gated
    assert "cannot be judged: --require-agreement needs panel runs" in failed[0].line


def test_the_cli_refuses_require_agreement_without_a_gate(tmp_path):
    from tests.conftest import run_cli

    paths = []
    for label in ("r1", "r2"):
        path = tmp_path / f"{label}.json"
        run_of(label, GRADES[label]).save(path)
        paths.append(str(path))
    assert run_cli("compare", *paths, "--require-agreement").code == 2
    gated = run_cli("compare", *paths, "--fail-on", "worse:grade", "--require-agreement")
    assert gated.code == 6 and "FAIL  agreement  avg_llm_grade" in gated.stdout


# ---- panels with different members


def test_panels_that_differ_are_compared_on_the_judges_they_share():
    """A 2-judge baseline (a 6, b 8: median 7) against a 3-judge run (a 6, b 8, harsh 2: median 6) on 8
    questions: read as recorded, "the panel" says worse by 1 point while a and b, the judges both runs have,
    see no change. Aggregated again over a and b (median 7 in both), the panel's verdict covers them: no
    detectable difference; one warning names harsh; the certificate says so; the Python API does the same."""
    from components import api

    base = run_of("base", (6, 8), judges=("a", "b"))
    new = run_of("new", (6, 8, 2), judges=("a", "b", "harsh"))
    for comparison in (compare_runs([base, new], ["base", "new"]), api.compare([base, new], labels=["base", "new"])):
        grade = next(r for r in comparison.comparisons[0].metrics if r.metric == "avg_llm_grade")
        assert (grade.mean_baseline, grade.mean_other, grade.delta, grade.verdict) == (
            7.0, 7.0, 0.0, "no detectable difference")
        assert comparison.warnings == ["the runs' panels differ: harsh only in new; the panel's grades and verdicts "
                                       "are the median of the judges every run has (a, b)"]
        text = str(comparison)
        assert "warning: the runs' panels differ: harsh only in new" in text
        cert = comparison.certificate
        assert cert.judges == ["a", "b"] and cert.not_shared == ["harsh"]
        assert cert.entry("base", "new", "avg_llm_grade").holds is True
        assert "the panel is the judges every run has: harsh left out (not in every run's panel)" in text
        assert comparison.to_json()["certificate"]["not_shared"] == ["harsh"]
    # the rows as recorded: the 3-judge median is 6, which the comparison would have set against 7
    assert new.rows[0].llm_grade == 6 and base.rows[0].llm_grade == 7


def test_a_mean_panel_is_aggregated_again_by_its_mean_and_panels_with_no_judge_in_common_are_named():
    base = run_of("base", (6, 9), judges=("a", "b"))
    new = run_of("new", (7, 9, 1), judges=("a", "b", "harsh"))
    for run in (base, new):
        run.run.judge.details["aggregate"] = "mean"
    grade = next(r for r in compare_runs([base, new], ["base", "new"]).comparisons[0].metrics
                 if r.metric == "avg_llm_grade")
    assert (grade.mean_baseline, grade.mean_other) == (8.0, 8.0)  # (6 + 9)/2 = 7.5 → 8; (7 + 9)/2 = 8
    apart = compare_runs([run_of("x", (6, 6), judges=("a", "b")), run_of("y", (7, 7), judges=("c", "d"))],
                         ["x", "y"])
    assert any(w.startswith("the runs' panels differ: a only in x; b only in x; c only in y; d only in y; they "
                            "share no judge") for w in apart.warnings)


def test_one_model_id_at_two_endpoints_is_two_judges_in_compare():
    """A single-judge run of openai/gpt-4.1 at the host of harsh, beside a panel of harsh and kind (the same
    model id, another host): compared on harsh's grades, never kind's; at a host neither has, on the panel's
    aggregate. Two single-judge runs of one model id at two hosts: warned as two judges."""
    def info(host: str) -> JudgeInfo:
        return JudgeInfo("openai", "gpt-4.1", details={"base_url_host": host})

    rows = [panel_row(f"q{i}", {"harsh": 3, "kind": 9}) for i in range(6)]
    members = [{"name": n, "provider": "openai", "model": "gpt-4.1", "judge": info(h).to_json()}
               for n, h in (("harsh", "127.0.0.1:8101"), ("kind", "127.0.0.1:8102"))]
    panel = RunResult(RunInfo(strategy="p", k=5, judge=JudgeInfo("panel", "harsh,kind", details={
        "aggregate": "median", "judges": members})), rows)
    single = RunResult(RunInfo(strategy="s", k=5, judge=info("127.0.0.1:8101")),
                       [panel_row(f"q{i}", {"x": 5}) for i in range(6)])
    single = RunResult(single.run, [r for r in judge_view(single, "x").rows])
    runs, warnings = reconcile([single, panel], ["s", "p"])
    assert [r.llm_grade for r in runs[1].rows] == [3] * 6
    assert warnings == ["p is a panel run: compared on the grades of its judge harsh (openai gpt-4.1), the judge "
                        "every run has"]
    elsewhere = RunResult(RunInfo(strategy="s", k=5, judge=info("127.0.0.1:9999")), single.rows)
    runs, warnings = reconcile([elsewhere, panel], ["s", "p"])
    assert [r.llm_grade for r in runs[1].rows] == [6] * 6 and "had one judge that is not in its panel" in warnings[0]
    other = RunResult(RunInfo(strategy="t", k=5, judge=info("127.0.0.1:8102")), single.rows)
    assert any(w == "judge differs between s and t (openai gpt-4.1 at 127.0.0.1:8101 vs openai gpt-4.1 at "
                    "127.0.0.1:8102): grades are not comparable across judges"
               for w in compare_runs([single, other], ["s", "t"]).warnings)
