"""The in-process CLI runs (tests/in_process.py): a run sees what a child process would, and leaves
the test process as it found it, so that the next run is as fresh as a new process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from loguru import logger

from tests.conftest import ROOT, clean_env, loguru_messages, run_cli
from tests.in_process import SIGNALS


def _state() -> dict:
    return {"env": dict(os.environ), "cwd": os.getcwd(), "path": list(sys.path),
            "handlers": {sig: signal.getsignal(sig) for sig in SIGNALS}, "sinks": set(logger._core.handlers)}


def test_a_run_leaves_the_process_as_it_found_it_and_the_tests_sinks_in_place(tmp_path: Path):
    before = _state()
    with loguru_messages("ERROR") as seen:
        run = run_cli("--questions", str(tmp_path / "missing.json"), env=clean_env(MARKER_OF_THIS_RUN="1"))
    assert run.code == 2 and "does not exist" in run.stderr
    assert any("does not exist" in m for m in seen)  # the test's own sink got the run's records
    assert _state() == before
    assert "MARKER_OF_THIS_RUN" not in os.environ


def test_the_run_gets_the_folder_the_environment_and_its_own_streams(tmp_path: Path):
    (tmp_path / "peek.py").write_text(
        "import os, sys\n"
        "print('cwd', os.getcwd(), 'env', os.environ.get('PEEK'), 'stdout', sys.stdout.encoding, flush=True)\n"
        "raise SystemExit('peeked')\n")
    run = run_cli("--strategy", "peek:make", "--quick", "--output", str(tmp_path / "r.json"),
                  env=clean_env(PEEK="seen", PYTHONPATH=str(tmp_path)))
    assert f"cwd {ROOT} env seen stdout utf-8" in run.stdout
    assert run.code == 2 and "peeked" in run.stderr


def test_a_rewritten_plugin_is_imported_afresh_and_a_plugin_provider_is_gone_after_its_run(tmp_path: Path):
    from components.judges.providers import providers

    plug = tmp_path / "plug.py"
    for word in ("first", "second"):
        plug.write_text(f"raise SystemExit('{word} version')\n")
        run = run_cli("--strategy", "plug:make", "--quick", "--output", str(tmp_path / "r.json"),
                      env=clean_env(PYTHONPATH=str(tmp_path)))
        assert run.code == 2 and f"{word} version" in run.stderr, run.stderr
    (tmp_path / "mineprov.py").write_text(
        "from components.judges.providers import Provider, register_provider\n"
        "@register_provider\n"
        "class Mine(Provider):\n"
        "    name, label, calls_models = 'mine', 'Mine', False\n")
    run = run_cli("--questions", str(tmp_path / "missing.json"),
                  env=clean_env(BENCHMARK_PROVIDERS="mineprov", PYTHONPATH=str(tmp_path)))
    assert run.code == 2 and "does not exist" in run.stderr, run.stderr
    assert "mine" not in providers() and "mineprov" not in sys.modules and "plug" not in sys.modules


def test_system_exit_is_the_exit_code_and_a_message_is_printed():
    assert run_cli("--no-such-flag").code == 2  # argparse's SystemExit(2)
    help_run = run_cli("--help")
    assert help_run.code == 0 and "usage:" in help_run.stdout


def test_a_run_past_its_timeout_raises_timeout_expired_as_a_child_would(tmp_path: Path):
    (tmp_path / "sleepy.py").write_text(
        "import time\n"
        "class R:\n"
        "    def index(self, chunks): time.sleep(60)\n"
        "    def retrieve(self, query, k): return []\n"
        "def make(): return R()\n")
    before = _state() | {"alarm": signal.getsignal(signal.SIGALRM)}
    with pytest.raises(subprocess.TimeoutExpired):
        run_cli("--strategy", "sleepy:make", "--quick", "--output", str(tmp_path / "r.json"),
                env=clean_env(PYTHONPATH=str(tmp_path)), timeout=1)
    assert _state() | {"alarm": signal.getsignal(signal.SIGALRM)} == before
    assert not (tmp_path / "r.json").exists()
