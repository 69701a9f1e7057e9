"""The ``builtin`` reader: the corpus when no ``--corpus`` is given, the Python Language Reference
topics that ship with CPython (``pydoc_data``), one document per topic."""

from __future__ import annotations

import hashlib
from pathlib import Path

from components.core import Corpus, Document
from components.core.corpus import BUILTIN_SOURCE
from components.readers import CORPUS, Reader, register_reader
from components.readers.markdown import first_heading

_UNDERLINE = {"*": "#", "=": "##", "-": "###"}


def topic_to_markdown(text: str) -> str:
    """pydoc topics underline headings with ``*``, ``=`` or ``-``: make them Markdown headings."""
    lines = text.splitlines()
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        nxt = lines[i + 1] if i + 1 < len(lines) else ""
        mark = nxt[:1]
        if (line.strip() and not line.startswith(" ") and mark in _UNDERLINE
                and set(nxt.strip()) == {mark} and len(nxt.strip()) >= max(3, len(line.strip()) - 2)):
            out.append(f"{_UNDERLINE[mark]} {line.strip()}")
            i += 2
            continue
        out.append(line)
        i += 1
    return "\n".join(out)


def _topics() -> dict[str, str]:
    from pydoc_data.topics import topics

    return topics


def _digest(topics: dict[str, str]) -> str:
    digest = hashlib.sha256()
    for key in sorted(topics):
        digest.update(key.encode() + b"\0" + topics[key].encode() + b"\0")
    return digest.hexdigest()


def builtin_corpus() -> Corpus:
    """The Python Language Reference topics that ship with CPython, one document per topic."""
    topics = _topics()
    documents = []
    for key in sorted(topics):
        markdown = topic_to_markdown(topics[key])
        documents.append(Document(doc_id=key, title=first_heading(markdown) or key, text=markdown.strip()))
    return Corpus(source=BUILTIN_SOURCE, documents=documents, sha256=_digest(topics))


def load(_: Path | None = None) -> Corpus:
    return builtin_corpus()


def fingerprint(_: Path | None = None) -> tuple[frozenset[str], str]:
    """``(doc ids, sha256)`` of :func:`builtin_corpus`, without converting a topic."""
    topics = _topics()
    return frozenset(topics), _digest(topics)


def detect(path: Path | None) -> bool:
    return path is None


READER = register_reader(Reader("builtin", CORPUS, detect, load, fingerprint))
