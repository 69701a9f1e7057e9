"""A panel of judges (``--judges``, ``judges=[...]``): its specs and panel file, bad input, the
aggregate, a judge that becomes unusable, one budget and one concurrency for the panel, ``--resume``
per judge, ``--estimate`` per judge, and single-judge files left as they were. Judges are scripted
models registered under names of their own (tests/panel_fixtures.py); HTTP where it is the point."""

from __future__ import annotations

import itertools
import json
import threading
import time
from pathlib import Path

import pytest

from components.api import evaluate
from components.judges.panel import JudgeSpec, parse_judges, read_panel_file
from components.judges.providers.scripted import Script, fail, reply
from components.run.panel.grading import panel_outcome
from tests.conftest import clean_env, loguru_messages, run_cli
from tests.loopback_openai import OpenAILoopback
from tests.panel_fixtures import grade_reply, scripted_judges
from utils.errors import InputError
from utils.pricing import Price
from utils.results import JudgeGrade

SECRET = "sk-SENTINEL-panel-file-0123456789"
QUESTIONS = [{"id": f"q{i}", "question": f"How does thing {i} work?", "expected_answer": f"Thing {i} works so.",
              "needle_doc_id": "for"} for i in range(1, 6)]


def questions_file(tmp_path: Path) -> Path:
    path = tmp_path / "q.json"
    path.write_text(json.dumps({"questions": QUESTIONS}))
    return path


# ---- specs and the panel file


def test_specs_name_the_judges_and_a_panel_file_gives_endpoints_names():
    assert parse_judges("offline, openai/gpt-4.1") == [JudgeSpec("offline", "offline"),
                                                        JudgeSpec("openai/gpt-4.1", "openai", "gpt-4.1")]
    assert parse_judges([{"name": "local", "provider": "openai", "model": "m", "base_url": "http://127.0.0.1:9/v1",
                          "api_key_env": "LOCAL_KEY"}])[0] == \
        JudgeSpec("local", "openai", "m", "http://127.0.0.1:9/v1", "LOCAL_KEY")


@pytest.mark.parametrize(("judges", "says"), [
    ("offline,nosuch/model", "--judges='nosuch' is not a judge"),
    ("offline,offline", "the judge 'offline' appears twice"),
    ("offline,openai/", "is not a judge spec"),
    (",", "names no judge"),
])
def test_bad_specs_are_exit_2(judges: str, says: str):
    run = run_cli("--quick", "--judges", judges)
    assert run.code == 2 and says in run.stderr


@pytest.mark.parametrize(("body", "says"), [
    (f'[[judge]]\nprovider = "openai"\napi_key = "{SECRET}"\n', "unknown field 'api_key'"),
    (f'[[judge]]\nprovider = "openai"\napi_key_env = "{SECRET}"\n', "api_key_env must be the NAME"),
    ('[[judge]]\nprovider = "openai"\napi_key_env = "sk_live_SENTINEL_0123456789"\n', "api_key_env must be the NAME"),
    (f'secret = "{SECRET}"\n[[judge]]\nprovider = "offline"\n', "unknown field 'secret'"),
    ('[[judge]]\nprovider = "openai"\nmodel = "gpt-4.1"\nbase_url = "http://127.0.0.1:9/v1"\n'
     'api_key_env = "NOT_SET_ANYWHERE"\n', "api_key_env names NOT_SET_ANYWHERE, which is not set"),
    ('[[judge]]\nname = "a"\nprovider = "offline"\n[[judge]]\nname = "a"\nprovider = "openai"\n', "appears twice"),
    ("[[judge]\n", "not valid TOML"),
])
def test_a_bad_panel_file_is_exit_2_and_never_shows_a_value(tmp_path: Path, body: str, says: str):
    panel = tmp_path / "panel.toml"
    panel.write_text(body)
    run = run_cli("--quick", "--judges", str(panel))
    assert run.code == 2 and says in run.stderr
    assert SECRET not in run.stderr + run.stdout + run.log_text() and "sk_live" not in run.stderr + run.log_text()


def test_judges_override_the_judge_variables(tmp_path: Path):
    """A BENCHMARK_JUDGE_MODEL that names no provider would stop a run; --judges replaces it."""
    out = tmp_path / "r.json"
    run = run_cli("--quick", "--judges", "offline", "--output", str(out),
                  env=clean_env(BENCHMARK_JUDGE_MODEL="nosuch/model", BENCHMARK_JUDGE="nosuch"))
    assert run.code == 0, run.stderr
    assert json.loads(out.read_text())["run"]["judge"]["model"] == "offline"


