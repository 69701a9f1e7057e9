"""compare: tiny hand-made results pinned by hand, scipy cross-checks, warnings, reference systems,
judge repeats, JSON, and the command line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from components.stats import statistics as S
from components.analysis.compare import compare_runs, format_comparison, resolve_run
from components.analysis.comparison import BETTER, NOT_COMPARABLE, SAME, WORSE
from tests.conftest import run_cli
from utils.errors import InputError
from utils.metrics import RetrievalMetrics as M


def docs_for(needle: str, rank: int | None, repeat: bool = False) -> list[str]:
    """Five retrieved chunks with the needle's first chunk at ``rank`` (None: absent)."""
    others = ["o1", "o1", "o2", "o3", "o4"] if repeat else ["o1", "o2", "o3", "o4", "o5"]
    if rank is None:
        return others
    return others[: rank - 1] + [needle] + others[rank - 1: 4]


def row(qid: str, rank: int | None, grade: int | None, repeat: bool = False, **extra) -> dict:
    docs = docs_for("n", rank, repeat)
    r = M.calculate_rank(docs, "n")
    return {"question_id": qid, "question": f"question {qid}?", "needle_doc_id": "n", "needle_doc_ids": ["n"],
            "rank": r, "hit_at_1": r == 1, "hit_at_5": r is not None, "llm_grade": grade,
            "total_score": M.calculate_total_score(grade, r),
            "retrieved": [{"rank": i, "doc_id": d, "chunk_id": f"{d}#{i}", "score": None}
                          for i, d in enumerate(docs, 1)],
            **extra}


def results(rows: list[dict], strategy: str, model: str = "lexical-idf-v1", corpus: str = "c" * 64,
            prompt: str = "p" * 64, run_id: str | None = None) -> dict:
    return {"schema_version": 1, "run": {"id": run_id, "strategy": strategy, "k": 5, "status": "completed",
                                         "corpus": {"sha256": corpus},
                                         "judge": {"provider": "offline", "model": model, "prompt_sha256": prompt}},
            "results": rows}


A = results([row("q1", 1, 8), row("q2", 2, 6), row("q3", None, 3), row("q4", 1, 9)], "base")
B = results([row("q1", 1, 9), row("q2", 1, 7), row("q3", 3, 5), row("q4", 1, 9)], "new")


def metric(comparison, key, index=0):
    return next(m for m in comparison.comparisons[index].metrics if m.metric == key)


def test_hand_computed_comparison():
    c = compare_runs([A, B])
    assert [s.label for s in c.runs] == ["base", "new"] and c.question_ids == ["q1", "q2", "q3", "q4"]
    assert c.warnings == [] and c.left_out == {"base": 0, "new": 0}
    rr = metric(c, "mrr")  # RR 1, .5, 0, 1 → 1, 1, 1/3, 1: deltas 0, .5, 1/3, 0
    assert (rr.n, rr.wins, rr.ties, rr.losses) == (4, 2, 2, 0)
    assert rr.mean_baseline == pytest.approx(0.625) and rr.mean_other == pytest.approx(2.5 / 3)
    assert rr.delta == pytest.approx(5 / 24)
    # exact sign flips (16 patterns): sums ±.5 ±1/3 reach 5/6 in 4 of 16 → p = 2 × 4/16
    assert rr.p == pytest.approx(0.5) and rr.p_holm is None and rr.verdict == SAME
    grade = metric(c, "avg_llm_grade")  # deltas 1, 1, 2, 0: only +,+,+ of ±1 ±1 ±2 reaches 4 → p = 2 × 1/8
    assert (grade.delta, grade.p, grade.wins, grade.ties) == (1.0, 0.25, 3, 1)
    assert grade.mde == pytest.approx(2.801585 * 0.816497 / 2, abs=1e-5)  # z · sd / √n = 1.1437
    assert grade.questions_needed == 21  # (2.801585 · 0.816497 / 0.5)² = 20.9
    total = metric(c, "avg_total_score")  # 8, 5.7, 1.8, 9 → 9, 7, 4.75, 9
    assert total.delta == pytest.approx((1 + 1.3 + 2.95 + 0) / 4)
    pass7 = metric(c, "pass_rate_7")  # passes 1,0,0,1 → 1,1,0,1
    assert (pass7.mean_baseline, pass7.mean_other, pass7.wins) == (50.0, 75.0, 1)  # percent
    assert metric(c, "hit_at_5_rate").delta == pytest.approx(25.0)  # percentage points
    assert metric(c, "hit_at_1_rate").delta == pytest.approx(25.0)
    pc = c.comparisons[0]
    assert [q.question_id for q in pc.better] == ["q3", "q2", "q1"] and pc.worse == []
    assert (pc.better[0].rank_before, pc.better[0].rank_after, pc.better[0].grade_before) == (None, 3, 3.0)


