"""The project logger: loguru, with a ``metric`` method.

Library modules only *emit* records; they never add or remove sinks. ``benchmark.py`` adds the
console and file sinks (see :func:`utils.logger.add_sinks`).
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from loguru import logger as _logger

CONSOLE_FORMAT = "{time:HH:mm:ss} | {level: <7} | {message}\n"
FILE_FORMAT = "{time:YYYY-MM-DD HH:mm:ss.SSS} | {level: <7} | {name}:{line} | {message}\n{exception}"


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


def _redacting_writer(stream: TextIO, secrets: Iterable[str]) -> Callable[[str], None]:
    secrets = [s for s in secrets if s]

    def write(message: str) -> None:
        for secret in secrets:
            message = message.replace(secret, "[REDACTED]")
        stream.write(message)
        stream.flush()

    return write


class _InterceptHandler(logging.Handler):
    """Stdlib logging (httpx2, the anthropic SDK) into loguru. Their INFO chatter (one line per
    HTTP request, retry notices) goes to DEBUG: in the log file, not on the console."""

    def emit(self, record: logging.LogRecord) -> None:
        level = record.levelname if record.levelno >= logging.WARNING else "DEBUG"
        _logger.bind(stdlib=record.name).opt(depth=6, exception=record.exc_info).log(
            level, "[{}] {}", record.name, record.getMessage())


def add_sinks(level: str, log_file: Path, secrets: Iterable[str] = ()) -> TextIO:
    """Entry points only: console at ``level`` on stderr (never a traceback), and ``log_file`` at
    TRACE with tracebacks. Both sinks replace every secret with ``[REDACTED]``. Returns the open
    log file (close it at exit)."""
    secrets = list(secrets)
    _logger.remove()
    logging.basicConfig(handlers=[_InterceptHandler()], level=logging.INFO, force=True)
    _logger.add(_redacting_writer(sys.stderr, secrets), level=level.upper(),
                format=lambda record: CONSOLE_FORMAT, colorize=False, backtrace=False, diagnose=False)
    log_file.parent.mkdir(parents=True, exist_ok=True)
    handle = log_file.open("a", encoding="utf-8")
    _logger.add(_redacting_writer(handle, secrets), level="TRACE", format=FILE_FORMAT, colorize=False,
                backtrace=False, diagnose=False)
    return handle