def test_panel_aggregate_needs_judges_and_the_api_takes_one_of_judge_and_judges():
    assert run_cli("--quick", "--panel-aggregate", "mean").code == 2
    with pytest.raises(InputError, match="judges= is a panel"):
        evaluate("baseline", QUESTIONS, judge="offline", judges=["offline"])


def test_a_judge_unusable_at_start_up_is_exit_3_naming_it_before_any_grading_call(tmp_path: Path):
    with OpenAILoopback(models=["other-model"]) as server:
        env = clean_env(OPENAI_BASE_URL="http://127.0.0.1:1/v1", OPENAI_API_KEY=SECRET)
        run = run_cli("--questions", str(questions_file(tmp_path)), "--judges", "offline,openai/gpt-4.1",
                      "--output", str(tmp_path / "r.json"), env=env)
        assert run.code == 3 and "judge openai/gpt-4.1:" in run.stderr
        assert not (tmp_path / "r.json").exists() and server.requests == []


# ---- the aggregate


@pytest.mark.parametrize(("grades", "method", "value", "rounded"), [
    ([7, 8], "median", 7.5, 8), ([2, 9, 9], "median", 9.0, 9), ([2, 9, 9], "mean", 6.6667, 7),
    ([6, None, 7], "median", 6.5, 7), ([4], "mean", 4.0, 4)])
def test_the_aggregate_of_the_judges_that_graded_rounded_half_up(grades, method, value, rounded):
    names = [f"j{i}" for i in range(len(grades))]
    outcome = panel_outcome({n: JudgeGrade(grade=g, error=None if g else "timeout: x")
                             for n, g in zip(names, grades, strict=True)},
                            names, method)
    assert (outcome.value, outcome.grade.grade, outcome.graded) == (value, rounded, sum(g is not None for g in grades))


def test_no_judge_graded_gives_the_first_error():
    outcome = panel_outcome({"a": JudgeGrade(error="timeout: slow"), "b": JudgeGrade(error="auth: refused")},
                            ["a", "b"], "median")
    assert outcome.grade.grade is None and outcome.grade.error == "timeout: slow" and outcome.graded == 0


def test_mean_aggregate_through_the_api():
    with scripted_judges(low=grade_reply(2), high=grade_reply(9), higher=grade_reply(9)):
        result = evaluate("baseline", QUESTIONS, judges=["low", "high", "higher"], panel_aggregate="mean")
    row = result.rows[0]
    assert row.panel_grade == 6.6667 and row.llm_grade == 7 and row.panel_graded == 3
    assert result.metrics["avg_llm_grade"] == 7.0 and result.run.judge.details["aggregate"] == "mean"


# ---- a judge that becomes unusable mid-run


def test_a_judge_unusable_mid_run_gets_null_grades_and_the_others_go_on(tmp_path: Path):
    dying = Script(grade_reply(4), grade_reply(4), then=fail("auth", "the key was revoked (401)"))
    with scripted_judges(steady=grade_reply(8), dying=dying), loguru_messages("WARNING") as warnings:
        result = evaluate("baseline", QUESTIONS, judges=["steady", "dying"])
    assert result.run.status == "judge_failed" and result.run.judge_failure.startswith("auth: judge dying:")
    assert len(dying.prompts) == 3  # two grades, then the failure: never called again
    by_q = [(r.grades_by_judge["steady"].grade, r.grades_by_judge["dying"].grade) for r in result.rows]
    assert by_q == [(8, 4), (8, 4), (8, None), (8, None), (8, None)]
    assert result.rows[2].grades_by_judge["dying"].error.startswith("auth: judge dying: the key was revoked")
    assert result.rows[3].grades_by_judge["dying"].error == "judge_unusable: not graded after an earlier auth error"
    assert [r.llm_grade for r in result.rows] == [6, 6, 8, 8, 8] and result.rows[3].panel_graded == 1
    assert result.rows[3].grade_error is None  # the panel graded it
    assert result.panel.to_json()["per_judge"]["dying"]["unusable"].startswith("auth: judge dying:")
    assert any("Judge dying became unusable after grading 2 of 5 question(s)" in w for w in warnings)


def test_the_cli_says_so_and_exits_3(tmp_path: Path):
    dying = Script(grade_reply(4), then=fail("auth", "revoked"))
    with scripted_judges(steady=grade_reply(8), dying=dying):
        run = run_cli("--questions", str(questions_file(tmp_path)), "--judges", "steady,dying",
                      "--output", str(tmp_path / "r.json"))
    assert run.code == 3
    assert "Judge dying became unusable after grading 1 of 5 question(s)" in run.stderr
    assert "UNUSABLE: auth: judge dying: revoked" in run.stdout