def test_intervals_are_scipys_paired_bootstrap():
    """Beyond 20 questions a metric that is not binary gets the percentile bootstrap interval (scipy's,
    to the digit) and a Monte-Carlo sign-flip p, an estimate of scipy's exact permutation p within a
    few of its standard errors."""
    stats = pytest.importorskip("scipy.stats")
    ranks = [(1, 2), (2, 1), (None, 1), (3, 1), (1, 1), (2, 3), (1, None), (4, 2), (5, 1), (None, None)] * 3
    base = results([row(f"q{i}", a, 5) for i, (a, _) in enumerate(ranks)], "base")
    new = results([row(f"q{i}", b, 5) for i, (_, b) in enumerate(ranks)], "new")
    c = compare_runs([base, new])
    a = np.array([M.reciprocal_rank(x) for x, _ in ranks])
    b = np.array([M.reciprocal_rank(y) for _, y in ranks])
    res = stats.bootstrap((a, b), lambda x, y, axis: np.mean(y - x, axis=axis), paired=True, method="percentile",
                          n_resamples=S.RESAMPLES, rng=np.random.default_rng(S.BOOTSTRAP_SEED))
    mrr = metric(c, "mrr")
    assert (mrr.test, mrr.ci_method) == ("sign-flip-mc", "bootstrap-percentile")
    assert mrr.ci95 == pytest.approx([res.confidence_interval.low, res.confidence_interval.high])
    p = stats.permutation_test((b - a,), np.mean, permutation_type="samples", vectorized=True, n_resamples=200_000,
                               rng=np.random.default_rng(1)).pvalue
    assert mrr.p_mc_se == pytest.approx(np.sqrt(mrr.p * (1 - mrr.p) / S.PERMUTATIONS))
    assert abs(mrr.p - p) < 4 * mrr.p_mc_se
    # a binary metric (hit@1: 0 or 100 per question in both runs) gets McNemar's exact test: b = 12 up, c = 6 down
    hit1 = metric(c, "hit_at_1_rate")
    assert (hit1.test, hit1.ci_method, hit1.p_mc_se) == ("mcnemar-exact", "test-inversion", None)
    assert hit1.p == pytest.approx(stats.binomtest(12, 18).pvalue)


def test_verdicts_better_and_worse():
    base = results([row(f"q{i}", 3, 5) for i in range(8)], "base")
    new = results([row(f"q{i}", 1, 8) for i in range(8)], "new")
    up = compare_runs([base, new])
    assert metric(up, "mrr").p == pytest.approx(2 / 256) and metric(up, "mrr").verdict == BETTER
    assert metric(up, "avg_llm_grade").verdict == BETTER and metric(up, "hit_at_5_rate").verdict == SAME  # 8 ties
    assert metric(up, "hit_at_5_rate").questions_needed is None  # no spread: cannot say
    down = compare_runs([new, base])
    assert metric(down, "mrr").verdict == WORSE and [q.question_id for q in down.comparisons[0].worse][:1] == ["q0"]
    text = format_comparison(up)
    assert "MRR: better (Δ +0.667" in text
    assert ("hit@5: no detectable difference (Δ +0.0, 95% CI [+0.0, +0.0], exact McNemar p 1.000); every question "
            "moved by the same amount") in text


def test_question_sets_and_runs_that_differ_are_named():
    other = results([row("q1", 1, 9), row("q2", 1, 7), row("q3", 3, 5), row("q5", 1, 9)], "new",
                    model="claude-x", corpus="d" * 64)
    c = compare_runs([A, other])
    assert c.question_ids == ["q1", "q2", "q3"] and c.left_out == {"base": 1, "new": 1}
    assert c.warnings[0] == ("the runs have different question sets: compared on the 3 questions they share; "
                             "left out 1 of base, 1 of new")
    assert any(w.startswith("corpus differs between base and new") for w in c.warnings)
    assert any("grades are not comparable across judges" in w and "lexical-idf-v1 vs offline claude-x" in w
               for w in c.warnings)
    prompt = compare_runs([A, results(B["results"], "new", prompt="q" * 64)])
    assert prompt.warnings == ["judge prompt differs between base and new (sha256 pppppppppppp vs qqqqqqqqqqqq): "
                               "grades are not comparable across judges"]
    with pytest.raises(InputError, match="no question id in common"):
        compare_runs([A, results([row("z", 1, 5)], "new")])
    with pytest.raises(InputError, match="at least two runs"):
        compare_runs([A])


