"""Secrets out of everything the tool writes: :class:`Redactor` replaces each secret by ``[REDACTED]``.

A secret can reach text in many spellings, and the redactor looks for all of them:

* as is, **in any letter case** (``SK-ANT-…``, ``sk-ant-…``);
* escaped by JSON (``json.dumps`` of a reply that quotes it, with or without ``ensure_ascii``),
  escaped by ``repr()`` (an f-string's ``!r``, a dict in a message), and JSON-escaped twice (a
  JSON reply stored inside JSON) — so a secret holding ``\\``, ``"``, a control character or
  non-ASCII text is caught in whichever form it appears;
* **with whitespace between its characters** (``s k - a n t …``, a key wrapped over lines, or
  spaced with the escapes ``\\n``, ``\\r``, ``\\t``, escaped once or more), for a secret without
  whitespace of its own;
* **HTML-escaped** (``&quot;``, ``&amp;``, ``&lt;``, ``&gt;``, ``&#x27;``: ``html.escape``), for a
  page that was escaped before it was redacted;
* **base64-encoded**, standard and URL-safe alphabets, with and without ``=`` padding, and inside a
  longer base64 string: at each of the three byte alignments the secret can have there, the
  characters that depend on its bytes alone (at least :data:`MIN_BASE64_CHARS`).

Redact **before** escaping: a writer that escapes (HTML, TREC, the console) works on values the
redactor has already seen — :meth:`Redactor.json` on a parsed file (``load_run(path, secrets)``)
before a page or a run file is built from it, :func:`redacted_stdout` on every console table. The
escaped spellings above are the second line of defence, not the first.

All the forms of all the secrets make ONE regular expression, compiled once, without nested
quantifiers (the whitespace between characters is matched possessively): a multi-megabyte text is
scanned in one linear pass. The results file applies the redactor to every string value and key
before serialising (:func:`utils.files.output.to_strict_json`); the log sinks apply it to each line; the
commands beside the run (``validate``, ``export-dataset``…) to every file and table they write.

Which values of the environment are secrets is the judge providers' to say: their registry
(:mod:`components.judges.providers`) registers itself here as a source of secrets
(:func:`register_secret_source`), and :func:`environment_secrets` asks every source, so that a
writer down here (``RunResult.save``) redacts them without importing the providers.
"""

from __future__ import annotations

import base64
import contextlib
import html
import json
import re
import sys
from collections.abc import Callable, Iterable, Iterator, Mapping
from typing import Any, TextIO

REDACTED = "[REDACTED]"
MIN_BASE64_CHARS = 8  # a shorter base64 fragment of a secret is not looked for (it would match by chance)
# The placeholders a local server accepts as its key ("x", "none", "EMPTY"...) are not secrets: redacted,
# they would be cut out of every word that holds them ("e[REDACTED]it 8" for the key "x"). Any other value of
# 3 characters or more is redacted, however short.
PLACEHOLDER_KEYS = frozenset({"none", "null", "empty", "dummy", "no-key", "nokey", "key", "local", "test",
                              "ollama", "lm-studio", "placeholder", "changeme", "not-needed", "unused"})


def is_placeholder(value: str) -> bool:
    """Whether ``value`` is a placeholder key, not a secret (under 3 characters, or a known placeholder)."""
    return len(value) < 3 or value.strip().lower() in PLACEHOLDER_KEYS
_ANCHOR = 16  # the quick check looks for this many first characters of each form
# whitespace, or its escape (escaped again any number of times), between two characters; possessive: no backtracking
_BETWEEN = r"(?:\s|\\+[nrt])*+"
_SECRET_SOURCES: list[Callable[[Mapping[str, str]], Iterable[str]]] = []


def register_secret_source(source: Callable[[Mapping[str, str]], Iterable[str]]) -> None:
    """Add ``source``: given an environment, it returns the secrets in it (it must never raise)."""
    if source not in _SECRET_SOURCES:
        _SECRET_SOURCES.append(source)