# ---- one budget, one concurrency


def test_max_cost_is_one_budget_for_the_panel():
    """Each call costs $0.01 and reserves $0.01 first (a reply at its cap of 1,000 tokens at $10 per
    million, the prompt free); the budget is $0.05: five calls in all, whichever judge makes them."""
    price = Price(input_per_mtok=0.0, output_per_mtok=10.0)
    with scripted_judges(a=Script(then=reply(grade_reply(7), cost_usd=0.01), output_cap=1000, price=price),
                         b=Script(then=reply(grade_reply(8), cost_usd=0.01), output_cap=1000, price=price)) as scripts:
        result = evaluate("baseline", QUESTIONS, judges=["a", "b"], max_cost_usd=0.05)
    calls = len(scripts["a"].prompts) + len(scripts["b"].prompts)
    assert calls == 5 and result.run.status == "budget_exhausted"
    assert result.run.cost_usd == pytest.approx(0.05) and result.run.usage["judge"]["calls"] == 5
    usage = {j["name"]: j["usage"]["calls"] for j in result.run.judge.details["judges"]}
    assert usage == {"a": 3, "b": 2}
    assert result.rows[2].grades_by_judge["b"].error.startswith("budget: --max-cost $0.05 reached")


def test_concurrency_counts_the_calls_of_the_whole_panel():
    lock = threading.Lock()
    now, peak = [0], [0]

    def slow(grade: int):
        def answer(prompt: str) -> str:
            with lock:
                now[0] += 1
                peak[0] = max(peak[0], now[0])
            time.sleep(0.05)
            with lock:
                now[0] -= 1
            return grade_reply(grade)
        return answer

    questions = [dict(q, id=f"q{i}{q['id']}") for i in range(3) for q in QUESTIONS]
    with scripted_judges(a=slow(7), b=slow(8), c=slow(9)) as scripts:
        result = evaluate("baseline", questions, judges=["a", "b", "c"], concurrency=4)
    assert sum(len(s.prompts) for s in scripts.values()) == 3 * len(questions)
    assert peak[0] == 4 and result.run.judge.concurrency["peak"] == 4
    assert [r.question_id for r in result.rows] == [q["id"] for q in questions]


# ---- --resume continues each judge


def test_resume_grades_only_what_each_judge_left(tmp_path: Path):
    qfile, out = questions_file(tmp_path), tmp_path / "r.json"
    args = ("--questions", str(qfile), "--judges", "steady,flaky", "--output", str(out))
    with scripted_judges(steady=grade_reply(8), flaky=Script(grade_reply(3), then=fail("overloaded", fatal=True))):
        assert run_cli(*args).code == 3
    first = json.loads(out.read_text())
    assert [r["grades_by_judge"]["flaky"]["grade"] for r in first["results"]] == [3, None, None, None, None]
    with scripted_judges(steady=Script(), flaky=grade_reply(5)) as scripts:  # steady has no step: not called
        run = run_cli("--resume", str(out), "--output", str(out))
        assert run.code == 0, run.stderr
    assert scripts["steady"].prompts == [] and len(scripts["flaky"].prompts) == 4
    rows = json.loads(out.read_text())["results"]
    assert [r["grades_by_judge"]["flaky"]["grade"] for r in rows] == [3, 5, 5, 5, 5]
    assert [r["panel_grade"] for r in rows] == [5.5, 6.5, 6.5, 6.5, 6.5]
    assert "1 graded row(s) kept as they are, 4 question(s) to run" in run.stderr


# ---- --estimate prices each judge and the total


def test_estimate_prices_each_judge_and_the_total():
    with OpenAILoopback() as server:
        env = clean_env(OPENAI_BASE_URL=server.url, OPENAI_API_KEY=SECRET)
        run = run_cli("--quick", "--estimate", "--judges", "offline,openai/gpt-5.4-mini", env=env)
        assert run.code == 0, run.stderr
        assert not any(r.path.endswith("/chat/completions") for r in server.requests)
    out = run.stdout
    assert "[judge offline] Cost estimate" in out and "[judge openai/gpt-5.4-mini] Cost estimate" in out
    assert "the offline judge makes no calls and costs nothing" in out  # one line, no table
    totals = [line.split()[4] for line in out.splitlines() if line.strip().startswith("total")]
    assert len(totals) == 1  # the model's table
    assert f"Panel total: 5 calls, ${float(totals[0]):.4f} sequential" in out


