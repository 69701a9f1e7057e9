"""Writing output files safely: strict JSON with every secret redacted, atomic writes, and the
paths an output may take.

* :func:`strict_json_value` / :func:`to_strict_json`: any value as strict JSON, secrets redacted
  (:mod:`utils.redaction`);
* :func:`write_json_atomic` / :func:`write_text_atomic`: a reader sees the old file or the new one,
  never a partial one; :func:`remove_temp_files` for an exit that skips ``finally`` blocks;
* :func:`check_output` (and :func:`resolve_output`, the run's ``--output``): where an output of any
  command may go (never an input file, never inside the corpus, only a regular file; a missing
  folder must be one that can be created); :func:`check_writable`: whether a file can be written
  there. A missing folder is created by the write itself (:func:`make_folders`), never before: a
  command that fails before writing leaves no empty folder behind.
"""

from __future__ import annotations

import json
import math
import numbers
import os
import stat
import tempfile
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, is_dataclass
from pathlib import Path
from typing import Any, TextIO

from loguru import logger

from utils.errors import InputError, ResultsWriteError
from utils.files.lines import file_kind
from utils.redaction import Redactor


# --------------------------------------------------------------------------- strict JSON

MAX_JSON_DEPTH = 100  # containers nested deeper than this are written as a short note instead
_HUGE_INT_BITS = 13_000  # past ~4,300 digits int → str raises (sys.get_int_max_str_digits)


def strict_json_value(value: Any, secrets: Iterable[str] | Redactor = ()) -> Any:
    """A copy of ``value`` that strict JSON can hold, with every secret gone.

    Every string value and key has each secret (in every spelling, see :mod:`utils.redaction`)
    replaced by ``[REDACTED]`` *before* serialisation; lone surrogates become U+FFFD (a pair of
    surrogate code points becomes the character it encodes); NaN and ±infinity, and integers too
    large to print, become ``None``; tuples and sets become lists; dataclasses become dicts; numpy
    scalars and arrays become Python numbers and lists; keys that are not strings become the
    strings ``json`` would make of them; a container nested deeper than :data:`MAX_JSON_DEPTH`, or
    holding itself, becomes a short note; anything else becomes ``str(value)``.
    """
    redact = secrets if isinstance(secrets, Redactor) else Redactor(secrets)
    return _clean(value, redact, 0, set())


def to_strict_json(payload: Any, secrets: Iterable[str] | Redactor = (), *, indent: int | None = 2) -> str:
    """``payload`` as strict JSON text (see :func:`strict_json_value`): no NaN/Infinity, every secret
    redacted, encodable as UTF-8. ``indent=None`` gives one line (a journal row)."""
    return json.dumps(strict_json_value(payload, secrets), indent=indent, ensure_ascii=False, allow_nan=False)


def _text(text: str, redact: Redactor) -> str:
    text = redact(str.__str__(text))
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:  # lone surrogates: pairs recombine, the rest become U+FFFD
        text = redact(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))
    return text


def _int(value: int) -> int | None:
    value = int(value)
    if value.bit_length() > _HUGE_INT_BITS:
        try:
            repr(value)
        except ValueError:
            return None
    return value


def _key(key: Any, redact: Redactor) -> str:
    if isinstance(key, str):
        return _text(key, redact)
    if key is None or isinstance(key, (bool, int, float)):
        try:
            return json.dumps(key)
        except ValueError:  # an integer too large to print
            return "[huge integer]"
    return _text(str(key), redact)


def _clean(value: Any, redact: Redactor, depth: int, path: set[int]) -> Any:
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        return _text(value, redact)
    if isinstance(value, int):
        return _int(value)
    if isinstance(value, float):
        value = float(value)
        return value if math.isfinite(value) else None
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if depth >= MAX_JSON_DEPTH:
            return f"[nested deeper than {MAX_JSON_DEPTH} levels]"
        if id(value) in path:
            return "[circular reference]"
        path.add(id(value))
        try:
            if isinstance(value, dict):
                return {_key(k, redact): _clean(v, redact, depth + 1, path) for k, v in value.items()}
            return [_clean(v, redact, depth + 1, path) for v in value]
        finally:
            path.discard(id(value))
    if is_dataclass(value) and not isinstance(value, type):
        return _clean(asdict(value), redact, depth, path)
    if type(value).__module__ == "numpy" and hasattr(value, "tolist"):
        return _clean(value.tolist(), redact, depth, path)
    if isinstance(value, numbers.Integral):
        return _int(value)
    if isinstance(value, numbers.Real):
        return _clean(float(value), redact, depth, path)
    return _text(str(value), redact)


# --------------------------------------------------------------------------- where and how results are written

DEFAULT_OUTPUT_NAME = "benchmark_results.json"

_TEMP_FILES: set[str] = set()  # temp files of the writes in progress (see remove_temp_files)


@dataclass(frozen=True)
class StrictJSON:
    """A payload made strict JSON once (:func:`strict_json_value`, every secret redacted), to be
    written to several files without cleaning it again for each."""

    value: Any


