"""Index cache: the chunks and a retriever's index, persisted so that the next run over the same
corpus skips parsing, chunking and indexing (a warm start).

The folder is ``--cache-dir``, by default ``$XDG_CACHE_HOME/retrieval-benchmark`` else
``~/.cache/retrieval-benchmark`` (:func:`utils.settings.default_cache_dir`); ``--no-cache`` reads
and writes nothing.

:func:`prepare_index` is the one call a run makes. It fingerprints the corpus from its raw bytes
(no Markdown parsing), checks the doc ids, and then either loads the cache entry for the key or
builds the chunks and the index and stores them as a new entry.

The key is the SHA-256 of: the corpus content (its reader's fingerprint: doc ids and raw bytes, or a
BEIR ``corpus.jsonl``'s lines; the same digest as the ``sha256`` of
:func:`components.readers.load_corpus`), the chunker settings (chunk size and overlap included), the
strategy name, the retriever's classes and public settings (scalar attributes, nested retrievers
included), the source files of every corpus reader (:mod:`components.readers`), of the chunker
(``components/core/chunking.py``) and of every module defining a class of the retriever, and the
versions of python, bm25s, PyStemmer, wordllama and numpy. Any change to one of them is a new entry;
old entries stay until the folder is deleted (nothing is evicted).

Layout: ``<cache dir>/index-v2/<key>/`` holds ``meta.json`` (format, key, the key's parts, the
size and SHA-256 of every other file), ``chunks.jsonl`` (one JSON array per chunk, the header line
names the fields) and ``retriever/`` (whatever the retriever's ``save`` wrote). Only JSON and
``.npy`` files (``allow_pickle=False``) are read back: nothing in the cache can run code.

Integrity: before an entry is used, every file in it must be a regular file (no symlink, FIFO,
device or socket: nothing that blocks or never ends), be listed in ``meta.json`` (nothing added or
missing), and have the size and SHA-256 recorded when the entry was stored; ``meta.json`` itself is
read only when it is a regular file of at most :data:`MAX_META_BYTES`. A file edited since — even to
the same size — makes the entry unusable: it is rebuilt, with one warning, and the run never
indexes text the corpus hash does not describe.

A retriever is cached when it has both ``save(folder)`` and ``load(folder, chunks)``:
``save`` writes the index built by ``index(chunks)`` into ``folder``; ``load`` restores it in a
fresh retriever for the same chunks (same list, same order; the cache stores them once) and
raises if ``folder`` does not hold a usable index. A retriever without them (a plug-in that did
not opt in) is built every run and the cache reports ``off``.

Safety: an entry is built in a temporary folder inside the cache folder and moved into place with
one ``os.rename``, so a reader sees a whole entry or none. Two runs at once may both build the
entry; the first rename wins and the other run drops its copy. An entry that cannot be loaded
(missing, truncated, edited or extra file, a file that is not a regular file, garbage, another
format) is logged as ONE warning line, removed and rebuilt. A cache folder that cannot be
written is logged as one warning and the run goes on without the cache (status ``off``).
"""

from __future__ import annotations

import ctypes
import hashlib
import json
import os
import platform
import shutil
import stat
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, fields
from pathlib import Path

from loguru import logger

from components.core import Chunk, Retriever, chunking
from components.core.corpus import BUILTIN_SOURCE
from components.readers import CORPUS, load_corpus, reader_for, readers
from utils.records.versions import package_versions

CACHE_FORMAT = 2  # 2: meta.json records the SHA-256 of every file
MAX_META_BYTES = 1_000_000  # a meta.json larger than this is not read
_HASH_BLOCK = 1 << 20
ENTRIES = f"index-v{CACHE_FORMAT}"
LIBRARIES = ("bm25s", "PyStemmer", "wordllama", "numpy")
STALE_TEMP_S = 24 * 3600  # a temporary folder this old was left by a killed run


