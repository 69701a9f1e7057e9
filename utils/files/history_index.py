"""The index of recent history folders: where ``compare RUN_ID`` (and ``export-run RUN_ID``) also
looks for a run id, whatever folder the command runs from.

Every run that writes its results records its history folder (``runs/`` beside its ``--output``)
in ``<state folder>/history.json`` (the state folder: ``$XDG_STATE_HOME/retrieval-benchmark``,
else ``~/.local/state/retrieval-benchmark``: :func:`utils.settings.default_state_dir`)::

    {"version": 1, "folders": ["/abs/path/to/project/runs", ...]}

* absolute paths only, the most recent first, each once, at most :data:`MAX_FOLDERS` of them
  (older ones drop off; folders that no longer exist are dropped when the index is written);
* written atomically (a reader sees the old index or the new one); two runs finishing at once may
  each write theirs, and the later one wins: the index is a convenience, not a record;
* an index that cannot be written (a read-only home, a full disk) is one warning, never a failure
  of the run; one that cannot be read, or holds anything else, is as if empty.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from loguru import logger

from utils.errors import ResultsWriteError
from utils.files.output import make_folders, write_json_atomic

INDEX_NAME = "history.json"
INDEX_VERSION = 1
MAX_FOLDERS = 20
MAX_INDEX_BYTES = 1 << 20  # an index larger than this is not read


def index_path(state_dir: Path) -> Path:
    return Path(state_dir) / INDEX_NAME


def recent_history_folders(state_dir: Path | None) -> list[Path]:
    """The folders of the index, the most recent first; [] without a state folder or a readable index."""
    if state_dir is None:
        return []
    path = index_path(state_dir)
    try:
        if path.stat().st_size > MAX_INDEX_BYTES:
            return []
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return []
    folders = doc.get("folders") if isinstance(doc, dict) and doc.get("version") == INDEX_VERSION else None
    if not isinstance(folders, list):
        return []
    absolute = [Path(f) for f in folders if isinstance(f, str) and os.path.isabs(f)]
    return list(dict.fromkeys(absolute))[:MAX_FOLDERS]


def record_history_folder(state_dir: Path | None, runs_dir: Path) -> None:
    """Put ``runs_dir`` (made absolute) first in the index of ``state_dir``. Never raises: an index
    that cannot be written is one warning."""
    if state_dir is None:
        return
    folder = Path(os.path.abspath(runs_dir))
    kept = [f for f in recent_history_folders(state_dir) if f != folder and f.is_dir()]
    folders = [str(folder), *map(str, kept)][:MAX_FOLDERS]
    path = index_path(state_dir)
    try:
        make_folders(path.parent)
        write_json_atomic(path, {"version": INDEX_VERSION, "folders": folders})
    except (OSError, ResultsWriteError) as err:
        reason = err.strerror if isinstance(err, OSError) and err.strerror else str(err)
        logger.warning("The index of recent history folders {} could not be written ({}): `compare` will find this "
                       "run's id only from {} or beside its results; set XDG_STATE_HOME to a folder you can write",
                       path, reason, folder.parent)
