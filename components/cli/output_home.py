"""Where the default outputs go: the current folder, or beside ``benchmark.py`` when it is run the
plan's way.

The plan runs the module from the repository root, ``python poc/modular_retrieval_pipeline/benchmark.py
--strategy modular-no-llm --quick``, and reads ``poc/modular_retrieval_pipeline/benchmark_results.json``.
So when ``benchmark.py`` is run **as a script** (``python path/to/benchmark.py``) from a folder that
**strictly contains** the module's folder, the run's default ``--output`` is
``benchmark_results.json`` beside ``benchmark.py`` (its ``runs/`` history folder goes beside it, as
always beside ``--output``), and the default ``--log-dir`` of every command is ``logs/`` beside it.

Every other case keeps the current folder: run from the module folder itself or from an unrelated
folder, as the installed ``retrieval-benchmark`` command, or with ``python -m benchmark``. Whether the
tree is a git checkout does not matter. An ``--output`` or ``--log-dir`` on the command line always
chooses (so does ``--resume``, whose results go to the run it continues). When the module's folder
cannot be written, the defaults stay in the current folder and the command says so in one line.
"""

from __future__ import annotations

import argparse
import os
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from utils.files.output import DEFAULT_OUTPUT_NAME

LOG_FOLDER = "logs"
_UNSET = object()


@dataclass(frozen=True)
class OutputHome:
    """Where the default outputs go: ``folder`` (relative to the current folder), or None for the
    current folder; ``note``, one line to log when the module's folder could not be used."""

    folder: Path | None = None
    note: str | None = None


def output_home(script: str | os.PathLike | None, cwd: str | os.PathLike) -> OutputHome:
    """The home of the default outputs of ``benchmark.py`` run as the script ``script`` (None: not
    run as a script) from the folder ``cwd`` (module docstring)."""
    if script is None:
        return OutputHome()
    here = Path(os.path.realpath(cwd))
    folder = Path(os.path.realpath(os.path.join(cwd, script))).parent
    if folder == here or not folder.is_relative_to(here):
        return OutputHome()
    shown = Path(os.path.relpath(folder, here))
    if not _writable(folder):
        return OutputHome(None, f"the module folder {shown} cannot be written: the results, runs/ and logs/ go to "
                                "the current folder instead")
    return OutputHome(shown)


def _writable(folder: Path) -> bool:
    """Whether a file can be created in ``folder`` (tried, then removed: permissions alone do not
    say it for a read-only mount or root)."""
    try:
        fd, probe = tempfile.mkstemp(prefix=".benchmark_results.", suffix=".probe", dir=folder)
    except OSError:
        return False
    os.close(fd)
    os.unlink(probe)
    return True


def explicit(parser: argparse.ArgumentParser, argv: list[str], names: tuple[str, ...]) -> set[str]:
    """Which of the options ``names`` (their ``dest``) ``argv`` gives, in any spelling argparse takes
    (``--output x``, ``--output=x``, an abbreviation): ``argv`` parsed again with those defaults unset."""
    parser.set_defaults(**dict.fromkeys(names, _UNSET))
    parsed = parser.parse_args(argv)
    return {name for name in names if getattr(parsed, name, _UNSET) is not _UNSET}


def apply_home(home: OutputHome, args: argparse.Namespace, argv: list[str], is_run: bool,
               parser: Callable[[], argparse.ArgumentParser]) -> OutputHome:
    """Point the defaults of ``args`` (parsed from ``argv``) at ``home``: the run's ``--output``
    (``is_run``, without ``--resume``) and every command's ``--log-dir``, where the command line gives
    none. Returns ``home`` with its note kept only when it concerns a default this command uses."""
    names = ("output", "log_dir", "resume") if is_run else ("log_dir",)
    given = explicit(parser(), argv, names) if home.folder is not None or home.note else set()
    if home.folder is None:  # the note concerns the results: said when they take the default
        return OutputHome(None, home.note if is_run and not {"output", "resume"} & given else None)
    if "log_dir" not in given:
        args.log_dir = home.folder / LOG_FOLDER
    if is_run and not {"output", "resume"} & given:
        args.output = str(home.folder / DEFAULT_OUTPUT_NAME)
    return home
