"""Corpus loading (front matter, shortcodes, built-in corpus) and heading-aware chunking."""

from __future__ import annotations

from pathlib import Path

import pytest

from components.core import Document
from components.core.chunking import chunk_document
from components.readers import load_corpus
from components.readers.builtin import builtin_corpus, topic_to_markdown
from components.readers.markdown import parse_markdown, render_shortcodes
from utils.errors import InputError


def test_front_matter_title_and_metadata():
    doc = parse_markdown("---\ntitle: Leases\ncontent_type: concept\nweight: 30\n---\nBody text.", "leases")
    assert doc.title == "Leases" and doc.text == "Body text."
    assert doc.metadata == {"content_type": "concept", "weight": 30}


def test_title_fallbacks():
    assert parse_markdown("# From Heading\n\ntext", "stem").title == "From Heading"
    assert parse_markdown("```\n# not a heading\n```\nplain", "the-stem").title == "the-stem"


def test_broken_front_matter_is_loaded_without_it():
    doc = parse_markdown("---\ntitle: [unclosed\n---\nStill here.", "broken")
    assert doc.text == "Still here." and doc.title == "broken"


@pytest.mark.parametrize("source,expected", [
    ('in the {{< glossary_tooltip text="API Group" term_id="api-group" >}} of', "in the API Group of"),
    ('a {{< glossary_tooltip term_id="pod" >}} b', "a pod b"),
    ('{{< feature-state state="stable" for_k8s_version="v1.27" >}}', "FEATURE STATE: Kubernetes v1.27 [stable]"),
    ('{{< feature-state for_k8s_version="v1.30" state="beta" >}}', "FEATURE STATE: Kubernetes v1.30 [beta]"),
    ('See [Node Lease]({{< ref "/docs/concepts/nodes" >}}) now.', "See Node Lease now."),
    ('See [the page]({{< relref "x.md#y" >}}).', "See the page."),
    ('before {{< include "task-tutorial-prereqs.md" >}} after', "before  after"),
    ('keep {{< unknownpair x="1" >}}inner text{{< /unknownpair >}} tail', "keep inner text tail"),
    ('a {{< comment >}}hidden remark{{< /comment >}} b', "a  b"),
    ('## {{% heading "prerequisites" %}}', "## Before you begin"),
    ('Kubernetes v{{< skew currentVersion >}} is out', "Kubernetes v1.31 is out"),
])
def test_shortcodes(source, expected):
    assert render_shortcodes(source).strip() == expected


def test_admonition_keeps_text():
    out = render_shortcodes("x\n{{< note >}}\nBe careful.\n{{< /note >}}\ny")
    assert "Note:" in out and "Be careful." in out and out.strip().endswith("y")


def test_min_version_is_visible():
    doc = parse_markdown("---\ntitle: T\nmin-kubernetes-server-version: v1.18\n---\nBody", "t")
    assert doc.text == "Your Kubernetes server must be at or later than version v1.18.\n\nBody"


@pytest.mark.parametrize("min_version,expected", [
    ("v1.18", "Your Kubernetes server must be at or later than version v1.18. "
              "To check the version, enter `kubectl version`."),
    ("v1.31", "Your Kubernetes server must be version v1.31. To check the version, enter `kubectl version`."),
    (None, "To check the version, enter `kubectl version`."),
])
def test_version_check_prints_the_sites_sentence_where_it_stands(min_version, expected):
    front = f"min-kubernetes-server-version: {min_version}\n" if min_version else ""
    doc = parse_markdown(f"---\ntitle: T\n{front}---\nIntro\n\n## Before you begin\n\n"
                         "{{< version-check >}}\n\n## Steps\n\nDo it.", "t")
    assert doc.text == f"Intro\n\n## Before you begin\n\n{expected}\n\n## Steps\n\nDo it."