def test_three_runs_get_holm():
    C = results([row("q1", 2, 7), row("q2", 2, 6), row("q3", 1, 9), row("q4", 1, 9)], "third")
    c = compare_runs([A, B, C])
    raw = [metric(c, "mrr", 0).p, metric(c, "mrr", 1).p]
    assert [metric(c, "mrr", 0).p_holm, metric(c, "mrr", 1).p_holm] == pytest.approx(S.holm(raw))
    assert [pc.other for pc in c.comparisons] == ["new", "third"]


def test_reference_systems_are_rank_only_runs():
    refs = [{"plm": 1, "naive": None}, {"plm": 2, "naive": 1}, {"plm": None, "naive": 3}, {"plm": 1}]
    base = results([dict(r, reference_ranks=ref) for r, ref in zip(A["results"], refs, strict=True)], "base")
    c = compare_runs([base, B])
    assert [(s.label, s.kind) for s in c.runs] == [("base", "run"), ("new", "run"), ("ref:plm", "reference"),
                                                    ("ref:naive", "reference")]
    plm = c.runs[2]
    assert plm.means["mrr"] == pytest.approx((1 + 0.5 + 0 + 1) / 4) and plm.means["avg_llm_grade"] is None
    assert plm.means["ndcg_at_k"] == pytest.approx((1 + 1 / np.log2(3) + 0 + 1) / 4)
    naive = c.comparisons[2]
    assert naive.kind == "reference" and metric(c, "mrr", 2).n == 3  # q4 has no naive rank
    assert metric(c, "avg_llm_grade", 2).n == 0 and metric(c, "avg_llm_grade", 2).verdict == NOT_COMPARABLE
    assert naive.worse == naive.better == []
    # the user's run is not Holm-adjusted by the reference family
    assert metric(c, "mrr", 0).p_holm is None and metric(c, "mrr", 1).p_holm is not None
    assert "ref:plm" in format_comparison(c)


def test_schema_1_rows_get_document_level_values():
    # needle first retrieved as the 3rd chunk but the 2nd document: RR 1/3, doc RR 1/2
    base = results([row("q1", 3, 8, repeat=True), row("q2", 1, 8)], "base")
    new = results([row("q1", 1, 8), row("q2", 1, 8)], "new")
    c = compare_runs([base, new])
    assert c.runs[0].means["mrr"] == pytest.approx((1 / 3 + 1) / 2)
    assert c.runs[0].means["mrr_doc"] == pytest.approx((1 / 2 + 1) / 2)
    assert c.comparisons[0].better[0].doc_rank_before == 2
    assert c.comparisons[0].better[0].top_docs_before == ["o1", "n", "o2"]


def test_judge_repeats_make_the_grade_interval_two_level():
    rows_a = [row(f"q{i}", 1, 6, llm_grades=[4, 8]) for i in range(20)]
    rows_b = [row(f"q{i}", 1, 6, llm_grades=[6, 6]) for i in range(20)]
    c = compare_runs([results(rows_a, "a"), results(rows_b, "b")])
    g = metric(c, "avg_llm_grade")
    assert g.delta == 0.0 and g.p == 1.0
    lo, hi = g.ci95  # each question's delta is +2 or -2 with equal odds: ± 1.96 · 2 / √20 ≈ ± 0.88
    assert -1.2 < lo < -0.6 and 0.6 < hi < 1.2
    plain = compare_runs([results([dict(r, llm_grades=None) for r in rows_a], "a"), results(rows_b, "b")])
    assert metric(plain, "avg_llm_grade").ci95 == (0.0, 0.0)


def test_json_is_strict_and_complete():
    c = compare_runs([A, B])
    data = json.loads(json.dumps(c.to_json(), allow_nan=False))
    assert set(data) == {"schema_version", "runs", "common_question_count", "question_ids", "left_out", "warnings",
                         "metrics", "comparisons", "settings", "recommendations"}
    assert data["settings"]["bootstrap"] == {"resamples": 10_000, "seed": S.BOOTSTRAP_SEED, "method": "percentile",
                                             "level": 0.95}
    m = data["comparisons"][0]["metrics"][0]
    assert set(m) == {"metric", "n", "mean_baseline", "mean_other", "delta", "ci95", "p", "p_holm", "wins", "ties",
                      "losses", "verdict", "mde", "effect", "questions_needed", "test", "ci_method", "p_mc_se",
                      "borderline"}
    assert isinstance(m["ci95"], list) and data["metrics"][4]["label"] == "nDCG@5"