@dataclass(frozen=True)
class PreparedIndex:
    """A corpus chunked and indexed, from the cache or freshly built."""

    source: str  # the corpus folder as given, or components.core.corpus.BUILTIN_SOURCE
    sha256: str  # the corpus's digest (Corpus.sha256), as its reader computes it
    doc_ids: frozenset[str]
    chunks: list[Chunk]
    retriever: Retriever  # indexed, ready for retrieve()
    cache: str  # "hit" | "miss" | "off"
    key: str | None  # the entry's key; None when the cache is off
    load_s: float  # fingerprint + load + chunk (miss, off), or fingerprint + reading the chunks (hit)
    index_s: float  # index (miss, off), or loading the saved index (hit)
    save_s: float  # writing the new entry (miss), else 0.0

    @property
    def documents(self) -> int:
        return len(self.doc_ids)

    @property
    def index_info(self) -> dict:
        """What the results record as ``run.index``."""
        return {"cache": self.cache, "key": self.key}


@dataclass(frozen=True)
class CorpusFingerprint:
    """What the key needs from a corpus, read without parsing it."""

    source: str
    doc_ids: frozenset[str]
    sha256: str


class _Unusable(Exception):
    """A cache entry that cannot be loaded (the message is one line)."""


# --------------------------------------------------------------------------- fingerprint and key

def fingerprint(corpus_arg: Path | None) -> CorpusFingerprint:
    """Doc ids and content digest of a corpus, from the raw bytes only (no parsing): its reader's
    fingerprint, the digest :func:`components.readers.load_corpus` gives (``tests/test_index_cache.py``
    checks it)."""
    ids, sha256 = reader_for(corpus_arg, CORPUS).fingerprint(Path(corpus_arg) if corpus_arg is not None else None)
    return CorpusFingerprint(BUILTIN_SOURCE if corpus_arg is None else str(Path(corpus_arg)), ids, sha256)


def _is_retriever(value: object) -> bool:
    return callable(getattr(value, "index", None)) and callable(getattr(value, "retrieve", None))


def describe(retriever: object, _depth: int = 0) -> dict:
    """A retriever's class and public scalar settings, nested retrievers included (e.g. hybrid:
    ``{"class": "poc.hybrid.HybridRetriever", "alpha": 0.5, "pool": 50, "bm25": {...}, ...}``)."""
    cls = type(retriever)
    out: dict = {"class": f"{cls.__module__}.{cls.__qualname__}"}
    for name, value in sorted(getattr(retriever, "__dict__", {}).items()):
        if name.startswith("_"):
            continue
        if value is None or isinstance(value, (bool, int, float, str)):
            out[name] = value
        elif _is_retriever(value) and _depth < 5:
            out[name] = describe(value, _depth + 1)
    return out


def _class_modules(retriever: object, _depth: int = 0) -> set[str]:
    mods = {c.__module__ for c in type(retriever).__mro__ if c.__module__ != "builtins"}
    for value in getattr(retriever, "__dict__", {}).values():
        if _is_retriever(value) and _depth < 5:
            mods |= _class_modules(value, _depth + 1)
    return mods


def _source_digests(module_names: set[str]) -> dict[str, str]:
    out = {}
    for name in sorted(module_names):
        path = getattr(sys.modules.get(name), "__file__", None)
        try:
            out[name] = hashlib.sha256(Path(path).read_bytes()).hexdigest() if path else "no source"
        except OSError:
            out[name] = "no source"
    return out


def _versions() -> dict[str, str]:
    return {"python": platform.python_version(), **package_versions(LIBRARIES)}


def key_parts(corpus_sha256: str, strategy_name: str, retriever: object,
              chunker: chunking.Chunking | None = None) -> dict:
    """Everything the entry depends on (its SHA-256 is the key); ``chunker`` None: the default sizes."""
    corpus_readers = {r.module for r in readers().values() if r.reads == CORPUS}
    return {
        "format": CACHE_FORMAT,
        "corpus_sha256": corpus_sha256,
        "chunker": (chunker or chunking.Chunking()).to_json(),
        "strategy": strategy_name,
        "retriever": describe(retriever),
        "code": _source_digests({chunking.__name__, *corpus_readers} | _class_modules(retriever)),
        "versions": _versions(),
    }


def cache_key(parts: dict) -> str:
    return hashlib.sha256(json.dumps(parts, sort_keys=True).encode()).hexdigest()


def cacheable(retriever: object) -> bool:
    """A retriever opts in to the cache with ``save(folder)`` and ``load(folder, chunks)``."""
    return callable(getattr(retriever, "save", None)) and callable(getattr(retriever, "load", None))


# --------------------------------------------------------------------------- chunks file

_CHUNK_FIELDS = [f.name for f in fields(Chunk)]