def test_load_folder(tmp_path: Path):
    (tmp_path / "a.md").write_text("---\ntitle: A\n---\nalpha")
    (tmp_path / "b.md").write_text("# B\n\nbeta")
    (tmp_path / "notes.txt").write_text("ignored")
    (tmp_path / "bad.md").write_bytes(b"caf\xe9 latin-1 page")
    corpus = load_corpus(tmp_path)
    assert sorted(corpus.ids()) == ["a", "b", "bad"]
    assert "caf" in next(d for d in corpus.documents if d.doc_id == "bad").text
    assert len(corpus.sha256) == 64


@pytest.mark.parametrize("setup,message", [
    (lambda p: p / "missing", "does not exist"),
    (lambda p: p, "is empty"),
    (lambda p: (p / "x.txt").write_text("t") and p, "has no .md files"),
    (lambda p: ((p / "a.md").write_text("1"), (p / "a.MD").write_text("2")) and p, "same doc id 'a'"),
])
def test_bad_corpus_folders(tmp_path: Path, setup, message):
    with pytest.raises(InputError, match=message):
        load_corpus(setup(tmp_path))


def test_builtin_corpus():
    corpus = builtin_corpus()
    assert {"for", "try", "with", "typesmapping"} <= corpus.ids()
    doc = next(d for d in corpus.documents if d.doc_id == "for")
    assert doc.title == 'The "for" statement' and doc.text.startswith('# The "for" statement')


def test_topic_headings_become_markdown():
    text = "Title\n*****\n\nintro\n\nSection\n=======\n\nbody\n\nSub\n---\n\nmore"
    assert topic_to_markdown(text).split("\n\n")[0:4:2] == ["# Title", "## Section"]
    assert "### Sub" in topic_to_markdown(text)


def words(n: int, word: str = "word") -> str:
    return " ".join([word] * n)


def doc(text: str, title: str = "Doc") -> Document:
    return Document(doc_id="d", title=title, text=text)


def test_headings_paths_and_prefix():
    text = f"# Top\n\n{words(60, 'intro')}\n\n## Install\n\n{words(60, 'inst')}\n\n### Linux\n\n{words(60, 'lin')}"
    chunks = chunk_document(doc(text, "Guide"))
    assert [c.heading_path for c in chunks] == [("Top",), ("Top", "Install"), ("Top", "Install", "Linux")]
    assert chunks[2].index_text.startswith("Guide > Top > Install > Linux\n\n")
    assert [c.chunk_id for c in chunks] == ["d#0", "d#1", "d#2"] and [c.position for c in chunks] == [0, 1, 2]


def test_hash_lines_in_code_fences_are_not_headings():
    text = f"## Real\n\n{words(60)}\n\n```bash\n# install it\napt-get install x\n```\n\n{words(10)}"
    chunks = chunk_document(doc(text))
    assert all(c.heading_path == ("Real",) for c in chunks)
    assert "# install it" in chunks[0].text


def test_packing_sizes():
    paras = "\n\n".join(words(100, f"p{i}") for i in range(10))  # 1000 words, one section
    chunks = chunk_document(doc(paras))
    assert [len(c.text.split()) for c in chunks] == [400, 400, 200]


def test_long_paragraph_is_split_at_max():
    chunks = chunk_document(doc(words(2000)))
    assert [len(c.text.split()) for c in chunks] == [800, 800, 400]


def test_tiny_sections_merge_with_neighbours():
    text = f"## A\n\n{words(10, 'a')}\n\n## B\n\n{words(100, 'b')}\n\n## C\n\n{words(5, 'c')}"
    chunks = chunk_document(doc(text))
    assert len(chunks) == 1
    assert chunks[0].heading_path == ("A",) and "a" in chunks[0].text and "c" in chunks[0].text


def test_empty_body_gives_one_title_only_chunk():
    (chunk,) = chunk_document(doc("", "Only A Title"))
    assert chunk.text == "" and chunk.index_text.startswith("Only A Title")
