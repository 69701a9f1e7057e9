"""One run spec (components/run/spec.py): every option of a run in one frozen record, built by the
API and the command line, checked once before any indexing or judging, and recorded as ``run.spec``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components import api
from components.judges.settings import Settings
from components.run.spec import RunSpec
from tests.test_api import DOCS, QUESTIONS, KeywordRetriever
from tests.conftest import run_cli
from utils.errors import InputError
from utils.results import RunResult


class CountingRetriever(KeywordRetriever):
    """Counts its index() calls: a spec that is refused must leave it unindexed."""

    indexed = 0

    def index(self, chunks):
        CountingRetriever.indexed += 1
        super().index(chunks)


@pytest.mark.parametrize("options, message", [
    ({"concurrency": 0}, "concurrency 0 is not a whole number"),
    ({"retrieval_timeout": -1}, "retrieval timeout -1 is not a number"),
    ({"panel_aggregate": "mode"}, "--panel-aggregate 'mode'"),
    ({"repeat_where": "uncertain"}, "--repeat-where uncertain places the extra grades"),
    ({"judges": ["offline"], "order_check": True}, "--order-check is not made with a panel of judges"),
])
def test_a_bad_option_is_refused_before_anything_is_indexed(options, message):
    CountingRetriever.indexed = 0
    with pytest.raises(InputError, match=message.replace("(", r"\(")):
        api.evaluate(CountingRetriever(), QUESTIONS, DOCS, **({"judge": "offline"} if "judges" not in options else {}),
                     **options)
    assert CountingRetriever.indexed == 0


def test_options_that_do_not_go_together_are_refused_by_the_one_check():
    batch_judge = Settings.from_env({"ANTHROPIC_API_KEY": "sk-ant-test"})
    with pytest.raises(InputError, match="--concurrency does not apply to --judge-batch"):
        RunSpec(judge_batch=True, concurrency=2).check(batch_judge)
    with pytest.raises(InputError, match="--order-check is not sent through --judge-batch"):
        RunSpec(judge_batch=True, order_check=True).check(batch_judge)
    with pytest.raises(InputError, match="--judge-batch needs the LLM judge"):
        RunSpec(judge_batch=True).check(Settings.from_env({"BENCHMARK_JUDGE": "offline"}))
    RunSpec(judge_batch=True).check(batch_judge)  # alone, it is fine
    assert RunSpec(panel_aggregate="Mean").panel_aggregate == "mean"


def test_the_api_records_the_spec_it_ran_with():
    result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judge="offline", judge_repeats=2,
                          group_by=["category"], keep_text=False, retrieval_timeout=5)
    assert result.run.spec == {
        "k": 2, "judge_repeats": 2, "repeat_where": "all", "chunk_relevance": None, "max_cost_usd": None,
        "group_by": ["category"], "keep_text": False, "index_cache": False, "judge_batch": False, "concurrency": 1,
        "order_check": None, "order_check_seed": 0, "retrieval_timeout": 5, "panel_aggregate": "median",
        "adaptive": None, "known_answers": None}
    again = RunResult.from_json(json.loads(json.dumps(result.to_json())))
    assert again.run.spec == result.run.spec
    old = result.to_json()
    del old["run"]["spec"]  # a file written before the spec was recorded
    assert RunResult.from_json(old).run.spec is None


def test_the_command_line_records_its_spec_with_the_adaptive_request(tmp_path: Path):
    out = tmp_path / "r.json"
    run = run_cli("--limit", "10", "--target-ci", "3", "--concurrency", "2", "--no-cache", "--output", str(out))
    assert run.code == 0, run.stderr
    spec = json.loads(out.read_text())["run"]["spec"]
    assert spec["concurrency"] == 2 and spec["index_cache"] is False and spec["k"] == 5
    assert spec["adaptive"] == {"target_ci": {"avg_llm_grade": 3.0}, "seed": 0}