def write_chunks(path: Path, chunks: list[Chunk]) -> None:
    """One JSON array per line, the first line ``{"fields": [...]}`` (Chunk's field names)."""
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps({"fields": _CHUNK_FIELDS}) + "\n")
        for c in chunks:
            fh.write(json.dumps([getattr(c, name) for name in _CHUNK_FIELDS], ensure_ascii=False) + "\n")


def read_chunks(path: Path) -> list[Chunk]:
    """The chunks :func:`write_chunks` wrote; ``ValueError`` for anything else."""
    heading_path = _CHUNK_FIELDS.index("heading_path")
    with open(path, encoding="utf-8") as fh:
        header = json.loads(fh.readline() or "null")
        if not isinstance(header, dict) or header.get("fields") != _CHUNK_FIELDS:
            raise ValueError(f"{path.name} has fields {header!r}, expected {_CHUNK_FIELDS}")
        chunks = []
        for line in fh:
            row = json.loads(line)
            if not isinstance(row, list) or len(row) != len(_CHUNK_FIELDS):
                raise ValueError(f"{path.name} line {len(chunks) + 2} is not a chunk")
            row[heading_path] = tuple(row[heading_path])
            chunks.append(Chunk(*row))
    return chunks


# --------------------------------------------------------------------------- entries

def _file_digests(folder: Path) -> dict[str, dict]:
    """``{relative path: {"size": bytes, "sha256": hex}}`` of every file under ``folder`` (at save)."""
    out = {}
    for p in sorted(folder.rglob("*")):
        if p.is_file():
            data = p.read_bytes()
            out[str(p.relative_to(folder))] = {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}
    return out


