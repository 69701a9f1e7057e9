"""Document-level metrics: hand-computed values on rankings that repeat a document, empty
input, and a cross-check against pytrec_eval, which sees each document once (first occurrence)."""

from __future__ import annotations

import math

import pytest

from components.core import Chunk, ScoredChunk
from utils.metrics import RetrievalMetrics as M

REPEATING = ["d1", "d1", "d2", "d3", "d1"]  # chunks of a top 5: three distinct documents


def chunk(doc_id: str, n: int = 0) -> Chunk:
    return Chunk(doc_id=doc_id, chunk_id=f"{doc_id}#{n}", title=doc_id, heading_path=(), text="", position=n)


def test_doc_ranking_keeps_first_occurrences():
    assert M.doc_ranking(REPEATING) == ["d1", "d2", "d3"]
    assert M.doc_ranking([]) == []
    items = [ScoredChunk(chunk("b", 0), 2.0), {"doc_id": "a"}, chunk("b", 1), "c"]
    assert M.doc_ranking(items) == ["b", "a", "c"]


def test_doc_rank_versus_chunk_rank():
    assert M.calculate_rank(REPEATING, "d2") == 3  # chunk level: the third chunk
    assert M.calculate_doc_rank(REPEATING, "d2") == 2  # document level: the second document
    assert M.calculate_doc_rank(REPEATING, ["d3", "d9"]) == 3
    assert M.calculate_doc_rank(REPEATING, "d9") is None
    assert M.calculate_doc_rank([], "d1") is None


def test_reciprocal_rank():
    assert M.reciprocal_rank(4) == 0.25
    assert M.reciprocal_rank(None) == 0.0


L3 = 1 / math.log2(3)  # discount at position 2


@pytest.mark.parametrize("needles,expected", [
    # rank, doc_rank, rr, rr_doc, ndcg, recall, ap, context precision — by hand
    ({"d2"}, (3, 2, 1 / 3, 1 / 2, L3, 1.0, 1 / 2, 1 / 5)),
    ({"d1", "d3"}, (1, 1, 1.0, 1.0, (1 + 1 / 2) / (1 + L3), 1.0, (1 / 1 + 2 / 3) / 2, 4 / 5)),
    ({"d9", "d2", "d8"}, (3, 2, 1 / 3, 1 / 2, L3 / (1 + L3 + 1 / 2), 1 / 3, (1 / 2) / 3, 1 / 5)),
    ({"d9"}, (None, None, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0)),
])
def test_row_metrics_by_hand(needles, expected):
    rank, doc_rank, rr, rr_doc, ndcg, recall, ap, cp = expected
    row = M.row_metrics(REPEATING, needles, 5)
    assert M.calculate_rank(REPEATING, needles) == rank
    assert row["doc_rank"] == doc_rank and row["hit_at_k"] is (rank is not None)
    got = [row[k] for k in ("rr", "rr_doc", "ndcg_at_k", "recall_at_k", "ap_at_k", "context_precision")]
    assert got == pytest.approx([rr, rr_doc, ndcg, recall, ap, cp])
    assert sorted(row) == sorted(["doc_rank", "hit_at_k", "rr", "rr_doc", "ndcg_at_k", "recall_at_k", "ap_at_k",
                                  "context_precision"])


def test_pinned_numbers():
    assert M.ndcg_at_k(REPEATING, {"d1", "d3"}, 5) == pytest.approx(0.919721, abs=1e-6)
    assert M.ndcg_at_k(REPEATING, {"d9", "d2", "d8"}, 5) == pytest.approx(0.296082, abs=1e-6)
    assert M.average_precision_at_k(REPEATING, {"d1", "d3"}, 5) == pytest.approx(0.833333, abs=1e-6)


def test_k_cuts_the_chunks_before_collapsing():
    # only the first two chunks (d1, d1) count at k = 2: d2 is not retrieved
    row = M.row_metrics(REPEATING, "d2", 2)
    assert (row["doc_rank"], row["hit_at_k"], row["rr"], row["ndcg_at_k"], row["context_precision"]) == (
        None, False, 0.0, 0.0, 0.0)
    # ideal DCG over min(#needles, k): two needles but k = 1 → IDCG = 1
    assert M.ndcg_at_k(REPEATING, {"d1", "d2"}, 1) == 1.0


def test_empty_input():
    assert M.ndcg_at_k([], "d1", 5) == 0.0
    assert M.recall_at_k([], "d1", 5) == 0.0
    assert M.average_precision_at_k([], "d1", 5) == 0.0
    assert M.context_precision([], "d1") == 0.0
    assert M.ndcg_at_k(REPEATING, [], 5) == M.recall_at_k(REPEATING, [], 5) == 0.0
    assert M.average_precision_at_k(REPEATING, [], 5) == 0.0
    assert M.row_metrics([], "d1", 5) == {"doc_rank": None, "hit_at_k": False, "rr": 0.0, "rr_doc": 0.0,
                                          "ndcg_at_k": 0.0, "recall_at_k": 0.0, "ap_at_k": 0.0,
                                          "context_precision": 0.0}
    assert M.calculate_mrr_doc([]) == 0.0
    assert M.calculate_mean([]) == 0.0


def test_over_questions():
    rows = [{"doc_rank": 1}, {"doc_rank": 4}, {"doc_rank": None}]
    assert M.calculate_mrr_doc(rows) == pytest.approx((1 + 0.25 + 0) / 3)
    assert M.calculate_mean([0.5, 1.0, 0.0, 0.5]) == 0.5


