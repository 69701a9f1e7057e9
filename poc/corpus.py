"""Corpus loading: a folder of Markdown files, or the built-in Python Language Reference.

A document is one ``*.md`` file; its doc id is the file stem, exactly. YAML front matter is
parsed (``title`` kept, the other keys kept as ``metadata``) and Hugo shortcodes are rendered
the way the site shows them (see :func:`render_shortcodes`).
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from utils.errors import InputError

BUILTIN_SOURCE = "builtin:pydoc_data.topics"


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


# --------------------------------------------------------------------------- front matter

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)


def split_front_matter(raw: str, *, where: str = "<text>") -> tuple[dict, str]:
    """Return ``(front matter dict, body)``. Broken YAML is logged and treated as absent
    (the body after the closing ``---`` is still used)."""
    m = _FRONT_MATTER.match(raw)
    if not m:
        return {}, raw
    body = raw[m.end():]
    import yaml  # only folder corpora need it: the built-in corpus does not pay for the import

    try:
        # libyaml's loader is ~10x faster than the pure-Python one; same safe subset.
        meta = yaml.load(m.group(1), Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))
    except yaml.YAMLError as err:
        first = str(err).splitlines()[0] if str(err) else type(err).__name__
        logger.warning("{}: front matter is not valid YAML ({}); loaded without it", where, first)
        return {}, body
    if not isinstance(meta, dict):
        logger.warning("{}: front matter is not a mapping; loaded without it", where)
        return {}, body
    return meta, body


# --------------------------------------------------------------------------- shortcodes

# What the site renders for `{{% heading "x" %}}`.
_HEADINGS = {
    "prerequisites": "Before you begin",
    "whatsnext": "What's next",
    "objectives": "Objectives",
    "cleanup": "Clean up",
    "synopsis": "Synopsis",
    "options": "Options",
    "seealso": "See Also",
    "envvars": "Environment variables",
}
# Paired shortcodes whose inner text is page content: the tags go, the text stays.
_ADMONITIONS = {"note": "Note:", "caution": "Caution:", "warning": "Warning:"}
# Paired shortcodes whose inner text is never shown.
_HIDDEN_PAIRS = {"comment"}
# The snapshot (2024-08-31) documents Kubernetes 1.31; `skew`/`param` render from it.
_CURRENT_MINOR = (1, 31)

_SC = re.compile(r"\{\{([<%])\s*(/?)\s*([A-Za-z0-9_-]+)(.*?)\s*[>%]\}\}", re.S)
_ARG = re.compile(r'([A-Za-z0-9_-]+)\s*=\s*"([^"]*)"|"([^"]*)"|(\S+)')
_LINK = re.compile(r"!?\[([^\]]*)\]\(([^()\s]*(?:\([^()]*\))?[^()\s]*)(?:\s+\"[^\"]*\")?\)")


def _args(argtext: str) -> tuple[dict[str, str], list[str]]:
    named: dict[str, str] = {}
    positional: list[str] = []
    for m in _ARG.finditer(argtext):
        if m.group(1):
            named[m.group(1)] = m.group(2)
        else:
            positional.append(m.group(3) if m.group(3) is not None else m.group(4))
    return named, positional


def _skew(positional: list[str]) -> str:
    major, minor = _CURRENT_MINOR
    what = positional[0] if positional else "currentVersion"
    offsets = {"currentVersion": 0, "latestVersion": 0, "prevMinorVersion": -1, "nextMinorVersion": 1,
               "oldestMinorVersion": -3, "currentPatchVersion": 0}
    if what == "currentVersionAddMinor" and len(positional) > 1:
        try:
            return f"{major}.{minor + int(positional[1])}"
        except ValueError:
            return f"{major}.{minor}"
    return f"{major}.{minor + offsets.get(what, 0)}"


def _min_version_sentence(min_version: object) -> str:
    """The site's sentence for the front matter's ``min-kubernetes-server-version``."""
    major, minor = _CURRENT_MINOR
    if not min_version:
        return ""
    if str(min_version) == f"v{major}.{minor}":
        return f"Your Kubernetes server must be version {min_version}."
    return f"Your Kubernetes server must be at or later than version {min_version}."


def _version_check(min_version: object) -> str:
    """What the site's ``version-check`` shortcode prints."""
    return f"{_min_version_sentence(min_version)} To check the version, enter `kubectl version`.".lstrip()


def _render_single(name: str, argtext: str, page: dict) -> str:
    named, positional = _args(argtext)
    if name == "glossary_tooltip":
        return named.get("text") or named.get("term_id", "")
    if name == "feature-state":
        version = named.get("for_k8s_version", "")
        state = named.get("state", "")
        gate = named.get("feature_gate_name", "")
        line = "FEATURE STATE: " + " ".join(p for p in (f"Kubernetes {version}".strip(), f"[{state}]" if state else "") if p)
        if gate:
            line += f" (feature gate: {gate})"
        return f"\n\n{line}\n\n"
    if name == "heading":
        key = positional[0] if positional else ""
        return _HEADINGS.get(key, key.replace("-", " ").capitalize())
    if name == "skew":
        return _skew(positional)
    if name == "param":
        key = positional[0] if positional else ""
        major, minor = _CURRENT_MINOR
        return {"version": f"v{major}.{minor}", "fullversion": f"v{major}.{minor}.0"}.get(key, "")
    if name == "version-check":
        return _version_check(page.get("min-kubernetes-server-version"))
    # ref/relref only occur as link targets; include, code_sample ... are not text.
    return ""


