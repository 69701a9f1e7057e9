"""The run's retry policy (components/run/retry_policy.py): when a judge is given up (timeouts or
refused connections in a row), and when a finished run is incomplete."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from components.judges.retrieval_grader import GradeResult
from components.run import retry_policy as P
from utils.errors import InputError
from utils.results import JudgeGrade


def failed(error: str, ms: float = 1000.0) -> GradeResult:
    return GradeResult(None, None, ms, error, None)


TIMEOUT = "timeout: no reply within the judge timeout of 30 s (not retried)"
REFUSED = "connection_refused: the judge server at 127.0.0.1:8097 refused the connection: is it running?"
OK = GradeResult(7, "fine", 900.0, None, '{"grade": 7}')


def test_three_timeouts_in_a_row_give_the_judge_up_once():
    health = P.JudgeHealth()
    assert health.observe(failed(TIMEOUT)) is None and health.observe(failed(TIMEOUT)) is None
    err = health.observe(failed(TIMEOUT, ms=30_012.0))
    assert err is not None and err.fatal and err.kind == "timeout"
    assert str(err) == ("the judge is unusable: 3 calls in a row timed out (the judge timeout is 30 s; the last call "
                        "ran 30.0 s); a model on a CPU may need minutes a call: set BENCHMARK_JUDGE_TIMEOUT higher "
                        "(at most 600 s), then --resume grades the rest")
    assert health.observe(failed(TIMEOUT)) is None  # said once


@pytest.mark.parametrize("between", [OK, failed("rate_limit: judge rate-limited (429) after 3 attempts"),
                                     failed(REFUSED)])
def test_anything_else_ends_the_row(between):
    health = P.JudgeHealth()
    for result in (failed(TIMEOUT), failed(TIMEOUT), between, failed(TIMEOUT), failed(TIMEOUT)):
        assert health.observe(result) is None


def test_three_refused_connections_in_a_row_give_a_panel_judge_up_by_name():
    health = P.Health(panel_file=True)
    assert health.observe("qwen", failed(REFUSED)) is None
    assert health.observe("smol", failed(REFUSED)) is None  # another judge's row
    assert health.observe("qwen", failed(REFUSED)) is None
    err = health.observe("qwen", failed(REFUSED))
    assert err.kind == "connection_refused" and err.fatal
    assert str(err).startswith("judge qwen is unusable: its server refused the connection 3 times in a row")
    assert health.observe("smol", failed(TIMEOUT)) is None


def test_a_timeout_without_the_limit_in_its_message_still_says_what_it_measured():
    health = P.JudgeHealth()
    for _ in range(2):
        health.observe(failed("timeout: judge request timed out (408) after 3 attempts"))
    err = health.observe(failed("timeout: judge request timed out (408) after 3 attempts", ms=1500.0))
    assert str(err).startswith("the judge is unusable: 3 calls in a row timed out (the last call ran 1.5 s); ")


def test_a_panel_judges_timeout_message_names_the_panel_file():
    health = P.Health(panel_file=True)
    for _ in range(2):
        health.observe("smol", failed(TIMEOUT))
    assert "BENCHMARK_JUDGE_TIMEOUT (or this judge's timeout in the panel file)" in str(
        health.observe("smol", failed(TIMEOUT)))


# ---------------------------------------------------------------- an incomplete run


@dataclass
class Row:
    llm_grade: int | None = None
    grade_error: str | None = None
    grades_by_judge: dict | None = None


def test_judge_errors_make_a_run_incomplete_and_the_rest_do_not():
    rows = [Row(8), Row(None, TIMEOUT), Row(None, TIMEOUT), Row(None, "truncated: the reply was cut"),
            Row(None, "budget: --max-cost $1 reached"), Row(None, "retrieval_error: boom"),
            Row(None, "not judged: decided after 40"), Row(None, "no_expected_answer: the offline judge needs one"),
            Row(None, "internal_error: ValueError: x")]
    gap = P.incomplete(rows)
    assert (gap.rows, gap.planned, gap.total) == (4, 4, 3) and gap.fraction == pytest.approx(0.75)
    assert gap.missing == {None: {"timeout": 2, "truncated": 1}}
    assert gap.line() == "Incomplete: the judge missed 3 of 4 grades (timeout 2, truncated 1): --resume grades them"


def test_a_complete_run_is_not_incomplete():
    assert P.incomplete([Row(8), Row(None, "budget: spent"), Row(None, "retrieval_error: x")]) is None
    assert P.incomplete([]) is None


def test_a_panel_counts_each_judges_missing_grades():
    def row(a, b):
        by_judge = {"qwen": JudgeGrade(a, error=None if a else "connection_refused: x"),
                    "smol": JudgeGrade(b, error=None if b else "judge_unusable: after")}
        return Row(a if a is not None else b, None, by_judge)

    rows = [row(8, 6), row(7, None), row(None, None), row(9, 5)]
    rows[2] = Row(None, "connection_refused: x", rows[2].grades_by_judge)
    gap = P.incomplete(rows, ["qwen", "smol"])
    assert (gap.rows, gap.planned, gap.total) == (4, 8, 3)
    assert gap.missing == {"smol": {"judge_unusable": 2}, "qwen": {"connection_refused": 1}}
    assert gap.line() == ("Incomplete: judge smol missed 2 of 4 grades (judge_unusable 2); judge qwen missed 1 of 4 "
                          "grades (connection_refused 1); 3 of 8 planned grades missing: --resume grades them")


def test_a_panel_judge_with_no_grade_recorded_is_counted_as_not_graded():
    gap = P.incomplete([Row(8, None, {"a": JudgeGrade(8)})], ["a", "b"])
    assert gap.missing == {"b": {"not graded": 1}}


@pytest.mark.parametrize("value,expected", [("0", 0.0), ("0.25", 0.25), ("1", 1.0), (0.5, 0.5)])
def test_allowance(value, expected):
    assert P.check_allowance(value) == expected


@pytest.mark.parametrize("value", ["-0.1", "1.5", "nan", "lots", None])
def test_allowance_outside_0_1_is_refused(value):
    with pytest.raises(InputError) as info:
        P.check_allowance(value)
    assert str(info.value).startswith(f"--allow-ungraded {value!r} is not a fraction from 0 to 1")


def test_allowed():
    gap = P.Incomplete(20, 1, {None: {"timeout": 1}})
    assert P.allowed(gap, 0.05) and not P.allowed(gap, 0.04) and P.allowed(None, 0.0)
