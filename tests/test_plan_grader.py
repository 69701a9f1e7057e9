"""The plan's grader does not retry and takes the POC's ``call_llm``: one request per grade (against
a loopback judge answering 500, a slow model object, a caller that raises), every failure a null
grade, ``call_llm=fn`` and ``BENCHMARK_CALL_LLM=package.module:function`` for a whole run."""

from __future__ import annotations

import json
import threading
import time
from types import SimpleNamespace

import pytest

from components.judges.llm import LLMReply
from components.retrieval_grader import RetrievalGrader
from tests import plan_callers
from tests.conftest import clean_env, judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, error
from utils.errors import InputError

QUESTION = "What happens to an exception when the finally clause returns?"
ANSWER = "If the finally clause executes a return, the saved exception is discarded."
CHUNKS = [{"doc_id": "try", "content": "If the finally clause executes a return statement, the saved exception "
                                       "is discarded."}]


@pytest.fixture(autouse=True)
def _no_calls_left():
    plan_callers.CALLS.clear()
    yield
    plan_callers.CALLS.clear()


# --------------------------------------------------------------------------- exactly one request


def test_a_judge_answering_500_always_gets_exactly_one_request_per_grade():
    with LoopbackServer(default=error(500, "api_error", "internal")) as srv:
        grader = RetrievalGrader(timeout=5.0, env=judge_env(srv.url))
        results = [grader.grade(QUESTION, ANSWER, CHUNKS) for _ in range(3)]
        assert len(srv.requests) == 3  # one per grade: 3 questions, 3 requests (was 18)
    assert all(r.grade is None and r.error.startswith("server_error:") for r in results)


def test_an_openai_compatible_judge_answering_500_gets_one_request_per_grade():
    from tests.loopback_openai import OpenAILoopback
    from tests.loopback_openai import error as openai_error
    from tests.test_openai_provider import openai_env

    with OpenAILoopback(default=openai_error(500, "internal", kind="server_error")) as srv:
        grader = RetrievalGrader(timeout=5.0, env=openai_env(srv.url))
        results = [grader.grade(QUESTION, ANSWER, CHUNKS) for _ in range(2)]
        assert len(srv.requests) == 2
    assert all(r.grade is None and r.error.startswith("server_error:") for r in results)


def test_a_judge_past_the_timeout_gets_one_request_and_a_null_grade():
    with LoopbackServer(default=Reply(delay=1.5)) as srv:
        result = RetrievalGrader(timeout=0.3, env=judge_env(srv.url)).grade(QUESTION, ANSWER, CHUNKS)
        time.sleep(0.2)  # a retry would have started by now
        assert len(srv.requests) == 1
    assert result.grade is None and result.error.startswith("timeout:")


class SlowModel:
    """A caller's model object whose ``complete()`` blocks until released (up to 30 s)."""

    model = "slow-model"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.calls = 0

    def complete(self, prompt: str) -> LLMReply:
        self.calls += 1
        self.release.wait(30)
        return LLMReply('{"grade": 9}')


def test_the_timeout_bounds_a_callers_model_object():
    slow = SlowModel()
    try:
        start = time.monotonic()
        result = RetrievalGrader(slow, timeout=1).grade(QUESTION, ANSWER, CHUNKS)
        elapsed = time.monotonic() - start
    finally:
        slow.release.set()
    assert result.grade is None and result.error.startswith("timeout: the model did not answer within 1s")
    assert 0.9 <= elapsed < 2.0 and slow.calls == 1


def test_a_model_object_that_raises_is_a_null_grade_not_an_exception():
    class Broken:
        model = "broken"

        def complete(self, prompt: str) -> LLMReply:
            raise RuntimeError("socket closed")

    result = RetrievalGrader(Broken(), timeout=5).grade(QUESTION, ANSWER, CHUNKS)
    assert (result.grade, result.error) == (None, "error: RuntimeError: socket closed")


# --------------------------------------------------------------------------- call_llm=fn


def test_call_llm_returning_a_string_grades_and_receives_the_plans_arguments():
    result = RetrievalGrader(timeout=5.0, call_llm=plan_callers.call_llm).grade(QUESTION, ANSWER, CHUNKS)
    assert (result.grade, result.reasoning, result.error) == (7, "ok", None)
    assert len(plan_callers.CALLS) == 1
    call = plan_callers.CALLS[0]
    assert (call["model"], call["timeout"]) == ("claude-sonnet", 5)
    assert type(call["timeout"]) is int and QUESTION in call["prompt"]


def test_call_llm_gets_the_graders_model_string_and_the_timeout_as_a_whole_number():
    seen = []
    grader = RetrievalGrader(timeout=2.9, call_llm=lambda p, model, timeout: seen.append((model, timeout)) or
                             '{"grade": 4}', model="claude-haiku")
    assert grader.judge == "call_llm/claude-haiku"
    assert grader.grade(QUESTION, ANSWER, CHUNKS).grade == 4
    assert seen == [("claude-haiku", 2)]


def test_call_llm_raising_timeout_error_is_a_null_grade():
    result = RetrievalGrader(timeout=5.0, call_llm=plan_callers.call_llm_that_times_out).grade(QUESTION, ANSWER,
                                                                                               CHUNKS)
    assert result.grade is None and result.error == "timeout: call_llm raised TimeoutError: no reply within 5s"
    assert len(plan_callers.CALLS) == 1  # not retried


