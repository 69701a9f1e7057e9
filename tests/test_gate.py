"""compare's CI gate: exit codes pinned for better / worse / no difference / within and beyond a
margin / lost rank-1 hits; one line per failing metric naming Δ, CI and p; bad gate options are
one line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.analysis.compare import compare_runs
from components.analysis.gate import check_gate, parse_fail_on, parse_margins
from tests.conftest import run_cli
from utils.errors import EXIT_GATE, InputError
from utils.metrics import RetrievalMetrics as M

N = 12


def row(qid: str, rank: int | None) -> dict:
    others = ["o1", "o2", "o3", "o4", "o5"]
    docs = others if rank is None else others[:rank - 1] + ["n"] + others[rank - 1:4]
    return {"question_id": qid, "question": f"question {qid}?", "needle_doc_id": "n", "needle_doc_ids": ["n"],
            "rank": M.calculate_rank(docs, "n"), "llm_grade": None,
            "retrieved": [{"rank": i, "doc_id": d, "chunk_id": f"{d}#{i}"} for i, d in enumerate(docs, 1)]}


def results(ranks: list[int | None], strategy: str) -> dict:
    return {"schema_version": 2, "run": {"strategy": strategy, "k": 5, "status": "completed"},
            "results": [row(f"q{i:02d}", r) for i, r in enumerate(ranks)]}


BASE = results([1] * N, "base")
WORSE = results([3] * N, "worse")  # every needle from rank 1 to 3: MRR −2/3, hit@1 −100 points, hit@5 the same
BETTER = results([1] * N, "better")
MIXED = results([1, 3] * (N // 2), "mixed")  # half the questions lose their rank-1 hit
NOISE_BASE = results([1, 3, 1, 2] * (N // 4), "base")
NOISE = results([3, 1, 2, 1] * (N // 4), "noise")  # as many up as down: noise around the baseline
SLIGHT = results([1] * (4 * N - 1) + [2], "slight")  # one question of 48 drops from rank 1 to 2
SLIGHT_BASE = results([1] * (4 * N), "base")


def write(tmp_path: Path, *docs: dict) -> list[str]:
    paths = []
    for doc in docs:
        path = tmp_path / f"{doc['run']['strategy']}.json"
        path.write_text(json.dumps(doc))
        paths.append(str(path))
    return paths


def gate_lines(stdout: str) -> list[str]:
    return [line.strip() for line in stdout.split("Gate:", 1)[1].splitlines()[1:] if line.strip()]


def test_worse_fails_with_one_line_per_failing_metric(tmp_path: Path):
    base, worse = write(tmp_path, BASE, results([3] * N, "worse"))
    run = run_cli("compare", base, worse, "--fail-on", "worse")
    assert run.code == EXIT_GATE == 6, run.stderr[-2000:]
    fails = [line for line in gate_lines(run.stdout) if line.startswith("FAIL")]
    assert [line.split()[1] for line in fails] == ["hit_at_1_rate", "mrr", "mrr_doc", "ndcg_at_k"]
    mrr = next(line for line in fails if line.split()[1] == "mrr")
    assert "worse in" not in mrr and "worse (p below α 0.05)" in mrr
    assert "Δ -0.667, 95% CI [-0.667, -0.667], exact sign-flip p <0.001" in mrr and "worse vs base" in mrr
    assert "Gate failed: hit_at_1_rate, mrr, mrr_doc, ndcg_at_k (4 failing check(s)): exit 6" in run.stderr
    assert sum(1 for line in gate_lines(run.stdout) if line.startswith("not gated")) == 3  # nothing graded


@pytest.mark.parametrize("base,other,args,code", [
    (WORSE, BETTER, ["--fail-on", "worse"], 0),  # better: passes
    (BASE, BETTER, ["--fail-on", "worse"], 0),  # the same: passes
    (BASE, results([2] * N, "worse"), ["--fail-on", "worse"], 6),  # worse on every question
    (NOISE_BASE, NOISE, ["--fail-on", "worse"], 0),  # no detectable difference: passes
    (BASE, WORSE, ["--fail-on", "worse:hit5"], 0),  # a subset: hit@5 did not move
    (BASE, WORSE, ["--fail-on", "worse:mrr,hit5"], 6),
    (BASE, WORSE, [], 0),  # no gate: compare exits 0 whatever the verdict
    (BASE, WORSE, ["--margin", "mrr=1"], 0),  # a loss within the margin
    (BASE, WORSE, ["--margin", "mrr=0.5"], 6),  # a real loss beyond it
    (BASE, WORSE, ["--fail-on-regressions", f"{N - 1}"], 6),  # all 12 lost their rank-1 hit
    (BASE, WORSE, ["--fail-on-regressions", f"{N}"], 0),
    (BASE, MIXED, ["--fail-on-regressions", "5"], 6),
    (BASE, MIXED, ["--fail-on-regressions", "6"], 0),
    (BASE, MIXED, ["--fail-on", "worse"], 6),  # 6 of 12 worse, none better: p = 2/64 ≈ 0.031 below α 0.05
    (BASE, MIXED, ["--fail-on", "worse", "--alpha", "0.01"], 0),  # the same loss is not worse at α 0.01
])
def test_exit_codes(tmp_path: Path, base: dict, other: dict, args: list[str], code: int):
    base, path = write(tmp_path, base, other)
    run = run_cli("compare", base, path, *args)
    assert run.code == code, run.stdout[-3000:] + run.stderr[-2000:]
    assert ("Gate:" in run.stdout) == bool(args)


def test_a_margin_lets_noise_pass_and_fails_a_real_loss():
    slight = compare_runs([SLIGHT_BASE, SLIGHT])
    mrr = next(m for m in slight.comparisons[0].metrics if m.metric == "mrr")
    assert mrr.delta == pytest.approx(-0.5 / 48) and mrr.ci95[0] > -0.05  # one question in 48 moved
    assert check_gate(slight, margins={"mrr": 0.05}).passed
    failed = check_gate(slight, margins={"mrr": 0.01})
    assert not failed.passed and "is below the margin −0.01" in failed.failures[0].line
    # the verdict rule would not fail it either (one question), the margin is judged by the CI only
    assert check_gate(slight, worse=["mrr"]).passed
    real = compare_runs([BASE, WORSE])
    assert not check_gate(real, margins={"mrr": 0.05}).passed
    # a margin on a rate is in points
    assert check_gate(real, margins={"hit_at_1_rate": 100}).passed
    assert not check_gate(real, margins={"hit_at_1_rate": 99}).passed


def test_the_gate_from_python():
    comparison = compare_runs([BASE, WORSE, BETTER])
    result = comparison.gate(worse=["mrr"], regressions=0)
    assert [(c.other, c.rule, c.failed) for c in result.checks] == [
        ("worse", "worse", True), ("worse", "regressions", True), ("better", "worse", False),
        ("better", "regressions", False)]
    assert result.to_json()["passed"] is False and "FAILED (2 checks)" in str(result)
    assert "exact sign-flip p <0.001, Holm <0.001" in result.failures[0].line  # several runs: Holm-adjusted
    with pytest.raises(InputError, match="'map_at_k' was not compared"):
        comparison.gate(worse=["map"])  # aliases work from Python too
    assert [c.metric for c in comparison.gate(margins={"ndcg": 0.5}).checks] == ["ndcg_at_k", "ndcg_at_k"]


def test_option_parsing():
    assert parse_fail_on("worse") is True
    assert parse_fail_on("worse:mrr,ndcg,map,recall,hit1") == ["mrr", "ndcg_at_k", "map_at_k", "recall_at_k",
                                                               "hit_at_1_rate"]
    assert parse_margins(["mrr=0.02,ndcg=0.01", "hit1=5"]) == {"mrr": 0.02, "ndcg_at_k": 0.01, "hit_at_1_rate": 5.0}
    for bad, words in [(lambda: parse_fail_on("better"), "write worse"),
                       (lambda: parse_fail_on("worse:nope"), "unknown metric 'nope'"),
                       (lambda: parse_margins(["mrr"]), "METRIC=MARGIN"),
                       (lambda: parse_margins(["mrr=-1"]), "0 or more"),
                       (lambda: parse_margins(["mrr=nan"]), "METRIC=MARGIN")]:
        with pytest.raises(InputError, match=words):
            bad()


def test_the_gate_adds_metrics_that_are_not_compared_by_default(tmp_path: Path):
    base, worse = write(tmp_path, BASE, WORSE)
    out = tmp_path / "c.json"
    run = run_cli("compare", base, worse, "--fail-on", "worse:map", "--json", str(out))
    assert run.code == 6, run.stderr[-2000:]
    data = json.loads(out.read_text())
    assert "map_at_k" in [m["key"] for m in data["metrics"]]
    assert data["gate"]["passed"] is False and data["gate"]["checks"][0]["metric"] == "map_at_k"


@pytest.mark.parametrize("args,words", [
    (["--fail-on", "worse:nope"], "unknown metric 'nope'"),
    (["--margin", "mrr=x"], "METRIC=MARGIN"),
    (["--fail-on-regressions", "-1"], "is negative"),
])
def test_bad_gate_options_are_one_line_and_exit_2(tmp_path: Path, args, words):
    base, worse = write(tmp_path, BASE, WORSE)
    run = run_cli("compare", base, worse, *args)
    errors = [line for line in run.stderr.splitlines() if "| ERROR" in line]
    assert run.code == 2 and len(errors) == 1 and words in errors[0], run.stderr
    assert run.stdout == ""


# --------------------------------------------------------------------------- what cannot be judged fails


def graded(ranks: list[int | None], strategy: str, grade: int | None) -> dict:
    """Results whose rows carry a grade (None: the judge failed on every question)."""
    doc = results(ranks, strategy)
    for r in doc["results"]:
        r["llm_grade"] = grade
        r["total_score"] = None if grade is None else float(grade) * (1.0 if r["rank"] == 1 else 0.95)
        r["grade_error"] = None if grade is not None else "judge_unusable: not graded after an earlier auth error"
    return doc


def test_a_run_holding_few_of_the_baseline_questions_fails_naming_how_many_are_missing(tmp_path: Path):
    """5 of the baseline's 40 questions, each lost (Δ −1 on every one, CI [−1, −1]) is not "worse" with 5
    pairs (p = 2/32): the verdict alone passed it. The ids the run lacks fail the gate."""
    base, few = write(tmp_path, results([1] * 40, "base"), results([None] * 5, "few"))
    run = run_cli("compare", base, few, "--fail-on", "worse")
    assert run.code == EXIT_GATE, run.stdout[-3000:] + run.stderr[-2000:]
    fails = [line for line in gate_lines(run.stdout) if line.startswith("FAIL")]
    assert fails == ["FAIL  questions, few vs base: few holds 5 of the baseline's 40 question ids, 35 missing "
                     "(--min-overlap 1 needs 40)"]
    relaxed = run_cli("compare", base, few, "--fail-on", "worse", "--min-overlap", "0.1")  # 4 of 40 needed
    assert relaxed.code == 0, relaxed.stdout[-3000:]
    assert "pass  questions, few vs base: few holds 5 of the baseline's 40 question ids, 35 missing " \
           "(--min-overlap 0.1 needs 4)" in gate_lines(relaxed.stdout)
    same = run_cli("compare", base, base, "--fail-on", "worse")  # every id shared: no line for it
    assert same.code == 0 and not any(line.split()[1] == "questions" for line in gate_lines(same.stdout))


def test_ids_are_counted_not_graded_pairs():
    """A run holding every id passes the overlap whatever was graded; one holding 38 of 40 needs 0.95."""
    base = graded([1] * 40, "base", 8)
    comparison = compare_runs([base, graded([1] * 40, "new", None)])
    assert not [c for c in comparison.gate(worse=["mrr"]).checks if c.rule == "overlap"]
    short = compare_runs([base, graded([1] * 38, "short", 8)])
    assert not short.gate(worse=["mrr"]).passed and short.gate(worse=["mrr"], min_overlap=0.95).passed
    assert not short.gate(worse=["mrr"], min_overlap=0.96).passed  # 39 needed
    with pytest.raises(InputError, match="from 0 to 1"):
        short.gate(worse=["mrr"], min_overlap=1.5)


def test_a_run_without_a_judged_row_fails_whether_the_metric_is_named_or_not(tmp_path: Path):
    """The new run's judge failed: its grade and total have no judged row, the baseline's have. Named or
    in the default set (--fail-on worse alone), they fail the gate with a line naming the run without."""
    base, failed = write(tmp_path, graded([1] * N, "base", 8), graded([1] * N, "failed", None))
    run = run_cli("compare", base, failed, "--fail-on", "worse:grade,total")
    assert run.code == EXIT_GATE, run.stdout[-3000:] + run.stderr[-2000:]
    assert gate_lines(run.stdout) == [
        "FAIL  avg_llm_grade (avg grade), failed vs base: failed has no judged row for it (base has): a run without "
        "one does not pass the gate",
        "FAIL  avg_total_score (avg total), failed vs base: failed has no judged row for it (base has): a run "
        "without one does not pass the gate"]
    margin = run_cli("compare", base, failed, "--margin", "grade=1")
    assert margin.code == EXIT_GATE and gate_lines(margin.stdout)[0].startswith("FAIL  avg_llm_grade")
    default = run_cli("compare", base, failed, "--fail-on", "worse")
    assert default.code == EXIT_GATE, default.stdout[-3000:]
    assert sum(line.startswith("FAIL  avg_llm_grade") for line in gate_lines(default.stdout)) == 1


def test_a_gate_that_judges_nothing_fails(tmp_path: Path):
    base, other = write(tmp_path, BASE, BETTER)  # nothing graded in either run
    run = run_cli("compare", base, other, "--metrics", "avg_llm_grade,pass_rate_7", "--fail-on", "worse")
    assert run.code == EXIT_GATE, run.stdout[-3000:]
    lines = gate_lines(run.stdout)
    assert [line.split()[0] for line in lines] == ["not", "not", "FAIL"]
    assert lines[-1].startswith("FAIL  nothing judged: none of the gate's checks could be judged")
    assert "Gate failed: nothing_judged (1 failing check(s)): exit 6" in run.stderr


@pytest.mark.parametrize("args,words", [
    (["--fail-on", "worse", "--min-overlap", "1.5"], "from 0 to 1"),
    (["--min-overlap", "0.9"], "relaxes the gate"),
])
def test_bad_min_overlap_is_one_line_and_exit_2(tmp_path: Path, args, words):
    base, worse = write(tmp_path, BASE, WORSE)
    run = run_cli("compare", base, worse, *args)
    assert run.code == 2 and words in run.stderr and run.stdout == ""


def test_the_gate_never_passes_on_a_run_whose_retriever_failed_on_every_question(tmp_path: Path):
    """A run whose retriever failed on every question (status retrieval_failed, exit 7) has no rank better
    or worse than noise on 3 questions: without the rule, every metric reads "no detectable difference" and
    the gate passed. It fails, with one line naming the failed run, whichever side it is on."""
    from components import api
    from tests.test_api import DOCS, QUESTIONS, KeywordRetriever
    from tests.test_retrieval_failures import Failing

    failed = api.evaluate(Failing(""), QUESTIONS, DOCS, judge="offline")
    good = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline")
    assert failed.run.status == "retrieval_failed"
    paths = {"good": tmp_path / "good.json", "failed": tmp_path / "failed.json"}
    good.save(paths["good"])
    failed.save(paths["failed"])
    for first, second in (("good", "failed"), ("failed", "good")):
        run = run_cli("compare", str(paths[first]), str(paths[second]), "--fail-on", "worse")
        assert run.code == EXIT_GATE == 6, run.stderr
        lines = [line.strip() for line in run.stdout.splitlines() if line.strip().startswith("FAIL")]
        assert len(lines) == 1 and "retriever failed on every question (status retrieval_failed): a failed run " \
            "does not pass the gate" in lines[0], run.stdout
        assert "no detectable difference" in run.stdout  # what the metrics alone said


def test_a_run_with_no_judged_row_for_a_gated_metric_fails_the_gate():
    """A run with grades against one without any (its grade metrics null on every question): the grade
    metrics of the default set were "not gated"; the run without a judged row now fails the gate."""
    graded = results([1] * N, "graded")
    for r in graded["results"]:
        r["llm_grade"], r["total_score"] = 8, 8.0
    ungraded = results([1] * N, "ungraded")
    gate = check_gate(compare_runs([graded, ungraded]), worse=True)
    failing = [c for c in gate.checks if c.failed]
    assert not gate.passed and {c.metric for c in failing} == {"avg_llm_grade", "avg_total_score", "pass_rate_7"}
    assert all(c.rule == "failed_run" and "ungraded has no judged row for it (graded has)" in c.line
               for c in failing)
    both = check_gate(compare_runs([BASE, results([1] * N, "other")]), worse=True)  # neither has grades: not gated
    assert both.passed
