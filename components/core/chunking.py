"""Heading-aware chunking.

A document is cut into sections at h1-h4 headings (``#`` lines inside fenced code are not
headings). Sections shorter than ``min_words`` are merged with the next section of the same
document (the last with the previous) when the result stays within ``max_words``. Each section's
paragraphs are then packed into pieces of about ``target`` words (a piece is closed when the next
paragraph would take it past ``target``); a paragraph longer than ``max_words`` is split. With an
overlap of N words, each piece after the first of a section starts with the last N words of the piece
before it. Every chunk's indexed text is prefixed with the document title and its heading path.

:class:`Chunking` names these sizes by one number, as a suite configuration gives them
(``chunk_size``, ``chunk_overlap``): the default is the module's ``TARGET_WORDS`` /
``MAX_WORDS`` / ``MIN_WORDS``; a size N packs N words, splits paragraphs longer than 2N and merges
sections shorter than N/8.

The harness chunks the corpus before it calls a retriever's ``index(chunks)``.

Linear in the text size: headings are read by :func:`atx_heading` and anchors by
:func:`_strip_anchor` (scanners that give what the regexes quoted in their docstrings give,
without those regexes' cubic and quadratic worst cases).
"""

from __future__ import annotations

from dataclasses import dataclass

from components.core.chunk import Chunk
from components.core.corpus import Document

TARGET_WORDS = 400
MAX_WORDS = 800
MIN_WORDS = 50
MAX_CHUNK_WORDS = 100_000  # the largest chunk size a configuration may ask (words); the overlap is below the size


def atx_heading(line: str) -> tuple[int, str] | None:
    r"""``(level, text)`` of a Markdown ATX heading line (one to four ``#``), else ``None``.

    Exactly what ``^(#{1,4})\s+(.+?)\s*#*\s*$`` matches on one line (level = group 1's length,
    text = group 2), in linear time: that regex is cubic in a run of spaces inside the title.
    The text runs from the first non-space after the hashes, without the trailing spaces, closing
    hashes and the spaces before them; when nothing else is left it is the first character (or, on
    a line of hashes and two or more spaces, the last space), as the regex's lazy group gives.
    """
    level = len(line) - len(line.lstrip("#"))
    if not 1 <= level <= 4 or not line[level:level + 1].isspace():
        return None
    rest = line[level:]
    text = rest.lstrip()
    if not text:
        return (level, rest[-1]) if len(rest) > 1 else None
    return level, text.rstrip().rstrip("#").rstrip() or text[0]


def _strip_anchor(heading: str) -> str:
    r"""``heading`` without a trailing ``{#id}`` anchor and the spaces around it: what
    ``re.sub(r"\s*\{#[^}]*\}\s*$", "", heading)`` gives, in linear time (that regex is
    quadratic in a run of spaces and in repeated unclosed ``{#``). The anchor is the last ``{#``
    ... ``}`` pair with only spaces after its ``}``; the earliest ``{#`` after the previous ``}``
    opens it."""
    close = heading.rfind("}")
    if close < 0 or heading[close + 1:].strip():
        return heading
    start = heading.find("{#", heading.rfind("}", 0, close) + 1, close)
    return heading if start < 0 else heading[:start].rstrip()