def test_judge_batch_refuses_a_panel_with_a_judge_without_a_batch_api():
    run = run_cli("--quick", "--judges", "offline", "--judge-batch")
    assert run.code == 2 and "--judge-batch" in run.stderr


# ---- single-judge files stay as they were


def test_a_single_judges_results_have_no_panel_field(tmp_path: Path):
    result = evaluate("baseline", QUESTIONS, judge="offline")
    doc = result.to_json()
    assert "panel" not in doc and "judges" not in doc["run"]["judge"]
    assert not {"grades_by_judge", "panel_grade", "panel_graded"} & set(doc["results"][0])


def test_panel_file_read(tmp_path: Path):
    path = tmp_path / "p.toml"
    path.write_text('[[judge]]\nname = "a"\nprovider = "offline"\n\n[[judge]]\nprovider = "openai"\nmodel = "m"\n')
    assert [s.name for s in read_panel_file(path)] == ["a", "openai/m"]


# ---- --judge-batch: each judge's own batches


def test_judge_batch_sends_each_judge_its_own_batch_and_resume_continues_each(tmp_path: Path, few_questions: Path):
    """Two judges of one provider (two models of the loopback Messages API). The first judge's batch
    create is refused (401): that judge becomes unusable, the other's batch is collected. --resume
    then submits the first judge's requests alone: the other judge is not asked again."""
    from tests.conftest import judge_env
    from tests.loopback import LoopbackServer, Reply, error

    grades = {"claude-haiku-4-5": 4, "claude-sonnet-5-5": 8}

    def answer(custom_id: str, params: dict, seen: int) -> Reply:
        return Reply(text=f'{{"grade": {grades[params["model"]]}, "reasoning": "batched"}}')

    haiku, sonnet = "anthropic/claude-haiku-4-5", "anthropic/claude-sonnet-5-5"
    out = tmp_path / "r.json"
    refused = error(401, "authentication_error", "invalid x-api-key")
    with LoopbackServer(batch_polls=0, batch_script=answer, batch_create_faults=[refused]) as srv:
        env = judge_env(srv.url, BENCHMARK_BATCH_POLL_MAX="0.05")
        run = run_cli("--questions", str(few_questions), "--judges", f"{haiku},{sonnet}", "--judge-batch",
                      "--output", str(out), env=env)
        assert run.code == 3, run.stderr
        first = json.loads(out.read_text())
        assert [(b["judge"], b["status"]) for b in first["run"]["judge_batch"]] == [(sonnet, "collected")]
        assert [r["grades_by_judge"][haiku]["grade"] for r in first["results"]] == [None, None, None]
        assert [r["llm_grade"] for r in first["results"]] == [8, 8, 8]
        resumed = run_cli("--resume", str(out), "--judge-batch", "--output", str(out), env=env)
        assert resumed.code == 0, resumed.stderr
        assert [b["requests"][0]["params"]["model"] for b in srv.batch_creates] == [
            "claude-sonnet-5-5", "claude-haiku-4-5"]
        assert not srv.requests  # nothing graded one call at a time
    doc = json.loads(out.read_text())
    row = doc["results"][0]
    assert {n: g["grade"] for n, g in row["grades_by_judge"].items()} == {haiku: 4, sonnet: 8}
    assert row["panel_grade"] == 6.0 and doc["run"]["judge"]["mode"] == "batch"
    assert [(b["judge"], b["status"]) for b in doc["run"]["judge_batch"]] == [(haiku, "collected"),
                                                                            (sonnet, "collected")]


def test_a_single_judges_batch_record_has_no_judge_field():
    from components.run.calls.judge_batch import BatchRecord

    assert "judge" not in BatchRecord("b1", {"q0": "x"}).to_json()
    assert BatchRecord("b1", {"q0": "x"}, judge="a").to_json()["judge"] == "a"
    assert BatchRecord.from_json({"id": "b1", "custom_ids": {"q0": "x"}, "judge": "a"}).judge == "a"


