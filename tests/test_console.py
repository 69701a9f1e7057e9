"""Console presentation: question lines, the summary table (schema 1 and 2), the progress bar."""

from __future__ import annotations

import io
import time

import pytest

from components.judges.providers import is_proxy_judge
from utils.console import Progress, escape_control, question_line, summary_table
from utils.results import RunResult


# ---- escape_control

@pytest.mark.parametrize("raw,shown", [
    ("plain id-1.2", "plain id-1.2"),
    ("a\nb\r\tc", "a\\nb\\r\\tc"),
    ("\x1b[31mred\x1b[0m", "\\x1b[31mred\\x1b[0m"),
    ("del\x7f c1\x85", "del\\x7f c1\\x85"),
    ("ls\u2028ps\u2029", "ls\\u2028ps\\u2029"),
    ("bidi\u202eevil\u2066", "bidi\\u202eevil\\u2066"),
    ("ünïcødé ✓ 東京", "ünïcødé ✓ 東京"),
])
def test_escape_control(raw, shown):
    assert escape_control(raw) == shown


def test_no_input_forges_a_line():
    forged = "q\n12:00:00 | ERROR   | [2/2] R1 ✓\r\x1b[2K\u2028"
    out = escape_control(forged)
    assert not any(ord(c) < 0x20 or c in "\x7f\u2028" for c in out)


# ---- question_line

def test_rank_one_without_grade_is_not_a_cross():
    line = question_line(3, 20, 1, None, None, 12.4, "What is a pod?")
    assert line == "[3/20] R1 ✓ | G- (not graded) | 12ms | What is a pod?"
    assert "✗" not in line


@pytest.mark.parametrize("rank,grade,total,expected", [
    (1, 8, 8.0, "[1/2] R1 ✓ | G8 T8.0 ✓ | 3ms | q"),
    (1, 7, 7.0, "[1/2] R1 ✓ | G7 T7.0 ✓ | 3ms | q"),  # 7.0 passes
    (3, 6, 5.7, "[1/2] R3 ~ | G6 T5.7 ✗ | 3ms | q"),
    (None, 9, 5.4, "[1/2] R- ✗ | G9 T5.4 ✗ | 3ms | q"),
    (None, None, None, "[1/2] R- ✗ | G- (not graded) | 3ms | q"),
])
def test_question_line(rank, grade, total, expected):
    assert question_line(1, 2, rank, grade, total, 3.0, "q") == expected


def test_question_line_text_is_escaped_and_short():
    line = question_line(1, 1, 1, 8, 8.0, 1, "evil\x1b[2K  text\nwith " + "x" * 100)
    assert line.startswith("[1/1] R1 ✓ | G8 T8.0 ✓ | 1ms | evil\\x1b[2K text with xxx")
    assert line.endswith("...") and len(line.split(" | ")[-1]) == 70


# ---- summary_table

SCHEMA1 = {
    "schema_version": 1,
    "run": {"status": "completed", "k": 5, "judge": {"provider": "offline", "model": "lexical-idf-v1"}},
    "accuracy": 100.0, "hit_at_1_rate": 50.0, "hit_at_5_rate": 100.0, "mrr": 0.75, "avg_llm_grade": 8.5,
    "avg_total_score": 8.25, "pass_rate_8": 50.0, "pass_rate_7": 100.0, "pass_rate_6_5": 100.0,
    "question_count": 2, "graded_count": 2, "ungraded_count": 0, "grade_errors": {}, "avg_latency_ms": 1.5,
    "index_time_s": 0.5, "results": [],
}


def table(report: dict) -> str:
    result = RunResult.from_json(report)
    return summary_table(result, proxy=is_proxy_judge(result.run.judge.provider))


def test_summary_schema1():
    assert table(SCHEMA1) == (
        "questions         2  (graded 2, ungraded 0)\n"
        "k                 5\n"
        "judge             offline lexical-idf-v1 (grades are a lexical proxy, not an LLM's)\n"
        "status            completed\n"
        "hit@1             50.0%\n"
        "hit@5             100.0%\n"
        "MRR               0.750\n"
        "avg grade         8.50 (lexical proxy)\n"
        "avg total         8.25 (lexical proxy)\n"
        "pass ≥ 8          50.0% (lexical proxy)\n"
        "pass ≥ 7          100.0% (lexical proxy)\n"
        "pass ≥ 6.5        100.0% (lexical proxy)\n"
        "retrieval         1.5 ms/question, index 0.50 s\n")


