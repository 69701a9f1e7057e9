from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.in_process import ROOT, process_globals, run_main

# One BLAS thread, as benchmark.entry() sets it before numpy loads: the CLI runs share this process,
# and no test module has imported numpy yet.
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

K8S = ROOT.parent / "shared" / "datasets" / "kubernetes"
SENTINEL_KEY = "sk-ant-test-SENTINEL-0123456789abcdef"

# Every benchmark.py the tests start gets XDG_CACHE_HOME here (via clean_env), so that a test that
# does not pass --cache-dir or --no-cache still never writes into the user's real index cache. One
# folder for the session: the first process makes it (pytest, or pytest-xdist's controller) and
# removes it at exit; xdist's workers inherit it through the environment and share the index cache
# (safe between processes: tests/test_index_cache.py), so each corpus is indexed once a session.
_SESSION_CACHE = "RETRIEVAL_BENCHMARK_TESTS_CACHE_HOME"
if _SESSION_CACHE not in os.environ:
    os.environ[_SESSION_CACHE] = tempfile.mkdtemp(prefix="retrieval-benchmark-tests-")
    atexit.register(shutil.rmtree, os.environ[_SESSION_CACHE], True)
TEST_CACHE_HOME = Path(os.environ[_SESSION_CACHE])

# The same for XDG_STATE_HOME (the index of recent history folders, utils.files.history_index), and in this
# process's own environment too, so that no run of the session, in process or child, library call or
# command, ever writes the user's real index. A test of the index points it at its own tmp_path.
_SESSION_STATE = "RETRIEVAL_BENCHMARK_TESTS_STATE_HOME"
if _SESSION_STATE not in os.environ:
    os.environ[_SESSION_STATE] = tempfile.mkdtemp(prefix="retrieval-benchmark-tests-state-")
    atexit.register(shutil.rmtree, os.environ[_SESSION_STATE], True)
TEST_STATE_HOME = Path(os.environ[_SESSION_STATE])
os.environ["XDG_STATE_HOME"] = str(TEST_STATE_HOME)

needs_k8s = pytest.mark.skipif(not (K8S / "docs").is_dir(), reason=f"{K8S} is absent")


@dataclass
class CliRun:
    code: int
    stdout: str
    stderr: str

    @property
    def log_file(self) -> Path | None:
        m = re.search(r"Log file: (\S+)", self.stderr)
        return Path(m.group(1)) if m else None

    def log_text(self) -> str:
        return self.log_file.read_text(encoding="utf-8") if self.log_file else ""


def loopback_bypasses_proxies(env: dict[str, str]) -> dict[str, str]:
    """``env`` with 127.0.0.1 and localhost in NO_PROXY (both spellings), so that an HTTP proxy of the
    calling shell never carries the tests' loopback traffic to another host."""
    for name in ("NO_PROXY", "no_proxy"):
        env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
    return env


loopback_bypasses_proxies(os.environ)  # the in-process SDK calls of the tests too


def clean_env(**extra: str) -> dict[str, str]:
    """The environment without any judge settings, with loopback outside any proxy, and with the
    index cache and the state folder under temporary folders (XDG_CACHE_HOME = TEST_CACHE_HOME,
    XDG_STATE_HOME = TEST_STATE_HOME) unless ``extra`` says otherwise."""
    env = loopback_bypasses_proxies({k: v for k, v in os.environ.items()
                                     if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))})
    env["XDG_CACHE_HOME"] = str(TEST_CACHE_HOME)
    env["XDG_STATE_HOME"] = str(TEST_STATE_HOME)
    env.update(extra)
    return env


_SESSION_LOG_DIR: Path | None = None


@pytest.fixture(scope="session", autouse=True)
def _session_log_dir(tmp_path_factory: pytest.TempPathFactory):
    """One temporary folder for the log files of every CLI run of the session (not logs/)."""
    global _SESSION_LOG_DIR
    _SESSION_LOG_DIR = tmp_path_factory.mktemp("logs")
    yield _SESSION_LOG_DIR
    _SESSION_LOG_DIR = None


def with_log_dir(args: list[str]) -> list[str]:
    """``args`` with ``--log-dir <session tmp folder>`` added, unless they give one: after the
    command name for ``benchmark.py NAME ...``, first otherwise."""
    if _SESSION_LOG_DIR is None or any(a == "--log-dir" or a.startswith("--log-dir=") for a in args):
        return args
    at = 1 if args and not args[0].startswith("-") else 0
    return [*args[:at], "--log-dir", str(_SESSION_LOG_DIR), *args[at:]]


def run_cli(*args: str, env: dict[str, str] | None = None, timeout: float = 180, cwd: Path = ROOT) -> CliRun:
    """``python benchmark.py *args`` from the project root (or ``cwd``), run in this process
    (:func:`tests.in_process.run_main`: ``benchmark.main`` with the process's environment, folder,
    import path and streams); logs go to the session's temp folder."""
    return CliRun(*run_main(with_log_dir(list(args)), env or clean_env(), cwd=cwd, timeout=timeout))


