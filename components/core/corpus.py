"""A corpus: the documents a run retrieves from, whatever reader read them (:mod:`components.readers`)."""

from __future__ import annotations

from dataclasses import dataclass, field

BUILTIN_SOURCE = "builtin:pydoc_data.topics"  # Corpus.source of the built-in corpus


@dataclass(frozen=True)
class Document:
    doc_id: str
    title: str
    text: str  # Markdown body, shortcodes rendered, front matter removed
    metadata: dict = field(default_factory=dict)
    path: str | None = None


@dataclass(frozen=True)
class Corpus:
    source: str  # folder path, or BUILTIN_SOURCE
    documents: list[Document]
    sha256: str  # over the sorted (doc id, raw bytes) pairs

    def ids(self) -> set[str]:
        return {d.doc_id for d in self.documents}