def test_summary_says_what_was_run():
    report = {**SCHEMA1, "run": {**SCHEMA1["run"], "strategy": "baseline", "questions_file": "q.json",
                                 "corpus": {"source": "docs", "documents": 3, "chunks": 7}}}
    assert table(report).startswith("strategy          baseline\ncorpus            docs (3 documents, 7 chunks)\n"
                                    "questions         q.json: 2  (graded 2, ungraded 0)\nk                 5\n")


def test_summary_nothing_graded():
    report = {**SCHEMA1, "graded_count": 0, "ungraded_count": 2, "avg_llm_grade": None, "avg_total_score": None,
              "pass_rate_8": 0.0, "pass_rate_7": 0.0, "pass_rate_6_5": 0.0,
              "grade_errors": {"no_expected_answer": 2}}
    text = table(report)
    assert "avg grade, avg total, ... n/a (nothing graded)\n" in text
    assert "ungraded because  no_expected_answer x2\n" in text
    assert " 0.0%" not in text and "pass ≥" not in text


SCHEMA2 = {
    **SCHEMA1, "schema_version": 2,
    "run": {"status": "interrupted", "k": 10, "judge": {"provider": "anthropic", "model": "claude-sonnet-4-5"},
            "usage": {"judge": {"calls": 2, "input_tokens": 1200, "output_tokens": 300, "cost_usd": 0.0081}},
            "cost_usd": 0.0081},
    "graded_count": 1, "ungraded_count": 1, "grade_errors": {"timeout": 1},
    "hit_at_k_rate": 100.0, "mrr_doc": 0.8, "ndcg_at_k": 0.9,
    "ci95": {"mrr": [0.5, 1.0], "hit_at_1_rate": [0.0, 100.0], "ndcg_at_k": None},
    "proxy_ndcg_at_k": 0.42,
    "diagnosis_counts": {"vocabulary_mismatch": 0, "distractor": 1, "wrong_chunk": 2},
    "groups": {"difficulty": {"easy": {"count": 1, "hit_at_1_rate": 100.0, "mrr": 1.0},
                              "hard": {"count": 1, "hit_at_1_rate": 0.0, "mrr": 0.5}}},
}


def test_summary_schema2():
    assert table(SCHEMA2) == (
        "questions         2  (graded 1, ungraded 1)\n"
        "k                 10\n"
        "judge             anthropic claude-sonnet-4-5\n"
        "status            interrupted\n"
        "hit@1             50.0% [0.0, 100.0]\n"
        "hit@5             100.0%\n"
        "hit@10            100.0%\n"
        "MRR               0.750 [0.50, 1.00]\n"
        "MRR (document)    0.800\n"
        "nDCG@10           0.900\n"
        "avg grade         8.50\n"
        "avg total         8.25\n"
        "pass ≥ 8          50.0%\n"
        "pass ≥ 7          100.0%\n"
        "pass ≥ 6.5        100.0%\n"
        "proxy nDCG (judge-rated chunks) 0.420\n"
        "ungraded because  timeout x1\n"
        "retrieval         1.5 ms/question, index 0.50 s\n"
        "judge usage       2 calls, 1,200 in / 300 out tokens, $0.0081\n"
        "cost              $0.0081\n"
        "diagnosis         distractor 1, wrong_chunk 2 (primary types)\n"
        "groups\n"
        "  difficulty    n     hit@1       MRR\n"
        "  easy          1    100.0%     1.000\n"
        "  hard          1      0.0%     0.500\n")


def test_summary_hit_at_k_not_repeated_for_k5():
    report = {**SCHEMA1, "hit_at_k_rate": 100.0}
    assert "hit@k" not in table(report) and "hit@5             100.0%\n" in table(report)


