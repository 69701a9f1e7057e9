"""The ``markdown`` reader: a corpus that is a folder of Markdown files.

A document is one ``*.md`` file directly in the corpus folder; its doc id is the file stem,
exactly. The folder is not read recursively: ``*.md`` files in subfolders, symlinks pointing
outside the folder, broken symlinks and ``*.md`` entries that are not regular files are not read,
and are named in one warning line (see :func:`corpus_files`). YAML front matter is parsed
(``title`` kept, the other keys kept as ``metadata``) and Hugo shortcodes are rendered the way the
site shows them (see :func:`render_shortcodes`).

Parsing is linear in the page size, whatever the page holds: every regular expression here is
free of nested or adjacent quantifiers that could backtrack over the same text, and the
constructs a regex would rescan once per unclosed opener (shortcode tags, links, HTML comments,
ATX headings) are hand-written scanners that give the same output as the patterns quoted in
their docstrings. Front matter with YAML aliases (``*name``: the billion-laughs and merge-key
bombs), nested deeper than :data:`MAX_YAML_DEPTH` or longer than :data:`MAX_FRONT_MATTER_CHARS`
is not constructed: the page loads without it, with one warning line naming the file.
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from pathlib import Path

from loguru import logger

from components.core import Corpus, Document
from components.core.chunking import atx_heading
from components.readers import CORPUS, Reader, register_reader
from utils.errors import InputError

# --------------------------------------------------------------------------- front matter

_FRONT_MATTER = re.compile(r"\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)", re.S)
# Deepest nesting of YAML collections in front matter (the front matter mapping is level 1). The
# Kubernetes pages need 4; libyaml's composer recurses in C and crashes the interpreter near 30,000.
MAX_YAML_DEPTH = 64
# Longest front matter parsed (the Kubernetes pages' longest is 2.5 kB). Bounds the constructors'
# own super-linear cases: a sexagesimal integer `1:59:59:...` is quadratic in its length.
MAX_FRONT_MATTER_CHARS = 65_536


def _yaml_loader():
    import yaml  # only folder corpora need it: the built-in corpus does not pay for the import

    # libyaml's loader is ~10x faster than the pure-Python one; same safe subset.
    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _refusal(text: str) -> str | None:
    """Why the YAML ``text`` must not be constructed, or ``None``. Reads libyaml's event stream,
    which stops at the first alias or at the first collection nested past MAX_YAML_DEPTH, so a
    bomb costs no more than its opening lines."""
    import yaml

    depth = 0
    for event in yaml.parse(text, Loader=_yaml_loader()):
        if isinstance(event, yaml.AliasEvent):
            return "uses YAML aliases (*name), which are not expanded"
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_YAML_DEPTH:
                return f"nests collections deeper than {MAX_YAML_DEPTH} levels"
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
    return None


def _first_line(err: Exception) -> str:
    text = str(err)
    return text.splitlines()[0] if text else type(err).__name__


def split_front_matter(raw: str, *, where: str = "<text>") -> tuple[dict, str]:
    """Return ``(front matter dict, body)``. Front matter that is longer than
    MAX_FRONT_MATTER_CHARS, not valid YAML, not a mapping, uses aliases, nests past
    MAX_YAML_DEPTH or holds a value Python refuses (a 5,000-digit integer, the date 2024-13-45) is
    logged in one warning line and treated as absent (the body after the closing ``---`` is still
    used)."""
    m = _FRONT_MATTER.match(raw)
    if not m:
        return {}, raw
    body = raw[m.end():]
    import yaml

    if len(m.group(1)) > MAX_FRONT_MATTER_CHARS:
        logger.warning("{}: front matter is longer than {:,} characters; loaded without it", where,
                       MAX_FRONT_MATTER_CHARS)
        return {}, body
    try:
        refusal = _refusal(m.group(1))
        if refusal:
            logger.warning("{}: front matter {}; loaded without it", where, refusal)
            return {}, body
        meta = yaml.load(m.group(1), Loader=_yaml_loader())
    except yaml.YAMLError as err:
        logger.warning("{}: front matter is not valid YAML ({}); loaded without it", where, _first_line(err))
        return {}, body
    except (ValueError, OverflowError) as err:  # int(), datetime() on a scalar that only looks like one
        logger.warning("{}: front matter has a value that cannot be read ({}); loaded without it",
                       where, _first_line(err))
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

# Linear: each alternative fails within the run it started on (a name, a quoted string, a word).
_ARG = re.compile(r'([A-Za-z0-9_-]+)\s*=\s*"([^"]*)"|"([^"]*)"|(\S+)')
# Building blocks of the scanners below: single character classes, no backtracking.
_SPACES = re.compile(r"\s*")
_NAME = re.compile(r"[A-Za-z0-9_-]*")
_TAG_END = re.compile(r"[>%]\}\}")
_URL_PART = re.compile(r"[^()\s]*")
_PAREN = re.compile(r"[()]")


def _shortcode_tags(text: str):
    r"""Each shortcode tag of ``text``, in order, as ``(start, end, closing, name, argtext)``.

    The tags, groups and spans the regex ``\{\{([<%])\s*(/?)\s*([A-Za-z0-9_-]+)(.*?)\s*[>%]\}\}``
    (``re.S``) finds with ``finditer``, in linear time: that pattern is quadratic on ``{{<``
    followed by spaces, and rescans to the end of the text for every unclosed ``{{<``. A tag ends
    at the first ``>}}`` or ``%}}`` after its name; when there is none, no later tag can end either.
    """
    pos = 0
    while (start := text.find("{{", pos)) >= 0:
        if text[start + 2:start + 3] not in ("<", "%"):
            pos = start + 1
            continue
        i = _SPACES.match(text, start + 3).end()
        closing = text.startswith("/", i)
        if closing:
            i = _SPACES.match(text, i + 1).end()
        name_end = _NAME.match(text, i).end()
        if name_end == i:
            pos = start + 1
            continue
        tag_end = _TAG_END.search(text, name_end)
        if tag_end is None:
            return
        yield start, tag_end.end(), closing, text[i:name_end], text[name_end:tag_end.start()].rstrip()
        pos = tag_end.end()


def _link_end(text: str, close_bracket: int) -> int | None:
    r"""Where a link whose text ends at ``close_bracket`` (a ``]``) ends: after ``(target)`` or
    ``(target "title")``, the target being ``[^()\s]*(?:\([^()]*\))?[^()\s]*``; ``None`` if there
    is no such tail. Each step is a single character-class run: no backtracking."""
    if not text.startswith("(", close_bracket + 1):
        return None
    i = _URL_PART.match(text, close_bracket + 2).end()
    if text.startswith("(", i):  # one parenthesised part: ( [^()]* )
        paren = _PAREN.search(text, i + 1)
        if paren is None or text[paren.start()] != ")":
            return None
        i = _URL_PART.match(text, paren.end()).end()
    if text.startswith(")", i):
        return i + 1
    quote = _SPACES.match(text, i).end()
    if quote == i or not text.startswith('"', quote):
        return None
    title_end = text.find('"', quote + 1)
    if title_end < 0 or not text.startswith(")", title_end + 1):
        return None
    return title_end + 2


def _links_to_text(text: str) -> str:
    r"""Every Markdown link or image replaced by its text: what
    ``re.sub(r'!?\[([^\]]*)\]\(([^()\s]*(?:\([^()]*\))?[^()\s]*)(?:\s+"[^"]*")?\)', r"\1", text)``
    gives, in linear time (that pattern rescans to the end for every unclosed ``[``, and is
    quadratic on a long unclosed target). A link's text runs from a ``[`` to the first ``]``;
    when no tail follows, no ``[`` before that ``]`` starts a link either."""
    out: list[str] = []
    done = search = 0
    while (open_bracket := text.find("[", search)) >= 0:
        close_bracket = text.find("]", open_bracket + 1)
        if close_bracket < 0:
            break
        end = _link_end(text, close_bracket)
        if end is None:
            search = close_bracket + 1
            continue
        start = open_bracket - 1 if open_bracket > done and text[open_bracket - 1] == "!" else open_bracket
        out += (text[done:start], text[open_bracket + 1:close_bracket])
        done = search = end
    out.append(text[done:])
    return "".join(out)


def _strip_comments(text: str) -> str:
    """``text`` without HTML comments: ``re.sub(r"<!--.*?-->", "", text, flags=re.S)`` in linear
    time (the regex rescans to the end for every unclosed ``<!--``)."""
    out: list[str] = []
    done = 0
    while (start := text.find("<!--", done)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break
        out.append(text[done:start])
        done = end + 3
    out.append(text[done:])
    return "".join(out)


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
        line = "FEATURE STATE: " + " ".join(p for p in (f"Kubernetes {version}".strip(), f"[{state}]" if state else "")
                                            if p)
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
    for start, end, closing, name, argtext in _shortcode_tags(text):
        if hidden_depth == 0:
            out.append(text[pos:start])
        pos = end
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
    return _strip_comments(_links_to_text(rendered))


# --------------------------------------------------------------------------- documents

# Linear: one run of spaces per `{{<`, then a literal.
_VERSION_CHECK = re.compile(r"\{\{<\s*version-check\b")


def first_heading(body: str) -> str | None:
    in_fence = False
    for line in body.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence:
            heading = atx_heading(line)
            if heading and heading[0] == 1:
                return heading[1]
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
        title = first_heading(body) or doc_id
    title = render_shortcodes(str(title)).strip()
    metadata = {k: v for k, v in meta.items() if k != "title"}
    return Document(doc_id=doc_id, title=title, text=body.strip(), metadata=metadata, path=path)


# Why an entry of a corpus folder is not read (in this order in the warning line).
_IN_SUBFOLDER = "*.md files in subfolders"
_OUTSIDE = "symlinks pointing outside the folder"
_BROKEN = "broken symlinks"
_SPECIAL = "*.md entries that are not regular files"
_LINKED_FOLDER = "folder symlinks (not followed)"
_UNLISTABLE = "subfolders that cannot be listed"
_NOT_READ = (_IN_SUBFOLDER, _OUTSIDE, _BROKEN, _SPECIAL, _LINKED_FOLDER, _UNLISTABLE)
_NAMED = 3  # names per reason in the warning line


@functools.lru_cache(maxsize=64)
def _warn_once(message: str) -> None:
    """Log ``message`` once per process: the index cache and the loader both list a folder."""
    logger.warning(message)


def _is_md(name: str) -> bool:
    return Path(name).suffix.lower() == ".md"


def _md_below(folder: Path, root: Path, not_read: dict[str, list[str]]) -> None:
    """Record every ``*.md`` entry in ``folder`` and its subfolders (symlinked folders are named,
    not followed). Iterative: a deep tree cannot exhaust the stack."""
    stack = [folder]
    while stack:
        current = stack.pop()
        try:
            with os.scandir(current) as it:
                entries = list(it)
        except OSError:
            not_read[_UNLISTABLE].append(f"{Path(current).relative_to(root).as_posix()}/")
            continue
        for entry in entries:
            rel = Path(entry.path).relative_to(root).as_posix()
            if entry.is_dir(follow_symlinks=False):
                stack.append(Path(entry.path))
            elif entry.is_symlink() and entry.is_dir():
                not_read[_LINKED_FOLDER].append(f"{rel}/")
            elif _is_md(entry.name):
                not_read[_IN_SUBFOLDER].append(rel)


def corpus_files(folder: str | Path) -> list[tuple[str, Path]]:
    """The documents of a corpus folder as sorted ``(doc id, file)`` pairs, without reading them.

    A document is a ``*.md`` entry (suffix in any case) directly in ``folder`` that is a regular
    file, or a symlink to a regular file inside ``folder``; its doc id is the file stem. The folder
    is not read recursively. Not read, and named in ONE warning line (count and up to three names
    per reason, once per process): ``*.md`` files in subfolders, symlinks pointing outside the
    folder, broken symlinks, ``*.md`` entries that are not regular files (FIFOs, devices),
    symlinked subfolders. Raises :class:`InputError` for a missing or empty folder and for two
    files with one doc id. The index cache fingerprints exactly these files.
    """
    root = Path(folder)
    if not root.exists():
        raise InputError(f"corpus folder {root} does not exist: pass --corpus a folder of Markdown files")
    if not root.is_dir():
        raise InputError(f"corpus {root} is not a folder: pass --corpus a folder of Markdown files")
    real_root = root.resolve()
    not_read: dict[str, list[str]] = {reason: [] for reason in _NOT_READ}
    files: list[Path] = []
    for entry in sorted(root.iterdir()):
        if entry.is_dir() and not entry.is_symlink():
            _md_below(entry, root, not_read)
        elif entry.is_symlink() and entry.is_dir():
            not_read[_LINKED_FOLDER].append(f"{entry.name}/")
        elif _is_md(entry.name):
            reason = _not_a_document(entry, real_root)
            if reason is None:
                files.append(entry)
            else:
                not_read[reason].append(entry.name)
    _warn_not_read(root, not_read)
    if not files:
        what = "is empty" if not any(root.iterdir()) else "has no .md files"
        raise InputError(f"corpus folder {root} {what}: put one Markdown file (*.md) per document in it")
    return _by_doc_id(root, files)


def _not_a_document(entry: Path, real_root: Path) -> str | None:
    """Why the ``*.md`` entry ``entry`` of the corpus folder is not read (a reason of
    :data:`_NOT_READ`), or None: it is a document (a regular file, or a symlink to one inside the folder)."""
    if not entry.is_symlink():
        return None if entry.is_file() else _SPECIAL
    try:
        target = entry.resolve(strict=True)
    except (OSError, RuntimeError):  # missing target, or a symlink loop
        return _BROKEN
    if not target.is_relative_to(real_root):
        return _OUTSIDE
    return None if target.is_file() else _SPECIAL


def _warn_not_read(root: Path, not_read: dict[str, list[str]]) -> None:
    """The one warning line (once per process) naming what the corpus folder holds that is not read."""
    parts = [f"{reason}: {len(names)} ({', '.join(sorted(names)[:_NAMED])}{', …' if len(names) > _NAMED else ''})"
             for reason, names in not_read.items() if names]
    if parts:
        _warn_once(f"corpus folder {root}: not read: {'; '.join(parts)}. Only regular *.md files directly in "
                   "the folder are documents: move the others in (with unique file stems) to include them")


def _by_doc_id(root: Path, files: list[Path]) -> list[tuple[str, Path]]:
    """``(doc id, file)`` of ``files`` (sorted), the doc id their stem; two files of one stem are an
    :class:`InputError`."""
    seen: dict[str, Path] = {}
    for f in files:
        if f.stem in seen:
            raise InputError(
                f"corpus folder {root}: {seen[f.stem].name} and {f.name} give the same doc id {f.stem!r}: "
                "rename one so that every file stem is unique")
        seen[f.stem] = f
    return list(seen.items())


def load(folder: Path) -> Corpus:
    """Every document of :func:`corpus_files`, parsed (:func:`parse_markdown`)."""
    digest = hashlib.sha256()
    documents = []
    for doc_id, f in corpus_files(folder):
        data = f.read_bytes()
        digest.update(doc_id.encode() + b"\0" + data + b"\0")
        try:
            raw = data.decode("utf-8")
        except UnicodeDecodeError as err:
            logger.warning("{}: not valid UTF-8 (byte {}); undecodable bytes replaced", f, err.start)
            raw = data.decode("utf-8", errors="replace")
        documents.append(parse_markdown(raw.lstrip("\ufeff"), doc_id, path=str(f)))
    return Corpus(source=str(folder), documents=documents, sha256=digest.hexdigest())


def fingerprint(folder: Path) -> tuple[frozenset[str], str]:
    """``(doc ids, sha256)`` of :func:`load`, from the raw bytes only (no Markdown parsing)."""
    digest = hashlib.sha256()
    files = corpus_files(folder)
    for doc_id, path in files:
        digest.update(doc_id.encode() + b"\0" + path.read_bytes() + b"\0")
    return frozenset(doc_id for doc_id, _ in files), digest.hexdigest()


def detect(path: Path | None) -> bool:
    """Any path: the last corpus reader asked reads what no other claims, and says what is wrong with it."""
    return path is not None


READER = register_reader(Reader("markdown", CORPUS, detect, load, fingerprint))

