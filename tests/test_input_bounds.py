"""Input bounds: no input file can hang, blow up or crash a load.

Hostile pages and questions files run in a child process with a 2 GB address-space limit and a
generous wall-clock bound (``BOUND_S``): the bound catches a quadratic or cubic blow-up, a memory
bomb or a hang; it is not a speed measurement (that is ``bench/parsing.py``).
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

from components.core import Chunk, top_k
from components.core.chunking import chunk_corpus
from components.readers import load_corpus, load_questions
from components.readers.markdown import corpus_files, parse_markdown
from tests.conftest import K8S, ROOT, loguru_messages, needs_k8s
from utils.errors import InputError

BOUND_S = 30.0
SPACES = " " * 100_000

# A child that loads one corpus folder (argv[1]) and prints what it got, under a memory cap.
_LOAD_PAGE = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from components.core.chunking import chunk_corpus
from components.readers import load_corpus
corpus = load_corpus(sys.argv[1])
chunks = chunk_corpus(corpus.documents)
print(json.dumps({"docs": [d.doc_id for d in corpus.documents], "chunks": len(chunks),
                  "title": corpus.documents[0].title, "metadata": sorted(map(str, corpus.documents[0].metadata))}))
"""
# A child that loads one questions file (argv[1]; "-" = stdin) and prints the outcome.
_LOAD_QUESTIONS = """
import json, resource, sys
resource.setrlimit(resource.RLIMIT_AS, (2 << 30, 2 << 30))
from components.readers import load_questions
from utils.errors import InputError
try:
    qset = load_questions(sys.argv[1])
except InputError as err:
    print(json.dumps({"error": str(err)}))
else:
    print(json.dumps({"ids": [q.id for q in qset.questions]}))
"""


def _child(script: str, arg: str, *, stdin=None) -> dict:
    """Run ``script`` in a fresh interpreter; fail the test when it outlives BOUND_S or crashes."""
    try:
        proc = subprocess.run([sys.executable, "-c", script, arg], cwd=ROOT, stdin=stdin, capture_output=True,
                              text=True, timeout=BOUND_S)
    except subprocess.TimeoutExpired:
        pytest.fail(f"still running after {BOUND_S} s (a super-linear blow-up or a hang)")
    assert proc.returncode == 0, f"exit {proc.returncode}: {proc.stderr[-600:]}"
    return json.loads(proc.stdout.splitlines()[-1])