def environment_secrets(env: Mapping[str, str]) -> tuple[str, ...]:
    """Every secret the registered sources find in ``env``, once each."""
    return tuple(dict.fromkeys(s for source in _SECRET_SOURCES for s in source(env) if s))


def secret_forms(secret: str) -> tuple[str, ...]:
    """The literal spellings of ``secret`` (as is and escaped), longest first (empty secret: none).
    Letter case, inserted whitespace and base64 are handled by :class:`Redactor`'s expression."""
    if not secret:
        return ()
    forms = {secret}
    for _ in range(2):  # escaped once, and escaped again (JSON inside JSON)
        for form in list(forms):
            forms.add(json.dumps(form)[1:-1])
            forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
            forms.add(repr(form)[1:-1])
    forms |= {html.escape(form, quote=True) for form in forms}  # a page escaped before it was redacted
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


def base64_forms(secret: str) -> tuple[str, ...]:
    """What the base64 of ``secret`` (UTF-8) looks like in text, longest first: the whole encoding in
    both alphabets, padded and not, and — for the secret inside a longer encoded string — at each
    byte alignment (0, 1 or 2 bytes before it in its group of three) the run of characters that its
    bytes alone decide."""
    data = secret.encode("utf-8", "surrogatepass")
    forms: set[str] = set()
    for encode in (base64.b64encode, base64.urlsafe_b64encode):
        whole = encode(data).decode("ascii")
        forms.update((whole, whole.rstrip("=")))
        for offset in range(3):
            encoded = encode(b"\0" * offset + data).decode("ascii")
            first = -(-8 * offset // 6)  # the first character holding only the secret's bits
            stop = (8 * offset + 8 * len(data)) // 6  # past the last such character
            forms.add(encoded[first:stop])
    return tuple(sorted((f for f in forms if len(f) >= MIN_BASE64_CHARS), key=lambda f: (-len(f), f)))


def _spaced(secret: str) -> str | None:
    """The expression of ``secret`` with any whitespace between its characters (None for a secret
    of one character, or holding whitespace of its own)."""
    if len(secret) < 2 or any(c.isspace() for c in secret):
        return None
    between = _BETWEEN if "\\" not in secret else r"\s*+"  # a backslash of its own: real whitespace only
    return between.join(re.escape(c) for c in secret)


def _pattern(secret: str) -> list[str]:
    """The alternatives of one secret: its literal spellings and its spaced form (any case), then
    its base64 forms (exact case)."""
    literal = [re.escape(f) for f in secret_forms(secret)]
    spaced = _spaced(secret)
    if spaced is not None:
        literal.append(spaced)
    out = [f"(?i:{'|'.join(literal)})"]
    out += [re.escape(f) for f in base64_forms(secret)]
    return out


# A key's shape, capitals or not: an OpenAI or Anthropic key's prefix (sk-, sk-ant-, sk-proj-), or a long token
_KEY_PREFIX = r"sk-"
_KEY_CHARS = r"[A-Za-z0-9_-]"
_KEY_IN_TEXT = re.compile(rf"(?i)\b{_KEY_PREFIX}{_KEY_CHARS}{{8,}}")  # a word of a text: the prefix and 8+ more
_KEY_VALUE = re.compile(rf"(?i:{_KEY_PREFIX}.*)|(?=.*[0-9]){_KEY_CHARS}{{32,}}")  # a whole value: 32+ with a digit


def mask_keylike(text: str) -> str:
    """``text`` with every key-shaped word (``sk-…``, 8+ characters after the prefix) replaced by
    ``[REDACTED]``: an error message quotes what the user gave, which may be a key the environment does not
    hold (pasted into a suite, a panel file or an option), so it is masked by its shape."""
    return _KEY_IN_TEXT.sub(REDACTED, text)


def looks_like_a_key(value: str) -> bool:
    """Whether a whole ``value`` has a key's shape (``sk-``/``sk-ant-``…, or 32+ of ``[A-Za-z0-9_-]`` with a
    digit), whatever its case: where a variable's name is expected, a value so shaped is refused without being
    shown."""
    return _KEY_VALUE.fullmatch(value) is not None


class Redactor:
    """Replaces every form of every secret in a string (module docstring). Empty secrets are
    ignored; a redactor without secrets returns its input unchanged (and fast).

    Speed: a text is first checked with plain substring searches and one search per secret for its
    spaced form (which begins with a literal character, so the regular-expression engine skips to
    it), all on the text lower-cased once; only a text that holds a form is rewritten, by the one
    expression of every form. Nothing backtracks: the cost is linear in the text."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        # a longer secret first; a placeholder key is not one (is_placeholder)
        found = sorted({s for s in secrets if s and not is_placeholder(s)}, key=lambda s: (-len(s), s))
        self.secrets: tuple[str, ...] = tuple(found)
        self.forms: tuple[str, ...] = tuple(sorted({f for s in found for f in secret_forms(s)},
                                                   key=lambda f: (-len(f), f)))
        alternatives = [alt for s in found for alt in _pattern(s)]
        self._regex = re.compile("|".join(alternatives)) if alternatives else None
        # the quick check, on a prefix of each form (a text holding a form holds its prefix): literal
        # forms lower-cased, base64 forms exact, spaced forms lower-cased
        self._lower_forms = tuple(dict.fromkeys(f.lower()[:_ANCHOR] for f in self.forms))
        self._base64 = tuple(dict.fromkeys(f[:_ANCHOR] for s in found for f in base64_forms(s)))
        self._spaced = tuple(re.compile(_spaced(s.lower())) for s in found if _spaced(s) is not None)

    def _holds(self, text: str) -> bool:
        """Whether ``text`` may hold a form of a secret (never False when it does)."""
        if any(f in text for f in self._base64):
            return True
        low = text.lower()
        return any(f in low for f in self._lower_forms) or any(p.search(low) for p in self._spaced)

    def __call__(self, text: str) -> str:
        if self._regex is None or not self._holds(text):
            return text
        return self._regex.sub(REDACTED, text)

    def __bool__(self) -> bool:
        return self._regex is not None

    def json(self, value: Any) -> Any:
        """A copy of the parsed JSON ``value`` with every string (value and key) redacted; other
        values as they are. Without secrets, ``value`` itself. Iterative: any depth."""
        if self._regex is None:
            return value
        root = [value]
        todo: list[tuple[Any, Any]] = [(root, 0)]  # (container, key) of each value still to redact
        while todo:
            container, key = todo.pop()
            item = container[key]
            if isinstance(item, str):
                container[key] = self(item)
            elif isinstance(item, dict):
                container[key] = copy = {self(k) if isinstance(k, str) else k: v for k, v in item.items()}
                todo.extend((copy, k) for k in copy)
            elif isinstance(item, list):
                container[key] = copy = list(item)
                todo.extend((copy, i) for i in range(len(copy)))
        return root[0]


class _RedactedStream:
    """A text stream whose every write is redacted first; everything else is the stream's."""

    def __init__(self, stream: TextIO, redact: Redactor) -> None:
        self._stream, self._redact = stream, redact

    def write(self, text: str) -> int:
        return self._stream.write(self._redact(text))

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


@contextlib.contextmanager
def redacted_stdout(secrets: Iterable[str]) -> Iterator[None]:
    """Inside the block, every write to ``sys.stdout`` has ``secrets`` redacted (the command line's
    tables: a run's summary, ``compare``, ``calibrate``...; the log sinks redact stderr)."""
    redact = Redactor(secrets)
    if not redact:
        yield
        return
    saved = sys.stdout
    sys.stdout = _RedactedStream(saved, redact)  # type: ignore[assignment]
    try:
        yield
    finally:
        sys.stdout = saved
