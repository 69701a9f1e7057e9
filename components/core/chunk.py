"""A chunk: the unit a retriever indexes and returns (a piece of one document, with its headings)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Chunk:
    doc_id: str
    chunk_id: str  # "<doc_id>#<position>"
    title: str
    heading_path: tuple[str, ...]
    text: str
    position: int  # 0-based order within the document

    @property
    def index_text(self) -> str:
        """What retrievers index: title and heading path, then the text."""
        return f"{' > '.join((self.title, *self.heading_path))}\n\n{self.text}"
