"""``benchmark.main(argv, env)`` called in the process, more than once: it removes only the log
sinks it added, puts back the signal handlers and stdlib logging it found, reads the environment
from ``env`` alone, and returns the exit code (``--help`` and bad usage too)."""

from __future__ import annotations

import logging
import signal
from pathlib import Path

import benchmark
from tests.conftest import loguru_messages


def _report_missing(tmp_path: Path) -> list[str]:
    """``report`` of a missing results file: exit 2 after the settings are read, inside the guard."""
    return ["report", str(tmp_path / "missing.json"), "-o", str(tmp_path / "r.html"),
            "--log-dir", str(tmp_path / "logs")]


def test_main_removes_only_the_sinks_it_added(tmp_path: Path, capsys):
    with loguru_messages("INFO") as seen:
        assert benchmark.main(_report_missing(tmp_path), env={}) == 2
        first = capsys.readouterr().err
        from loguru import logger

        logger.info("after main")
        assert benchmark.main(_report_missing(tmp_path), env={}) == 2
    assert "after main" in seen  # the test's own sink is still there
    assert "after main" not in capsys.readouterr().err  # main's console sink is gone
    errors = [line for line in first.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and "missing.json: no such results file" in errors[0], first
    assert sum("no such results file" in m for m in seen) == 2  # the second call logs the same, once
    logged = "".join(f.read_text() for f in (tmp_path / "logs").iterdir())  # one file per second and process
    assert logged.count("command line: python benchmark.py report") == 2 and "after main" not in logged


def test_main_puts_back_the_signal_handlers_and_stdlib_logging(tmp_path: Path):
    def mine(signum, frame):
        raise AssertionError("not called")

    previous = signal.signal(signal.SIGTERM, mine)
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    try:
        assert benchmark.main(_report_missing(tmp_path), env={}) == 2
        assert signal.getsignal(signal.SIGTERM) is mine
        assert root.handlers == handlers and root.level == level
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_main_reads_the_environment_from_env_only(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("BENCHMARK_JUDGE", "nonsense")
    assert benchmark.main(_report_missing(tmp_path), env={}) == 2
    assert "no such results file" in capsys.readouterr().err  # os.environ's bad judge is not read
    monkeypatch.delenv("BENCHMARK_JUDGE")
    assert benchmark.main(_report_missing(tmp_path), env={"BENCHMARK_JUDGE": "nonsense"}) == 2
    assert "BENCHMARK_JUDGE='nonsense' is not a judge" in capsys.readouterr().err


def test_help_and_bad_usage_return_their_exit_code(capsys):
    assert benchmark.main(["--help"], env={}) == 0
    assert "LLM-graded retrieval benchmark." in capsys.readouterr().out  # usage names sys.argv[0], as argparse does
    assert benchmark.main(["compare", "--no-such-flag"], env={}) == 2
    assert "benchmark.py compare: error: the following arguments are required: RUN" in capsys.readouterr().err
    assert benchmark.main(["comapre"], env={}) == 2
    assert "did you mean compare?" in capsys.readouterr().err