@dataclass(frozen=True)
class Chunking:
    """The chunker's parameters: ``size`` words per chunk (None: the module's defaults) and
    ``overlap`` words repeated from the end of the previous chunk of the same section."""

    size: int | None = None
    overlap: int = 0

    def __post_init__(self) -> None:
        if self.size is not None and (isinstance(self.size, bool) or not isinstance(self.size, int) or self.size < 1
                                      or self.size > MAX_CHUNK_WORDS):
            raise ValueError(f"chunk size {self.size!r} is not a whole number of words from 1 to {MAX_CHUNK_WORDS:,}")
        if isinstance(self.overlap, bool) or not isinstance(self.overlap, int) or self.overlap < 0:
            raise ValueError(f"chunk overlap {self.overlap!r} is not a whole number of words, 0 or more")
        if self.overlap >= self.words()["target"]:
            raise ValueError(f"chunk overlap {self.overlap} is not smaller than the chunk size "
                             f"{self.words()['target']}")

    def words(self) -> dict[str, int]:
        """``{"target", "max_words", "min_words"}``: the sizes :func:`chunk_document` takes."""
        if self.size is None:
            return {"target": TARGET_WORDS, "max_words": MAX_WORDS, "min_words": MIN_WORDS}
        return {"target": self.size, "max_words": 2 * self.size, "min_words": self.size // 8}

    def to_json(self) -> dict[str, int]:
        """What the index cache's key records of it."""
        sizes = self.words()
        return {"target_words": sizes["target"], "max_words": sizes["max_words"], "min_words": sizes["min_words"],
                "overlap_words": self.overlap}


@dataclass
class _Piece:
    path: tuple[str, ...]
    paragraphs: list[str]
    words: int


def _sections(text: str) -> list[tuple[tuple[str, ...], list[str]]]:
    """Split Markdown into (heading path, paragraphs). Fenced code stays one paragraph."""
    sections: list[tuple[tuple[str, ...], list[str]]] = []
    stack: list[tuple[int, str]] = []
    paragraphs: list[str] = []
    buf: list[str] = []
    fence: str | None = None

    def flush_paragraph() -> None:
        if buf and any(line.strip() for line in buf):
            paragraphs.append("\n".join(buf).strip("\n"))
        buf.clear()

    def flush_section() -> None:
        flush_paragraph()
        sections.append((tuple(h for _, h in stack), list(paragraphs)))
        paragraphs.clear()

    for line in text.splitlines():
        stripped = line.lstrip()
        if fence is not None:
            buf.append(line)
            if stripped.startswith(fence):
                fence = None
                flush_paragraph()
            continue
        if stripped.startswith(("```", "~~~")):
            flush_paragraph()
            fence = stripped[:3]
            buf.append(line)
            continue
        heading = atx_heading(line)
        if heading:
            flush_section()
            level, title = heading
            while stack and stack[-1][0] >= level:
                stack.pop()
            stack.append((level, _strip_anchor(title)))
            continue
        if not line.strip():
            flush_paragraph()
        else:
            buf.append(line)
    flush_section()
    return sections


def _split_long(paragraph: str, max_words: int) -> list[str]:
    words = paragraph.split()
    if len(words) <= max_words:
        return [paragraph]
    lines = paragraph.splitlines()
    if len(lines) > 1:  # keep line structure (code, lists) where possible
        parts, cur, n = [], [], 0
        for line in lines:
            w = len(line.split())
            if cur and n + w > max_words:
                parts.append("\n".join(cur))
                cur, n = [], 0
            cur.append(line)
            n += w
        if cur:
            parts.append("\n".join(cur))
        if all(len(p.split()) <= max_words for p in parts):
            return parts
    return [" ".join(words[i:i + max_words]) for i in range(0, len(words), max_words)]


def _pack(path: tuple[str, ...], paragraphs: list[str], target: int, max_words: int) -> list[_Piece]:
    pieces: list[_Piece] = []
    cur: _Piece | None = None
    for para in paragraphs:
        for part in _split_long(para, max_words):
            w = len(part.split())
            if cur is not None and cur.words + w > target:
                pieces.append(cur)
                cur = None
            if cur is None:
                cur = _Piece(path, [], 0)
            cur.paragraphs.append(part)
            cur.words += w
    if cur is not None:
        pieces.append(cur)
    return pieces


def _merge_small(sections: list[_Piece], min_words: int, max_words: int) -> list[_Piece]:
    """Merge sections under ``min_words`` into the following section (the last one into the
    previous), as long as the result stays within ``max_words``. The merged section keeps the
    heading path of its first part."""
    out: list[_Piece] = []
    carry: _Piece | None = None
    for sec in sections:
        if carry is not None:
            if carry.words + sec.words <= max_words:
                sec = _Piece(carry.path, carry.paragraphs + sec.paragraphs, carry.words + sec.words)
            else:
                out.append(carry)
            carry = None
        if sec.words < min_words:
            carry = sec
        else:
            out.append(sec)
    if carry is not None:
        if out and out[-1].words + carry.words <= max_words:
            last = out[-1]
            out[-1] = _Piece(last.path, last.paragraphs + carry.paragraphs, last.words + carry.words)
        else:
            out.append(carry)
    return out


def _overlapped(pieces: list[_Piece], overlap: int) -> list[_Piece]:
    """Each piece after the first of a section, led by the last ``overlap`` words of the one before."""
    if overlap <= 0:
        return pieces
    out = pieces[:1]
    for before, piece in zip(pieces, pieces[1:], strict=False):
        tail = " ".join(" ".join(before.paragraphs).split()[-overlap:])
        out.append(_Piece(piece.path, [tail, *piece.paragraphs], piece.words + len(tail.split())))
    return out


def chunk_document(doc: Document, *, target: int | None = None, max_words: int | None = None,
                   min_words: int | None = None, overlap: int = 0) -> list[Chunk]:
    """The chunks of ``doc``; the sizes default to the module's ``TARGET_WORDS``, ``MAX_WORDS`` and
    ``MIN_WORDS`` (read when called)."""
    target = TARGET_WORDS if target is None else target
    max_words = MAX_WORDS if max_words is None else max_words
    min_words = MIN_WORDS if min_words is None else min_words
    sections = [_Piece(path, paragraphs, sum(len(p.split()) for p in paragraphs))
                for path, paragraphs in _sections(doc.text)]
    sections = _merge_small([s for s in sections if s.words], min_words, max_words)
    pieces = [piece for sec in sections
              for piece in _overlapped(_pack(sec.path, sec.paragraphs, target, max_words), overlap)]
    if not pieces:  # an empty body still yields one title-only chunk
        pieces = [_Piece((), [], 0)]
    return [
        Chunk(doc_id=doc.doc_id, chunk_id=f"{doc.doc_id}#{i}", title=doc.title, heading_path=p.path,
              text="\n\n".join(p.paragraphs), position=i)
        for i, p in enumerate(pieces)
    ]


def chunk_corpus(documents: list[Document], chunking: Chunking | None = None) -> list[Chunk]:
    """Every document's chunks, in order (``chunking`` None: the defaults)."""
    chunking = chunking or Chunking()
    return [chunk for doc in documents for chunk in chunk_document(doc, **chunking.words(), overlap=chunking.overlap)]
