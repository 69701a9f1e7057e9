"""The project logger: loguru, with a ``metric`` method.

Library modules only *emit* records; they never add or remove sinks. The command line
(:mod:`components.cli`) adds the console and file sinks (see :func:`utils.logger.add_sinks`), which
never raise: a log folder or file that cannot be written gives console-only logging and one warning
line; it removes exactly those sinks again when the command ends (:meth:`LogSinks.remove`). Each log file
(:func:`log_file_path`) opens with :func:`log_header` (the command line and what it works on);
:func:`prune_logs` then keeps the newest ``--log-keep`` log files of the folder.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import re
import shlex
import stat
import sys
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, TextIO

from loguru import logger as _logger

from utils.console import active_progress, escape_control
from utils.redaction import Redactor

CONSOLE_FORMAT = "{time:HH:mm:ss} | {level: <7} | {message}\n"
# loguru appends "\n{exception}" to a format given as a string: the record, then its traceback if any
FILE_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {name}:{line} | {message}"
LOGURU_DEFAULT_SINK = 0  # the id of the stderr sink loguru adds when it is imported


class BenchmarkLogger:
    """A thin face over loguru's logger: ``trace``, ``debug``, ``info``, ``warning``, ``error``
    and ``metric(name, value, unit="")``. Records keep the caller's module and line."""

    def __init__(self, bound: Any) -> None:
        self._log = bound.opt(depth=1)

    def trace(self, message: str, *args: Any) -> None:
        self._log.trace(message, *args)

    def debug(self, message: str, *args: Any) -> None:
        self._log.debug(message, *args)

    def info(self, message: str, *args: Any) -> None:
        self._log.info(message, *args)

    def warning(self, message: str, *args: Any) -> None:
        self._log.warning(message, *args)

    def error(self, message: str, *args: Any) -> None:
        self._log.error(message, *args)

    def metric(self, name: str, value: float | int | None, unit: str = "") -> None:
        """An INFO line ``METRIC name=value unit``; the record's ``extra`` holds name, value, unit."""
        shown = "null" if value is None else (f"{value:.4f}".rstrip("0").rstrip(".") if isinstance(value, float)
                                              else str(value))
        suffix = f" {unit}" if unit else ""
        self._log.bind(metric=name, value=value, unit=unit).info("METRIC {}={}{}", name, shown, suffix)


def get_logger() -> BenchmarkLogger:
    return BenchmarkLogger(_logger)


def _escape_keeping_newlines(text: str) -> str:
    """:func:`utils.console.escape_control` on each line (the project's own messages and tables span
    lines; nothing else may start one). Printable lines, nearly all, pass at C speed."""
    return "\n".join(line if line.isprintable() else escape_control(line) for line in text.split("\n"))


class _InterceptHandler(logging.Handler):
    """Stdlib logging (httpx2, the anthropic SDK) into loguru. Their INFO chatter (one line per
    HTTP request, retry notices) goes to DEBUG: in the log file, not on the console."""

    def emit(self, record: logging.LogRecord) -> None:
        level = record.levelname if record.levelno >= logging.WARNING else "DEBUG"
        _logger.bind(stdlib=record.name).opt(depth=6, exception=record.exc_info).log(
            level, "[{}] {}", record.name, record.getMessage())


class _ConsoleWriter:
    """The console sink: redacts, escapes control characters (newlines kept), never raises. A
    stream that fails (a closed pipe) ends console output silently; text the stream's encoding
    cannot hold is written with backslash escapes."""

    def __init__(self, stream: TextIO, redact: Redactor) -> None:
        self.stream = stream
        self.redact = redact
        self.broken = False
        self._lock = threading.Lock()

    def __call__(self, message: str) -> None:
        text = _escape_keeping_newlines(self.redact(str(message)))
        with self._lock:
            if self.broken:
                return
            try:
                bar = active_progress(self.stream)
                if bar is not None:  # a progress bar is drawn on this terminal: write above it
                    bar.write(text)
                    return
                try:
                    self.stream.write(text)
                except UnicodeEncodeError:
                    encoding = getattr(self.stream, "encoding", None) or "utf-8"
                    self.stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
                self.stream.flush()
            except (OSError, ValueError):
                self.broken = True

    def warning(self, text: str) -> None:
        """A WARNING line in the console format, written directly (a sink cannot log)."""
        self(f"{datetime.now():%H:%M:%S} | {'WARNING': <7} | {text}\n")


