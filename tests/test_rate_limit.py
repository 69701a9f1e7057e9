"""A judge that keeps rate-limiting never stalls a run: the circuit breaker stops calling it after a
few failures in a row whose retry-after is longer than the run would wait, keeps every row, writes
the results as ``rate_limited`` with the command that resumes, and exits 3."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, error

LIMITED = error(429, "rate_limit_error", "slow down", **{"retry-after": "3600"})
OVERLOADED = error(529, "overloaded_error", "busy", **{"retry-after": "3600"})

# (name, the judge's every answer, extra options, the most judge calls: three in a row open the
# breaker, no SDK retry past a 3600 s retry-after, plus at most the calls already in flight)
PERSISTENT = [
    ("429-sequential", LIMITED, [], 3),
    ("529-sequential", OVERLOADED, [], 3),
    # the pool as a whole: a retry-after past the cap holds no worker (a pool that waited for it,
    # capped at 60 s, took three minutes for five questions); calls admitted after the breaker opened
    # are not made
    ("429-concurrency-4", LIMITED, ["--concurrency", "4"], 3 + 3),
    ("529-concurrency-4", OVERLOADED, ["--concurrency", "4"], 3 + 3),
]


@pytest.mark.parametrize("reply,extra,max_calls", [p[1:] for p in PERSISTENT], ids=[p[0] for p in PERSISTENT])
def test_a_persistent_429_ends_the_run_with_every_row_kept(tmp_path: Path, reply, extra, max_calls):
    out = tmp_path / "r.json"
    with LoopbackServer(default=reply) as srv:
        try:  # a bound on the test itself (a persistent rate limit ends a run within a minute), not a timing assertion
            run = run_cli("--quick", "--output", str(out), *extra, env=judge_env(srv.url), timeout=60)
        except subprocess.TimeoutExpired:
            pytest.fail("a persistent rate limit kept the run going for a minute")
        calls = len([r for r in srv.requests if r.path.endswith("/v1/messages")])
    assert run.code == 3, run.stderr
    assert 3 <= calls <= max_calls
    data = json.loads(out.read_text())
    assert data["run"]["status"] == "rate_limited" and len(data["results"]) == 5
    errors = [r["grade_error"] for r in data["results"]]
    assert all(e.startswith(("rate_limit: ", "overloaded: ")) for e in errors)
    assert errors[-1].startswith("rate_limit: ")
    assert "the run stopped calling it: --resume grades this question later" in errors[-1]
    assert "--resume" in run.stderr and "Traceback" not in run.stderr
    with LoopbackServer(default=Reply()) as srv:  # later, the judge answers: --resume grades them all
        again = run_cli("--quick", "--output", str(out), "--resume", str(out), *extra, env=judge_env(srv.url))
    assert again.code == 0, again.stderr
    assert [r["llm_grade"] for r in json.loads(out.read_text())["results"]] == [8] * 5


def test_a_short_retry_after_does_not_open_the_breaker(tmp_path: Path):
    out = tmp_path / "r.json"
    script = [error(429, "rate_limit_error", "wait a second", **{"retry-after": "0"})] * 3
    with LoopbackServer(script=script, default=Reply()) as srv:
        run = run_cli("--quick", "--output", str(out), env=judge_env(srv.url, BENCHMARK_RETRY_WAIT_MAX="1"),
                      timeout=120)
    assert run.code == 0, run.stderr
    assert json.loads(out.read_text())["run"]["status"] == "completed"
