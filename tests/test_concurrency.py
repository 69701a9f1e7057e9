"""--concurrency N: judge calls in flight at once, rows in question order, rate-limit aware."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from components.run.calls.concurrency import Gate
from tests.conftest import ROOT, judge_env, run_cli, wait_for_line, with_log_dir
from tests.loopback import LoopbackServer, Reply, error

TIMING = {"latency_ms", "grading_latency_ms", "request_id"}


# ---- the gate


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_gate_halves_on_a_rate_limit_and_grows_back_by_one():
    gate = Gate(8, clock=Clock())
    for _ in range(3):
        gate.acquire()
    assert (gate.in_flight, gate.peak) == (3, 3)
    gate.release("rate_limit")
    assert gate.limit == 4 and gate.lowered == 1
    gate.release("overloaded")
    assert gate.limit == 2
    gate.release(None)  # a success: one more
    assert gate.limit == 3 and gate.in_flight == 0
    for _ in range(10):
        gate.acquire()
        gate.release(None)
    assert gate.limit == 8  # never above N
    gate.acquire()
    gate.release("unparseable")  # an answered call that failed otherwise: the limit stays
    assert gate.limit == 8


def test_gate_honours_retry_after_for_every_call():
    clock = Clock()
    gate = Gate(4, max_wait_s=60, clock=clock)
    gate.acquire()
    gate.release("rate_limit", retry_after=5.0)
    assert gate.hold_until == 105.0 and not gate._open()
    clock.now = 105.0
    assert gate._open()
    gate.acquire()
    gate.release("rate_limit", retry_after=60)  # the cap itself: held
    assert gate.hold_until == 165.0
    clock.now = 165.0
    gate.acquire()
    gate.release("rate_limit", retry_after=3600)  # longer than the cap: the circuit breaker's, no hold
    assert gate.hold_until == 165.0 and gate._open()


def test_gate_follows_the_rate_limit_headers():
    clock = Clock()
    gate = Gate(16, clock=clock)
    gate.acquire()
    gate.release(None, rate_limit={"requests_remaining": 5, "tokens_remaining_calls": 3, "reset_s": 2})
    assert gate.limit == 3
    gate.acquire()
    gate.release(None, rate_limit={"requests_remaining": 0, "reset_s": 2})
    assert gate.limit == 1 and gate.hold_until == 102.0


def test_gate_admits_nothing_after_a_stop():
    gate = Gate(1, should_stop=lambda: True)
    with pytest.raises(KeyboardInterrupt):
        gate.acquire()
    assert gate.in_flight == 0


@pytest.mark.parametrize("n", [0, -1, 257, 10**6, 2.0, True, "4"])
def test_the_number_in_flight_is_a_whole_number_from_1_to_256(n):
    from components.api import InputError, evaluate

    with pytest.raises(InputError, match=r"^concurrency .* is not a whole number from 1 to 256: give one"):
        evaluate("baseline", str(ROOT / "questions.json"), judge="offline", concurrency=n)


@pytest.mark.parametrize("value, message", [("0", "0 must be at least 1"),
                                            ("257", "concurrency 257 is not a whole number from 1 to 256"),
                                            ("lots", "'lots' is not a whole number")])
def test_the_command_line_refuses_a_concurrency_out_of_range(value: str, message: str):
    run = run_cli("--quick", "--concurrency", value)
    assert run.code == 2 and f"argument --concurrency: {message}" in run.stderr and not run.stdout


# ---- runs


def _by_prompt_delay(n: int, body: dict) -> Reply:
    """Later questions answer sooner: the concurrent run completes them out of order."""
    prompt = body["messages"][0]["content"]
    digits = sum(map(ord, prompt)) % 5
    return Reply(text=f'{{"grade": {4 + digits}, "reasoning": "r{digits}"}}', delay=0.05 * (5 - digits))


def _rows(path: Path) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in TIMING} for r in json.loads(path.read_text())["results"]]


def test_rows_and_lines_equal_a_sequential_run(tmp_path: Path, few_questions: Path):
    seq, con = tmp_path / "seq.json", tmp_path / "con.json"
    with LoopbackServer(script=_by_prompt_delay) as srv:
        first = run_cli("--limit", "8", "--output", str(seq), "--judge-repeats", "2", env=judge_env(srv.url))
        second = run_cli("--limit", "8", "--output", str(con), "--judge-repeats", "2", "--concurrency", "4",
                         env=judge_env(srv.url))
    assert first.code == 0 and second.code == 0, second.stderr
    assert _rows(seq) == _rows(con)
    lines = [re.sub(r"\| \d+ms \|", "", ln.split("| INFO    | ")[1]) for ln in second.stderr.splitlines()
             if re.search(r"\| \[\d/8\]", ln)]
    assert [ln.split("]")[0] for ln in lines] == [f"[{i}/8" for i in range(1, 9)]  # in question order
    judge = json.loads(con.read_text())["run"]["judge"]
    assert judge["concurrency"]["requested"] == 4 and 2 <= judge["concurrency"]["peak"] <= 4
    assert json.loads(seq.read_text())["run"]["judge"]["concurrency"] is None
    totals = [{k: v for k, v in json.loads(f.read_text()).items()
               if k not in ("run", "results", "index_time_s") and "latency" not in k} for f in (seq, con)]
    assert totals[0] == totals[1]  # cost, usage, counts and metrics as in the sequential run
    a, b = ((r["usage"], r["cost_usd"], r["recovered"]) for r in (json.loads(f.read_text())["run"] for f in (seq, con)))
    assert a == b


def test_a_429_burst_lowers_the_concurrency_and_the_run_completes(tmp_path: Path):
    out = tmp_path / "r.json"
    busy = error(429, "rate_limit_error", "slow down", **{"retry-after": "0"})
    with LoopbackServer(script=[busy] * 12, default=Reply()) as srv:  # 4 calls fail after the SDK's retries
        run = run_cli("--limit", "10", "--output", str(out), "--concurrency", "4", env=judge_env(srv.url,
                      BENCHMARK_RETRY_WAIT_MAX="1"))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["status"] == "completed" and all(r["llm_grade"] == 8 for r in data["results"])
    assert data["run"]["judge"]["concurrency"]["lowered"] >= 1


def test_max_cost_is_not_overshot_with_calls_in_flight(tmp_path: Path):
    """Each call's worst case is reserved while it is in flight (max_tokens 1024 at $10/M plus its
    prompt: about $0.016), so 4 calls in flight never take the spend past the budget."""
    out = tmp_path / "r.json"
    priced = Reply(text='{"grade": 8, "reasoning": "fine"}', usage={"input_tokens": 1000, "output_tokens": 100},
                   delay=0.1)
    with LoopbackServer(default=priced) as srv:  # $0.003 a call
        run = run_cli("--limit", "20", "--output", str(out), "--concurrency", "4", "--max-cost", "0.05",
                      env=judge_env(srv.url))
        calls = len([r for r in srv.requests if r.path.endswith("/v1/messages")])
    assert run.code == 4, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["cost_usd"] <= 0.05 and len(data["results"]) == 20
    assert calls == round(data["run"]["cost_usd"] / 0.003) >= 10  # every call paid, and the budget used


@pytest.mark.slow  # a signal from outside
def test_a_signal_mid_run_loses_nothing(tmp_path: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(default=Reply(delay=0.3)) as srv:
        proc = subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"),
                                 *with_log_dir(["--output", str(out), "--concurrency", "4"])],
                                cwd=ROOT, env=judge_env(srv.url), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                text=True)
        seen = wait_for_line(proc, "[6/44]")
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        code = proc.wait(timeout=60)
    assert code == 130, rest
    order = [q["id"] for q in json.loads((ROOT / "questions.json").read_text())["questions"]]
    reported = {order[int(i) - 1] for i in re.findall(r"\| \[(\d+)/44\]", seen + rest)}
    data = json.loads(out.read_text())
    kept = {r["question_id"] for r in data["results"] if r["llm_grade"] is not None}
    assert len(reported) >= 6 and reported <= kept  # every question the console reported is in the results
    assert data["run"]["status"] == "interrupted"
    ids = [r["question_id"] for r in data["results"]]
    assert len(ids) == len(set(ids))


def test_the_anthropic_rate_limit_headers_reach_the_gate():
    """The provider reads ``anthropic-ratelimit-*`` from a reply; the gate stays below them."""
    from datetime import datetime, timedelta, timezone

    from components.judges.providers.anthropic import AnthropicProvider, ModelClient, ModelSettings, ProviderConfig

    reset = (datetime.now(timezone.utc) + timedelta(seconds=30)).isoformat().replace("+00:00", "Z")
    headers = {"anthropic-ratelimit-requests-remaining": "7", "anthropic-ratelimit-tokens-remaining": "45",
               "anthropic-ratelimit-requests-reset": reset}
    settings = ModelSettings(requested="claude-sonnet-5-5", thinking={"type": "between_tools"}, effort=None,
                             max_tokens=1024, source="models_api")
    with LoopbackServer(default=Reply(headers=headers)) as srv:  # a call of 10 + 5 tokens: 3 more fit in 45
        provider = AnthropicProvider(ProviderConfig(api_key="sk-test", base_url=srv.url, max_retries=0))
        limits = ModelClient(provider, settings).complete("grade this").rate_limit
    assert limits["requests_remaining"] == 7 and limits["tokens_remaining_calls"] == 3
    assert 0 < limits["reset_s"] <= 30
    gate = Gate(16, clock=Clock())
    gate.acquire()
    gate.release(None, rate_limit=limits)
    assert gate.limit == 3


def test_a_run_lowers_its_limit_to_the_requests_the_server_says_are_left(tmp_path: Path):
    out = tmp_path / "r.json"
    one_left = Reply(headers={"anthropic-ratelimit-requests-remaining": "1"})
    with LoopbackServer(default=one_left) as srv:
        run = run_cli("--limit", "6", "--output", str(out), "--concurrency", "4", env=judge_env(srv.url))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert all(r["llm_grade"] == 8 for r in data["results"])
    gate = data["run"]["judge"]["concurrency"]
    assert gate["final_limit"] == 1 and gate["lowered"] == 0  # from the headers, not from a rate-limit error