def test_accepts_retrieved_items_of_every_kind():
    kinds = [REPEATING, [{"doc_id": d} for d in REPEATING], [chunk(d, i) for i, d in enumerate(REPEATING)],
             [ScoredChunk(chunk(d, i), 1.0 - i / 10) for i, d in enumerate(REPEATING)]]
    rows = [M.row_metrics(items, {"d2", "d3"}, 5) for items in kinds]
    assert all(r == rows[0] for r in rows)


RUNS = {  # retrieved chunks' doc ids, best first; most repeat a document
    "q1": ["d1", "d1", "d2", "d3", "d1"],
    "q2": ["d4", "d4", "d4", "d5", "d2"],
    "q3": ["d7", "d8", "d7", "d6", "d8"],
    "q4": ["d1", "d2", "d3", "d4", "d5"],
    "q5": ["d3", "d3", "d3", "d3", "d3"],
    "q6": ["d2", "d9", "d2", "d1", "d6"],
}
NEEDLES = {"q1": {"d2"}, "q2": {"d2", "d5", "d9"}, "q3": {"d6", "d7"}, "q4": {"d9"}, "q5": {"d3"},
           "q6": {"d1", "d6", "d2"}}


def test_against_pytrec_eval_on_repeating_rankings():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    k = 5
    qrels = {q: {d: 1 for d in ds} for q, ds in NEEDLES.items()}
    # pytrec_eval takes one score per document: the document's first chunk decides its place
    run = {q: {d: float(k - i) for i, d in enumerate(M.doc_ranking(ids))} for q, ids in RUNS.items()}
    ref = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg_cut_5", "recall_5", "map_cut_5", "recip_rank"}).evaluate(run)
    rows = {q: M.row_metrics(RUNS[q], NEEDLES[q], k) for q in RUNS}
    for q, row in rows.items():
        assert row["ndcg_at_k"] == pytest.approx(ref[q]["ndcg_cut_5"]), q
        assert row["recall_at_k"] == pytest.approx(ref[q]["recall_5"]), q
        assert row["ap_at_k"] == pytest.approx(ref[q]["map_cut_5"]), q
        assert row["rr_doc"] == pytest.approx(ref[q]["recip_rank"]), q
    assert M.calculate_mrr_doc(list(rows.values())) == pytest.approx(
        sum(v["recip_rank"] for v in ref.values()) / len(ref))
    # the chunk/document difference is exercised: chunk-level RR differs on q1 (3 vs 2) and q2 (4 vs 2)
    differs = [q for q, row in rows.items() if row["rr"] != row["rr_doc"]]
    assert differs == ["q1", "q2"]


# ---- graded relevance: grades are gains, grade 0 is judged non-relevant ----------------------------

def test_graded_ndcg_by_hand():
    grades = {"d2": 3, "d3": 1, "d9": 2}  # d9 is never retrieved: it still counts in the ideal DCG
    dcg = 3 / math.log2(3) + 1 / math.log2(4)  # d2 at position 2, d3 at 3 (d1 at 1 has no gain)
    idcg = 3 / math.log2(2) + 2 / math.log2(3) + 1 / math.log2(4)
    assert M.ndcg_at_k(REPEATING, grades, 5) == pytest.approx(dcg / idcg)
    assert M.ndcg_at_k(REPEATING, grades, 5) == pytest.approx(0.502491, abs=1e-6)
    assert M.ndcg_at_k(REPEATING, {"d2": 1, "d3": 1, "d9": 1}, 5) == pytest.approx(
        M.ndcg_at_k(REPEATING, {"d2", "d3", "d9"}, 5))  # all grades 1: the binary NDCG
    row = M.row_metrics(REPEATING, {"d1": 0, "d2": 1}, 5)  # grade 0: judged, not a needle
    assert (row["doc_rank"], row["recall_at_k"], row["context_precision"]) == (2, 1.0, pytest.approx(1 / 5))
    assert M.relevance_grades({"d1": 0, "d2": 2}) == {"d2": 2} and M.relevance_grades("d1") == {"d1": 1}


GRADED = {  # 0-3, several relevant per question, judged non-relevant documents, needles never retrieved
    "q1": {"d2": 3, "d1": 0, "d7": 1},
    "q2": {"d2": 1, "d5": 2, "d9": 3, "d4": 0},
    "q3": {"d6": 2, "d7": 1, "d8": 0},
    "q4": {"d9": 2},
    "q5": {"d3": 3},
    "q6": {"d1": 1, "d6": 3, "d2": 2},
}


def test_graded_against_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    k = 5
    run = {q: {d: float(k - i) for i, d in enumerate(M.doc_ranking(ids))} for q, ids in RUNS.items()}
    measures = {"ndcg_cut_5", "recall_5", "map_cut_5", "recip_rank", "ndcg_cut_3"}
    ref = pytrec_eval.RelevanceEvaluator(GRADED, measures).evaluate(run)
    for q, grades in GRADED.items():
        row = M.row_metrics(RUNS[q], grades, k)
        assert row["ndcg_at_k"] == pytest.approx(ref[q]["ndcg_cut_5"]), q
        # a cut at 3 documents (k cuts chunks: pass the document ranking to cut documents)
        assert M.ndcg_at_k(M.doc_ranking(RUNS[q]), grades, 3) == pytest.approx(ref[q]["ndcg_cut_3"]), q
        assert row["recall_at_k"] == pytest.approx(ref[q]["recall_5"]), q
        assert row["ap_at_k"] == pytest.approx(ref[q]["map_cut_5"]), q
        assert row["rr_doc"] == pytest.approx(ref[q]["recip_rank"]), q
    # the grades matter: with every judged-relevant document at grade 1 nDCG differs on these
    binary = [q for q, g in GRADED.items()
              if M.ndcg_at_k(RUNS[q], {d for d, x in g.items() if x}, 5) != pytest.approx(ref[q]["ndcg_cut_5"])]
    assert binary == ["q1", "q2", "q3", "q6"]