def test_the_table():
    text = format_comparison(compare_runs([A, B]))
    assert "new vs base (Δ = new − base, paired over questions)" in text
    assert "you would need about 21 questions to detect a 0.5 avg grade change" in text
    assert "q2  rank 2 → 1, grade 6 → 7, total 5.70 → 7.00" in text
    assert "top docs: o1, n, o2 → n, o1, o2" in text
    assert "Worse in new: none" in text


def test_run_ids_resolve_under_runs(tmp_path: Path):
    runs = tmp_path / "runs"
    runs.mkdir()
    (runs / "20261123T114500Z_base.json").write_text(json.dumps(A))
    (runs / "renamed.json").write_text(json.dumps(results(B["results"], "new", run_id="20261123T120000Z_new")))
    assert resolve_run("20261123T114500Z_base", tmp_path) == runs / "20261123T114500Z_base.json"
    assert resolve_run("20261123T120000Z_new", tmp_path) == runs / "renamed.json"
    with pytest.raises(InputError, match="neither a results file nor a run id"):
        resolve_run("nope", tmp_path)
    # and from the command line, in that folder
    run = run_cli("compare", "20261123T114500Z_base", "20261123T120000Z_new", cwd=tmp_path)
    assert run.code == 0, run.stderr
    assert "new vs base" in run.stdout


def test_cli(tmp_path: Path):
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "cmp.json"
    a.write_text(json.dumps(A))
    b.write_text(json.dumps(B))
    run = run_cli("compare", str(a), str(b), "--json", str(out))
    assert run.code == 0, run.stderr
    assert "MRR: no detectable difference" in run.stdout and "error" not in run.stderr
    data = json.loads(out.read_text())
    assert data["comparisons"][0]["other"] == "new" and data["common_question_count"] == 4


@pytest.mark.parametrize("make,message", [
    (lambda p: p.write_text("{not json"), "not valid JSON (line 1, column 2"),
    (lambda p: p.write_text(json.dumps({"run": {}})), 'not a results file (no "results" list)'),
    (lambda p: p.write_text(json.dumps({"results": [{"question": "x"}]})), "result #1 has no question_id"),
    (lambda p: None, "is neither a results file nor a run id"),
])
def test_cli_bad_input_exits_2_with_one_line(tmp_path: Path, make, message):
    good, bad = tmp_path / "a.json", tmp_path / "bad.json"
    good.write_text(json.dumps(A))
    make(bad)
    run = run_cli("compare", str(good), str(bad))
    assert run.code == 2
    errors = [line for line in run.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and message in errors[0] and ": pass a" in errors[0]
    assert run.stdout == ""


def test_cli_needs_two_runs_and_writes_json_by_the_output_rule(tmp_path: Path):
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(A))
    b.write_text(json.dumps(B))
    one = run_cli("compare", str(a))
    assert one.code == 2 and "at least two runs" in one.stderr
    created = run_cli("compare", str(a), str(b), "--json", str(tmp_path / "no" / "x.json"))
    assert created.code == 0 and json.loads((tmp_path / "no" / "x.json").read_text())["common_question_count"] == 4
    own = run_cli("compare", str(a), str(b), "--json", str(b))  # never one of its own inputs
    assert own.code == 2 and json.loads(b.read_text()) == B


def test_a_run_that_graded_nothing_has_no_pass_rate():
    ungraded = results([dict(r, llm_grade=None, total_score=None) for r in A["results"]], "base")
    c = compare_runs([ungraded, B])
    assert metric(c, "pass_rate_7").verdict == NOT_COMPARABLE and c.runs[0].means["pass_rate_7"] is None
    assert metric(c, "mrr").n == 4
    text = format_comparison(c)
    assert "q2  rank 2 → 1, grade - → 7  question q2?" in text
    assert "pass ≥ 7: not comparable" in text


def test_a_bad_reference_rank_is_an_input_error():
    base = results([dict(r, reference_ranks={"plm": "first"}) for r in A["results"]], "base")
    with pytest.raises(InputError, match=r"reference_ranks\['plm'\] is 'first': a reference rank is a positive"):
        compare_runs([base, B])
