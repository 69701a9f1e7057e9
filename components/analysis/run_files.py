"""Finding and reading the runs a command is given: a results file, or a run id looked up in the
history folders (``runs/`` of the current folder, those the results files record, the recent ones
of the history index), and the TREC or ranx run files ``compare`` takes beside results files.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterable, Sequence
from pathlib import Path

from utils.errors import InputError
from utils.files.history_index import recent_history_folders
from utils.records import trec
from utils.results import RunResult, read_json_file


def runs_dirs(cwd: Path, args: Sequence[str], state_dir: Path | None = None) -> list[Path]:
    """Where run ids are looked up: ``runs/`` of the current folder, the history folder a results
    file of the current folder records (``run.runs_dir``), that of every results file given, then
    the recent history folders of the index in ``state_dir`` (:mod:`utils.files.history_index`)."""
    folders = [cwd / "runs"]
    for candidate in [cwd / "benchmark_results.json", *(Path(a) for a in args)]:
        if not candidate.is_file():
            continue
        try:
            runs_dir = (read_json_file(candidate).get("run") or {}).get("runs_dir")  # type: ignore[union-attr]
        except (InputError, AttributeError):
            continue
        if isinstance(runs_dir, str) and runs_dir:
            folder = Path(runs_dir) if Path(runs_dir).is_absolute() else candidate.parent / Path(runs_dir).name
            if folder not in folders:
                folders.append(folder)
    seen = {Path(os.path.abspath(f)) for f in folders}
    return folders + [f for f in recent_history_folders(state_dir) if f not in seen and f.is_dir()]


def resolve_run(arg: str, cwd: Path, others: Sequence[str] = (), state_dir: Path | None = None) -> Path:
    """A results file path, or a run id: ``<runs dir>/<id>.json``, or the file there whose ``run.id``
    is ``arg``, in the history folders of :func:`runs_dirs`. Raises :class:`InputError` naming
    every folder searched."""
    path = Path(arg)
    if path.is_file() or path.is_symlink() or (path.exists() and not path.is_dir()):
        return path  # a FIFO, a device or a link loop too: the reader says what it is
    folders = runs_dirs(cwd, others, state_dir)
    for runs_dir in folders:
        candidate = runs_dir / f"{arg}.json"
        if candidate.is_file():
            return candidate
    for runs_dir in folders:
        if not runs_dir.is_dir():
            continue
        for file in sorted(runs_dir.glob("*.json")):
            try:
                if not file.is_file() or file.stat().st_size > 64 * 1024 * 1024:
                    continue
                text = file.read_text(encoding="utf-8")
                if arg in text and (json.loads(text).get("run") or {}).get("id") == arg:
                    return file
            except (OSError, ValueError, AttributeError, RecursionError):
                continue
    if path.is_dir():
        raise InputError(f"compare: {arg} is a folder: pass a results JSON file or a run id")
    where = ", ".join(str(f) for f in folders)
    raise InputError(f"compare: {arg} is neither a results file nor a run id in the history folders searched "
                     f"({where}): pass a results JSON path or a run id (the names in runs/ without .json)")


def _first_byte(path: Path) -> bytes:
    """The first non-blank byte of a regular file; b"" for anything else (the JSON reader then
    names the problem). Opened non-blocking: a FIFO cannot hang it."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0))
    except OSError:
        return b""
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return b""
        return os.read(fd, 4096).lstrip(b"\xef\xbb\xbf \t\r\n")[:1]
    finally:
        os.close(fd)


def read_run_or_ranking(path: Path, secrets: Iterable[str] = ()) -> RunResult | dict[str, list[str]]:
    """A results file (:class:`RunResult`, ``secrets`` redacted as it is read), or the rankings of a
    TREC run file or a ranx JSON run ({question id: doc ids, best first}). Raises :class:`InputError`."""
    if path.suffix.lower() != ".json" and _first_byte(path) not in (b"", b"{", b"["):
        return trec.read_trec_run(path)
    doc = read_json_file(path)
    if trec.is_ranx_run(doc):
        return trec.ranx_run(doc, str(path))
    return RunResult.from_json(doc, str(path), secrets=secrets)