def _billion_laughs(levels: int = 9) -> str:
    lines = ['a0: &a0 ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    lines += [f"a{i}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, levels)]
    return "---\ntitle: Bomb\n" + "\n".join(lines) + "\n---\nbody text\n"


def _merge_bomb(levels: int = 12) -> str:
    """Merge keys copy the aliased mapping's pairs at each level: 9^levels pairs."""
    lines = ["a0: &a0 {k0: 1, k1: 2, k2: 3, k3: 4}"]
    lines += [f"a{i}: &a{i} {{<<: [" + ",".join([f"*a{i - 1}"] * 9) + "]}" for i in range(1, levels)]
    return "---\ntitle: Bomb\n" + "\n".join(lines) + "\n---\nbody text\n"


# (row id, page text). Before this change every row took over BOUND_S, ran out of memory or crashed,
# except the "-guard" rows: constructs that were already linear, kept so they stay so. (The billion
# laughs parses fast, as a graph; it explodes when anything serialises the metadata, e.g. json.dumps.)
HOSTILE_PAGES = [
    # _HEADING / _H1 `^(#{1,4})\s+(.+?)\s*#*\s*$`: cubic in a run of spaces
    ("h1-3000-spaces-quoted-case", "# a" + " " * 3_000 + "b\n\ntext"),
    ("h1-100k-spaces-guard", "# " + SPACES + "x\n\ntext"),
    ("h2-text-100k-spaces-text", "## a" + SPACES + "b\n\ntext"),
    ("h3-text-100k-spaces-hashes-spaces-guard", "### a" + SPACES + "##" + SPACES + "\n\ntext"),
    ("h4-only-100k-spaces-guard", "####" + SPACES + "\n\ntext"),
    ("line-of-100k-spaces-guard", "intro\n" + SPACES + "\nend"),
    # _ANCHOR `\s*\{#[^}]*\}\s*$`: quadratic in spaces and in unclosed `{#`
    ("anchor-100k-spaces-then-anchor", "## t" + SPACES + "{#id}\n\ntext"),
    ("anchor-unclosed-x200k", "## t " + "{#" * 200_000 + "\n\ntext"),
    # _SC `\{\{([<%])\s*(/?)\s*([A-Za-z0-9_-]+)(.*?)\s*[>%]\}\}`: spaces, unclosed, repeated
    ("shortcode-open-100k-spaces", "{{<" + SPACES + "!"),
    ("shortcode-open-slash-100k-spaces", "{{<" + SPACES + "/" + SPACES + "!"),
    ("shortcode-unclosed-100k-spaces", "{{< note" + SPACES + "x"),
    ("shortcode-unclosed-x30k", "{{< note a " * 30_000),
    ("shortcode-open-only-x50k-guard", "{{<" * 50_000),
    ("shortcode-percent-unclosed-x30k", "{{% heading x " * 30_000),
    # _ARG `([A-Za-z0-9_-]+)\s*=\s*"([^"]*)"|"([^"]*)"|(\S+)` inside a closed shortcode
    ("arg-name-equals-100k-spaces-guard", "{{< x a=" + SPACES + ">}}"),
    ("arg-unclosed-quote-guard", '{{< x a="' + "b" * 100_000 + " >}}"),
    ("arg-many-names-guard", "{{< x " + "a " * 50_000 + ">}}"),
    ("arg-quotes-x50k-guard", "{{< x " + '"' * 50_001 + " >}}"),
    # _LINK `!?\[([^\]]*)\]\(([^()\s]*(?:\([^()]*\))?[^()\s]*)(?:\s+"[^"]*")?\)`
    ("link-bracket-unclosed-x100k", "[" * 100_000),
    ("link-image-unclosed-x50k", "![" * 50_000),
    ("link-target-unclosed-run", "[x](" + "a" * 100_000),
    ("link-target-paren-run-guard", "[x](" + "(" * 100_000),
    ("link-target-group-then-run-guard", "[x](a(b)" + "c" * 100_000),
    ("link-title-unclosed-quote-guard", '[x](a "' + "b" * 100_000),
    ("link-target-spaces-guard", "[x](a" + SPACES + "b"),
    ("link-repeated-open-x30k-guard", "[x](a " * 30_000),
    # `<!--.*?-->`: each unclosed comment scans to the end
    ("comment-unclosed-x30k", "<!--" * 30_000),
    # _VERSION_CHECK `\{\{<\s*version-check\b`
    ("version-check-100k-spaces", "---\nmin-kubernetes-server-version: v1.2\n---\n{{<" + SPACES + "version-checks"),
    # _FRONT_MATTER `\A---[ \t]*\r?\n(.*?)\r?\n---[ \t]*(?:\r?\n|\Z)`
    ("front-matter-never-closed-guard", "---\n" + "a: b\n" * 20_000 + "body"),
    ("front-matter-100k-spaces-guard", "---" + SPACES + "\ntitle: T\n---" + SPACES + "x\nbody"),
    # fences
    ("fence-never-closed-guard", "# T\n\n```\n" + "x y\n" * 50_000),
    ("h1-in-unclosed-fence-spaces-guard", "```\n# " + SPACES + "x\n"),
    # YAML front matter: alias bombs, nesting, values Python refuses to convert
    ("yaml-billion-laughs-guard", _billion_laughs()),
    ("yaml-merge-key-bomb", _merge_bomb()),
    ("yaml-nested-100k-deep", "---\ntitle: T\nx: " + "[" * 100_000 + "]" * 100_000 + "\n---\nbody"),
    ("yaml-nested-unclosed", "---\ntitle: T\nx: " + "{a: " * 50_000 + "\n---\nbody"),
    ("yaml-5000-digit-int", "---\ntitle: T\nweight: " + "1" * 5_000 + "\n---\nbody"),
    ("yaml-impossible-date", "---\ntitle: T\ndate: 2024-13-45\n---\nbody"),
    ("yaml-sexagesimal-1-MB", "---\ntitle: T\nx: 1" + ":59" * 333_333 + "\n---\nbody"),
]


@pytest.mark.parametrize("page", [p for _, p in HOSTILE_PAGES], ids=[i for i, _ in HOSTILE_PAGES])
def test_hostile_page_loads_in_bounded_time(tmp_path: Path, page: str):
    (tmp_path / "page.md").write_text(page, encoding="utf-8")
    out = _child(_LOAD_PAGE, str(tmp_path))
    assert out["docs"] == ["page"] and out["chunks"] >= 1


# --------------------------------------------------------------------------- YAML front matter


@pytest.fixture
def warnings():
    with loguru_messages("WARNING") as lines:
        yield lines


@pytest.mark.parametrize("front", [
    "title: T\na: &x 1\nb: *x",
    _billion_laughs(4).split("---\n")[1],
    _merge_bomb(3).split("---\n")[1],
    "title: T\nx: " + "[" * 64 + "]" * 64,
    "title: T\nx: " + "a" * 65_536,
], ids=["alias", "billion-laughs", "merge-bomb", "nested-65", "over-64-KiB"])
def test_front_matter_with_aliases_or_deep_nesting_is_dropped_with_one_warning(front, warnings):
    doc = parse_markdown(f"---\n{front}\n---\n# Heading\n\nbody text", "p", path="docs/p.md")
    assert (doc.title, doc.metadata, doc.text) == ("Heading", {}, "# Heading\n\nbody text")
    assert len(warnings) == 1 and warnings[0].startswith("docs/p.md: front matter ")


def test_ordinary_front_matter_still_loads(warnings):
    doc = parse_markdown("---\ntitle: T\nanchored: &x 1\ntags: [a, [b, c]]\n"
                         "nested: " + "[" * 63 + "]" * 63 + "\n---\nbody", "p")
    assert doc.title == "T" and doc.metadata["anchored"] == 1 and doc.metadata["tags"] == ["a", ["b", "c"]]
    assert warnings == []


# --------------------------------------------------------------------------- corpus folder listing


def test_symlink_pointing_outside_the_corpus_is_skipped_with_a_warning(tmp_path: Path, warnings):
    corpus, outside = tmp_path / "corpus", tmp_path / "secret.md"
    corpus.mkdir()
    outside.write_text("# Secret\n\nnot part of the corpus")
    (corpus / "a.md").write_text("# A\n\nalpha")
    (corpus / "inside.md").symlink_to(corpus / "a.md")
    (corpus / "leak.md").symlink_to(outside)
    assert [doc_id for doc_id, _ in corpus_files(corpus)] == ["a", "inside"]
    assert sorted(load_corpus(corpus).ids()) == ["a", "inside"]
    assert len(warnings) == 1 and "leak.md" in warnings[0] and "outside" in warnings[0]


def test_subfolder_files_are_named_in_one_warning_line(tmp_path: Path, warnings):
    (tmp_path / "a.md").write_text("# A\n\nalpha")
    for rel in ("sub/x.md", "sub/y.md", "sub/deeper/z.md", "other/w.md", "other/pic.png"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("# X\n\nx")
    assert sorted(load_corpus(tmp_path).ids()) == ["a"]
    assert len(warnings) == 1
    assert "*.md files in subfolders: 4 (other/w.md, sub/deeper/z.md, sub/x.md, …)" in warnings[0]


def test_broken_symlink_and_fifo_are_named_not_read(tmp_path: Path, warnings):
    (tmp_path / "a.md").write_text("# A\n\nalpha")
    (tmp_path / "gone.md").symlink_to(tmp_path / "missing.md")
    os.mkfifo(tmp_path / "pipe.md")
    assert sorted(load_corpus(tmp_path).ids()) == ["a"]
    assert len(warnings) == 1 and "gone.md" in warnings[0] and "pipe.md" in warnings[0]


def test_listing_warning_is_given_once_per_folder(tmp_path: Path, warnings):
    (tmp_path / "a.md").write_text("# A\n\nalpha")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "b.md").write_text("b")
    assert corpus_files(tmp_path) == corpus_files(tmp_path)  # e.g. the index cache, then the loader
    load_corpus(tmp_path)
    assert len(warnings) == 1


# --------------------------------------------------------------------------- questions file

_ONE_QUESTION = {"questions": [{"id": "q1", "question": "What?", "needle_doc_id": "for"}]}


def _questions_rows(tmp: Path) -> dict[str, tuple[str, object, str | None]]:
    """row id → (argv path, stdin, expected InputError substring; None = loads)."""
    big = tmp / "big.json"
    with big.open("wb") as f:
        f.truncate(50_000_001)  # sparse: one byte over the cap
    deep, huge_int, nan, surrogate = (tmp / f"{n}.json" for n in ("deep", "int", "nan", "sur"))
    deep.write_text("[" * 100_000 + "]" * 100_000)
    (tmp / "extra.json").write_text('{"questions": [{"id": "a", "question": "q", "needle_doc_id": "for", "x": '
                                    + "[" * 900 + "]" * 900 + "}]}")
    huge_int.write_text('{"questions": [{"id": ' + "1" * 5_000 + ', "question": "q", "needle_doc_id": "for"}]}')
    nan.write_text('{"questions": [{"id": "a", "question": "q", "needle_doc_id": "for", "w": NaN}]}')
    surrogate.write_text('{"questions": [{"id": "a", "question": "q \\ud800", "needle_doc_id": "for"}]}')
    fifo = tmp / "fifo.json"
    os.mkfifo(fifo)
    (tmp / "zero.json").symlink_to("/dev/zero")
    good = tmp / "good.json"
    good.write_text(json.dumps(_ONE_QUESTION))
    return {
        "dev-zero": ("/dev/zero", None, "not a regular file"),
        "symlink-to-dev-zero": (str(tmp / "zero.json"), None, "not a regular file"),
        "fifo": (str(fifo), None, "not a regular file"),
        "folder": (str(tmp), None, "is a folder"),
        "over-50-MB": (str(big), None, "over the 50 MB cap"),
        "stdin-dash": ("-", good.open("rb"), None),
        "stdin-dev-zero": ("-", open("/dev/zero", "rb"), "over the 50 MB cap"),
        "json-nested-100k-deep": (str(deep), None, "nested too deeply"),
        "json-extra-nested-900": (str(tmp / "extra.json"), None, "nested more than 32 levels"),
        "json-5000-digit-id": (str(huge_int), None, "number"),
        "json-NaN": (str(nan), None, "NaN"),
        "lone-surrogate": (str(surrogate), None, "surrogate"),
    }


QUESTION_ROWS = ["dev-zero", "symlink-to-dev-zero", "fifo", "folder", "over-50-MB", "stdin-dash", "stdin-dev-zero",
                 "json-nested-100k-deep", "json-extra-nested-900", "json-5000-digit-id", "json-NaN", "lone-surrogate"]


@pytest.mark.parametrize("row", QUESTION_ROWS)
def test_questions_file_is_bounded(tmp_path: Path, row: str):
    path, stdin, expected = _questions_rows(tmp_path)[row]
    try:
        out = _child(_LOAD_QUESTIONS, path, stdin=stdin)
    finally:
        if stdin is not None:
            stdin.close()
    if expected is None:
        assert out == {"ids": ["q1"]}
    else:
        assert "error" in out and expected in out["error"], out
        assert "\n" not in out["error"] and ": " in out["error"]


def test_reading_stdin_stays_interruptible():
    """A questions stream that never ends (here: a pipe nobody closes) yields to Ctrl-C."""
    # Ctrl-C's default handler, as in a terminal: a test runner started in the background of a
    # non-interactive shell hands its children SIGINT ignored, and Python then installs none.
    script = ("import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
              "sys.stderr.write('reading\\n')\nsys.stderr.flush()\n" + _LOAD_QUESTIONS)
    proc = subprocess.Popen([sys.executable, "-c", script, "-"], cwd=ROOT, stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        proc.stdin.write(" " * 100_000)
        proc.stdin.flush()
        assert proc.stderr.readline() == "reading\n"  # Python's SIGINT handler is installed by now
        time.sleep(0.5)
        assert proc.poll() is None, "returned before its input ended: " + proc.stdout.read()
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=BOUND_S)
    finally:
        proc.kill()
        proc.wait()
    assert "KeyboardInterrupt" in err, (proc.returncode, err)


def test_questions_from_stdin_in_process(monkeypatch: pytest.MonkeyPatch):
    import io

    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(json.dumps(_ONE_QUESTION).encode())))
    qset = load_questions("-")
    assert [q.id for q in qset.questions] == ["q1"] and qset.path == "<stdin>"
    assert qset.sha256 == hashlib.sha256(json.dumps(_ONE_QUESTION).encode()).hexdigest()


