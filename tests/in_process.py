"""``python benchmark.py ...`` run inside the test process: ``benchmark.main(argv, env)`` with what a
child process would have, without the interpreter start and the imports (about a second a run).

:func:`run_main` gives the call the folder to run in, ``env`` as ``os.environ`` (the SDKs and some
library code read it), ``PYTHONPATH``'s folders and the current folder on the import path (as
``python benchmark.py`` and :func:`benchmark.entry` put them), a stdout and a stderr of its own
(decoded as ``subprocess.run(..., text=True)`` decodes a child's), ``SystemExit`` as the exit code,
and a deadline: a run still going after ``timeout`` seconds raises ``subprocess.TimeoutExpired``
where a child would have been killed.

:func:`process_globals` puts back afterwards what a run changes in the process: the environment,
the current folder, the import path, the plug-in modules imported through the run's own
``PYTHONPATH`` or folder (a rewritten ``plug.py`` imports afresh), the SIGINT/SIGTERM/SIGHUP
handlers, loguru's sinks and stdlib logging's root handlers, the registries (metrics, providers, readers,
strategies, attacks: a plug-in's from ``BENCHMARK_PLUGINS``), the once-per-process warnings and the progress
bar on screen. Caches that hold no run's state stay: the WordLlama model
(:func:`poc.dense.load_wordllama`), the lexical judge's term cache, and the index cache on disk
(under the session's ``XDG_CACHE_HOME``).
"""

from __future__ import annotations

import contextlib
import faulthandler
import importlib
import io
import logging
import os
import signal
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SIGNALS = tuple(getattr(signal, n) for n in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, n))


def _import_root(module: object) -> Path | None:
    """The import path entry ``module`` was found under (``/x`` for ``a.b`` in ``/x/a/b.py``), or None."""
    file, name = getattr(module, "__file__", None), getattr(module, "__name__", None)
    if not file or not isinstance(name, str):
        return None
    path = Path(file).resolve()
    depth = name.count(".") + (1 if path.stem == "__init__" else 0)
    return path.parents[depth] if depth < len(path.parents) else None


def _path_entries() -> set[Path]:
    return {Path(p or ".").resolve() for p in sys.path if isinstance(p, str)}


def _plugins(names: set[str], entries: set[Path]) -> list[str]:
    """The modules of ``names`` found under an import path entry not in ``entries``: plug-ins a
    test wrote, reached through the run's ``PYTHONPATH`` or folder (the next ``plug`` is another)."""
    out = []
    for name in names:
        root = _import_root(sys.modules.get(name))
        if root is not None and root not in entries:
            out.append(name)
    return out


def _loguru_sink_ids() -> set[int]:
    from loguru import logger

    return set(logger._core.handlers)  # loguru lists its sinks nowhere public


@contextlib.contextmanager
def process_globals() -> Iterator[None]:
    """Everything a run changes in the process, as it was before the block (module docstring)."""
    from loguru import logger

    import components.audit.attacks as attacks
    import components.core.strategies as strategies
    import components.readers as readers
    import components.readers.markdown
    import utils.console
    from components.judges import providers
    from utils import metrics

    # the built-ins register on first use: registered before the snapshot, so that it holds them
    providers.providers(), readers.readers(), strategies.strategies()
    environ, cwd, path = dict(os.environ), os.getcwd(), list(sys.path)
    modules, entries = set(sys.modules), _path_entries()
    handlers = {sig: signal.getsignal(sig) for sig in SIGNALS}
    sinks = _loguru_sink_ids()
    root = logging.getLogger()
    root_handlers, root_level = list(root.handlers), root.level
    registries = [(r, dict(r)) for r in (metrics.METRICS, providers._REGISTRY, readers._REGISTRY, strategies._REGISTRY,
                                         attacks._REGISTRY)]
    try:
        yield
    finally:
        for sig, handler in handlers.items():
            if handler is not None:
                signal.signal(sig, handler)
        for sink in _loguru_sink_ids() - sinks:
            with contextlib.suppress(ValueError):
                logger.remove(sink)
        root.handlers[:], root.level = root_handlers, root_level
        for registry, before in registries:
            registry.clear()
            registry.update(before)
        components.readers.markdown._warn_once.cache_clear()
        utils.console._ACTIVE = None
        for name in _plugins(set(sys.modules) - modules, entries):
            del sys.modules[name]
        sys.path[:] = path
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(environ)


def _output_stream(errors: str) -> io.TextIOWrapper:
    """A stream like a child's stdout (``errors="strict"``) or stderr (``"backslashreplace"``) on a pipe."""
    return io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors=errors, write_through=True)


def _read_back(stream: io.TextIOWrapper) -> str:
    """What ``subprocess.run(..., text=True)`` makes of the bytes: decoded, newlines translated."""
    stream.flush()
    text = stream.buffer.getvalue().decode("utf-8")
    return text.replace("\r\n", "\n").replace("\r", "\n")


def exit_code(done: SystemExit, stderr: io.TextIOBase) -> int:
    """The exit status Python gives ``raise SystemExit(code)`` at the top (a message: printed, 1)."""
    if done.code is None:
        return 0
    if isinstance(done.code, int):
        return done.code
    print(done.code, file=stderr)
    return 1


class _Overdue(BaseException):
    """Raised in the run at its deadline (not an ``Exception``: the run's handlers let it through)."""


def _overdue(_signum: int, _frame: object) -> None:
    raise _Overdue


@contextlib.contextmanager
def _deadline(seconds: float) -> Iterator[None]:
    """SIGALRM raises :class:`_Overdue` in the block after ``seconds`` (and every second after, in
    case something swallows it); a hang no signal reaches (a deadlock in C) ends the process with
    every thread's traceback a minute later."""
    previous = signal.signal(signal.SIGALRM, _overdue)
    faulthandler.dump_traceback_later(seconds + 60, exit=True, file=sys.__stderr__)
    signal.setitimer(signal.ITIMER_REAL, seconds, 1.0)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        faulthandler.cancel_dump_traceback_later()
        signal.signal(signal.SIGALRM, previous)


def run_main(argv: list[str], env: Mapping[str, str], cwd: Path = ROOT, timeout: float = 180) -> tuple[int, str, str]:
    """``benchmark.main(argv, env)`` as ``python benchmark.py *argv`` run in ``cwd`` with ``env``
    would run it (module docstring): ``(exit code, stdout, stderr)``. A run still going after
    ``timeout`` seconds raises :class:`subprocess.TimeoutExpired`, as ``subprocess.run`` does."""
    import benchmark

    extra = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    stdout, stderr = _output_stream("strict"), _output_stream("backslashreplace")
    with process_globals():
        os.chdir(cwd)
        os.environ.clear()
        os.environ.update(env)
        sys.path[:] = [str(ROOT), *extra, *(p for p in sys.path if p not in (str(ROOT), *extra)), str(cwd)]
        importlib.invalidate_caches()
        saved = sys.stdout, sys.stderr
        sys.stdout, sys.stderr = stdout, stderr
        try:
            with _deadline(timeout):
                code = benchmark.main(list(argv), dict(env))
        except SystemExit as done:
            code = exit_code(done, stderr)
        except _Overdue:
            raise subprocess.TimeoutExpired(["benchmark.py", *argv], timeout, _read_back(stdout),
                                            _read_back(stderr)) from None
        finally:
            sys.stdout, sys.stderr = saved
    return code, _read_back(stdout), _read_back(stderr)
