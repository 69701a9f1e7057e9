"""The run's journal: every finished question's row, appended and fsynced before its console line.

A JSON-lines file beside the run's output (``runs/<run id>.journal.jsonl``). Line 1 is the header
``{"journal": 1, "run": {...identity...}}``; each further line is one row, exactly as it goes into
the results. A question may appear more than once (the retry pass re-grades a row): the last line
for a question id wins. Whatever way a run ends — an exception, a signal, a full disk, a killed
process — every row the console reported as done is in the journal; ``--resume`` reads it (or a
finished results file) with :func:`read_rows`.

Lines are ASCII JSON (``ensure_ascii``), secrets redacted on the values and non-finite numbers
written as null (:func:`utils.results.strict_json_value`), so any row can be written. A torn last
line (the process killed mid-write) is skipped on reading.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable
from pathlib import Path

from utils.errors import InputError
from utils.results import strict_json_value

JOURNAL_VERSION = 1


class Journal:
    def __init__(self, path: Path, identity: dict, secrets: Iterable[str] = ()) -> None:
        self.path = Path(path)
        self.secrets = [s for s in secrets if s]
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="ascii")
        self._write({"journal": JOURNAL_VERSION, "run": identity})

    def _write(self, obj: dict) -> None:
        line = json.dumps(strict_json_value(obj, self.secrets), ensure_ascii=True, allow_nan=False)
        self._fh.write(line + "\n")
        self._fh.flush()
        os.fsync(self._fh.fileno())

    def append(self, row: dict) -> None:
        """Append one row and make it durable (flush + fsync) before returning."""
        self._write(row)

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def remove(self) -> None:
        """Delete the journal (after the run's results were written in full)."""
        self.close()
        self.path.unlink(missing_ok=True)


def read_rows(path: Path) -> tuple[dict, dict[str, dict]]:
    """``(run identity, {question id: row})`` from a journal or a results file.

    A results file gives its ``run`` and ``results``; a journal its header and rows (last wins).
    Raises :class:`InputError` naming the fix when ``path`` is neither."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--resume {path}: no such file: pass a results file or a run's .journal.jsonl")
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"--resume {path}: cannot be read ({type(err).__name__}): pass a results file or "
                         "a journal") from None
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and isinstance(doc.get("results"), list) and isinstance(doc.get("run"), dict):
        rows = {str(r["question_id"]): r for r in doc["results"] if isinstance(r, dict) and "question_id" in r}
        return doc["run"], rows
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except ValueError:
        header = None
    if not isinstance(header, dict) or header.get("journal") != JOURNAL_VERSION:
        raise InputError(f"--resume {path}: neither a results file nor a journal: pass benchmark_results.json, "
                         "a file from runs/, or a runs/*.journal.jsonl")
    rows: dict[str, dict] = {}
    for line in lines[1:]:
        try:
            row = json.loads(line)
        except ValueError:  # a torn last line
            continue
        if isinstance(row, dict) and "question_id" in row:
            rows[str(row["question_id"])] = row
    return header.get("run") or {}, rows
