"""A judge that keeps rate-limiting never stalls a run: the circuit breaker stops calling it after a
few failures in a row whose retry-after is longer than the run would wait, keeps every row, writes
the results as ``rate_limited`` with the command that resumes, and exits 3."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, error

LIMITED = error(429, "rate_limit_error", "slow down", **{"retry-after": "3600"})


def test_a_persistent_429_ends_the_run_with_every_row_kept(tmp_path: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(default=LIMITED) as srv:
        run = run_cli("--quick", "--output", str(out), env=judge_env(srv.url), timeout=120)
        calls = len([r for r in srv.requests if r.path.endswith("/v1/messages")])
    assert run.code == 3, run.stderr
    assert calls == 3  # three refusals in a row open the breaker; no SDK retries past a 3600 s retry-after
    data = json.loads(out.read_text())
    assert data["run"]["status"] == "rate_limited" and len(data["results"]) == 5
    errors = [r["grade_error"] for r in data["results"]]
    assert all(e.startswith("rate_limit: ") for e in errors)
    assert "the run stopped calling it: --resume grades this question later" in errors[-1]
    assert "--resume" in run.stderr and "Traceback" not in run.stderr
    with LoopbackServer(default=Reply()) as srv:  # later, the judge answers: --resume grades them all
        again = run_cli("--quick", "--output", str(out), "--resume", str(out), env=judge_env(srv.url))
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
