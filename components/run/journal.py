"""The run's journal: every finished question's row, appended and fsynced before its console line.

A JSON-lines file beside the run's output (``runs/<run id>.journal.jsonl``). Line 1 is the header
``{"journal": 1, "run": {...identity...}}``; each further line is one row, exactly as it goes into
the results. A question may appear more than once (the retry pass re-grades a row): the last line
for a question id wins. With ``--judge-batch``, a line ``{"batch": {"id": ..., "custom_ids": {...},
"status": ...}}`` records each Message Batch as soon as it is created (and again when its status
changes; the last line for a batch id wins): :func:`read_rows` returns them in the run's
``judge_batch`` list, as a results file holds them, so ``--resume`` collects a batch instead of
submitting it again. Whatever way a run ends — an exception, a signal, a full disk, a killed
process — every row the console reported as done is in the journal; ``--resume`` reads it (or a
finished results file) with :func:`read_rows`.

Lines are ASCII JSON (``ensure_ascii``), secrets redacted on the values and non-finite numbers
written as null (:func:`utils.files.output.strict_json_value`), so any row can be written. A torn last
line (the process killed mid-write) is skipped on reading.
"""

from __future__ import annotations

import contextlib
import json
import os
import time
from collections.abc import Iterable, Iterator
from pathlib import Path

from utils.errors import InputError
from utils.files.output import strict_json_value
from utils.redaction import Redactor
from utils.results import MAX_RESULTS_BYTES, QuestionResult, RunResult, parse_json, read_json_file

JOURNAL_VERSION = 1
GROUP_SYNC_S = 1.0  # inside Journal.grouped(), fsync at least this often


class Journal:
    def __init__(self, path: Path, identity: dict, secrets: Iterable[str] = ()) -> None:
        self.path = Path(path)
        self.secrets = [s for s in secrets if s]
        self._redact = Redactor(self.secrets)  # built once: every line is redacted by it
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._fh = self.path.open("a", encoding="ascii")
        self._grouped = False
        self._last_sync = time.monotonic()
        self.rows = 0  # rows appended (the header is not one)
        try:
            self._write({"journal": JOURNAL_VERSION, "run": identity})
        except BaseException:  # e.g. a full disk: no header, no journal (the run holds nothing yet)
            self.remove()
            raise

    def _write(self, obj: dict, sync: bool = True) -> None:
        line = json.dumps(strict_json_value(obj, self._redact), ensure_ascii=True, allow_nan=False)
        self._fh.write(line + "\n")
        self._fh.flush()
        if sync or time.monotonic() - self._last_sync >= GROUP_SYNC_S:
            os.fsync(self._fh.fileno())
            self._last_sync = time.monotonic()

    def append(self, row: dict) -> None:
        """Append one row and make it durable (flush + fsync) before returning; inside
        :meth:`grouped`, flushed (it survives the process being killed) and fsynced with the group."""
        self._write(row, sync=not self._grouped or "batch" in row)
        self.rows += 1

    @contextlib.contextmanager
    def grouped(self) -> Iterator[None]:
        """Rows appended inside are flushed at once but fsynced together (at the end, and at least
        every :data:`GROUP_SYNC_S`): for rows that are safe elsewhere until then — the results of a
        Message Batch, which ``--resume`` collects again. Batch lines are always fsynced at once."""
        self._grouped = True
        try:
            yield
        finally:
            self._grouped = False
            if not self._fh.closed:
                self._fh.flush()
                os.fsync(self._fh.fileno())

    def close(self) -> None:
        if not self._fh.closed:
            self._fh.close()

    def remove(self) -> None:
        """Delete the journal (after the run's results were written in full)."""
        try:
            self.close()  # may fail to flush a line a full disk refused: the file goes all the same
        finally:
            self.path.unlink(missing_ok=True)


def read_rows(path: Path) -> tuple[dict, dict[str, QuestionResult]]:
    """``(run identity, {question id: row})`` from a journal or a results file, every row checked
    (:meth:`QuestionResult.from_json`) before anything is graded.

    A results file gives its ``run`` and ``results``; a journal its header and rows (last wins),
    and its batch lines as the run's ``judge_batch`` (a list, as in a results file; absent when
    the journal has none). Raises :class:`InputError` naming the file, the line or field, and the
    fix, when ``path`` is neither or holds a row that is not one."""
    path = Path(path)
    if not path.is_file():
        raise InputError(f"--resume {path}: no such file: pass a results file or a run's .journal.jsonl")
    try:
        doc = read_json_file(path, "results file or journal", fix="pass a results file or a run's .journal.jsonl")
    except InputError:
        doc = None  # a journal is JSON lines: read below
    if isinstance(doc, dict) and isinstance(doc.get("results"), list) and isinstance(doc.get("run"), dict):
        result = RunResult.from_json(doc, f"--resume {path}")
        run = result.run.to_json()
        asked = getattr(result.adaptive, "request", None)  # --until-decided / --target-ci, for --resume to ask again
        if asked:
            run["adaptive"] = asked
        return run, {r.question_id: r for r in result.rows}
    try:
        with open(path, "rb") as fh:
            data = fh.read(MAX_RESULTS_BYTES + 1)
        text = data.decode("utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InputError(f"--resume {path}: cannot be read ({type(err).__name__}): pass a results file or "
                         "a journal") from None
    if len(data) > MAX_RESULTS_BYTES:
        raise InputError(f"--resume {path}: over the {MAX_RESULTS_BYTES:,}-byte limit of a journal: pass its "
                         "results file instead")
    lines = text.splitlines()
    try:
        header = json.loads(lines[0]) if lines else None
    except (ValueError, RecursionError):
        header = None
    if not isinstance(header, dict) or header.get("journal") != JOURNAL_VERSION:
        raise InputError(f"--resume {path}: neither a results file nor a journal: pass benchmark_results.json, "
                         "a file from runs/, or a runs/*.journal.jsonl")
    rows: dict[str, QuestionResult] = {}
    batches: dict[str, dict] = {}  # batch id → its last line (insertion order: first submission)
    last = len(lines) - 1
    for n, line in enumerate(lines[1:], start=2):
        try:
            row = parse_json(line, f"--resume {path}: line {n}")
        except InputError:
            if n - 1 == last:  # a torn last line: the process was killed while writing it
                continue
            raise
        if isinstance(row, dict) and "question_id" in row:
            result = QuestionResult.from_json(row, f"--resume {path}: line {n}")
            rows[result.question_id] = result
        elif isinstance(row, dict) and isinstance(row.get("batch"), dict) and isinstance(row["batch"].get("id"), str):
            batches[row["batch"]["id"]] = {**batches.get(row["batch"]["id"], {}), **row["batch"]}
    run = dict(header.get("run") or {})
    if batches:
        run["judge_batch"] = list(batches.values())
    return run, rows
