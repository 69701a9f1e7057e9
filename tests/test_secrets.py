"""With a sentinel API key set, no path leaks it: stdout, stderr, the log file, the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SENTINEL_KEY, judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, error

PATHS = {
    "success": ([], Reply()),
    # servers that echo the key back, in an error message and in a judge's reasoning
    "401-echoing-key": ([], error(401, "authentication_error", f"invalid x-api-key: {SENTINEL_KEY}")),
    "400-echoing-key": ([], error(400, "invalid_request_error", f"bad request for key {SENTINEL_KEY}")),
    "reasoning-echoing-key": ([], Reply(text=json.dumps({"grade": 5, "reasoning": f"key was {SENTINEL_KEY}"}))),
    "unparseable-echoing-key": ([], Reply(text=f"cannot grade; auth {SENTINEL_KEY}")),
    "429": ([], error(429, "rate_limit_error", **{"retry-after": "3600"})),
    "500": ([], error(500, "api_error", f"internal {SENTINEL_KEY}")),
    "dropped": ([], Reply(drop=True)),
    "non-json": ([], Reply(raw_body=f"<html>{SENTINEL_KEY}</html>".encode())),
    "timeout": ([], Reply(delay=2.0)),
}
# BENCHMARK_JUDGE_TIMEOUT: 0.5 s, and 0.25 s where every attempt times out (the run lasts 18 of them)
TIMEOUTS = {"timeout": "0.25"}


@pytest.mark.parametrize("name", list(PATHS))
def test_key_never_appears(name: str, tmp_path: Path, few_questions: Path):
    script, default = PATHS[name]
    out = tmp_path / "r.json"
    with LoopbackServer(script, default) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--log-level", "TRACE",
                      env=judge_env(srv.url, BENCHMARK_JUDGE_TIMEOUT=TIMEOUTS.get(name, "0.5")))
        assert srv.requests  # the judge was really called with the key
    assert run.code in (0, 3), run.stderr
    for where, text in [("stdout", run.stdout), ("stderr", run.stderr), ("log", run.log_text()),
                        ("results", out.read_text())]:
        assert SENTINEL_KEY not in text, f"key leaked into {where}"
        assert SENTINEL_KEY[-12:] not in text, f"part of the key leaked into {where}"


def test_key_never_appears_on_input_errors(tmp_path: Path):
    run = run_cli("--questions", str(tmp_path / "missing.json"), env=judge_env("http://127.0.0.1:9"))
    assert run.code == 2
    assert SENTINEL_KEY not in run.stderr + run.stdout + run.log_text()
