"""Input formats, one module each, registered here by name: what reads ``--corpus`` and ``--questions``.

A reader declares (a :class:`Reader`): its ``name``, what it ``reads`` (:data:`CORPUS` or
:data:`QUESTIONS`), ``detect(path)`` (whether the path is in its format, decided from the path and
at most a look at the folder, never by parsing), ``load`` (a :class:`~components.core.Corpus`, or a
:class:`~components.core.QuestionSet` for ``load(path, qrels=None, split=None)``) and, for a corpus,
``fingerprint(path)``: its doc ids and the digest ``load`` gives as ``Corpus.sha256``, read without
parsing (the index cache's key).

:func:`load_corpus` and :func:`load_questions` hand the path to the first reader whose ``detect``
says yes: the readers a plug-in registered (:func:`register_reader`) first, in their order, then the
built-in ones in :data:`BUILTIN` order. The last built-in reader of each kind reads whatever no other
reader claims, so its messages say what is wrong with the path:

* corpus: ``builtin`` (no path: the Python reference that ships with CPython), ``beir``
  (a BEIR folder or ``corpus.jsonl``), ``markdown`` (a folder of Markdown files);
* questions: ``beir-queries`` (a BEIR folder or ``queries.jsonl`` with its qrels),
  ``questions-json`` (the questions JSON file, or ``-`` for standard input).

A reader may also be asked by its name only (its ``detect`` says no to every path): ``recorded``, a
questions JSON file whose questions carry what their system retrieved, read for ``--strategy recorded``.

A new input format is one module that calls :func:`register_reader`, plus its tests.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.core import Corpus, QuestionSet

CORPUS = "corpus"
QUESTIONS = "questions"
# The built-in readers' modules, in the order they are asked (their import registers them).
BUILTIN = {"builtin": "components.readers.builtin", "beir": "components.readers.beir",
           "markdown": "components.readers.markdown", "beir-queries": "components.readers.beir",
           "questions-json": "components.readers.questions_json", "recorded": "components.readers.recorded"}
_REGISTRY: dict[str, Reader] = {}


@dataclass(frozen=True)
class Reader:
    """One input format (module docstring)."""

    name: str
    reads: str  # CORPUS or QUESTIONS
    detect: Callable[[Path | None], bool]  # the path is in this format (None: no path given)
    load: Callable[..., Any]  # path → Corpus; or (path, qrels=None, split=None) → QuestionSet
    fingerprint: Callable[[Path | None], tuple[frozenset[str], str]] | None = None  # (doc ids, sha256)

    @property
    def module(self) -> str:
        """The module that reads the format (its source is part of the index cache's key)."""
        return self.load.__module__


def register_reader(reader: Reader) -> Reader:
    """Add (or replace) ``reader`` under its name."""
    if reader.reads not in (CORPUS, QUESTIONS):
        raise ValueError(f"a reader reads {CORPUS!r} or {QUESTIONS!r}, not {reader.reads!r}")
    _REGISTRY[reader.name] = reader
    return reader


def unregister_reader(name: str) -> None:
    _REGISTRY.pop(name, None)


def readers() -> dict[str, Reader]:
    """Every registered reader by name, in the order they are asked: a plug-in's first, then the built-in ones."""
    for name, module in BUILTIN.items():
        if name not in _REGISTRY:
            importlib.import_module(module)
    own = {name: r for name, r in _REGISTRY.items() if name not in BUILTIN}
    return {**own, **{name: _REGISTRY[name] for name in BUILTIN if name in _REGISTRY}}


def reader_for(path: str | Path | None, reads: str) -> Reader:
    """The reader of ``path`` (None: no path given) for ``reads`` (:data:`CORPUS` or :data:`QUESTIONS`)."""
    given = Path(path) if path is not None else None
    for reader in readers().values():
        if reader.reads == reads and reader.detect(given):
            return reader
    raise LookupError(f"no reader reads {path} as {reads}")  # pragma: no cover - the last built-in one reads anything


def load_corpus(path: str | Path | None) -> Corpus:
    """The corpus at ``path`` (None: the built-in corpus), read by its reader. Raises :class:`InputError`."""
    return reader_for(path, CORPUS).load(Path(path) if path is not None else None)


def load_questions(path: str | Path, *, qrels: str | Path | None = None, split: str | None = None,
                   reader: str | None = None) -> QuestionSet:
    """The questions at ``path`` (``-``: standard input), read by their reader (``reader``: the one of
    that name); ``qrels`` and ``split`` name the relevance judgments of formats that keep them apart
    (BEIR). Raises :class:`InputError`."""
    chosen = readers()[reader] if reader is not None else reader_for(path, QUESTIONS)
    return chosen.load(path, qrels=qrels, split=split)