def test_call_llm_raising_anything_is_a_null_grade_with_the_reason():
    def fn(prompt, model, timeout):
        raise KeyError("model")

    result = RetrievalGrader(call_llm=fn).grade(QUESTION, ANSWER, CHUNKS)
    assert (result.grade, result.error) == (None, "error: call_llm raised KeyError: 'model'")


@pytest.mark.parametrize("reply", [
    SimpleNamespace(text='{"grade": 6, "reasoning": "r"}'),  # .text
    SimpleNamespace(content=[SimpleNamespace(type="text", text='{"grade": 6, "reasoning": "r"}')]),  # an SDK message
])
def test_call_llm_may_return_an_object_with_text(reply):
    result = RetrievalGrader(call_llm=lambda p, model, timeout: reply).grade(QUESTION, ANSWER, CHUNKS)
    assert (result.grade, result.reasoning) == (6, "r")


@pytest.mark.parametrize("reply,name", [(7, "int"), (None, "NoneType"), ({"grade": 7}, "dict"),
                                        (SimpleNamespace(content=[]), "SimpleNamespace")])
def test_call_llm_returning_something_else_is_a_null_grade_naming_the_type(reply, name):
    result = RetrievalGrader(call_llm=lambda p, model, timeout: reply).grade(QUESTION, ANSWER, CHUNKS)
    assert (result.grade, result.error) == (None, f"call_llm returned {name}")


def test_a_slow_call_llm_is_bounded_by_the_timeout():
    release = threading.Event()
    try:
        start = time.monotonic()
        result = RetrievalGrader(timeout=0.5, call_llm=lambda p, model, timeout: release.wait(30) and "x").grade(
            QUESTION, ANSWER, CHUNKS)
        assert time.monotonic() - start < 1.5
    finally:
        release.set()
    assert result.grade is None and result.error.startswith("timeout:")


def test_llm_and_call_llm_together_or_a_call_llm_that_is_no_function_are_refused():
    with pytest.raises(InputError, match="not both"):
        RetrievalGrader(SlowModel(), call_llm=plan_callers.call_llm)
    with pytest.raises(InputError, match="not a function"):
        RetrievalGrader(call_llm="tests.plan_callers:call_llm")


# --------------------------------------------------------------------------- BENCHMARK_CALL_LLM


def test_benchmark_call_llm_makes_the_callers_function_the_judge():
    grader = RetrievalGrader(timeout=5.0, env=clean_env(BENCHMARK_CALL_LLM="tests.plan_callers:call_llm"))
    assert grader.judge == "call_llm/claude-sonnet"
    assert grader.grade(QUESTION, ANSWER, CHUNKS).grade == 7
    assert [(c["model"], c["timeout"]) for c in plan_callers.CALLS] == [("claude-sonnet", 5)]


@pytest.mark.parametrize("spec,said", [
    ("tests.no_such_module:call_llm", "cannot import module 'tests.no_such_module'"),
    ("tests.plan_callers:no_such_function", "'no_such_function' in tests.plan_callers is missing"),
    ("tests.plan_callers:NOT_A_FUNCTION", "'NOT_A_FUNCTION' in tests.plan_callers is a int, not a function"),
    ("tests.plan_callers", "is not package.module:function"),
])
def test_a_bad_benchmark_call_llm_stops_the_run_with_exit_2_and_one_line(spec, said, few_questions, tmp_path):
    run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                  env=clean_env(BENCHMARK_CALL_LLM=spec))
    assert run.code == 2, run.stderr
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "BENCHMARK_CALL_LLM=" in errors[0] and said in errors[0]
    assert not (tmp_path / "r.json").exists()


def test_benchmark_call_llm_and_another_named_judge_are_refused(few_questions, tmp_path):
    run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                  env=clean_env(BENCHMARK_CALL_LLM="tests.plan_callers:call_llm", BENCHMARK_JUDGE="offline"))
    assert run.code == 2 and "BENCHMARK_CALL_LLM is set, but the judge is offline" in run.stderr


def test_a_run_with_benchmark_call_llm_records_the_callers_judge_and_an_unknown_cost(few_questions, tmp_path):
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(few_questions), "--output", str(out), "--no-cache",
                  env=clean_env(BENCHMARK_CALL_LLM="tests.plan_callers:call_llm", BENCHMARK_JUDGE_TIMEOUT="9"))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    judge = data["run"]["judge"]
    assert (judge["provider"], judge["model"], judge["call_llm"], judge["cost"]) == \
        ("call_llm", "claude-sonnet", "tests.plan_callers:call_llm", "unknown")
    assert [r["llm_grade"] for r in data["results"]] == [7, 7, 7]
    assert len(plan_callers.CALLS) == 3 and {c["timeout"] for c in plan_callers.CALLS} == {9}


def test_a_run_whose_call_llm_raises_keeps_every_row_with_a_null_grade(few_questions, tmp_path):
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(few_questions), "--output", str(out), "--no-cache",
                  env=clean_env(BENCHMARK_CALL_LLM="tests.plan_callers:call_llm_that_times_out"))
    data = json.loads(out.read_text())
    assert len(data["results"]) == 3, run.stderr
    assert all(r["llm_grade"] is None and r["grade_error"].startswith("timeout: call_llm raised TimeoutError")
               for r in data["results"])
