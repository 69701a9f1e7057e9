"""SIGINT/SIGTERM during the question loop: write what is done, status interrupted, exit 130."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, judge_env, wait_for_line, with_log_dir
from tests.loopback import LoopbackServer, Reply

pytestmark = pytest.mark.slow  # signals to a real process, and the process's own exit


def start(out: Path, url: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"), *with_log_dir(["--output", str(out)])],
                            cwd=ROOT, env=judge_env(url), stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)



@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_writes_done_questions(tmp_path: Path, sig):
    out = tmp_path / "r.json"
    out.write_text('{"earlier": true}')
    with LoopbackServer(default=Reply(text='{"grade": 7, "reasoning": "ok"}', delay=0.3)) as srv:
        proc = start(out, srv.url)
        wait_for_line(proc, "[2/44]")
        proc.send_signal(sig)
        rest = proc.stderr.read()
        code = proc.wait(timeout=30)
    assert code == 130, rest
    data = json.loads(out.read_text())
    assert data["run"]["status"] == "interrupted"
    n = len(data["results"])
    assert 2 <= n < 44
    assert data["question_count"] == n and data["graded_count"] == n
    assert data["avg_llm_grade"] == 7.0
    assert str(out) in rest  # says where the file is


def test_second_signal_exits_at_once(tmp_path: Path):
    out = tmp_path / "r.json"
    out.write_text('{"earlier": true}')
    with LoopbackServer(default=Reply(delay=60.0)) as srv:
        proc = start(out, srv.url)
        wait_for_line(proc, "Corpus builtin")
        time.sleep(0.5)  # inside the first (slow) judge call
        proc.send_signal(signal.SIGINT)
        proc.send_signal(signal.SIGINT)
        start_wait = time.monotonic()
        code = proc.wait(timeout=60)
        assert time.monotonic() - start_wait < 30  # not the judge call's 60 s (a margin for a loaded machine)
    assert code == 130
    text = out.read_text()
    assert text == '{"earlier": true}' or json.loads(text)["run"]["status"] == "interrupted"


def test_interrupt_swallowed_by_an_extension_still_stops_the_loop(tmp_path: Path):
    """Some extension modules swallow the KeyboardInterrupt a signal handler raises (a Cython
    function that cannot pass errors on prints "Exception ignored in ..."). This retriever does the
    same on its third call; the run must still stop before the judge sees that question."""
    (tmp_path / "swallowing.py").write_text(
        "import sys, time\n"
        "from poc.retriever import ScoredChunk\n"
        "class R:\n"
        "    calls = 0\n"
        "    def index(self, chunks): self.chunk = chunks[0]\n"
        "    def retrieve(self, query, k):\n"
        "        self.calls += 1\n"
        "        if self.calls == 3:\n"
        "            print('RETRIEVING-3', file=sys.stderr, flush=True)\n"
        "            try:\n"
        "                time.sleep(20)\n"
        "            except KeyboardInterrupt:\n"
        "                pass\n"
        "        return [ScoredChunk(self.chunk, 1.0)]\n"
        "def make(): return R()\n")
    out = tmp_path / "r.json"
    with LoopbackServer(default=Reply(text='{"grade": 7, "reasoning": "ok"}')) as srv:
        proc = subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"),
                                 *with_log_dir(["--strategy", "swallowing:make", "--output", str(out)])],
                                cwd=ROOT, env=judge_env(srv.url, PYTHONPATH=str(tmp_path)),
                                stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)
        wait_for_line(proc, "RETRIEVING-3")
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        code = proc.wait(timeout=30)
        judged = len(srv.requests)
    assert code == 130, rest
    data = json.loads(out.read_text())
    assert data["run"]["status"] == "interrupted"
    first_two = [q["id"] for q in json.loads((ROOT / "questions.json").read_text())["questions"][:2]]
    assert [r["question_id"] for r in data["results"]] == first_two
    assert judged == 2  # the judge never saw question 3


def test_interrupt_before_the_loop_writes_nothing(tmp_path: Path):
    """SIGINT while the (plug-in) retriever indexes: exit 130, the earlier file untouched."""
    (tmp_path / "slow_index.py").write_text(
        "import time\n"
        "class R:\n"
        "    def index(self, chunks): time.sleep(30)\n"
        "    def retrieve(self, query, k): return []\n"
        "def make(): return R()\n")
    out = tmp_path / "r.json"
    out.write_text('{"earlier": true}')
    proc = subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"),
                             *with_log_dir(["--strategy", "slow_index:make", "--output", str(out)])],
                            cwd=ROOT, env=clean_env(PYTHONPATH=str(tmp_path)),
                            stderr=subprocess.PIPE, text=True)
    wait_for_line(proc, "Judge:")
    time.sleep(0.2)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(timeout=30) == 130
    assert "nothing written" in proc.stderr.read()
    assert out.read_text() == '{"earlier": true}'


_DEFERRED = """
import os, signal, sys, time
from components.cli.common import SignalGuard
with SignalGuard() as guard:
    with guard.deferred():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(0.2)
        print("first deferred:", guard.received, flush=True)
        if sys.argv[1] == "twice":
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(0.2)
        print("write finished", flush=True)
"""


@pytest.mark.parametrize("signals", ["once", "twice"])
def test_inside_deferred_the_first_signal_waits_and_a_second_exits_at_once(signals):
    """A Message Batch create (or the final write) runs deferred: the first Ctrl-C waits for it,
    a second one still ends the process at once (exit 130)."""
    proc = subprocess.run([sys.executable, "-c", _DEFERRED, signals], cwd=ROOT, capture_output=True, text=True,
                          timeout=60, env=clean_env())
    assert "first deferred: SIGINT" in proc.stdout
    if signals == "once":
        assert proc.returncode == 0 and "write finished" in proc.stdout
    else:
        assert proc.returncode == 130 and "write finished" not in proc.stdout


def test_interrupt_before_the_first_question_names_no_journal(tmp_path: Path):
    """Ctrl-C while the first question is graded: nothing written, and no line tells the user to
    --resume a journal that was just deleted."""
    out = tmp_path / "r.json"
    with LoopbackServer(default=Reply(delay=5.0)) as srv:
        proc = start(out, srv.url)
        wait_for_line(proc, "Corpus builtin")
        time.sleep(0.5)  # inside the first (slow) judge call
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        code = proc.wait(timeout=30)
    assert code == 130, rest
    assert not out.exists() and not list((tmp_path / "runs").glob("*.journal.jsonl"))
    assert "--resume" not in rest and "nothing written" in rest


def test_a_finished_command_ignores_late_signals():
    """Once ``main`` has returned (everything written), the three signals are ignored: interpreter
    shutdown would otherwise reset their handlers to the default action, and a signal landing then
    would end a complete command by the signal (exit -2) instead of its own exit code."""
    script = ("import signal, sys\nimport benchmark\nimport components.cli\n"
              "components.cli.main = lambda argv, env, **given: 4\n"  # entry() also passes the script's path
              "try:\n    benchmark.entry()\nexcept SystemExit as done:\n"
              "    print(done.code, *(signal.getsignal(s) == signal.SIG_IGN\n"
              "                       for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)))\n")
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=clean_env(), capture_output=True, text=True,
                          timeout=120)
    assert proc.stdout.split() == ["4", "True", "True", "True"], proc.stderr
