"""The judgment store: relevance labels (0-3) kept by content, so that a label is paid for once.

An embedded SQLite file (default ``$XDG_STATE_HOME/retrieval-benchmark/judgments.sqlite``; ``pool
--store PATH``). Only ``pool`` opens it: a run, ``validate``, ``audit-judge``, ``--until-decided`` and
the retrieval grader never do, since grades are not cached.

**The key** of a judgment is the SHA-256 of its content (:func:`judgment_key`): the question (its
text and its expected answer), the chunk's text as the judge read it, the judge (provider, model,
base URL without credentials), the prompt's SHA-256, and the offline judge's corpus fingerprint
(its term weights come from the corpus; empty for a judge that calls a model). ``pair_key`` is the
same without the prompt and the fingerprint: a judgment under the same ``pair_key`` and another key
was written with another prompt (or corpus) and is not reused (:meth:`JudgmentStore.other_prompt`).

**Safety.** Write-ahead logging (``journal_mode=WAL``) and a busy timeout make it safe across
processes; one connection guarded by a lock makes it safe across threads (``--concurrency``). Each
judgment is committed as it arrives: a Ctrl-C loses none that was answered. A file that is not a
judgment store (its ``application_id`` and ``meta`` table say so), a corrupt file or one locked past
the busy timeout is refused with one :class:`~utils.errors.InputError` (exit 2), the file untouched.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

from utils.errors import InputError

APPLICATION_ID = 0x52424A53  # "RBJS": a retrieval-benchmark judgment store
FORMAT = "retrieval-benchmark judgment store"
VERSION = 1
BUSY_TIMEOUT_MS = 5000
STORE_NAME = "judgments.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    pair_key TEXT NOT NULL,
    label INTEGER NOT NULL CHECK (label BETWEEN 0 AND 3),
    provider TEXT NOT NULL,
    model TEXT NOT NULL,
    base_url TEXT NOT NULL,
    prompt_sha256 TEXT NOT NULL,
    fingerprint TEXT NOT NULL,
    created_at TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS judgments_pair ON judgments (pair_key);
"""


@dataclass(frozen=True)
class JudgeKey:
    """Who labels, as the store keys it: provider, model, base URL (credentials removed, "" for
    none), the prompt's SHA-256 and the corpus fingerprint ("" for a judge that calls a model)."""

    provider: str
    model: str
    base_url: str
    prompt_sha256: str
    fingerprint: str = ""


@dataclass(frozen=True)
class StoredJudgment:
    """A label the store holds, and when it was written (ISO 8601, UTC)."""

    label: int
    created_at: str


def public_url(url: str | None) -> str:
    """``url`` without its user name and password ("" for None): what the key and the files keep."""
    if not url:
        return ""
    parts = urlsplit(url)
    host = parts.hostname or ""
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


_ENCODER = json.JSONEncoder(ensure_ascii=False)


def _digest(values: Iterable[str]) -> str:
    return hashlib.sha256(_ENCODER.encode(list(values)).encode("utf-8", "surrogatepass")).hexdigest()


def pair_key(question: str, expected_answer: str | None, chunk_text: str, judge: JudgeKey) -> str:
    """The key of a (question, chunk, judge) whatever the prompt and corpus."""
    return _digest(["pair", question, expected_answer or "", chunk_text, judge.provider, judge.model, judge.base_url])


def judgment_key(question: str, expected_answer: str | None, chunk_text: str, judge: JudgeKey) -> str:
    """The store key of one judgment (module docstring)."""
    return _digest(["judgment", question, expected_answer or "", chunk_text, judge.provider, judge.model,
                    judge.base_url, judge.prompt_sha256, judge.fingerprint])


def default_store(state_dir: Path) -> Path:
    return Path(state_dir) / STORE_NAME


