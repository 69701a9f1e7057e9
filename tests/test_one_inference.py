"""One inference per line in ``compare``: each metric's test and interval (exact where cheap, else the
Monte-Carlo p and the bootstrap, marked ``borderline`` when they disagree), in the console and the JSON,
on recorded runs where the new run has the needle at rank 1 on 5 more of 27 questions."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.analysis.compare import compare_runs
from tests.conftest import run_cli
from tests.test_compare import metric, results, row

INTERVAL = re.compile(r"^  (?P<label>.+?): (?P<verdict>better|worse|no detectable difference) \(Δ [^,]+, 95% CI "
                      r"(?:\[(?P<lo>[-+0-9.]+), (?P<hi>[-+0-9.]+)\]|unbounded \(too few questions\))")


def five_more_at_rank_1(tmp_path: Path) -> tuple[Path, Path]:
    """27 questions; on 5 the needle moves from rank 2 to rank 1, the 22 others stay where they were."""
    before = [2] * 5 + [1] * 12 + [3] * 5 + [None] * 5
    after = [1] * 5 + before[5:]
    paths = []
    for name, ranks in (("base", before), ("new", after)):
        path = tmp_path / f"{name}.json"
        # the grades follow the needle (8 found, 3 not), as an informative judge's do
        path.write_text(json.dumps(results([row(f"q{i:02d}", r, 3 if r is None else 8) for i, r in enumerate(ranks)],
                                           name)))
        paths.append(path)
    return paths[0], paths[1]


def contradicting(line: str) -> bool:
    """Whether a verdict line shows an interval that reads against its verdict."""
    found = INTERVAL.match(line)
    if found is None or found["lo"] is None:
        return False
    excludes = float(found["lo"]) > 0 or float(found["hi"]) < 0
    return excludes != (found["verdict"] != "no detectable difference")


def test_no_verdict_line_carries_an_unmarked_interval_that_contradicts_it(tmp_path: Path):
    base, new = five_more_at_rank_1(tmp_path)
    out = tmp_path / "comparison.json"
    run = run_cli("compare", str(base), str(new), "--json", str(out))
    assert run.code == 0, run.stderr
    lines = run.stdout.splitlines()
    verdicts = [line for line in lines if INTERVAL.match(line)]
    assert len(verdicts) >= 6  # every compared metric with a value in both runs
    assert [line for line in verdicts if contradicting(line) and "borderline" not in line] == []
    # hit@1: McNemar's exact test on the 5 discordant questions, p = 2/32, its interval by inversion
    # [(2 · 0.025^(1/5) − 1) · 5/27, 5/27] = [-0.8, +18.5] points: it includes 0, as the p says
    hit1 = next(line for line in verdicts if line.startswith("  hit@1:"))
    assert "no detectable difference (Δ +18.5, 95% CI [-0.8, +18.5], exact McNemar p 0.062)" in hit1
    assert "borderline" not in hit1
    # MRR moves by 0.5 on the same 5 questions: 27 questions and values other than 0/1, so a Monte-Carlo p
    # (an estimate of 2/32, with its standard error) and the bootstrap, whose interval excludes 0: marked
    mrr = next(line for line in verdicts if line.startswith("  MRR:"))
    assert contradicting(mrr) and "— borderline (bootstrap CI and permutation p disagree)" in mrr
    assert re.search(r"sign-flip p ≈ 0\.06\d ± 0\.002", mrr)
    data = json.loads(out.read_text())
    by_key = {m["metric"]: m for m in data["comparisons"][0]["metrics"]}
    assert all({"test", "ci_method", "p_mc_se", "borderline"} <= set(m) for m in by_key.values())
    assert (by_key["hit_at_1_rate"]["test"], by_key["hit_at_1_rate"]["ci_method"]) == ("mcnemar-exact",
                                                                                      "test-inversion")
    assert by_key["hit_at_1_rate"]["p"] == pytest.approx(0.0625) and by_key["hit_at_1_rate"]["p_mc_se"] is None
    assert (by_key["mrr"]["test"], by_key["mrr"]["ci_method"], by_key["mrr"]["borderline"]) == (
        "sign-flip-mc", "bootstrap-percentile", True)
    assert by_key["mrr"]["p_mc_se"] == pytest.approx((by_key["mrr"]["p"] * (1 - by_key["mrr"]["p"]) / 10_000) ** 0.5)


def test_up_to_20_questions_the_exact_sign_flip_test_and_its_inverted_interval():
    """6 questions with MRR deltas 1/2, 2/3, 3/4 (twice each, all positive): every one of the 64 sign patterns
    but the observed and its mirror gives a smaller |mean|: p = 2/64; r = ⌈0.05 · 64 / 2⌉ − 1 = 1, so the
    interval runs from the smallest to the largest single delta. With 5 questions no pattern count reaches
    α: the interval is unbounded and printed so."""
    ranks = [2, 3, 4, 2, 3, 4]
    base = results([row(f"q{i}", r, 5) for i, r in enumerate(ranks)], "base")
    new = results([row(f"q{i}", 1, 5) for i in range(len(ranks))], "new")
    mrr = metric(compare_runs([base, new], metrics=["mrr"]), "mrr")
    assert (mrr.test, mrr.ci_method, mrr.p_mc_se) == ("sign-flip-exact", "test-inversion", None)
    assert mrr.p == pytest.approx(2 / 64) and mrr.ci95 == pytest.approx((0.5, 0.75)) and mrr.verdict == "better"
    five = compare_runs([results(base["results"][:5], "base"), results(new["results"][:5], "new")], metrics=["mrr"])
    assert metric(five, "mrr").ci95 is None and metric(five, "mrr").p == pytest.approx(2 / 32)
    assert "MRR: no detectable difference (Δ +0.617, 95% CI unbounded (too few questions), exact sign-flip p " \
           "0.062)" in str(five)


def test_an_unadjusted_interval_beside_a_holm_adjusted_verdict_is_marked():
    """Two other runs, each with the needle at rank 1 on 6 of 6 questions where the baseline had rank 2: the
    exact p of each is 2/64 = 0.031, its interval [+0.5, +0.5] excludes 0; Holm makes both 0.0625: no
    detectable difference, beside an interval that excludes 0: marked."""
    base = results([row(f"q{i}", 2, 5) for i in range(6)], "base")
    one = results([row(f"q{i}", 1, 5) for i in range(6)], "one")
    two = results([row(f"q{i}", 1, 5) for i in range(6)], "two", run_id="two")
    c = compare_runs([base, one, two], metrics=["mrr"])
    mrr = metric(c, "mrr")
    assert mrr.p == pytest.approx(2 / 64) and mrr.p_holm == pytest.approx(4 / 64)
    assert mrr.verdict == "no detectable difference" and mrr.ci95 == pytest.approx((0.5, 0.5)) and mrr.borderline
    assert "Holm 0.062) — borderline (the 95% CI is not Holm-adjusted and the Holm-adjusted p disagrees with it)" \
        in str(c)


def test_the_report_marks_the_borderline_row_and_the_estimated_p(tmp_path: Path):
    from components.report.page import render_comparison
    from utils.results import load_run

    base, new = five_more_at_rank_1(tmp_path)
    runs = [load_run(base), load_run(new)]
    comparison = json.loads(json.dumps(compare_runs(runs, ["base", "new"]).to_json(), allow_nan=False))
    section = render_comparison(comparison, runs)
    mrr = re.search(r"<tr><th>MRR</th><td class=num>27</td>.*?</tr>", section).group(0)
    assert "<td class=num>≈0.06" in mrr and "no detectable difference †</td>" in mrr
    hit1 = re.search(r"<tr><th>hit@1</th><td class=num>27</td>.*?</tr>", section).group(0)
    assert "<td class=num>0.062</td>" in hit1 and "†" not in hit1
    assert "MRR †: borderline: its 95% CI and its p disagree" in section


COMPARE = """
import json, sys
from benchmark import main
code = main(["compare", {a!r}, {b!r}, "--json", {out!r}, "--log-dir", {logs!r}], {{}})
print(json.dumps({{"code": code, "scipy": sorted(m for m, v in sys.modules.items()
                                               if v is not None and m.split(".")[0] == "scipy")}}))
"""


def test_compare_with_exact_tests_imports_no_scipy(tmp_path: Path):
    """McNemar's test and its interval, the exact sign-flip test: computed without scipy, whose import alone
    would cost compare more than its statistics."""
    import subprocess
    import sys

    from tests.conftest import ROOT, clean_env

    base, new = five_more_at_rank_1(tmp_path)
    code = COMPARE.format(a=str(base), b=str(new), out=str(tmp_path / "c.json"), logs=str(tmp_path / "logs"))
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=clean_env(PYTHONPATH=str(ROOT)),
                          capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out == {"code": 0, "scipy": []}
    tests = {m["metric"]: m["test"] for m in json.loads((tmp_path / "c.json").read_text())["comparisons"][0]["metrics"]}
    assert tests["hit_at_1_rate"] == "mcnemar-exact" and tests["mrr"] == "sign-flip-mc"
