"""The judge on today's models, end to end: the start-up check before the corpus is
loaded, what `run.judge` records, usage and cost, `--max-cost`, the query rewriter."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import first_questions, judge_env, run_cli
from tests.loopback import MODELS, LoopbackServer, Reply, error

OK = Reply(text='{"grade": 8, "reasoning": "fine"}', usage={"input_tokens": 1000, "output_tokens": 100})


@pytest.mark.parametrize("model,fix", [
    ("claude-sonnet-4-0", "is retired"),  # retired: names the newest active sonnet
    ("claude-sonnet-9-9", "unknown to the API (404)"),
])
def test_start_up_check_stops_before_anything_is_loaded(tmp_path: Path, few_questions: Path, model, fix):
    out = tmp_path / "r.json"
    out.write_text('{"earlier": true}')
    with LoopbackServer() as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out),
                      env=judge_env(srv.url, BENCHMARK_SONNET_MODEL=model))
        assert run.code == 2, run.stderr
        assert not srv.requests  # no judge call
    assert fix in run.stderr and "claude-sonnet-5-5" in run.stderr and "BENCHMARK_SONNET_MODEL" in run.stderr
    assert "Corpus " not in run.stderr  # nothing loaded
    assert out.read_text() == '{"earlier": true}' and not (tmp_path / "runs").exists()  # nothing written


def test_effort_the_model_lacks_exits_2_naming_its_levels(tmp_path: Path, few_questions: Path):
    with LoopbackServer() as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                      env=judge_env(srv.url, BENCHMARK_JUDGE_EFFORT="xhigh"))
    assert run.code == 2 and "low, medium, high, max" in run.stderr and not srv.requests


def test_deprecated_model_warns_and_runs(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer() as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out),
                      env=judge_env(srv.url, BENCHMARK_SONNET_MODEL="claude-sonnet-4-5"))
    assert run.code == 0, run.stderr
    assert run.stderr.count("is deprecated and retires 2027-03-01") == 1
    judge = json.loads(out.read_text())["run"]["judge"]
    assert judge["lifecycle"] == "deprecated" and judge["retires_at"].startswith("2027-03-01")


def test_run_judge_records_what_was_asked_and_what_answered(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(default=OK) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    judge = data["run"]["judge"]
    assert judge["requested_model"] == "claude-sonnet-5-5" and judge["reply_models"] == ["claude-sonnet-5-5"]
    assert judge["thinking"] == {"type": "between_tools"} and judge["settings_source"] == "models_api"
    assert judge["max_tokens"] == 1024 and judge["effort"] is None and judge["mode"] == "sequential"
    assert judge["anthropic_version"] and judge["lifecycle"] == "active"
    assert "Judge settings: claude-sonnet-5-5: thinking between_tools" in run.stderr
    # usage per row and per run; cost at $2 / $10 per million tokens
    row = data["results"][0]
    assert (row["input_tokens"], row["output_tokens"], row["stop_reason"]) == (1000, 100, "end_turn")
    assert row["request_id"].startswith("req_loopback_") and row["cost_usd"] == pytest.approx(0.003)
    usage = data["run"]["usage"]["judge"]
    assert (usage["calls"], usage["input_tokens"], usage["output_tokens"]) == (3, 3000, 300)
    assert data["run"]["cost_usd"] == pytest.approx(0.009)
    assert "3 calls" in run.stdout and "$0.0090" in run.stdout


def test_gateway_without_models_api(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(default=OK, models=None) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert run.code == 0, run.stderr
    assert json.loads(out.read_text())["run"]["judge"]["settings_source"] == "builtin_table"
    assert "built-in table" in run.stderr


def test_unknown_price_gives_null_cost_with_a_note(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    models = {**MODELS, "claude-sonnet-4-6": MODELS["claude-sonnet-4-6"]}
    with LoopbackServer(default=OK, models=models) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out),
                      env=judge_env(srv.url, BENCHMARK_SONNET_MODEL="claude-sonnet-4-6"))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["cost_usd"] is None and "no price for model 'claude-sonnet-4-6'" in data["run"]["cost_note"]
    with LoopbackServer(default=OK, models=models) as srv:
        refused = run_cli("--questions", str(few_questions), "--output", str(out), "--max-cost", "1",
                          env=judge_env(srv.url, BENCHMARK_SONNET_MODEL="claude-sonnet-4-6"))
    assert refused.code == 2 and "--max-cost needs the price" in refused.stderr


def test_max_cost_stops_grading_and_resume_finishes(tmp_path: Path):
    questions = first_questions(6, tmp_path / "q.json")
    out = tmp_path / "r.json"
    # each call costs 1000 * 2e-6 + 100 * 1e-5 = $0.003; before it is made, its worst case is reserved:
    # max_tokens 1024 * 1e-5 + its prompt's characters / 4 * 2e-6 (prompts of 1,983-3,621 tokens here:
    # $0.0142-$0.0175). A $0.019 budget allows 2 calls (the 3rd: spent 0.006 + its worst case > 0.019)
    with LoopbackServer(default=OK) as srv:
        run = run_cli("--questions", str(questions), "--output", str(out), "--max-cost", "0.019",
                      env=judge_env(srv.url))
        assert len(srv.requests) == 2
    assert run.code == 4, run.stderr
    result = json.loads(out.read_text())
    assert result["run"]["status"] == "budget_exhausted" and len(result["results"]) == 6
    assert [r["llm_grade"] for r in result["results"]] == [8, 8, None, None, None, None]
    assert all(r["grade_error"].startswith("budget: --max-cost $0.019 reached") for r in result["results"][2:])
    assert all(r["rank"] is not None or r["retrieved"] for r in result["results"][2:])  # still retrieved
    assert "--resume" in run.stderr
    with LoopbackServer(default=OK) as srv:
        resumed = run_cli("--questions", str(questions), "--output", str(out), "--resume", str(out),
                          env=judge_env(srv.url))
        assert len(srv.requests) == 4  # only the ungraded ones
    assert resumed.code == 0, resumed.stderr
    final = json.loads(out.read_text())
    assert [r["llm_grade"] for r in final["results"]] == [8] * 6 and final["run"]["resumed_rows"] == 2


def test_modular_without_a_key_stops_at_start_up(tmp_path: Path, few_questions: Path):
    run = run_cli("--strategy", "modular", "--questions", str(few_questions), "--output", str(tmp_path / "r.json"))
    assert run.code == 2 and "modular-no-llm" in run.stderr and "ANTHROPIC_API_KEY" in run.stderr
    assert "Corpus " not in run.stderr


def test_rewriter_transient_failure_falls_back_for_that_question_only(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"

    def script(n: int, body: dict) -> Reply:
        if body.get("model") == "claude-haiku-4-5":  # the rewriter: the 2nd question's rewrite fails
            text = body["messages"][0]["content"]
            if "reassign" in text:
                return error(529, "overloaded_error")
            return Reply(text="rewritten query " + str(n))
        return OK

    with LoopbackServer(script) as srv:
        run = run_cli("--strategy", "modular", "--questions", str(few_questions), "--output", str(out),
                      env=judge_env(srv.url, BENCHMARK_RETRY_WAIT_MAX="0"))
        haiku = [r.body for r in srv.requests if r.body["model"] == "claude-haiku-4-5"]
    assert run.code == 0, run.stderr
    assert all(b["thinking"] == {"type": "disabled"} for b in haiku)  # Haiku 4.5 takes `disabled`
    data = json.loads(out.read_text())
    rows = data["results"]
    assert rows[0]["query_used"].startswith("rewritten query") and rows[0]["query_rewrite_error"] is None
    assert rows[1]["query_used"] == rows[1]["question"] and rows[1]["query_rewrite_error"].startswith("overloaded")
    assert rows[2]["query_used"].startswith("rewritten query")
    assert data["run"]["rewriter"]["requested_model"] == "claude-haiku-4-5"
    assert data["run"]["usage"]["rewriter"]["calls"] == 2


def test_rewriter_fatal_error_stops_the_run(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"

    def script(n: int, body: dict) -> Reply:
        if body.get("model") == "claude-haiku-4-5":
            return error(400, "invalid_request_error", "rewriter request refused")
        return OK

    with LoopbackServer(script) as srv:
        run = run_cli("--strategy", "modular", "--questions", str(few_questions), "--output", str(out),
                      env=judge_env(srv.url))
        judged = [r for r in srv.requests if r.body["model"] == "claude-sonnet-5-5"]
    assert run.code == 3, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["status"] == "judge_failed" and "rewriter request refused" in data["run"]["judge_failure"]
    assert [r["grade_error"].split(":")[0] for r in data["results"]] == ["rewriter_unusable"] * 3
    assert not judged  # nothing graded on a query the strategy did not produce