def write_json_atomic(path: Path, payload: Any, secrets: Iterable[str] | Redactor = ()) -> None:
    """Write ``payload`` as strict JSON (:func:`strict_json_value`: every secret redacted, no
    NaN/Infinity; a :class:`StrictJSON` is written as it is) to ``path`` atomically, streamed (no
    second copy of the text in memory). See :func:`write_text_atomic` for what atomic means here."""
    # before any file exists: an error here leaves nothing behind
    clean = payload.value if isinstance(payload, StrictJSON) else strict_json_value(payload, secrets)

    def dump(fh: TextIO) -> None:
        json.dump(clean, fh, indent=2, ensure_ascii=False, allow_nan=False)
        fh.write("\n")

    _write_atomic(Path(path), dump)


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``path`` atomically: a reader sees the old file or the new one,
    never a partial one.

    The temp file (``.<name>.<random>.tmp`` in the same folder) is removed on every failure,
    including ``KeyboardInterrupt``/``SystemExit`` at any point; an earlier file at ``path`` is left
    as it was. A failure to write (a full disk, the folder gone) raises :class:`ResultsWriteError`.
    A new file gets the mode an ordinary write gives (0666 less the umask); an earlier file's mode
    is kept. A missing folder on the way is created first (:func:`make_folders`).
    """
    _write_atomic(Path(path), lambda fh: fh.write(text))


def _write_atomic(path: Path, write: Callable[[TextIO], object]) -> None:
    tmp: str | None = None
    try:
        make_folders(path.parent)
        try:
            mode = stat.S_IMODE(os.stat(path).st_mode)
        except FileNotFoundError:
            mode = None
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
        while True:
            tmp = str(path.parent / f".{path.name}.{os.urandom(6).hex()}.tmp")
            _TEMP_FILES.add(tmp)  # named before it exists, so an interrupt right after creation still finds it
            try:
                fh = open(os.open(tmp, flags, 0o666), "w", encoding="utf-8")
                break
            except FileExistsError:  # someone else's file: not ours to remove
                _TEMP_FILES.discard(tmp)
                tmp = None
        with fh:
            if mode is not None:
                os.fchmod(fh.fileno(), mode)
            write(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
        _fsync_folder(path.parent)
    except OSError as err:
        raise ResultsWriteError(str(path), err.strerror or str(err)) from err
    finally:
        if tmp is not None:
            _TEMP_FILES.discard(tmp)
            try:
                os.unlink(tmp)  # after os.replace the name is gone already
            except OSError:
                pass


def remove_temp_files() -> None:
    """Remove the temp file of every write in progress. For an exit that skips ``finally`` blocks
    (``os._exit`` on a second signal): call it first, and no partial results file is left behind."""
    for tmp in list(_TEMP_FILES):
        _TEMP_FILES.discard(tmp)
        try:
            os.unlink(tmp)
        except OSError:
            pass


def _fsync_folder(folder: Path) -> None:
    """Make the rename durable; best effort (some file systems cannot fsync a folder)."""
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def resolve_output(output: str | os.PathLike, *, questions_path: str | os.PathLike | None,
                   corpus_dir: str | os.PathLike | None, inputs: Iterable[tuple[str, Input]] = ()) -> Path:
    """The file the results go to, for ``--output output``: :func:`check_output` with the questions
    file and ``inputs`` (the run's other input files: a baseline, a panel file, ...) as the inputs and
    ``corpus_dir`` as the corpus. ``questions_path`` ``-`` (stdin) or ``None``, and ``corpus_dir``
    ``None`` (the built-in corpus), are not checked against."""
    return check_output(output, option="--output", inputs=[("the questions file", questions_path), *inputs],
                        corpus=corpus_dir, example=DEFAULT_OUTPUT_NAME)


Input = str | os.PathLike | None
"""An input of a command: a path (``None`` and ``-``, standard input, are skipped)."""


def check_output(output: str | os.PathLike, *, option: str, inputs: Iterable[Input | tuple[str, Input]] = (),
                 corpus: str | os.PathLike | None = None, example: str = DEFAULT_OUTPUT_NAME,
                 recorded_corpora: Iterable[str | os.PathLike] = ()) -> Path:
    """The file a command's output option (``option``, e.g. ``--json``) writes to; raises
    :class:`InputError` (one line naming the problem and the fix) when writing there could destroy
    something. The one rule of every command's output:

    * a path ending in ``/``, or an existing folder, means a folder: ``<folder>/<example>``;
    * a symlink is written through (the link stays, the file it names gets the output): the real
      path is returned;
    * refused: any of ``inputs`` (paths, or ``(what, path)`` pairs naming them in the message), in
      any spelling (the same file by ``os.path.samefile``: another spelling, hard links and symlinks
      included); anything inside the ``corpus`` folder, or inside a corpus folder a run read by the
      command records (``recorded_corpora``: :func:`utils.results.recorded_corpora`; a relative one
      is taken from the current folder, as the run took it); anything that exists and is not a regular
      file (a device, a FIFO, a socket, a folder); a folder that cannot be written;
    * a missing folder on the way must be one that can be created (its nearest existing parent a
      folder that can be written); the write creates it (never inside the corpus).

    Nothing is opened, created or written here, so a refusal touches nothing, and neither does a
    command that fails after the check and before its write.
    """
    raw = os.fspath(output)
    path = Path(raw)
    if raw.endswith(("/", os.sep)) or path.is_dir():
        path = path / example
    shown = str(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        raise InputError(f"{option} {shown}: a part of the path is a file, not a folder: choose another path") \
            from None
    except OSError as err:
        raise InputError(f"{option} {shown}: cannot be inspected ({err.strerror}): choose another path") from None
    if st is not None and not stat.S_ISREG(st.st_mode):
        raise InputError(f"{option} {shown} is not a regular file ({file_kind(st.st_mode)}): {option} is only "
                         f"written to a regular file: give a path such as {example}")
    for item in inputs:
        what, given = item if isinstance(item, tuple) else ("an input of this command", item)
        if given is None or os.fspath(given) == "-":
            continue
        if same_file(path, Path(given)):
            raise InputError(f"{option} {shown} is {what} ({os.fspath(given)}): give {option} another path "
                             f"(e.g. {example} in another folder)")
    if corpus is not None and _inside(path, Path(corpus)):
        raise InputError(f"{option} {shown} is inside the corpus folder {os.fspath(corpus)}: give {option} a path "
                         "outside it")
    for recorded in recorded_corpora:
        if _inside(path, Path(recorded)):
            raise InputError(f"{option} {shown} is inside the corpus folder {os.fspath(recorded)}, which the run "
                             f"records: give {option} a path outside it")
    check_writable(path, option, example, shown=shown)
    return path


def make_folders(folder: Path) -> list[Path]:
    """Create ``folder`` and its missing parents; returns the folders created, the outermost first
    (for :func:`remove_empty_folders`). Raises ``OSError`` when one cannot be created."""
    created = []
    missing = Path(folder)
    while not missing.is_dir() and missing != missing.parent:
        created.append(missing)
        missing = missing.parent
    if created:
        Path(folder).mkdir(parents=True, exist_ok=True)
        logger.info("Created folder {}", folder)
    return created[::-1]


def remove_empty_folders(folders: Iterable[Path]) -> None:
    """Remove each of ``folders`` that is still empty, the innermost first (folders a command made
    and then wrote nothing in); a folder that holds anything stays. Never raises."""
    for folder in reversed(list(folders)):
        try:
            folder.rmdir()  # only an empty folder goes
        except OSError:
            continue



def same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name the same file (any spelling, hard or symbolic links); never raises."""
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet), or is a symbolic link loop
        return os.path.realpath(a) == os.path.realpath(b)  # never raises (Path.resolve does on a loop)


