"""Heading-aware chunking.

A document is cut into sections at h1-h4 headings (``#`` lines inside fenced code are not
headings). Sections shorter than ``min_words`` are merged with the next section of the same
document (the last with the previous) when the result stays within ``max_words``. Each section's
paragraphs are then packed into pieces of about ``target`` words (a piece is closed when the next
paragraph would take it past ``target``); a paragraph longer than ``max_words`` is split. Every chunk's
indexed text is prefixed with the document title and its heading path.

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


def chunk_document(doc: Document, *, target: int = TARGET_WORDS, max_words: int = MAX_WORDS,
                   min_words: int = MIN_WORDS) -> list[Chunk]:
    sections = [_Piece(path, paragraphs, sum(len(p.split()) for p in paragraphs))
                for path, paragraphs in _sections(doc.text)]
    sections = _merge_small([s for s in sections if s.words], min_words, max_words)
    pieces = [piece for sec in sections for piece in _pack(sec.path, sec.paragraphs, target, max_words)]
    if not pieces:  # an empty body still yields one title-only chunk
        pieces = [_Piece((), [], 0)]
    return [
        Chunk(doc_id=doc.doc_id, chunk_id=f"{doc.doc_id}#{i}", title=doc.title, heading_path=p.path,
              text="\n\n".join(p.paragraphs), position=i)
        for i, p in enumerate(pieces)
    ]


def chunk_corpus(documents: list[Document], **sizes: int) -> list[Chunk]:
    return [chunk for doc in documents for chunk in chunk_document(doc, **sizes)]