def test_summary_unknown_cost_and_no_diagnosis():
    report = {**SCHEMA1, "run": {**SCHEMA1["run"], "cost_usd": None, "usage": {"judge": {"calls": 1}}},
              "diagnosis_counts": {"distractor": 0}}
    text = table(report)
    assert "cost              unknown\n" in text and "diagnosis         none\n" in text


def test_summary_escapes_input_text():
    report = {**SCHEMA1, "run": {**SCHEMA1["run"], "status": "ok\nfake | ERROR"}}
    assert "status            ok\\nfake | ERROR\n" in table(report)


def test_summary_of_an_empty_run():
    assert table({"results": []}) == ("questions         0  (graded 0, ungraded 0)\nk                 5\n"
                                      "judge             ? ?\n")


# ---- Progress

class FakeTTY(io.StringIO):
    def isatty(self) -> bool:
        return True


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_progress_silent_without_tty():
    stream, clock = io.StringIO(), Clock()
    with Progress("questions", 2, stream, clock=clock) as bar:
        clock.now = 1
        bar.advance()
        with bar.heartbeat(0.001):
            pass
        bar.advance()
        assert not bar.enabled
    assert stream.getvalue() == ""
    bar.write("a log line\n")  # log lines still pass through
    assert stream.getvalue() == "a log line\n"


def test_progress_bar_rate_eta():
    stream, clock = FakeTTY(), Clock()
    bar = Progress("questions", 4, stream, unit="q", width=8, clock=clock)
    clock.now = 1.0
    bar.advance()
    assert stream.getvalue() == "\rquestions [##------] 1/4 25% 1.0 q/s ETA 0:03\x1b[K"
    clock.now = 1.05  # within min_interval: not redrawn
    bar.advance()
    assert stream.getvalue().count("\r") == 1
    clock.now = 2.0
    bar.advance(2)  # the last item always draws: 4 in 2 s
    assert stream.getvalue().endswith("\rquestions [########] 4/4 100% 2.0 q/s ETA 0:00\x1b[K")
    bar.write("[4/4] R1 ✓ | G8 T8.0 ✓ | 1ms | q\n")
    assert stream.getvalue().endswith("\r\x1b[K[4/4] R1 ✓ | G8 T8.0 ✓ | 1ms | q\n"
                                      "\rquestions [########] 4/4 100% 2.0 q/s ETA 0:00\x1b[K")
    bar.close()
    assert stream.getvalue().endswith("\r\x1b[K")


def test_progress_delay_hides_short_steps():
    stream, clock = FakeTTY(), Clock()
    bar = Progress("indexing", None, stream, unit="chunks", delay=2.0, clock=clock)
    clock.now = 1.9
    bar.advance(3)
    bar.close()
    assert stream.getvalue() == ""
    clock.now = 75.0
    bar.advance()
    assert stream.getvalue() == "\rindexing 75 s (4 chunks)\x1b[K"


def test_progress_eta_hours():
    clock = Clock()
    bar = Progress("q", 10_000, FakeTTY(), clock=clock)
    clock.now = 10.0
    bar.done = 2
    assert bar.render().endswith("0.2 it/s ETA 13:53:10")


def test_heartbeat_draws_while_blocked():
    stream = FakeTTY()
    bar = Progress("indexing", None, stream)
    with bar.heartbeat(0.01):
        deadline = time.monotonic() + 5
        while "indexing" not in stream.getvalue() and time.monotonic() < deadline:
            time.sleep(0.01)
    assert stream.getvalue().startswith("\rindexing 0 s\x1b[K")


def test_summary_counts_prompt_tokens_read_from_a_cache():
    usage = {"calls": 12, "input_tokens": 1178, "cache_read_input_tokens": 12876, "output_tokens": 270}
    report = {**SCHEMA2, "run": {**SCHEMA2["run"], "judge": {"provider": "openai", "model": "smollm2-135m"},
                                 "usage": {"judge": usage}, "cost_usd": None}}
    assert "judge usage       12 calls, 14,054 in, 12,876 of them from cache / 270 out tokens\n" in table(report)