def render_shortcodes(text: str, page: dict | None = None) -> str:
    """Render Hugo shortcodes as the site shows them.

    ``glossary_tooltip`` → its visible text; ``feature-state`` → ``FEATURE STATE: Kubernetes
    v1.27 [stable]``; ``heading`` → the section title the site prints; ``skew``/``param`` → the
    snapshot's version; ``version-check`` → the site's sentence on the minimum server version,
    from ``page`` (the front matter's ``min-kubernetes-server-version``); admonitions (note,
    caution, warning) keep their text behind ``Note:`` ...;
    ``comment`` pairs vanish with their content; links ``[text]({{< ref "x" >}})`` keep their text;
    ``include`` and any other shortcode tag are dropped, the text around and inside them kept.
    """
    out: list[str] = []
    pos = 0
    hidden_depth = 0
    for m in _SC.finditer(text):
        if hidden_depth == 0:
            out.append(text[pos:m.start()])
        pos = m.end()
        closing, name, argtext = m.group(2) == "/", m.group(3), m.group(4)
        if name in _HIDDEN_PAIRS:
            hidden_depth += -1 if closing else 1
            hidden_depth = max(hidden_depth, 0)
            continue
        if hidden_depth:
            continue
        if name in _ADMONITIONS:
            out.append("\n\n" if closing else f"\n\n{_ADMONITIONS[name]} ")
        elif name == "tab" and not closing:
            label = _args(argtext)[0].get("name")
            out.append(f"\n\n{label}:\n\n" if label else "")
        elif not closing:
            out.append(_render_single(name, argtext, page or {}))
    if hidden_depth == 0:
        out.append(text[pos:])
    rendered = "".join(out)
    # A link keeps its text (ref/relref targets included); an image keeps its alt text.
    rendered = _LINK.sub(lambda m: m.group(1), rendered)
    rendered = re.sub(r"<!--.*?-->", "", rendered, flags=re.S)
    return rendered


# --------------------------------------------------------------------------- documents

_VERSION_CHECK = re.compile(r"\{\{<\s*version-check\b")
_H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)


def _first_heading(body: str) -> str | None:
    in_fence = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence:
            m = _H1.match(line)
            if m:
                return m.group(1)
    return None


def parse_markdown(raw: str, doc_id: str, *, path: str | None = None) -> Document:
    meta, body = split_front_matter(raw, where=path or doc_id)
    min_version = meta.get("min-kubernetes-server-version")
    if min_version and not _VERSION_CHECK.search(body):
        # The site prints it where the page has `{{< version-check >}}` (its prerequisites); a page
        # without one still shows it, at the top.
        body = _min_version_sentence(min_version) + "\n\n" + body
    body = render_shortcodes(body, meta)
    title = meta.get("title")
    if not isinstance(title, str) or not title.strip():
        title = _first_heading(body) or doc_id
    title = render_shortcodes(str(title)).strip()
    metadata = {k: v for k, v in meta.items() if k != "title"}
    return Document(doc_id=doc_id, title=title, text=body.strip(), metadata=metadata, path=path)


def corpus_files(folder: str | Path) -> list[tuple[str, Path]]:
    """The documents of a corpus folder as sorted ``(doc id, file)`` pairs, without reading them:
    every ``*.md`` file of ``folder`` (not recursive), doc id = file stem. Raises
    :class:`InputError` for a missing or empty folder and for two files with one doc id."""
    root = Path(folder)
    if not root.exists():
        raise InputError(f"corpus folder {root} does not exist: pass --corpus a folder of Markdown files")
    if not root.is_dir():
        raise InputError(f"corpus {root} is not a folder: pass --corpus a folder of Markdown files")
    files = sorted(f for f in root.iterdir() if f.suffix.lower() == ".md" and f.is_file())
    if not files:
        what = "is empty" if not any(root.iterdir()) else "has no .md files"
        raise InputError(f"corpus folder {root} {what}: put one Markdown file (*.md) per document in it")
    seen: dict[str, Path] = {}
    for f in files:
        if f.stem in seen:
            raise InputError(
                f"corpus folder {root}: {seen[f.stem].name} and {f.name} give the same doc id {f.stem!r}: "
                "rename one so that every file stem is unique")
        seen[f.stem] = f
    return list(seen.items())


def load_corpus(folder: str | Path | None) -> Corpus:
    """Load every document of :func:`corpus_files`; ``None`` → the built-in corpus."""
    if folder is None:
        return builtin_corpus()
    root = Path(folder)
    digest = hashlib.sha256()
    documents = []
    for doc_id, f in corpus_files(root):
        data = f.read_bytes()
        digest.update(doc_id.encode() + b"\0" + data + b"\0")
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as err:
            logger.warning("{}: not valid UTF-8 (byte {}); undecodable bytes replaced", f, err.start)
            raw = data.decode("utf-8", errors="replace")
        documents.append(parse_markdown(raw.lstrip("\ufeff"), doc_id, path=str(f)))
    return Corpus(source=str(root), documents=documents, sha256=digest.hexdigest())


# --------------------------------------------------------------------------- built-in corpus

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


def builtin_corpus() -> Corpus:
    """The Python Language Reference topics that ship with CPython, one document per topic."""
    from pydoc_data.topics import topics

    digest = hashlib.sha256()
    documents = []
    for key in sorted(topics):
        markdown = topic_to_markdown(topics[key])
        digest.update(key.encode() + b"\0" + topics[key].encode() + b"\0")
        documents.append(Document(doc_id=key, title=_first_heading(markdown) or key, text=markdown.strip()))
    return Corpus(source=BUILTIN_SOURCE, documents=documents, sha256=digest.hexdigest())