def _open_regular(path: Path, name: str) -> int:
    """A read-only descriptor of ``path`` when it is a regular file (a symlink is refused, and a FIFO
    cannot block the open), else :class:`_Unusable`."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except FileNotFoundError:
        raise _Unusable(f"{name} is missing") from None
    except OSError as err:
        raise _Unusable(f"{name} cannot be opened as a regular file ({err.strerror})") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _Unusable(f"{name} is not a regular file")
    return fd


def _read_meta(entry: Path) -> object:
    fd = _open_regular(entry / "meta.json", "meta.json")
    with open(fd, "rb") as fh:
        data = fh.read(MAX_META_BYTES + 1)
    if len(data) > MAX_META_BYTES:
        raise _Unusable(f"meta.json is larger than {MAX_META_BYTES:,} bytes")
    return json.loads(data.decode("utf-8"))


def _check_files(entry: Path, files: dict) -> None:
    """Every file of ``entry`` (but meta.json) is a regular file listed in ``files`` with its size
    and SHA-256, and every listed file is there; else :class:`_Unusable`."""
    present = set()
    for folder, dirs, names in os.walk(entry, followlinks=False):
        for name in dirs + names:
            path = Path(folder) / name
            rel = str(path.relative_to(entry))
            mode = os.lstat(path).st_mode
            if stat.S_ISDIR(mode):
                continue
            if not stat.S_ISREG(mode):
                raise _Unusable(f"{rel} is not a regular file")
            if rel != "meta.json":
                present.add(rel)
    listed = set(files)
    if present != listed:
        extra, missing = sorted(present - listed), sorted(listed - present)
        raise _Unusable(f"{(extra or missing)[0]} is {'not listed in meta.json' if extra else 'missing'}")
    for rel in sorted(listed):
        record = files[rel]
        if not isinstance(record, dict) or not isinstance(record.get("size"), int) \
                or not isinstance(record.get("sha256"), str):
            raise _Unusable(f"meta.json has no size and sha256 for {rel}")
        fd = _open_regular(entry / rel, rel)
        digest = hashlib.sha256()
        with open(fd, "rb") as fh:
            size = 0
            while size <= record["size"]:
                block = fh.read(min(_HASH_BLOCK, record["size"] + 1 - size))
                if not block:
                    break
                size += len(block)
                digest.update(block)
        if size != record["size"]:
            raise _Unusable(f"{rel} has {'more than ' if size > record['size'] else ''}{size} bytes, "
                            f"{record['size']} were written")
        if digest.hexdigest() != record["sha256"]:
            raise _Unusable(f"{rel} was changed since it was stored (its SHA-256 differs)")


def _one_line(err: BaseException) -> str:
    text = str(err).strip().splitlines()
    return f"{type(err).__name__}: {text[0][:200]}" if text else type(err).__name__


def _load_entry(entry: Path, key: str, retriever: Retriever) -> tuple[list[Chunk], float]:
    """Load ``entry`` into the fresh ``retriever``: ``(chunks, perf_counter when the chunks were
    read)``, else :class:`_Unusable`."""
    try:
        if not stat.S_ISDIR(os.lstat(entry).st_mode):
            raise _Unusable("it is not a folder")
        meta = _read_meta(entry)
        if not isinstance(meta, dict) or meta.get("format") != CACHE_FORMAT or meta.get("key") != key:
            raise _Unusable(f"meta.json is not a format-{CACHE_FORMAT} entry for this key")
        files = meta.get("files")
        if not isinstance(files, dict) or "chunks.jsonl" not in files:
            raise _Unusable("meta.json lists no files")
        _check_files(entry, files)
        chunks = read_chunks(entry / "chunks.jsonl")
        if len(chunks) != meta.get("chunks"):
            raise _Unusable(f"chunks.jsonl holds {len(chunks)} chunks, meta.json says {meta.get('chunks')}")
        chunks_read = time.perf_counter()
        retriever.load(entry / "retriever", chunks)
    except _Unusable:
        raise
    except Exception as err:  # whatever a damaged file makes json, numpy, bm25s or a plug-in raise
        raise _Unusable(_one_line(err)) from err
    return chunks, chunks_read


def _discard(entries: Path, entry: Path) -> None:
    """Move a broken entry out of the way (atomic) and delete it; another run may race us."""
    trash = entries / f".trash-{entry.name[:16]}-{os.getpid()}-{time.monotonic_ns()}"
    try:
        os.rename(entry, trash)
    except OSError:
        return  # already moved or replaced by another run
    shutil.rmtree(trash, ignore_errors=True)


def _sweep(entries: Path) -> None:
    """Delete temporary folders that killed runs left behind (older than a day)."""
    now = time.time()
    for p in entries.iterdir():
        if p.name.startswith((".tmp-", ".trash-")):
            try:
                if now - p.stat().st_mtime > STALE_TEMP_S:
                    shutil.rmtree(p, ignore_errors=True)
            except OSError:
                pass


def _save_entry(entries: Path, key: str, parts: dict, chunks: list[Chunk], retriever: Retriever) -> bool:
    """Write a new entry atomically. False (and one warning) when it could not be written."""
    tmp: Path | None = None
    try:
        _sweep(entries)
        tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=entries))
        write_chunks(tmp / "chunks.jsonl", chunks)
        (tmp / "retriever").mkdir()
        retriever.save(tmp / "retriever")
        meta = {"format": CACHE_FORMAT, "key": key, "chunks": len(chunks), "parts": parts,
                "files": _file_digests(tmp)}
        (tmp / "meta.json").write_text(json.dumps(meta, indent=1), encoding="utf-8")
        os.chmod(tmp, 0o777 & ~_umask())  # mkdtemp makes it 0700
        try:
            os.rename(tmp, entries / key)
        except OSError:
            if not (entries / key).is_dir():
                raise
            # another run stored the same entry first: keep theirs
        else:
            tmp = None
        return True
    except Exception as err:
        logger.warning("index cache: could not store the index in {} ({}); the run goes on without it",
                       entries, _one_line(err))
        return False
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


# --------------------------------------------------------------------------- the run's call

def _build(corpus_arg: Path | None, retriever: Retriever, check_ids: Callable[[frozenset[str], str], None] | None,
           chunker: chunking.Chunking | None = None) -> tuple[CorpusFingerprint, list[Chunk], float, float]:
    """Load, chunk and index into ``retriever``: ``(fingerprint, chunks, load_s, index_s)``. The
    parsed documents are dropped before indexing (at 100k pages they are most of a gigabyte)."""
    t0 = time.perf_counter()
    corpus = load_corpus(corpus_arg)
    fp = CorpusFingerprint(corpus.source, frozenset(corpus.ids()), corpus.sha256)
    if check_ids is not None:
        check_ids(fp.doc_ids, fp.source)
    chunks = chunking.chunk_corpus(corpus.documents, chunker)
    del corpus
    _release_freed_memory()
    t1 = time.perf_counter()
    retriever.index(chunks)
    return fp, chunks, t1 - t0, time.perf_counter() - t1


def _release_freed_memory() -> None:
    """Give the parsed documents' freed memory back to the OS. glibc keeps it in the heap, where
    what comes next (pymalloc arenas, numpy arrays: separate mappings) hardly reuses it: at 30k
    synthetic pages this lowers the BM25 build's peak RSS by 0.1 GB (bench/scale.py). glibc only;
    elsewhere a no-op."""
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):
        pass


def _uncached(corpus_arg: Path | None, retriever: Retriever,
              check_ids: Callable[[frozenset[str], str], None] | None = None,
              chunker: chunking.Chunking | None = None) -> PreparedIndex:
    fp, chunks, load_s, index_s = _build(corpus_arg, retriever, check_ids, chunker)
    return PreparedIndex(fp.source, fp.sha256, fp.doc_ids, chunks, retriever, "off", None,
                         load_s=load_s, index_s=index_s, save_s=0.0)


def prepare_index(corpus_arg: Path | None, strategy_name: str, make_retriever: Callable[[], Retriever],
                  cache_dir: Path | None, *, check_ids: Callable[[frozenset[str], str], None] | None = None,
                  chunker: chunking.Chunking | None = None) -> PreparedIndex:
    """Chunk (with ``chunker``'s sizes; None: the defaults) and index a corpus (``None`` = the
    built-in one), through the cache in ``cache_dir`` (``None`` = ``--no-cache``: nothing read or written).

    ``make_retriever()`` returns a fresh, unindexed retriever (called again when a broken entry
    must be rebuilt; not timed, like the strategy's imports). ``check_ids(doc_ids, source)`` runs
    before any chunking or indexing (the run checks the needles with it) and may raise. Raises
    :class:`utils.errors.InputError` for a bad corpus folder; a cache problem is a warning, never
    an error. ``load_s`` times fingerprint + reading the chunks on a hit, else load + chunk;
    ``index_s`` times loading the stored index on a hit, else indexing.
    """
    retriever = make_retriever()
    if cache_dir is not None and not cacheable(retriever):
        logger.debug("index cache: {} has no save/load: not cached", type(retriever).__name__)
        cache_dir = None
    if cache_dir is None:  # no fingerprint: _build reads the corpus once
        return _uncached(corpus_arg, retriever, check_ids, chunker)
    t0 = time.perf_counter()
    fp = fingerprint(corpus_arg)
    if check_ids is not None:
        check_ids(fp.doc_ids, fp.source)
    entries = Path(cache_dir) / ENTRIES
    try:
        entries.mkdir(parents=True, exist_ok=True)
    except OSError as err:
        logger.warning("index cache: cannot use {} ({}); running without it (pass --cache-dir DIR or --no-cache)",
                       cache_dir, _one_line(err))
        return _uncached(corpus_arg, retriever, chunker=chunker)
    parts = key_parts(fp.sha256, strategy_name, retriever, chunker)
    key = cache_key(parts)
    entry = entries / key
    if os.path.lexists(entry):
        try:
            chunks, t1 = _load_entry(entry, key, retriever)
        except _Unusable as err:
            logger.warning("index cache: entry {} is unusable ({}); rebuilding it", entry, err)
            _discard(entries, entry)
            retriever = make_retriever()  # the failed load may have left it half set
        else:
            logger.debug("index cache hit: {}", entry)
            return PreparedIndex(fp.source, fp.sha256, fp.doc_ids, chunks, retriever, "hit", key,
                                 load_s=t1 - t0, index_s=time.perf_counter() - t1, save_s=0.0)
    before = time.perf_counter() - t0  # fingerprint, key, any failed load
    built_fp, chunks, load_s, index_s = _build(corpus_arg, retriever, None, chunker)
    load_s += before
    if built_fp.sha256 != fp.sha256:  # the files changed while we read them: store under what was indexed
        parts = key_parts(built_fp.sha256, strategy_name, retriever, chunker)
        key = cache_key(parts)
    t3 = time.perf_counter()
    stored = _save_entry(entries, key, parts, chunks, retriever)
    save_s = time.perf_counter() - t3
    logger.debug("index cache miss: {} {} in {:.2f}s", entries / key, "stored" if stored else "not stored", save_s)
    return PreparedIndex(built_fp.source, built_fp.sha256, built_fp.doc_ids, chunks, retriever, "miss", key,
                         load_s=load_s, index_s=index_s, save_s=save_s)
