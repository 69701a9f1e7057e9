"""The linear-time scanners of ``components.readers.markdown`` and ``components.core.chunking`` give
exactly what the regular expressions they replaced gave. Those regexes are kept here as the
reference, run only on short random strings built from the characters each construct is made of
(seeded, so reproducible)."""

from __future__ import annotations

import random
import re

import pytest

from components.core.chunking import _strip_anchor, atx_heading
from components.readers.markdown import _links_to_text, _shortcode_tags, _strip_comments

HEADING = re.compile(r"^(#{1,4})\s+(.+?)\s*#*\s*$")
H1 = re.compile(r"^#\s+(.+?)\s*#*\s*$", re.M)
ANCHOR = re.compile(r"\s*\{#[^}]*\}\s*$")
SHORTCODE = re.compile(r"\{\{([<%])\s*(/?)\s*([A-Za-z0-9_-]+)(.*?)\s*[>%]\}\}", re.S)
LINK = re.compile(r"!?\[([^\]]*)\]\(([^()\s]*(?:\([^()]*\))?[^()\s]*)(?:\s+\"[^\"]*\")?\)")
COMMENT = re.compile(r"<!--.*?-->", re.S)

CASES = 20_000


def _strings(pieces: list[str], max_len: int, seed: int):
    rng = random.Random(seed)
    for _ in range(CASES):
        yield "".join(rng.choice(pieces) for _ in range(rng.randint(0, max_len)))


def test_atx_heading_is_the_heading_regex():
    pieces = ["#", "#", " ", " ", "\t", "\u00a0", "\x1f", "a", "b", "{", "}"]
    for line in _strings(pieces, 12, 1):
        m = HEADING.match(line)
        assert atx_heading(line) == ((len(m.group(1)), m.group(2)) if m else None), repr(line)
        h1 = H1.match(line)
        got = atx_heading(line)
        assert (got[1] if got and got[0] == 1 else None) == (h1.group(1) if h1 else None), repr(line)


def test_strip_anchor_is_the_anchor_regex():
    pieces = ["{#", "{", "#", "}", " ", "\t", "a", "x"]
    for text in _strings(pieces, 10, 2):
        assert _strip_anchor(text) == ANCHOR.sub("", text), repr(text)


def test_shortcode_tags_are_the_shortcode_regex():
    pieces = ["{{<", "{{%", "{{", "{", ">}}", "%}}", "}}", ">", "%", " ", "\n", "/", "note", "a-b", "=", '"', "x"]
    for text in _strings(pieces, 10, 3):
        expected = [(m.start(), m.end(), m.group(2) == "/", m.group(3), m.group(4)) for m in SHORTCODE.finditer(text)]
        assert list(_shortcode_tags(text)) == expected, repr(text)


def test_links_to_text_is_the_link_regex():
    pieces = ["[", "]", "(", ")", "!", " ", "\n", '"', "a", "b", "](", "[x]("]
    for text in _strings(pieces, 12, 4):
        assert _links_to_text(text) == LINK.sub(lambda m: m.group(1), text), repr(text)


def test_strip_comments_is_the_comment_regex():
    pieces = ["<!--", "-->", "<!-", "--", "-", ">", "<", "!", "a", "\n"]
    for text in _strings(pieces, 10, 5):
        assert _strip_comments(text) == COMMENT.sub("", text), repr(text)


@pytest.mark.parametrize("line,expected", [
    ("# Title", (1, "Title")),
    ("## Install kubeadm ##", (2, "Install kubeadm")),
    ("#### Deep #  ", (4, "Deep")),
    ("##### Too deep", None),
    ("#NoSpace", None),
    ("# ", None),
    ("#  ", (1, " ")),  # the regex's lazy group takes the last space
    ("# ##", (1, "#")),
    ("# a # b", (1, "a # b")),
])
def test_atx_heading_examples(line, expected):
    assert atx_heading(line) == expected
