"""Secrets out of everything the run writes: :class:`Redactor` replaces each secret by ``[REDACTED]``.

A secret can reach text in several spellings: as is, escaped by JSON (``json.dumps`` of a reply
that quotes it, with or without ``ensure_ascii``), escaped by ``repr()`` (an f-string's ``!r``, a
dict in a message), and JSON-escaped twice (a JSON reply stored inside JSON). The redactor looks
for all of them, longest first, so a secret holding ``\\``, ``"``, a control character or non-ASCII
text is caught in whichever form it appears. The results file applies it to every string value and
key before serialising (:func:`utils.output.to_strict_json`); the log sinks apply it to each line.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

REDACTED = "[REDACTED]"


def secret_forms(secret: str) -> tuple[str, ...]:
    """Every spelling of ``secret`` that text may hold, longest first (empty secret: none)."""
    if not secret:
        return ()
    forms = {secret}
    for _ in range(2):  # escaped once, and escaped again (JSON inside JSON)
        for form in list(forms):
            forms.add(json.dumps(form)[1:-1])
            forms.add(json.dumps(form, ensure_ascii=False)[1:-1])
            forms.add(repr(form)[1:-1])
    return tuple(sorted(forms, key=lambda f: (-len(f), f)))


class Redactor:
    """Replaces every form of every secret in a string. Empty secrets are ignored; a redactor
    without secrets returns its input unchanged (and fast)."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        forms: set[str] = set()
        for secret in secrets:
            forms.update(secret_forms(secret or ""))
        self.forms: tuple[str, ...] = tuple(sorted(forms, key=lambda f: (-len(f), f)))

    def __call__(self, text: str) -> str:
        for form in self.forms:
            if form in text:
                text = text.replace(form, REDACTED)
        return text

    def __bool__(self) -> bool:
        return bool(self.forms)