class _FileWriter:
    """The file sink: redacts, escapes control characters (newlines kept), never raises. The
    first write that fails (a full disk) closes the file and puts one warning on the console; from
    then on records go to the console only."""

    def __init__(self, handle: TextIO, path: Path, redact: Redactor, console: _ConsoleWriter) -> None:
        self.handle: TextIO | None = handle
        self.path = path
        self.redact = redact
        self.console = console

    def __call__(self, message: str) -> None:
        if self.handle is None:
            return
        try:
            self.handle.write(_escape_keeping_newlines(self.redact(str(message))))
            self.handle.flush()
        except (OSError, ValueError) as err:
            self.close()
            reason = getattr(err, "strerror", None) or str(err)
            self.console.warning(f"log file {self.path}: {reason}: logging to the console only from here on")

    def close(self) -> None:
        handle, self.handle = self.handle, None
        if handle is not None:
            try:
                handle.close()  # flushes what is buffered: may fail again on a full disk
            except (OSError, ValueError):
                pass


@dataclass
class LogSinks:
    """What :func:`add_sinks` set up: ``path``, the log file (``None``: console only, it could not
    be opened), the loguru sinks it added and the standard-library logging set-up it replaced.
    :meth:`remove` takes away exactly these (a sink added by anyone else stays) and puts the
    standard-library set-up back; :meth:`close` only closes the log file."""

    path: Path | None
    handler_ids: list[int] = field(default_factory=list)
    _file: _FileWriter | None = None
    _stdlib: tuple[list[logging.Handler], int] | None = None

    def close(self) -> None:
        if self._file is not None:
            self._file.close()

    def remove(self) -> None:
        """Remove the sinks :func:`add_sinks` added, close the log file, restore stdlib logging.
        Calling it again does nothing."""
        ids, self.handler_ids = self.handler_ids, []
        for handler_id in ids:
            with contextlib.suppress(ValueError):  # already removed by someone else
                _logger.remove(handler_id)
        self.close()
        if self._stdlib is not None:
            root = logging.getLogger()
            root.handlers, level = self._stdlib
            root.setLevel(level)
            self._stdlib = None


def _intercept_stdlib_logging() -> tuple[list[logging.Handler], int]:
    """Route stdlib logging into loguru (:class:`_InterceptHandler` as the root logger's only
    handler, level INFO); returns the root logger's handlers and level before, to restore."""
    root = logging.getLogger()
    before = (list(root.handlers), root.level)
    root.handlers = [_InterceptHandler()]
    root.setLevel(logging.INFO)
    return before


def _open_log_file(log_file: Path) -> TextIO:
    """Open ``log_file`` for appending, creating its folder; only a regular file (a FIFO in the way
    would block the open forever: O_NONBLOCK makes it fail instead)."""
    try:
        log_file.parent.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        raise OSError(err.errno, f"its folder cannot be created: {err.strerror}") from None
    flags = os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(log_file, flags, 0o666)
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file")
        os.set_blocking(fd, True)
        return open(fd, "a", encoding="utf-8", errors="backslashreplace")
    except BaseException:
        os.close(fd)
        raise


