"""--targets: what a target may name and how its value is written, each target met or missed with its
interval on hand-computed rows, the summary and results, and --fail-on-targets' exit 6."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.analysis.aggregate import build_report
from components.analysis.targets import check_targets, parse_targets
from tests.conftest import run_cli
from tests.test_aggregate import ROWS
from utils.errors import EXIT_GATE, InputError
from utils.results import RunInfo


def parsed(text: str, k: int = 5) -> list[tuple[str, float]]:
    return [(t.metric.key, t.value) for t in parse_targets(text, k)]


@pytest.mark.parametrize("text,expected", [
    ("hit@1=0.6,recall@5=0.9", [("hit_at_1_rate", 60.0), ("recall_at_k", 0.9)]),  # the mined dataset's defaults
    ("hit@1=60%", [("hit_at_1_rate", 60.0)]),
    ("hit_at_5_rate=1", [("hit_at_5_rate", 100.0)]),
    ("MRR=0.5, nDCG@5=0.7", [("mrr", 0.5), ("ndcg_at_k", 0.7)]),  # labels, any case, spaces
    ("mrr=0.5,ndcg=70%", [("mrr", 0.5), ("ndcg_at_k", 0.7)]),  # compare's aliases; a 0-1 metric as a percent
    ("avg_llm_grade=7.5,pass7=0.8", [("avg_llm_grade", 7.5), ("pass_rate_7", 80.0)]),
    ("hit@3=0.5,recall@2=0.25", [("hit_at_3_rate", 50.0), ("recall_at_2", 0.25)]),  # any cut-off up to k
])
def test_what_a_target_may_name_and_how_its_value_is_written(text, expected):
    assert parsed(text) == expected


def test_hit_at_k_is_the_runs_own_cut_off():
    assert parsed("hit@10=0.9,recall@10=0.5", k=10) == [("hit_at_k_rate", 90.0), ("recall_at_k", 0.5)]
    assert parsed("recall@5=0.5", k=10) == [("recall_at_5", 0.5)]


@pytest.mark.parametrize("text,message", [
    ("hit@6=0.5", "hit@6 needs N from 1 to the run's k (5)"), ("recall@0=0.5", "N from 1 to the run's k"),
    ("bogus=1", "unknown metric 'bogus'"), ("hit@1=60", "hit@1 is a share: write it from 0 to 1 or as a percent"),
    ("ndcg=1.5", "is a share"), ("avg grade=80%", "write METRIC=VALUE"), ("mrr=-0.1", "write METRIC=VALUE"),
    ("mrr=high", "write METRIC=VALUE"), ("mrr", "write METRIC=VALUE"), ("=0.5", "write METRIC=VALUE"),
    (" , ", "names no target"),
    ("mrr=0.4,mrr=0.5", "MRR is named twice"),  # it kept the last value silently; now refused (a typo hides a target)
])
def test_a_bad_target_is_refused_naming_it(text, message):
    with pytest.raises(InputError, match=re.escape(message)):
        parse_targets(text, 5)


def test_targets_met_and_missed_on_hand_computed_rows():
    # ranks 3, -, 1, 5: hit@1 25%, hit@3 50%, MRR (1/3 + 0 + 1 + 1/5) / 4 = 0.383; recall@2: only q3's needle is in
    # its first 2 chunks, 0.25; the grade of 3 graded questions 20/3 = 6.67
    result = build_report(RunInfo(k=5), ROWS)
    checked = [t.to_json() for t in check_targets(result, parse_targets("hit@1=0.25,hit@3=0.6,mrr=0.4,recall@2=0.25,"
                                                                          "avg grade=6", 5))]
    assert [(t["label"], t["met"]) for t in checked] == [
        ("hit@1", True), ("hit@3", False), ("MRR", False), ("recall@2", True), ("avg grade", True)]
    values = [t["value"] for t in checked]
    assert values[:2] == [25.0, 50.0] and values[2] == pytest.approx(0.38333, abs=1e-5)
    assert values[3] == 0.25 and values[4] == pytest.approx(20 / 3)
    assert checked[0]["ci95"] == result.ci95["hit_at_1_rate"]  # a registered metric: the run's interval
    assert checked[1]["ci95"][0] <= 50.0 <= checked[1]["ci95"][1]  # a cut-off of its own: computed from the rows
    assert checked[0]["line"].startswith("✓ hit@1 ≥ 25.0%: 25.0% [")
    assert checked[1]["line"].startswith("✗ hit@3 ≥ 60.0%: 50.0% [")
    assert checked[1]["ci_clear"] is False and checked[1]["line"].endswith("(the 95% CI reaches the target)")
    assert checked[0]["ci_clear"] is False and checked[0]["line"].endswith("(the 95% CI reaches below the target)")


def test_a_metric_the_run_cannot_measure_misses_its_target():
    nothing_graded = build_report(RunInfo(k=5), [r for r in ROWS if r.llm_grade is None])
    checked = [t.to_json() for t in check_targets(nothing_graded,
                                                  parse_targets("avg grade=1,proxy_precision_at_k=0", 5))]
    assert [(t["met"], t["value"], t["ci95"]) for t in checked] == [(False, None, None)] * 2
    assert checked[0]["line"] == "✗ avg grade ≥ 1.00: not measured in this run"


# --------------------------------------------------------------------------- the run


def test_a_run_prints_and_records_its_targets(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(few_questions), "--output", str(out), "--targets", "hit@5=0,hit@1=100%")
    assert run.code == 0, run.stderr  # without --fail-on-targets a missed target does not change the exit code
    targets = json.loads(out.read_text())["targets"]
    assert [(t["metric"], t["target"], t["met"]) for t in targets] == [("hit_at_5_rate", 0.0, True),
                                                                      ("hit_at_1_rate", 100.0, False)]
    assert re.search(r"^targets +1 of 2 met\n +✓ hit@5 ≥ 0\.0%: .+\n +✗ hit@1 ≥ 100\.0%: ", run.stdout, re.M)


def test_fail_on_targets_exits_6_when_one_is_missed_and_0_when_all_are_met(tmp_path: Path, few_questions: Path):
    args = ("--questions", str(few_questions), "--output", str(tmp_path / "r.json"), "--fail-on-targets")
    missed = run_cli(*args, "--targets", "hit@1=100%,hit@5=0")
    assert missed.code == EXIT_GATE, missed.stderr
    assert "Targets missed: hit@1 (modular-no-llm): exit 6" in missed.stderr
    assert run_cli(*args, "--targets", "hit@5=0").code == 0


@pytest.mark.parametrize("extra,message", [
    (("--fail-on-targets",), "--fail-on-targets needs --targets"),
    (("--targets", "hit@9=0.5"), "hit@9 needs N from 1 to the run's k (5)"),
])
def test_bad_targets_stop_the_run_before_anything_is_done(tmp_path: Path, few_questions: Path, extra, message):
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(few_questions), "--output", str(out), *extra)
    assert run.code == 2 and message in run.stderr
    assert not out.exists() and "Corpus " not in run.stderr


def test_every_unit_has_its_range():
    from utils import metrics as M

    assert set(M.UNIT_RANGES) == set(M.UNITS)
    assert M.UNIT_RANGES["grade"] == (1.0, 10.0) and M.UNIT_RANGES["relevance"] == (0.0, 3.0)
