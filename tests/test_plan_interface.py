"""The user's plan's interface in the user's layout: ``components.retrieval_grader`` (RetrievalGrader,
GradeResult) and ``utils.metrics.RetrievalMetrics`` on the plan's plain dicts. The judge a grader
resolves is exercised offline, through the scripted provider, and with the real SDK against the
loopback Anthropic server (clamping included)."""

from __future__ import annotations

import pytest
from loguru import logger

from components.core import Chunk, ScoredChunk
from components.judges.providers.scripted import Script, fail, play
from components.retrieval_grader import GradeResult, RetrievalGrader
from tests.conftest import clean_env, judge_env
from tests.loopback import LoopbackServer, Reply, error
from utils.errors import InputError
from utils.metrics import RetrievalMetrics

QUESTION = "What happens to an exception when the finally clause returns?"
ANSWER = "If the finally clause executes a return, the saved exception is discarded."
PLAN_CHUNKS = [  # the plan's chunk dicts: doc_id, content or text, optional title/heading
    {"doc_id": "try", "content": "If the finally clause executes a return statement, the saved exception is "
                                 "discarded.", "title": "The try statement", "heading": "finally"},
    {"doc_id": "for", "text": "The for statement iterates over the elements of a sequence."},
]


@pytest.fixture
def logged():
    lines: list[str] = []
    sink = logger.add(lambda message: lines.append(str(message)), level="INFO", format="{message}")
    yield lines
    logger.remove(sink)


# --------------------------------------------------------------------------- RetrievalGrader()


def test_no_argument_resolves_the_offline_judge_keeps_the_timeout_and_grades_the_plans_dicts(logged):
    grader = RetrievalGrader(timeout=5.0, env=clean_env())
    assert grader.timeout == 5.0 and grader.judge == "offline"
    assert any("judge offline (timeout 5s)" in line for line in logged)
    result = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
    assert isinstance(result, GradeResult)
    assert result.grade == 10 and result.error is None and result.latency_ms >= 0
    assert "discard" in result.reasoning  # the lexical judge names the key terms found
    missing = grader.grade(QUESTION, ANSWER, [PLAN_CHUNKS[1]])
    assert missing.grade is not None and missing.grade < result.grade


def test_the_default_timeout_is_the_plans(logged):
    assert RetrievalGrader(env=clean_env()).timeout == 30.0


@pytest.mark.parametrize("timeout", [0, -1, 601, float("nan")])
def test_a_timeout_out_of_bounds_is_refused(timeout):
    with pytest.raises(InputError, match="timeout"):
        RetrievalGrader(timeout=timeout, env=clean_env())


def test_chunks_may_be_dicts_chunks_or_scored_chunks():
    chunk = Chunk("try", "try#0", "The try statement", ("finally",), PLAN_CHUNKS[0]["content"], 0)
    script = Script(then=lambda prompt: '{"grade": 7, "reasoning": "seen"}')
    grader = RetrievalGrader(script)
    grader.grade(QUESTION, ANSWER, PLAN_CHUNKS[:1])
    grader.grade(QUESTION, ANSWER, [chunk])
    grader.grade(QUESTION, ANSWER, [ScoredChunk(chunk, 0.5)])
    assert script.prompts[0] == script.prompts[1] == script.prompts[2]  # the dict is that chunk
    assert "[CHUNK 1/1 doc_id=try chunk_id=try#0]" in script.prompts[0]
    assert "│ The try statement > finally" in script.prompts[0]


@pytest.mark.parametrize("chunk,fix", [({"content": "x"}, "doc_id"), ({"doc_id": "d"}, "text"),
                                       ({"doc_id": "d", "content": 3}, "content"), ("d", "str")])
def test_a_chunk_that_is_not_one_is_refused(chunk, fix):
    with pytest.raises(InputError, match=fix):
        RetrievalGrader(Script('{"grade": 5}')).grade(QUESTION, ANSWER, [chunk])


def test_an_injected_llm_grades_as_before():
    grader = RetrievalGrader(Script('{"grade": 6, "reasoning": "partial"}', model="my-model"))
    assert grader.judge == "my-model"
    result = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
    assert (result.grade, result.reasoning, result.error) == (6, "partial", None)


def test_the_configured_provider_is_resolved_and_a_failure_is_a_null_grade_without_retry():
    with play(fail("overloaded"), '{"grade": 8}', fail("auth", "bad key")) as script:
        grader = RetrievalGrader(env=clean_env(BENCHMARK_JUDGE="scripted"))
        assert grader.judge == "scripted/scripted-1"
        transient = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
        assert (transient.grade, transient.error) == (None, "overloaded: scripted overloaded")
        assert len(script.prompts) == 1  # one call: the grader does not retry
        assert grader.grade(QUESTION, ANSWER, PLAN_CHUNKS).grade == 8
        fatal = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)  # a fatal error is a null grade too
        assert (fatal.grade, fatal.error) == (None, "auth: bad key")
        after = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
        assert after.grade is None and after.error.startswith("judge_unusable: not graded after an earlier auth")
        assert len(script.prompts) == 3  # nothing sent after the fatal error


def test_the_anthropic_judge_over_the_loopback_server(logged):
    with LoopbackServer([Reply(text='{"grade": 9, "reasoning": "all there"}')]) as srv:
        grader = RetrievalGrader(timeout=5.0, env=judge_env(srv.url))
        assert grader.judge == "anthropic/claude-sonnet-5-5"
        assert not srv.requests and not srv.model_requests  # building a grader calls nothing
        result = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
        assert (result.grade, result.reasoning, result.error) == (9, "all there", None)
        assert len(srv.requests) == 1 and srv.model_requests  # the start-up check, then one call
        assert "│ If the finally clause executes a return statement" in srv.prompts()[0]
    assert any("judge anthropic/claude-sonnet-5-5 (timeout 5s)" in line for line in logged)


