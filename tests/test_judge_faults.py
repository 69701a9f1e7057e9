"""Full benchmark runs against a loopback judge that misbehaves: every question keeps its row,
affected grades are null with the reason, the run ends in bounded time with the right exit code,
and the summary counts what failed and why."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, error

TIMEOUT = "0.5"  # BENCHMARK_JUDGE_TIMEOUT for these runs; retry-after is capped at it too
TIMEOUTS = {"timeout": "0.25"}  # where every attempt times out the run lasts 18 of them: a shorter one
OK = Reply(text='{"grade": 8, "reasoning": "fine"}')

SCENARIOS = {
    # name: (script, default, expected grade_error kinds per question, exit code, max judge requests)
    # a timed-out call is never repeated (neither by the SDK nor by the retry pass); three in a row make the
    # judge unusable (exit 3, judge_failed, BENCHMARK_JUDGE_TIMEOUT named)
    "timeout": ([], Reply(delay=2.0), ["timeout"] * 3, 3, 3),
    # other transient failures get one more pass after the loop (3 more attempts each)
    # a retry-after longer than the run would wait: no SDK retry, no retry pass; three in a row open the
    # circuit breaker (exit 3, rate_limited, every row kept for --resume)
    "retry-after-3600": ([], error(429, "rate_limit_error", **{"retry-after": "3600"}), ["rate_limit"] * 3, 3, 3),
    # the retry pass recovers a transient failure once the judge answers again
    "529-and-500-bursts": ([error(529, "overloaded_error")] * 3 + [error(500, "api_error")] * 2 + [OK], OK,
                           [None, None, None], 0, 8),
    "dropped-connections": ([Reply(drop=True)] * 3, OK, [None, None, None], 0, 6),
    # a grade missing by a judge error: status incomplete, exit 8
    "non-json-200": ([Reply(raw_body=b"<html>gateway</html>")], OK, ["bad_response", None, None], 8, 3),
    "unparseable-reply": ([Reply(text="I cannot grade this.")], OK, ["unparseable", None, None], 8, 3),
    "401-mid-run": ([OK, error(401, "authentication_error")], OK, [None, "auth", "judge_unusable"], 3, 2),
    "404-unknown-model": ([], error(404, "not_found_error", "model not found"),
                          ["not_found", "judge_unusable", "judge_unusable"], 3, 1),
    # a redirect (a login page, a proxy) is reported as one, with where to, and not followed
    "302-mid-run": ([OK, Reply(status=302, headers={"location": "http://127.0.0.1:9/sso/login"})], OK,
                    [None, "redirect", "judge_unusable"], 3, 2),
}


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_fault(name: str, tmp_path: Path, few_questions: Path):
    script, default, kinds, exit_code, max_requests = SCENARIOS[name]
    out = tmp_path / "r.json"
    with LoopbackServer(list(script), default) as srv:
        start = time.monotonic()
        run = run_cli("--questions", str(few_questions), "--output", str(out),
                      env=judge_env(srv.url, BENCHMARK_JUDGE_TIMEOUT=TIMEOUTS.get(name, TIMEOUT),
                                    BENCHMARK_RETRY_WAIT_MAX="1"),
                      timeout=120)
        wall = time.monotonic() - start
        requests = len(srv.requests)
    assert run.code == exit_code, run.stderr
    # bounded: per question at most 3 attempts of <= 0.5 s plus capped waits (<= 0.5 s) and SDK backoff
    assert wall < 60
    assert requests <= max_requests
    data = json.loads(out.read_text())
    rows = data["results"]
    assert len(rows) == 3  # every question has a row
    got = [r["grade_error"].split(":", 1)[0] if r["grade_error"] else None for r in rows]
    assert got == kinds
    for row, kind in zip(rows, kinds, strict=True):
        assert (row["llm_grade"] is None) == (kind is not None)
        assert (row["total_score"] is None) == (kind is not None)
    assert data["graded_count"] == kinds.count(None)
    assert data["ungraded_count"] == 3 - kinds.count(None)
    if any(kinds):
        assert "ungraded because" in run.stdout  # the summary table is on stdout
        for kind in set(k for k in kinds if k):
            assert data["grade_errors"][kind] == kinds.count(kind)
    if name == "retry-after-3600":
        assert data["run"]["status"] == "rate_limited" and "--resume" in run.stderr
    elif name == "timeout":
        assert data["run"]["status"] == "judge_failed"
        assert data["run"]["judge_failure"].startswith(
            "timeout: the judge is unusable: 3 calls in a row timed out (the judge timeout is 0.25 s; the last call "
            "ran 0.")
        assert "BENCHMARK_JUDGE_TIMEOUT" in run.stderr and "Retrying" not in run.stderr
    elif exit_code == 8:
        assert data["run"]["status"] == "incomplete"
        assert f"Incomplete: the judge missed 1 of 3 grades ({kinds[0]} 1): --resume grades them" in run.stderr
    elif exit_code == 3:
        assert data["run"]["status"] == "judge_failed"
        assert data["run"]["judge_failure"].startswith(kinds[kinds.index("judge_unusable") - 1])
        fix = {"401": "ANTHROPIC_API_KEY", "302": "ANTHROPIC_BASE_URL"}.get(name[:3], "BENCHMARK_SONNET_MODEL")
        assert fix in run.stderr
    else:
        assert data["run"]["status"] == "completed"
    if name.startswith("302"):
        assert "redirected the request (302) to http://127.0.0.1:9/sso/login" in data["run"]["judge_failure"]
        assert "does not know model" not in run.stderr
    recovered = {"529-and-500-bursts": 1, "dropped-connections": 1}.get(name, 0)
    assert data["run"]["recovered"] == recovered
    assert sum(bool(r["recovered"]) for r in rows) == recovered
    if recovered:
        assert f"Retry pass: {recovered} of {recovered} recovered" in run.stderr


def test_unparseable_reply_keeps_raw(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer([Reply(text='{"reasoning": "cut off')], OK) as srv:
        assert run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url)).code == 8
    row = json.loads(out.read_text())["results"][0]
    assert row["llm_grade"] is None
    assert row["grade_error"] == "truncated: the reply ends inside a JSON object, without a grade"
    assert row["llm_raw_reply"] == '{"reasoning": "cut off'
