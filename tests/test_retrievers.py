"""Retrievers on a tiny corpus built here, the registry, and the offline dense model load."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from components.core import Chunk, Retriever, ScoredChunk, resolve_strategy
from poc.strategies import STRATEGIES
from tests.conftest import ROOT
from utils.errors import InputError

TEXTS = {
    "cooking": "Boil the pasta in salted water for ten minutes, then drain it.",
    "garden": "Water the tomato plants every morning and prune the side shoots.",
    "cars": "Check the tyre pressure monthly and change the engine oil every year.",
    "network": "A firewall filters packets; open port 443 for HTTPS traffic.",
}


def corpus() -> list[Chunk]:
    return [Chunk(d, f"{d}#0", d.title(), (), t, 0) for d, t in TEXTS.items()]


@pytest.mark.parametrize("name", ["baseline", "modular-no-llm"])
def test_registered_retrievers_find_the_right_document(name):
    retriever = resolve_strategy(name).factory()
    assert isinstance(retriever, Retriever)
    retriever.index(corpus())
    for query, expected in [("how long to boil pasta", "cooking"), ("engine oil change", "cars"),
                            ("which port for https through the firewall", "network")]:
        hits = retriever.retrieve(query, 2)
        assert len(hits) == 2 and all(isinstance(h, ScoredChunk) for h in hits)
        assert hits[0].chunk.doc_id == expected
        assert hits[0].score >= hits[1].score


def test_k_larger_than_corpus_and_unknown_words():
    retriever = resolve_strategy("baseline").factory()
    retriever.index(corpus())
    assert len(retriever.retrieve("pasta", 50)) == 4
    assert len(retriever.retrieve("zzzqqq the of", 3)) == 3  # nothing matches: still k ranked chunks


def test_dense_ranks_by_meaning():
    from poc.dense import DenseRetriever

    retriever = DenseRetriever()
    retriever.index(corpus())
    assert retriever.retrieve("automobile maintenance", 1)[0].chunk.doc_id == "cars"


def test_batches_bound_count_times_longest():
    from poc.dense import batches

    # lengths sorted ascending; budget 100 characters, at most 3 texts a batch
    assert batches([10, 10, 20, 30, 40, 60, 200], budget=100, most=3) == [(0, 3), (3, 5), (5, 6), (6, 7)]
    assert batches([]) == []


def test_dense_vectors_do_not_depend_on_batching(monkeypatch):
    import numpy as np

    import poc.dense
    from poc.dense import DenseRetriever, load_wordllama

    chunks = corpus()
    plain = load_wordllama().embed([c.index_text for c in chunks], norm=True)
    monkeypatch.setattr(poc.dense, "BATCH_CHARS", 1)  # every text its own batch
    retriever = DenseRetriever()
    retriever.index(chunks)
    np.testing.assert_allclose(retriever._matrix, plain, rtol=0, atol=1e-6)


def test_modular_is_the_hybrid_with_query_rewriting():
    modular, hybrid = resolve_strategy("modular"), resolve_strategy("modular-no-llm")
    assert modular.rewrites_queries and not hybrid.rewrites_queries
    assert type(modular.factory()) is type(hybrid.factory())


def test_unknown_strategy_lists_registered_names():
    with pytest.raises(InputError) as info:
        resolve_strategy("bm42")
    for name in STRATEGIES:
        assert name in str(info.value)


def test_user_strategy_by_module_path(tmp_path, monkeypatch):
    (tmp_path / "my_retriever.py").write_text(textwrap.dedent("""
        from poc.retriever import ScoredChunk
        class First:
            def index(self, chunks): self.chunks = list(chunks)
            def retrieve(self, query, k): return [ScoredChunk(c, 1.0) for c in self.chunks[:k]]
        def make(): return First()
        def broken(): return object()
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    retriever = resolve_strategy("my_retriever:make").factory()
    retriever.index(corpus())
    assert [h.chunk.doc_id for h in retriever.retrieve("x", 2)] == ["cooking", "garden"]
    with pytest.raises(InputError, match="lacks"):
        resolve_strategy("my_retriever:broken").factory()
    with pytest.raises(InputError, match="no callable 'nope'"):
        resolve_strategy("my_retriever:nope")
    with pytest.raises(InputError, match="cannot import 'no_such_module_xyz'"):
        resolve_strategy("no_such_module_xyz:make")


def test_dense_model_loads_with_the_network_blocked(tmp_path):
    """Any socket use at all fails the load; HOME points at an empty folder, so no cache can help."""
    code = textwrap.dedent("""
        import socket
        def refuse(*a, **k):
            raise RuntimeError("network use attempted")
        socket.socket.connect = refuse
        socket.create_connection = refuse
        socket.getaddrinfo = refuse
        from poc.dense import load_wordllama
        m = load_wordllama()
        v = m.embed(["hello world"], norm=True)
        print(v.shape)
    """)
    env = {"HOME": str(tmp_path), "HF_HUB_OFFLINE": "0", "PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT)}
    proc = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip() == "(1, 256)"
    assert not any(tmp_path.iterdir())  # wrote nothing into the (empty) home folder