class JudgmentStore:
    """An open judgment store (module docstring). Use as a context manager, or :meth:`close` it."""

    def __init__(self, path: str | Path) -> None:
        self.path = Path(path)
        self._lock = threading.Lock()
        if self.path.is_dir():
            raise InputError(f"--store {self.path} is a folder: give the path of a judgment store file")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._db = sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, check_same_thread=False,
                                       isolation_level=None)
        except (OSError, sqlite3.Error) as err:
            raise InputError(f"--store {self.path}: cannot be opened ({err}): check the path and its "
                             "permissions") from None
        try:
            self._open()
        except sqlite3.Error as err:
            self._db.close()
            raise self._refusal(err) from None
        except InputError:
            self._db.close()
            raise

    def _open(self) -> None:
        db = self._db
        db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        app = db.execute("PRAGMA application_id").fetchone()[0]
        tables = {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if app == 0 and not tables:  # a new (or empty) file: made a store
            db.execute("PRAGMA journal_mode = WAL")
            db.execute("PRAGMA synchronous = NORMAL")
            db.execute(f"PRAGMA application_id = {APPLICATION_ID}")
            db.executescript(_SCHEMA)
            db.execute("INSERT OR IGNORE INTO meta VALUES ('format', ?), ('version', ?)", (FORMAT, str(VERSION)))
            return
        meta = dict(db.execute("SELECT key, value FROM meta").fetchall()) if "meta" in tables else {}
        if app != APPLICATION_ID or meta.get("format") != FORMAT or "judgments" not in tables:
            raise InputError(f"--store {self.path} is not a judgment store (an SQLite file written by something "
                             "else): give another path, or leave --store out for the default store")
        if meta.get("version") != str(VERSION):
            raise InputError(f"--store {self.path} is a judgment store of version {meta.get('version')}, which this "
                             f"version does not read ({VERSION}): give another path")
        db.execute("PRAGMA journal_mode = WAL")
        db.execute("PRAGMA synchronous = NORMAL")  # with WAL: a commit survives the process ending (Ctrl-C)
        db.execute("BEGIN IMMEDIATE")  # can it be written? A lock held past the busy timeout is refused now,
        db.execute("COMMIT")  # before any judge call is paid for

    def _refusal(self, err: sqlite3.Error) -> InputError:
        text = str(err)
        if "locked" in text or "busy" in text:
            return InputError(f"--store {self.path} is locked by another process (waited {BUSY_TIMEOUT_MS / 1000:g} "
                              "s): let it finish, or give another --store; nothing was changed")
        return InputError(f"--store {self.path} cannot be read as a judgment store ({text}): it may be damaged: "
                          "give another --store; the file was not changed")

    def __enter__(self) -> JudgmentStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def _run(self, sql: str, params: tuple = ()) -> list[tuple]:
        with self._lock:
            try:
                return self._db.execute(sql, params).fetchall()
            except sqlite3.Error as err:
                raise self._refusal(err) from None

    # ------------------------------------------------------------------ reading

    def judgments_of(self, judge: JudgeKey) -> dict[str, StoredJudgment]:
        """Every judgment by ``judge``'s provider and model, by key (one query: a warm pool of
        20,000 pairs reads them at once)."""
        rows = self._run("SELECT key, label, created_at FROM judgments WHERE provider = ? AND model = ? "
                         "AND base_url = ?", (judge.provider, judge.model, judge.base_url))
        return {key: StoredJudgment(label, created) for key, label, created in rows}

    def other_prompt(self, judge: JudgeKey, pending: Iterable[tuple[str, str]]) -> int:
        """How many of the ``pending`` judgments (``(pair key, prompt SHA-256)``, none of them in the
        store) the store holds under another prompt or corpus fingerprint: judgments skipped."""
        rows = self._run("SELECT pair_key, prompt_sha256, fingerprint FROM judgments WHERE provider = ? AND model = ? "
                         "AND base_url = ?", (judge.provider, judge.model, judge.base_url))
        held: dict[str, set[tuple[str, str]]] = {}
        for pair, prompt, fp in rows:
            held.setdefault(pair, set()).add((prompt, fp))
        return sum(1 for pair, prompt in pending if held.get(pair, set()) - {(prompt, judge.fingerprint)})

    def count(self) -> int:
        return self._run("SELECT COUNT(*) FROM judgments")[0][0]

    # ------------------------------------------------------------------ writing

    def put(self, judge: JudgeKey, judgments: Iterable[tuple[str, str, int]], created_at: str) -> None:
        """Keep ``judgments`` (key, pair key, label) of one call, committed together at once (a key the
        store holds already is kept as it was)."""
        rows = [(key, pair, label, judge.provider, judge.model, judge.base_url, judge.prompt_sha256, judge.fingerprint,
                 created_at) for key, pair, label in judgments]
        with self._lock:
            try:
                self._db.execute("BEGIN IMMEDIATE")  # one transaction: all of the call's labels, or none
                try:
                    self._db.executemany("INSERT OR IGNORE INTO judgments VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)", rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
            except sqlite3.Error as err:
                raise self._refusal(err) from None