def test_regular_file_under_the_cap_still_loads(tmp_path: Path):
    path = tmp_path / "q.json"
    path.write_text(json.dumps(_ONE_QUESTION))
    with pytest.raises(InputError, match="does not exist"):
        load_questions(tmp_path / "missing.json")
    assert [q.id for q in load_questions(path).questions] == ["q1"]


# --------------------------------------------------------------------------- top_k ties


def _chunks(n: int) -> list[Chunk]:
    return [Chunk("d", f"d#{i}", "t", (), "x", i) for i in range(n)]


@pytest.mark.parametrize("scores,k,expected", [
    ([1, 0, 2, 2], 1, [2]),  # argpartition kept #3
    ([1, 1, 2, 2], 3, [2, 3, 0]),  # argpartition kept #1
    ([1.0] * 1000, 5, [0, 1, 2, 3, 4]),  # argpartition kept #984-#988
    ([0.5, 0.9, 0.5, 0.9, 0.5, 0.1, 0.5], 4, [1, 3, 0, 2]),
    ([3, 1, 2], 5, [0, 2, 1]),  # k above the count
    ([float("nan"), 1, float("nan"), 1], 3, [1, 3, 0]),  # NaN ranks last
], ids=["4-k1", "4-k3", "1000-equal", "cut-inside-ties", "k-over-n", "nan-last"])
def test_top_k_breaks_ties_by_earlier_chunk_even_at_the_cut(scores, k, expected):
    got = top_k(_chunks(len(scores)), np.asarray(scores, dtype=np.float32), k)
    assert [s.chunk.position for s in got] == expected


