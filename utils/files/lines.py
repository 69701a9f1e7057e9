"""Bounded reading of line-based input files: JSON lines (BEIR), TSV and TREC files.

:func:`iter_lines` streams a file one line at a time, never holding more than one line: a file
over ``max_bytes`` or a line over ``max_line_bytes`` is one :class:`InputError` naming the file and
the line (a file without newlines cannot take the memory of its whole size). The file must be a
regular file (a symlink to one is fine); a FIFO, device, socket or folder is refused before
anything is read (it is opened non-blocking, so a FIFO without a writer cannot hang the load).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import BinaryIO

from utils.errors import InputError

_BUFFER = 1 << 20


def file_kind(mode: int) -> str:
    """What a file of mode ``mode`` (``os.stat().st_mode``) is, in words, for messages: "a folder",
    "a FIFO", "a character device", … or "not a regular file"."""
    for test, name in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


#: :func:`open_regular`'s messages unless told otherwise: ``{what}`` names the file ("corpus file"),
#: ``{fix}`` is the advice.
READING = {"missing": "{what} {path} does not exist: {fix}",
           "unreadable": "{what} {path} cannot be opened ({reason}): check it is readable",
           "kind": "{what} {path} is {kind}, not a regular file: {fix}"}


def open_regular(path: str | os.PathLike, *, messages: Mapping[str, str] = READING, buffering: int = -1,
                 **values: object) -> tuple[BinaryIO, os.stat_result]:
    """``path`` open for reading (binary) and its ``fstat``, when it is a regular file (a symlink to one
    is fine). It is opened non-blocking, so a FIFO without a writer cannot hang the caller; a FIFO,
    device, socket or folder is refused before anything is read. Every refusal is one
    :class:`InputError`: ``messages[problem]`` formatted with ``path``, ``values`` and the problem's
    own field. The problems: ``missing``; ``unreadable`` (``{reason}``: the system's words);
    ``kind`` (``{kind}``: "a FIFO", …); ``folder``, which falls back to ``kind`` with "a folder"."""
    path = Path(path)

    def refusal(problem: str, **fields: object) -> InputError:
        template = messages.get(problem) or messages["kind"]
        return InputError(template.format(path=path, **values, **fields))

    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except FileNotFoundError:
        raise refusal("missing") from None
    except IsADirectoryError:
        raise refusal("folder", kind="a folder") from None
    except OSError as err:
        raise refusal("unreadable", reason=err.strerror) from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise refusal("folder", kind="a folder")
        if not stat.S_ISREG(info.st_mode):
            raise refusal("kind", kind=file_kind(info.st_mode))
        return os.fdopen(fd, "rb", buffering=buffering), info
    except BaseException:
        os.close(fd)
        raise


def iter_lines(path: str | os.PathLike, *, what: str, fix: str, max_bytes: int,
               max_line_bytes: int) -> Iterator[tuple[int, bytes]]:
    """``(line number, line)`` of ``path``, 1-based, each line without its end of line (``\\n`` or
    ``\\r\\n``); a UTF-8 byte order mark at the start is dropped. ``what`` names the file in messages
    (``"corpus file"``), ``fix`` is the message's advice. Raises :class:`InputError`."""
    path = Path(path)
    fh, info = open_regular(path, what=what, fix=fix, buffering=_BUFFER)
    with fh:
        if info.st_size > max_bytes:
            raise InputError(f"{what} {path} is {info.st_size:,} bytes, over the {max_bytes:,}-byte limit: {fix}")
        total = 0
        number = 0
        while True:
            line = fh.readline(max_line_bytes + 2)  # + the end of line
            if not line:
                return
            number += 1
            total += len(line)
            if total > max_bytes:
                raise InputError(f"{what} {path} is over the {max_bytes:,}-byte limit (it grew while read): {fix}")
            if line.endswith(b"\n"):
                line = line[:-2] if line.endswith(b"\r\n") else line[:-1]
            if len(line) > max_line_bytes:
                raise InputError(f"{what} {path}: line {number} is over the {max_line_bytes:,}-byte limit of a "
                                 f"line: {fix}")
            if number == 1 and line.startswith(b"\xef\xbb\xbf"):
                line = line[3:]
            yield number, line


def decode(line: bytes, path: str | os.PathLike, number: int, fix: str) -> str:
    """``line`` as UTF-8 text; one :class:`InputError` naming the file and line when it is not."""
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: line {number} is not valid UTF-8 (byte {err.start}): {fix}") from None