def check_outside_corpus(folders: Iterable[tuple[str, str | os.PathLike | None]],
                         corpus: str | os.PathLike | None) -> None:
    """Raise :class:`InputError` when a folder a command writes into (``(option, folder)``: ``--log-dir``,
    ``--cache-dir``) is the ``corpus`` folder or inside it: nothing is ever written into the corpus."""
    if corpus is None or not Path(corpus).is_dir():
        return
    for option, folder in folders:
        if folder is not None and _inside(Path(folder), Path(corpus)):
            raise InputError(f"{option} {os.fspath(folder)} is inside the corpus folder {os.fspath(corpus)}: nothing "
                             f"is written into the corpus: give {option} a folder outside it")


def _inside(path: Path, folder: Path) -> bool:
    """Whether ``path`` lies in ``folder`` or below, by real path and by identity of each parent
    (so a bind mount or another spelling of the folder is caught too)."""
    real = Path(os.path.realpath(path))  # never raises (Path.resolve does on a symbolic link loop)
    folder_real = Path(os.path.realpath(folder))
    try:
        folder_st = os.stat(folder)
    except OSError:
        return real.is_relative_to(folder_real)
    if real.is_relative_to(folder_real):
        return True
    for parent in real.parents:
        try:
            if os.path.samestat(os.stat(parent), folder_st):
                return True
        except OSError:
            continue
    return False


def check_writable(path: Path, option: str = "--output", example: str = DEFAULT_OUTPUT_NAME,
                   shown: str | None = None) -> None:
    """Raise InputError unless ``path`` can be written: its folder accepts files, or — missing — can
    be created (its nearest existing parent is a folder that accepts files; nothing is created here).
    The message names the command-line ``option`` that gave the path (as ``shown``; and ``example``,
    a file name)."""
    path = Path(path)
    shown = str(path) if shown is None else shown
    if path.is_dir():
        raise InputError(f"{option} {shown} is a folder: give a file path such as {path / example}")
    existing = path.parent
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise InputError(f"{option} {shown}: {existing} is a file, not a folder: choose another path")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=existing)
    except OSError as err:
        raise InputError(f"{option} {shown}: folder {existing} is not writable ({err.strerror}): "
                         "choose a folder you can write to") from None
    os.close(fd)
    os.unlink(tmp)