def test_top_indices_on_empty_input_and_k_zero():
    from components.core import top_indices

    assert top_indices(np.zeros(0), 5).tolist() == [] and top_indices(np.ones(3), 0).tolist() == []
    assert top_k([], np.zeros(0), 5) == []


def test_top_k_matches_a_stable_sort_on_many_ties():
    rng = np.random.default_rng(13)
    for n in (7, 50, 300, 5000):
        scores = rng.integers(0, 4, n).astype(np.float32)  # four distinct values: ties everywhere
        for k in (1, 2, 5, 10, n // 3, n - 1):
            expected = sorted(range(n), key=lambda i: (-scores[i], i))[:k]
            assert [s.chunk.position for s in top_k(_chunks(n), scores, k)] == expected


# --------------------------------------------------------------------------- Kubernetes output unchanged


@needs_k8s
def test_kubernetes_chunks_are_unchanged(warnings):
    """Pinned on the code before the linear-time rewrite: same 6,165 chunks, same text; every
    page's front matter still loads (no warning)."""
    chunks = chunk_corpus(load_corpus(K8S / "docs").documents)
    assert warnings == []
    digest = hashlib.sha256()
    for c in chunks:
        digest.update(f"{c.chunk_id}\0{c.index_text}\0".encode())
    assert len(chunks) == 6_165
    assert digest.hexdigest() == "35499dcfe3657b5d1b1664b1ddd74c80ff7c336da02b2c67d6b8e75b022ee0da"