def test_the_log_redacts_a_key_a_panel_file_names(tmp_path: Path):
    """A key in a variable of any name, named by api_key_env: redacted in the log from its first line
    (here the judge endpoint refuses the start-up check, and the run says which judge)."""
    from components.judges.panel import panel_secrets

    panel = tmp_path / "panel.toml"
    panel.write_text('[[judge]]\nname = "local"\nprovider = "openai"\nmodel = "gpt-4.1"\n'
                     'base_url = "http://user:pw-SENTINEL-42@127.0.0.1:1/v1"\napi_key_env = "MY_LOCAL_KEY"\n')
    env = {"MY_LOCAL_KEY": SECRET}
    assert panel_secrets(str(panel), env) == [SECRET, "pw-SENTINEL-42"]
    assert panel_secrets("offline,openai/x", env) == [] and panel_secrets(str(tmp_path / "none.toml"), env) == []
    run = run_cli("--quick", "--judges", str(panel), "--log-level", "TRACE",
                  env=clean_env(MY_LOCAL_KEY=SECRET))
    assert run.code == 3 and "judge local:" in run.stderr
    error = next(line for line in run.stderr.splitlines() if "error: judge local:" in line)
    assert "the base_url of this judge in the panel file" in error and "OPENAI_BASE_URL" not in error, error
    text = run.stderr + run.stdout + run.log_text()
    assert SECRET not in text and "pw-SENTINEL-42" not in text


def test_a_missing_key_variable_is_named_once_with_its_judge(tmp_path: Path):
    panel = tmp_path / "panel.toml"
    panel.write_text('[[judge]]\nname = "a"\nprovider = "openai"\nmodel = "gpt-4.1"\n'
                     'base_url = "http://127.0.0.1:1/v1"\napi_key_env = "NOT_SET_VAR_X"\n')
    run = run_cli("--quick", "--judges", str(panel), env=clean_env())
    errors = [line for line in run.stderr.splitlines() if "| ERROR" in line]
    assert run.code == 2 and len(errors) == 1, run.stderr
    assert errors[0].split("| ERROR   | ", 1)[1] == (
        "error: judge a: api_key_env names NOT_SET_VAR_X, which is not set: export NOT_SET_VAR_X with the judge's "
        "key"), errors[0]


def test_the_examples_local_judges_grade_by_their_rules_and_disagree():
    """examples/panel_judges.py (docs/judges.md's example): its two judges, served on free ports, as
    the openai provider reaches them; contrarian's grade is 11 − the rule's, generous's the rule's + 2."""
    import importlib.util
    from http.server import ThreadingHTTPServer

    from tests.conftest import ROOT

    spec = importlib.util.spec_from_file_location("panel_judges", ROOT / "examples" / "panel_judges.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    servers = {rule: ThreadingHTTPServer(("127.0.0.1", 0), module.handler(rule)) for rule in module.RULES}
    threads = [threading.Thread(target=s.serve_forever, daemon=True) for s in servers.values()]
    for t in threads:
        t.start()
    try:
        judges = [{"name": rule, "provider": "openai", "model": "local-rule",
                   "base_url": f"http://127.0.0.1:{s.server_address[1]}/v1"} for rule, s in servers.items()]
        result = evaluate("baseline", QUESTIONS, judges=judges)
    finally:
        for s in servers.values():
            s.shutdown()
            s.server_close()
    for row in result.rows:
        prompt_grade = row.grades_by_judge["contrarian"].grade
        assert row.grades_by_judge["generous"].grade == min(10, (11 - prompt_grade) + 2)
    assert module.grade("EXPECTED ANSWER (ground truth): alpha betas gamma\n│ alpha and betas here\n") == 7


def test_chunk_relevance_is_the_first_judges_and_repeats_are_kept_per_judge():
    """The offline judge first: it rates the chunks (free); a judge that calls a model first: chunks
    are not rated by default. With --judge-repeats every judge's repeats are in its grade."""
    calls = itertools.count()
    with scripted_judges(alternating=Script(then=lambda prompt: grade_reply(6 + 2 * (next(calls) % 2)))):
        first_offline = evaluate("baseline", QUESTIONS[:2], judges=["offline", "alternating"], judge_repeats=2)
        first_model = evaluate("baseline", QUESTIONS[:2], judges=["alternating", "offline"])
    assert all(r.chunk_relevance is not None for r in first_offline.rows)
    assert first_offline.run.judge.relevance_prompt_sha256 is not None
    assert all(r.chunk_relevance is None for r in first_model.rows)
    assert [r.grades_by_judge["alternating"].grades for r in first_offline.rows] == [[6, 8], [6, 8]]
    assert first_offline.rows[0].grades_by_judge["alternating"].grade == 7  # their median, rounded half up
    assert first_offline.panel.to_json()["per_judge"]["alternating"]["ci95"]["avg_llm_grade"] is not None


def test_order_check_is_not_made_with_a_panel(tmp_path: Path):
    run = run_cli("--quick", "--judges", "offline", "--order-check")
    assert run.code == 2 and "--order-check is not made with a panel" in run.stderr