def add_sinks(level: str, log_file: Path | None, secrets: Iterable[str] = ()) -> LogSinks:
    """Entry points only: console at ``level`` on stderr (never a traceback), and ``log_file`` at
    TRACE with tracebacks; loguru's own default stderr sink is removed, every other sink stays.
    Returns what was added, for :meth:`LogSinks.remove`. Both sinks replace every secret (in every
    spelling, see :mod:`utils.redaction`) with ``[REDACTED]`` and escape control characters except
    newlines.

    Never raises: a log file that cannot be opened (its folder cannot be created, is read-only, a
    file or a FIFO is in the way) gives console-only logging and one warning line; a log file that
    fails later (a full disk) is closed with one warning line. ``log_file=None``: console only.
    The console sink replaces loguru's default stderr sink; any other sink stays, and
    :meth:`LogSinks.remove` removes only the sinks added here.
    """
    redact = Redactor(secrets)
    with contextlib.suppress(ValueError):  # loguru's own stderr sink, there until an application replaces it
        _logger.remove(LOGURU_DEFAULT_SINK)
    for name in ("components", "utils", "poc"):  # the library's records (components.api disables them)
        _logger.enable(name)
    sinks = LogSinks(None, _stdlib=_intercept_stdlib_logging())
    console = _ConsoleWriter(sys.stderr, redact)
    sinks.handler_ids.append(_logger.add(console, level=level.upper(), format=lambda record: CONSOLE_FORMAT,
                                         colorize=False, backtrace=False, diagnose=False))
    if log_file is None:
        return sinks
    log_file = Path(log_file)
    try:
        handle = _open_log_file(log_file)
    except OSError as err:
        _logger.warning("log file {} cannot be written ({}): logging to the console only; pass --log-dir a "
                        "folder you can write to", log_file, err.strerror or err)
        return sinks
    sinks.path, sinks._file = log_file, _FileWriter(handle, log_file, redact, console)
    sinks.handler_ids.append(_logger.add(sinks._file, level="TRACE", format=FILE_FORMAT, colorize=False,
                                         backtrace=False, diagnose=False))
    return sinks


# --------------------------------------------------------------------------- log files: names, header, pruning

# The name of every log file the command line opens; prune_logs removes no other file.
LOG_NAME = re.compile(r"benchmark_\d{8}-\d{6}_\d+(?:-\d+)?\.log")


def log_file_path(folder: Path) -> Path:
    """A new log file's path in ``folder``: ``benchmark_<local time>_<pid>.log``, or
    ``benchmark_<local time>_<pid>-<n>.log`` when that file is there already (``benchmark.main``
    called again by the same process within the second). See :data:`LOG_NAME`."""
    stem = f"benchmark_{datetime.now():%Y%m%d-%H%M%S}_{os.getpid()}"
    path, n = Path(folder) / f"{stem}.log", 1
    while os.path.lexists(path):  # never raises: an unusable folder is add_sinks' to report
        n += 1
        path = Path(folder) / f"{stem}-{n}.log"
    return path


def log_header(argv: Iterable[str], details: Mapping[str, object] | None = None) -> None:
    """The first records of a log file (DEBUG: the file only): the command line and the folder it ran
    in, then ``details`` (e.g. the run's strategy, corpus and questions) on one line. The sinks
    redact secrets, so a key typed on the command line does not reach the file."""
    _logger.debug("command line: {} (in {})", shlex.join(["python", "benchmark.py", *argv]), os.getcwd())
    shown = {name: value for name, value in (details or {}).items() if value is not None}
    if shown:
        _logger.debug("{}", " · ".join(f"{name}: {value}" for name, value in shown.items()))


def prune_logs(folder: Path, keep: int, current: Path) -> list[Path]:
    """Delete the oldest log files of ``folder`` (by modification time) so that ``keep`` remain,
    ``current`` included; ``keep`` 0 keeps every one. Only regular files named like
    :data:`LOG_NAME` are candidates (never a symlink, never another file); ``current`` is never
    deleted. Never raises: a file that cannot be deleted is left (a DEBUG record says why).
    Returns the files deleted."""
    if keep <= 0:
        return []
    current = Path(current)
    try:
        entries = list(os.scandir(folder))
    except OSError as err:
        _logger.debug("log folder {} not pruned: {}", folder, err.strerror or err)
        return []
    candidates: list[tuple[float, str, Path]] = []
    for entry in entries:
        if entry.name == current.name or not LOG_NAME.fullmatch(entry.name):
            continue
        try:
            info = entry.stat(follow_symlinks=False)
        except OSError:
            continue
        if stat.S_ISREG(info.st_mode):
            candidates.append((info.st_mtime, entry.name, Path(entry.path)))
    candidates.sort()
    removed: list[Path] = []
    for _, _, path in candidates[:max(0, len(candidates) - (keep - 1))]:
        try:
            path.unlink()
        except FileNotFoundError:  # another run pruned it first
            continue
        except OSError as err:
            _logger.debug("old log file {} not deleted: {}", path, err.strerror or err)
            continue
        removed.append(path)
    if removed:
        _logger.debug("deleted {} old log file(s) of {} (--log-keep {})", len(removed), folder, keep)
    return removed