def run_cli_subprocess(*args: str, env: dict[str, str] | None = None, timeout: float = 180,
                       cwd: Path = ROOT) -> CliRun:
    """``python benchmark.py *args`` in a real child process: for the tests whose point is the
    process (signals from outside, its exit status, ``entry()``, the import path, threads left)."""
    proc = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), *with_log_dir(list(args))], cwd=cwd,
                          env=env or clean_env(), capture_output=True, text=True, timeout=timeout)
    return CliRun(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture(scope="session", autouse=True)
def _short_sdk_backoff():
    """The SDKs' own pause before retrying an answerless failure (a timeout, a dropped connection, a
    5xx without ``retry-after``: 0.5 s, then 1 s, ...) is 10 ms, then 20 ms in this process. It is the
    SDKs' constant, not a setting of the benchmark, and the tests count attempts, not seconds; a
    server's ``retry-after`` is obeyed (and capped by the benchmark) as before. Children keep the SDKs'."""
    import anthropic._base_client
    import openai._base_client

    with pytest.MonkeyPatch.context() as patch:
        for client in (anthropic._base_client, openai._base_client):
            patch.setattr(client, "INITIAL_RETRY_DELAY", 0.01)
        yield


@pytest.fixture(autouse=True)
def _process_globals():
    """What a run changes in the process (log sinks, signal handlers, the metric and provider
    registries, the environment, plug-in modules ...: :func:`tests.in_process.process_globals`)
    is put back after every test, whether it called ``benchmark.main``, the API or a module."""
    with process_globals():
        yield


LIBRARY_LOGGERS = ("components", "utils", "poc")


@pytest.fixture(scope="session", autouse=True)
def _library_logs_on():
    """The library keeps its log records off (components.api disables them on import, as a library
    should); the tests read them, as the command line does, so they are on during the session.
    loguru's default stderr sink goes at the start, as the first CLI run would remove it: every test
    starts with no sink but its own (``caplog_loguru``), whichever test ran before it."""
    import components.api  # noqa: F401 - its import disables them
    from loguru import logger

    with contextlib.suppress(ValueError):
        logger.remove(0)
    for name in LIBRARY_LOGGERS:
        logger.enable(name)
    yield


@pytest.fixture
def quiet_library():
    """The library's log records off, as a notebook user gets them, for one test."""
    from loguru import logger

    for name in LIBRARY_LOGGERS:
        logger.disable(name)
    try:
        yield
    finally:
        for name in LIBRARY_LOGGERS:
            logger.enable(name)


def first_questions(n: int, path: Path) -> Path:
    """The first ``n`` questions of the project's questions.json, written to ``path`` as their own file."""
    data = json.loads((ROOT / "questions.json").read_text())
    path.write_text(json.dumps({"questions": data["questions"][:n]}))
    return path


@pytest.fixture
def few_questions(tmp_path: Path) -> Path:
    """The first three questions of the project's questions.json, as their own file."""
    return first_questions(3, tmp_path / "few.json")


def judge_env(server_url: str, **extra: str) -> dict[str, str]:
    return clean_env(ANTHROPIC_API_KEY=SENTINEL_KEY, ANTHROPIC_BASE_URL=server_url, **extra)


def mount_tmpfs(folder: Path, size: str) -> str | None:
    """Mount a tmpfs of ``size`` (mount's syntax: ``64k``, ``4096``) on the existing ``folder``:
    None when mounted (:func:`unmount` it), else why it could not be (not root, no mount)."""
    if os.geteuid() != 0:
        return "mounting a tmpfs needs root"
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(folder)], capture_output=True)
    return None if done.returncode == 0 else f"cannot mount a tmpfs: {done.stderr.decode(errors='replace').strip()}"


def unmount(folder: Path) -> None:
    subprocess.run(["umount", "-l", str(folder)], capture_output=True)


@pytest.fixture
def tiny_tmpfs(tmp_path: Path):
    """A 64 kB tmpfs mounted at ``tmp_path / "disk"`` (for full-disk cases); skipped unless the test
    runs as root where mounting works. Unmounted afterwards."""
    disk = tmp_path / "disk"
    disk.mkdir()
    why_not = mount_tmpfs(disk, "64k")
    if why_not is not None:
        pytest.skip(why_not)
    try:
        yield disk
    finally:
        unmount(disk)


@contextlib.contextmanager
def loguru_messages(level: str = "DEBUG") -> Iterator[list[str]]:
    """The messages loguru emits at ``level`` and up inside the block (they still reach the other sinks)."""
    from loguru import logger

    messages: list[str] = []
    sink = logger.add(lambda m: messages.append(m.record["message"]), level=level, format="{message}")
    try:
        yield messages
    finally:
        logger.remove(sink)


@pytest.fixture
def caplog_loguru():
    """The messages loguru emits during the test (WARNING and up go to stderr as usual)."""
    with loguru_messages() as messages:
        yield messages


def wait_for_line(proc: subprocess.Popen, marker: str, limit: float = 60) -> str:
    """``proc``'s stderr read up to the first line holding ``marker`` (returned, with what came
    before). The end of the output or ``limit`` seconds without it kill ``proc`` and fail the test."""
    seen = []
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if not line:
            break
        seen.append(line)
        if marker in line:
            return "".join(seen)
    proc.kill()
    raise AssertionError(f"never saw {marker!r}:\n" + "".join(seen))
