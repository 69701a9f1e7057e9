"""The index cache: hit, miss, off, what the key covers, broken entries, two runs at once, the CLI."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from components.core import resolve_strategy
from components.readers import load_corpus
from components.run.retrieval import index_cache
from components.run.retrieval.index_cache import (ENTRIES, PreparedIndex, cache_key, fingerprint, key_parts,
                                                  prepare_index)
from tests.conftest import K8S, ROOT, needs_k8s, run_cli
from utils.errors import InputError
from utils.settings import default_cache_dir

PAGES = {
    "pasta": "---\ntitle: Pasta\n---\n# Pasta\n\nBoil the pasta in salted water for ten minutes, then drain it.\n",
    "garden": "# Garden\n\nWater the tomato plants every morning.\n\n## Pruning\n\nPrune the side shoots weekly.\n",
    "cars": "# Cars\n\nCheck the tyre pressure monthly and change the engine oil every year.\n",
    "network": "# Network\n\nA firewall filters packets; open port 443 for HTTPS traffic.\n\n```\nufw allow 443\n```\n",
}
QUERIES = ["how long to boil pasta", "engine oil change", "which port for https", "zzzqqq"]


@pytest.fixture
def corpus_dir(tmp_path: Path) -> Path:
    folder = tmp_path / "corpus"
    folder.mkdir()
    for doc_id, text in PAGES.items():
        (folder / f"{doc_id}.md").write_text(text)
    return folder


def prepare(corpus: Path | None, cache: Path | None, strategy: str = "baseline", **kw) -> PreparedIndex:
    factory = resolve_strategy(strategy).factory
    return prepare_index(corpus, strategy, factory, cache, **kw)


def answers(prepared: PreparedIndex) -> list:
    return [[(h.chunk.chunk_id, h.score) for h in prepared.retriever.retrieve(q, 3)] for q in QUERIES]


def entries(cache: Path) -> list[Path]:
    folder = cache / ENTRIES
    return sorted(folder.iterdir()) if folder.is_dir() else []


@pytest.fixture
def log_lines():
    from loguru import logger

    lines: list[str] = []
    handle = logger.add(lambda m: lines.append(m.record["message"]), level="WARNING")
    yield lines
    logger.remove(handle)


# --------------------------------------------------------------------------- fingerprint


def test_fingerprint_matches_load_corpus_without_parsing(corpus_dir: Path, monkeypatch):
    expected = load_corpus(corpus_dir)
    import components.readers.markdown

    monkeypatch.setattr(components.readers.markdown, "parse_markdown",
                        lambda *a, **k: pytest.fail("fingerprint parsed Markdown"))
    fp = fingerprint(corpus_dir)
    assert fp.sha256 == expected.sha256 and fp.doc_ids == expected.ids() and fp.source == expected.source


def test_fingerprint_of_builtin_corpus_matches():
    expected = load_corpus(None)
    fp = fingerprint(None)
    assert (fp.sha256, fp.doc_ids, fp.source) == (expected.sha256, expected.ids(), expected.source)


# --------------------------------------------------------------------------- miss, hit, off


@pytest.mark.parametrize("strategy", ["baseline", "modular-no-llm", "modular"])
def test_miss_then_hit_gives_the_same_retrieval(corpus_dir: Path, tmp_path: Path, strategy: str, monkeypatch):
    cache = tmp_path / "cache"
    first = prepare(corpus_dir, cache, strategy)
    assert first.cache == "miss" and len(first.key) == 64
    assert [e.name for e in entries(cache)] == [first.key]
    import components.readers.markdown
    import poc.bm25
    import poc.dense

    # a warm start neither parses nor indexes
    monkeypatch.setattr(components.readers.markdown, "parse_markdown", lambda *a, **k: pytest.fail("parsed on a hit"))
    monkeypatch.setattr(poc.bm25.BM25Retriever, "index", lambda *a: pytest.fail("indexed on a hit"))
    monkeypatch.setattr(poc.dense.DenseRetriever, "index", lambda *a: pytest.fail("indexed on a hit"))
    second = prepare(corpus_dir, cache, strategy)
    assert second.cache == "hit" and second.key == first.key
    assert second.chunks == first.chunks and second.doc_ids == first.doc_ids == set(PAGES)
    assert (second.source, second.sha256, second.documents) == (first.source, first.sha256, 4)
    assert answers(second) == answers(first)
    assert second.index_info == {"cache": "hit", "key": first.key}


def test_dense_vectors_are_memory_mapped_on_a_hit(corpus_dir: Path, tmp_path: Path):
    prepare(corpus_dir, tmp_path / "c", "modular-no-llm")
    hit = prepare(corpus_dir, tmp_path / "c", "modular-no-llm")
    matrix = hit.retriever.dense._matrix
    assert isinstance(matrix.base, np.memmap) and not matrix.flags.writeable and matrix.dtype == np.float32


def test_builtin_corpus_is_cached(tmp_path: Path):
    first, second = prepare(None, tmp_path / "c"), prepare(None, tmp_path / "c")
    assert (first.cache, second.cache) == ("miss", "hit")
    assert second.source == "builtin:pydoc_data.topics" and len(second.chunks) == len(first.chunks)


def test_no_cache_reads_and_writes_nothing(corpus_dir: Path, tmp_path: Path):
    prepare(corpus_dir, tmp_path / "c")
    off = prepare(corpus_dir, None)
    assert off.cache == "off" and off.key is None and off.index_info == {"cache": "off", "key": None}
    assert off.sha256 == load_corpus(corpus_dir).sha256 and off.documents == 4
    assert answers(off) == answers(prepare(corpus_dir, tmp_path / "c"))


def test_plugin_without_save_load_is_not_cached(corpus_dir: Path, tmp_path: Path):
    class Plain:
        def index(self, chunks):
            self.chunks = list(chunks)

        def retrieve(self, query, k):
            return []

    prepared = prepare_index(corpus_dir, "mine:make", Plain, tmp_path / "c")
    assert prepared.cache == "off" and prepared.key is None and prepared.retriever.chunks == prepared.chunks
    assert entries(tmp_path / "c") == []


def test_plugin_with_save_load_is_cached(corpus_dir: Path, tmp_path: Path):
    calls = []

    class Saving:
        def index(self, chunks):
            calls.append("index")
            self.chunks = list(chunks)

        def retrieve(self, query, k):
            return []

        def save(self, folder):
            (Path(folder) / "ids.json").write_text(json.dumps([c.chunk_id for c in self.chunks]))

        def load(self, folder, chunks):
            calls.append("load")
            assert json.loads((Path(folder) / "ids.json").read_text()) == [c.chunk_id for c in chunks]
            self.chunks = list(chunks)

    first = prepare_index(corpus_dir, "mine:make", Saving, tmp_path / "c")
    second = prepare_index(corpus_dir, "mine:make", Saving, tmp_path / "c")
    assert (first.cache, second.cache) == ("miss", "hit") and calls == ["index", "load"]
    assert second.retriever.chunks == first.chunks


def test_doc_ids_are_checked_before_indexing(corpus_dir: Path, tmp_path: Path):
    seen = []

    def check(ids, source):
        seen.append((set(ids), source))
        raise InputError("needle 'x' is not a document")

    class Never:
        def index(self, chunks):
            pytest.fail("indexed before the needles were checked")

        def retrieve(self, query, k):
            return []

        save = load = None

    for cache in (tmp_path / "c", None):
        with pytest.raises(InputError):
            prepare_index(corpus_dir, "x:y", Never, cache, check_ids=check)
    assert seen == [(set(PAGES), str(corpus_dir))] * 2


# --------------------------------------------------------------------------- the key


def test_key_covers_content_chunker_retriever_and_versions(corpus_dir: Path, tmp_path: Path, monkeypatch):
    cache = tmp_path / "c"
    base = prepare(corpus_dir, cache).key
    (corpus_dir / "cars.md").write_text(PAGES["cars"] + "\nRotate the tyres.\n")
    changed = prepare(corpus_dir, cache)
    assert changed.cache == "miss" and changed.key != base
    (corpus_dir / "cars.md").write_text(PAGES["cars"])
    assert prepare(corpus_dir, cache).key == base  # same bytes, same key: a hit
    (corpus_dir / "cars.md").rename(corpus_dir / "autos.md")
    assert prepare(corpus_dir, cache).key not in (base, changed.key)  # a doc id is content too
    (corpus_dir / "autos.md").rename(corpus_dir / "cars.md")

    retriever = resolve_strategy("modular-no-llm").factory()
    parts = key_parts("0" * 64, "modular-no-llm", retriever)
    assert parts["retriever"]["alpha"] == 0.5 and parts["retriever"]["bm25"]["k1"] == 1.5
    assert {"components.readers.markdown", "components.core.chunking", "poc.hybrid", "poc.bm25",
            "poc.dense"} <= set(parts["code"])
    assert set(parts["versions"]) == {"python", "bm25s", "PyStemmer", "wordllama", "numpy"}
    variants = [key_parts("1" * 64, "modular-no-llm", retriever),  # content
                key_parts("0" * 64, "baseline", retriever)]  # strategy name
    retriever.alpha = 0.7
    variants.append(key_parts("0" * 64, "modular-no-llm", retriever))  # a setting
    retriever.alpha = 0.5
    retriever.bm25.k1 = 1.2
    variants.append(key_parts("0" * 64, "modular-no-llm", retriever))  # a nested retriever's setting
    retriever.bm25.k1 = 1.5
    import components.core.chunking

    monkeypatch.setattr(components.core.chunking, "TARGET_WORDS", 300)
    variants.append(key_parts("0" * 64, "modular-no-llm", retriever))  # chunker
    monkeypatch.undo()
    import utils.records.versions

    monkeypatch.setattr(utils.records.versions.metadata, "version", lambda name: "9.9.9")
    variants.append(key_parts("0" * 64, "modular-no-llm", retriever))  # library versions
    monkeypatch.undo()
    keys = {cache_key(parts)} | {cache_key(v) for v in variants}
    assert len(keys) == len(variants) + 1
    assert cache_key(key_parts("0" * 64, "modular-no-llm", retriever)) == cache_key(parts)


# --------------------------------------------------------------------------- broken entries


def _truncate(path: Path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])


def _garbage_same_size(path: Path) -> None:
    path.write_bytes(b"\x93NUMPY garbage".ljust(path.stat().st_size, b"\xff"))


def _wrong_format(entry: Path) -> None:
    meta = json.loads((entry / "meta.json").read_text())
    meta["format"] = 0
    (entry / "meta.json").write_text(json.dumps(meta))


DAMAGE = {
    "truncated npy": lambda e: _truncate(e / "retriever" / "dense" / "vectors.npy"),
    "garbage npy (same size)": lambda e: _garbage_same_size(e / "retriever" / "dense" / "vectors.npy"),
    "garbage bm25 vocab (same size)": lambda e: _garbage_same_size(e / "retriever" / "bm25" / "vocab.index.json"),
    "garbage chunks (same size)": lambda e: _garbage_same_size(e / "chunks.jsonl"),
    "missing file": lambda e: (e / "retriever" / "bm25" / "data.csc.index.npy").unlink(),
    "missing meta": lambda e: (e / "meta.json").unlink(),
    "garbage meta": lambda e: (e / "meta.json").write_text("{not json"),
    "wrong format version": _wrong_format,
    "empty folder": lambda e: [p.unlink() for p in sorted(e.rglob("*"), reverse=True) if p.is_file()],
}


@pytest.mark.parametrize("damage", DAMAGE, ids=list(DAMAGE))
def test_broken_entry_is_rebuilt_with_one_warning(corpus_dir: Path, tmp_path: Path, damage: str, log_lines):
    cache = tmp_path / "c"
    good = prepare(corpus_dir, cache, "modular-no-llm")
    DAMAGE[damage](cache / ENTRIES / good.key)
    rebuilt = prepare(corpus_dir, cache, "modular-no-llm")
    assert rebuilt.cache == "miss" and rebuilt.key == good.key
    assert answers(rebuilt) == answers(good)
    assert len(log_lines) == 1 and "index cache: entry" in log_lines[0] and "rebuilding it" in log_lines[0]
    assert "\n" not in log_lines[0]
    again = prepare(corpus_dir, cache, "modular-no-llm")  # the rebuilt entry is whole
    assert again.cache == "hit" and answers(again) == answers(good) and len(log_lines) == 1
    assert [e.name for e in entries(cache)] == [good.key]  # the broken copy is gone


def test_unwritable_cache_folder_is_a_warning(corpus_dir: Path, tmp_path: Path, log_lines):
    not_a_folder = tmp_path / "file"
    not_a_folder.write_text("x")
    prepared = prepare(corpus_dir, not_a_folder)
    assert prepared.cache == "off" and answers(prepared) == answers(prepare(corpus_dir, None))
    assert len(log_lines) == 1 and "cannot use" in log_lines[0]


def test_failed_save_leaves_no_partial_entry(corpus_dir: Path, tmp_path: Path, monkeypatch, log_lines):
    from poc.bm25 import BM25Retriever

    def broken_save(self, folder):
        (Path(folder) / "half.npy").write_bytes(b"\x93NUMPY")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(BM25Retriever, "save", broken_save)
    prepared = prepare(corpus_dir, tmp_path / "c")
    assert prepared.cache == "miss" and answers(prepared)[0][0][0] == "pasta#0"
    assert entries(tmp_path / "c") == [] and len(log_lines) == 1 and "could not store" in log_lines[0]


def test_losing_the_rename_race_keeps_the_winner(corpus_dir: Path, tmp_path: Path):
    cache = tmp_path / "c"
    first = prepare(corpus_dir, cache)
    winner = cache / ENTRIES / first.key
    before = (winner / "meta.json").stat().st_mtime_ns
    stored = index_cache._save_entry(cache / ENTRIES, first.key, {}, first.chunks, first.retriever)
    assert stored and (winner / "meta.json").stat().st_mtime_ns == before
    assert [e.name for e in entries(cache)] == [first.key]  # no temporary folder left behind


@pytest.mark.slow  # two real processes racing to store one entry
def test_two_processes_at_once(corpus_dir: Path, tmp_path: Path):
    """Both runs miss and build; a file barrier holds each before its rename until both are there,
    so one rename must lose the race. Both runs succeed and the cache holds one whole entry."""
    cache, barrier = tmp_path / "c", tmp_path / "barrier"
    barrier.mkdir()
    script = textwrap.dedent(f"""
        import json, os, time
        from components.core import resolve_strategy
        from components.run.retrieval.index_cache import prepare_index

        real_rename = os.rename
        def rename(src, dst):
            if ".tmp-" in str(src):
                open(os.path.join({str(barrier)!r}, str(os.getpid())), "w").close()
                deadline = time.monotonic() + 60
                while len(os.listdir({str(barrier)!r})) < 2 and time.monotonic() < deadline:
                    time.sleep(0.01)
            return real_rename(src, dst)
        os.rename = rename
        p = prepare_index({str(corpus_dir)!r}, "modular-no-llm", resolve_strategy("modular-no-llm").factory,
                          {str(cache)!r})
        hits = [[(h.chunk.chunk_id, round(h.score, 5)) for h in p.retriever.retrieve(q, 3)] for q in {QUERIES!r}]
        print(json.dumps({{"cache": p.cache, "key": p.key, "hits": hits}}))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for _ in range(2)]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert not any("WARNING" in err for _, err in outs), outs
    results = [json.loads(out) for out, _ in outs]
    assert [r["cache"] for r in results] == ["miss", "miss"] and len(list(barrier.iterdir())) == 2
    assert results[0]["key"] == results[1]["key"] and results[0]["hits"] == results[1]["hits"]
    assert [e.name for e in entries(cache)] == [results[0]["key"]]  # no temporary folder left
    hit = prepare(corpus_dir, cache, "modular-no-llm")
    assert hit.cache == "hit" and [[[c, round(s, 5)] for c, s in a] for a in answers(hit)] == results[0]["hits"]