def test_the_loopback_judge_past_the_grader_timeout_is_a_timeout_grade():
    with LoopbackServer([Reply(delay=1.0)] * 3) as srv:
        result = RetrievalGrader(timeout=0.2, env=judge_env(srv.url)).grade(QUESTION, ANSWER, PLAN_CHUNKS)
    assert result.grade is None and result.error.startswith("timeout:")


def test_a_refused_key_is_a_null_grade_naming_the_fix_and_the_judge_is_not_called_again():
    with LoopbackServer(default=error(401, "authentication_error", "invalid x-api-key")) as srv:
        grader = RetrievalGrader(env=judge_env(srv.url))
        result = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
        assert result.grade is None and result.error.startswith("auth: ") and "ANTHROPIC_API_KEY" in result.error
        after = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
        assert after.grade is None and after.error == "judge_unusable: not graded after an earlier auth error"
        assert len(srv.requests) == 1


def test_a_start_up_check_that_fails_is_a_null_grade_with_its_reason():
    with LoopbackServer() as srv:
        grader = RetrievalGrader(env=judge_env(srv.url, BENCHMARK_SONNET_MODEL="claude-sonnet-4-0"))
        result = grader.grade(QUESTION, ANSWER, PLAN_CHUNKS)
        assert result.grade is None and result.error.startswith("judge_unusable: ") and "is retired" in result.error
        assert grader.grade(QUESTION, ANSWER, PLAN_CHUNKS).error == result.error
        assert not srv.requests  # no grading call


@pytest.mark.parametrize("said,grade", [(11, 10), (0, 1), (-3, 1), (12, 10), (85, 10), (10.6, 10)])
def test_the_loopback_judges_grade_out_of_range_is_clamped(said, grade):
    with LoopbackServer(default=Reply(text=f'{{"grade": {said}, "reasoning": "r"}}')) as srv:
        result = RetrievalGrader(env=judge_env(srv.url)).grade(QUESTION, ANSWER, PLAN_CHUNKS)
    assert (result.grade, result.clamped_from, result.reasoning, result.error) == (grade, said, "r", None)


@pytest.mark.parametrize("text,grade,error", [
    ('{"grade": 8}', 8, None), ("Grade: 8/10", 8, None),
    ("grade: 8/100", None, "unparseable: the grade 8/100 is on another scale than 1-10"),
    ("grade: 4 out of 5", None, "unparseable: the grade 4/5 is on another scale than 1-10"),
    ('{"grade": "eight"}', None, "unparseable: the grade 'eight' is not a number from 1 to 10"),
])
def test_the_loopback_judges_other_scales_stay_unparseable(text, grade, error):
    with LoopbackServer(default=Reply(text=text)) as srv:
        result = RetrievalGrader(env=judge_env(srv.url)).grade(QUESTION, ANSWER, PLAN_CHUNKS)
    assert (result.grade, result.error, result.clamped_from) == (grade, error, None)
    assert result.raw == text


# --------------------------------------------------------------------------- RetrievalMetrics


def test_position_weights_are_the_plans_and_the_total_score_uses_them(monkeypatch):
    assert RetrievalMetrics.POSITION_WEIGHTS == {1: 1.0, 2: 0.95, 3: 0.95, 4: 0.85, 5: 0.85, None: 0.6}
    m = RetrievalMetrics()
    assert [m.calculate_total_score(10, r) for r in (1, 2, 3, 4, 5, None, 6)] == [10.0, 9.5, 9.5, 8.5, 8.5, 6.0, 6.0]
    monkeypatch.setitem(RetrievalMetrics.POSITION_WEIGHTS, 2, 0.5)  # the one table: the score follows it
    assert m.calculate_total_score(10, 2) == 5.0


def test_the_plans_acceptance_checks_on_plain_dicts():
    m = RetrievalMetrics()
    chunks = [{"doc_id": "a"}, {"doc_id": "b"}, {"doc_id": "c"}]
    assert m.calculate_rank(chunks, "b") == 2
    assert m.calculate_rank(chunks, "z") is None
    assert m.calculate_total_score(10, 1) == 10.0
    assert m.calculate_total_score(10, 3) == 9.5
    assert m.calculate_total_score(10, None) == 6.0
    assert m.calculate_total_score(None, 1) is None


PLAN_RESULTS = [  # the plan's result dicts; the third has no "rank" key and no "total_score" key
    {"question_id": "q1", "rank": 1, "llm_grade": 9, "total_score": 9.0},
    {"question_id": "q2", "rank": 4, "llm_grade": 8, "total_score": 6.8},
    {"question_id": "q3", "llm_grade": None},
    {"question_id": "q4", "rank": 2, "llm_grade": 7, "total_score": 6.65},
]


def test_mrr_and_pass_rates_on_the_plans_dicts_by_hand():
    m = RetrievalMetrics()
    # (1/1 + 1/4 + 0 + 1/2) / 4 = 1.75 / 4
    assert m.calculate_mrr(PLAN_RESULTS) == pytest.approx(0.4375)
    # of all 4 questions: >= 8: q1; >= 7: q1; >= 6.5: q1, q2, q4
    assert m.calculate_pass_rates(PLAN_RESULTS, [8.0, 7.0, 6.5]) == {8.0: 25.0, 7.0: 25.0, 6.5: 75.0}
    assert m.calculate_mrr([]) == 0.0 and m.calculate_pass_rates([], [7.0]) == {7.0: 0.0}
