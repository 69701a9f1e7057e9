"""One safe file name for a strategy: the results file beside ``--output`` of a run of several
strategies (``benchmark_results.<name>.json``) and the run's history file (``runs/<time>_<name>.json``)
use the same one.

A strategy is named by the user (``--strategy my_rets:make_tfidf``, a plug-in's ``module:factory``):
its name may hold a colon, a slash, ``..``, spaces, letters of any script, or be very long. The file
name keeps ASCII letters, digits, ``.``, ``_`` and ``-``; every other run of characters becomes one
``-``; leading and trailing dots and dashes go (no hidden file, no ``..``, no option-like name); an
empty result is ``strategy``; a name longer than :data:`MAX_NAME` is cut and ends with 8 hex digits
of the full name's SHA-256 (two long names stay apart).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import Path

MAX_NAME = 80
_UNSAFE = re.compile(r"[^A-Za-z0-9._-]+")


def strategy_file_name(strategy: str) -> str:
    """The file-name form of ``strategy`` (module docstring): ``my_rets:make_tfidf`` → ``my_rets-make_tfidf``."""
    name = _UNSAFE.sub("-", strategy).strip(".-") or "strategy"
    if len(name) > MAX_NAME:
        digest = hashlib.sha256(strategy.encode("utf-8", "surrogatepass")).hexdigest()[:8]
        name = f"{name[:MAX_NAME - 9].rstrip('.-')}-{digest}"
    return name


def strategy_file_names(labels: Sequence[str]) -> list[str]:
    """The file name of each of a run's strategy labels, kept apart: a name another label already
    took (``a:b`` and ``a/b`` are both ``a-b``) gets ``-2``, ``-3``... ."""
    taken: set[str] = set()
    names = []
    for label in labels:
        base = name = strategy_file_name(label)
        n = 1
        while name in taken:
            n += 1
            name = f"{base}-{n}"
        taken.add(name)
        names.append(name)
    return names


def strategy_results_path(output: Path, file_name: str) -> Path:
    """The results file of one strategy of several beside ``--output``: ``<stem>.<file name><suffix>``."""
    return output.with_name(f"{output.stem}.{file_name}{output.suffix}")