@pytest.mark.slow  # the full Kubernetes corpus indexed cold
@needs_k8s
def test_kubernetes_hit_retrieves_as_a_fresh_index(tmp_path: Path):
    from components.readers import load_questions

    questions = [q.question for q in load_questions(K8S / "needle_questions_adversarial.json").questions]
    cold = prepare(K8S / "docs", tmp_path / "c", "modular-no-llm")
    warm = prepare(K8S / "docs", tmp_path / "c", "modular-no-llm")
    assert (cold.cache, warm.cache) == ("miss", "hit") and warm.chunks == cold.chunks
    for q in questions:
        assert [(h.chunk.chunk_id, h.score) for h in warm.retriever.retrieve(q, 5)] == \
            [(h.chunk.chunk_id, h.score) for h in cold.retriever.retrieve(q, 5)]


# --------------------------------------------------------------------------- the CLI


def test_cli_records_cache_status(tmp_path: Path, few_questions: Path):
    cache, out = tmp_path / "cache", tmp_path / "r.json"
    args = ("--strategy", "baseline", "--questions", str(few_questions), "--output", str(out))
    runs = []
    for extra in (("--cache-dir", str(cache)), ("--cache-dir", str(cache)), ("--no-cache",)):
        run = run_cli(*args, *extra)
        assert run.code == 0, run.stderr
        runs.append((run, json.loads(out.read_text())))
    (miss, r1), (hit, r2), (off, r3) = runs
    assert r1["run"]["index"]["cache"] == "miss" and len(r1["run"]["index"]["key"]) == 64
    assert r2["run"]["index"] == {"cache": "hit", "key": r1["run"]["index"]["key"]}
    assert r3["run"]["index"] == {"cache": "off", "key": None}
    assert "; index cache miss)" in miss.stderr and "; index cache hit)" in hit.stderr
    assert r1["run"]["corpus"] == r2["run"]["corpus"] == r3["run"]["corpus"]
    assert [r["retrieved"] for r in r1["results"]] == [r["retrieved"] for r in r2["results"]] \
        == [r["retrieved"] for r in r3["results"]]
    assert len(entries(cache)) == 1


def test_default_cache_dir_is_outside_the_repository(tmp_path: Path):
    assert default_cache_dir({"XDG_CACHE_HOME": str(tmp_path), "HOME": "/h"}) == tmp_path / "retrieval-benchmark"
    assert default_cache_dir({"XDG_CACHE_HOME": "relative", "HOME": "/h"}) == Path("/h/.cache/retrieval-benchmark")
    assert default_cache_dir({"HOME": "/h"}) == Path("/h/.cache/retrieval-benchmark")
