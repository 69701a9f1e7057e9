"""A chunk: the unit a retriever indexes and returns (a piece of one document, with its headings)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from utils.errors import InputError

_FROM_MAPPING_FIX = "give each chunk a doc_id and its text as content (or text)"


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

    @classmethod
    def from_mapping(cls, data: Mapping, position: int = 0) -> Chunk:
        """A chunk from a plain dict, as the user's plan and retrieval logs write one: ``doc_id``;
        the text as ``content`` or ``text``; optionally ``title``, ``heading`` (one string) or
        ``heading_path`` (a list), ``chunk_id`` (default ``<doc_id>#<position>``). Other keys are
        ignored. Raises :class:`InputError` naming the key that is missing or not text."""
        doc_id = data.get("doc_id")
        if not isinstance(doc_id, str) or not doc_id:
            raise InputError(f"chunk {position + 1}: doc_id is {doc_id!r}, not a document id: {_FROM_MAPPING_FIX}")
        key = "content" if "content" in data else "text"
        text = data.get(key)
        if not isinstance(text, str):
            raise InputError(f"chunk {position + 1} ({doc_id}): {key} is {type(text).__name__}, not text: "
                             f"{_FROM_MAPPING_FIX}")
        heading = data.get("heading_path", data.get("heading"))
        headings = tuple(map(str, heading)) if isinstance(heading, (list, tuple)) else (str(heading or ""),)
        return cls(doc_id=doc_id, chunk_id=str(data.get("chunk_id") or f"{doc_id}#{position}"),
                   title=str(data.get("title") or ""), heading_path=tuple(h for h in headings if h), text=text,
                   position=position)


@dataclass(frozen=True)
class TextChunk:
    """A chunk as a run showed it to the judge: its ids and its recorded text (``index_text``, what the grader
    quotes). The judge audit's attacked chunks and the pool's items are these."""

    doc_id: str
    chunk_id: str
    index_text: str
