"""RetrievalMetrics: the issue's must-hold values, hand-computed runs, empty input, and a
cross-check against pytrec_eval on the same runs."""

from __future__ import annotations

import pytest

from components.analysis.aggregate import build_report
from components.core import Chunk, ScoredChunk
from utils.metrics import RetrievalMetrics as M
from utils.results import RunInfo


def chunk(doc_id: str) -> Chunk:
    return Chunk(doc_id=doc_id, chunk_id=f"{doc_id}#0", title=doc_id, heading_path=(), text="", position=0)


def test_must_hold():
    assert M.calculate_rank([chunk("a"), chunk("b"), chunk("c")], "b") == 2
    assert M.calculate_total_score(10, 1) == 10.0
    assert M.calculate_total_score(10, 3) == 9.5
    assert M.calculate_total_score(10, None) == 6.0
    assert M.calculate_total_score(None, 1) is None


def test_rank_accepts_ids_dicts_scored_chunks_and_several_needles():
    assert M.calculate_rank(["a", "b", "c"], "c") == 3
    assert M.calculate_rank([{"doc_id": "x"}, {"doc_id": "y"}], "y") == 2
    assert M.calculate_rank([ScoredChunk(chunk("a"), 1.0), ScoredChunk(chunk("b"), 0.5)], "b") == 2
    assert M.calculate_rank(["a", "b", "c"], ["c", "b"]) == 2
    assert M.calculate_rank(["a", "b"], "z") is None
    assert M.calculate_rank([], "a") is None


@pytest.mark.parametrize("grade,rank,expected", [
    (8, 1, 8.0), (8, 2, 7.6), (8, 3, 7.6), (8, 4, 6.8), (8, 5, 6.8), (8, None, 4.8), (7, 6, 4.2), (1, 5, 0.85),
])
def test_total_score_weights(grade, rank, expected):
    assert M.calculate_total_score(grade, rank) == pytest.approx(expected)


RUN = [  # hand-computed below
    {"rank": 1, "total_score": 9.0, "llm_grade": 9},
    {"rank": 3, "total_score": 7.6, "llm_grade": 8},
    {"rank": None, "total_score": 4.2, "llm_grade": 7},
    {"rank": 2, "total_score": None, "llm_grade": None},
]


def test_hand_computed_run():
    assert M.calculate_mrr(RUN) == pytest.approx((1 + 1 / 3 + 0 + 1 / 2) / 4)  # 0.458333
    assert M.calculate_hit_rate(RUN, 1) == 25.0
    assert M.calculate_hit_rate(RUN, 5) == 75.0
    # over all 4 questions; the null score does not pass
    assert M.calculate_pass_rates(RUN, [8.0, 7.0, 6.5]) == {8.0: 25.0, 7.0: 50.0, 6.5: 50.0}
    assert M.calculate_average(r["llm_grade"] for r in RUN) == 8.0
    assert M.calculate_average(r["total_score"] for r in RUN) == pytest.approx((9.0 + 7.6 + 4.2) / 3)


def test_empty_input():
    assert M.calculate_mrr([]) == 0.0
    assert M.calculate_hit_rate([], 5) == 0.0
    assert M.calculate_pass_rates([]) == {8.0: 0.0, 7.0: 0.0, 6.5: 0.0}
    assert M.calculate_average([]) is None
    assert M.calculate_average([None, None]) is None
    agg = build_report(RunInfo(), [], index_time_s=0.0)
    assert (agg.metrics["mrr"], agg.metrics["accuracy"], agg.metrics["avg_llm_grade"], agg.metrics["avg_total_score"],
            agg.graded_count) == (0.0, 0.0, None, None, 0)


def test_against_pytrec_eval():
    pytrec_eval = pytest.importorskip("pytrec_eval")
    # Three questions; each run lists retrieved doc ids best first.
    runs = {"q1": ["d3", "d1", "d9"], "q2": ["d2", "d5"], "q3": ["d7", "d8", "d4", "d6", "d0"],
            "q4": ["d1", "d2", "d3", "d4", "d5"]}
    needles = {"q1": "d1", "q2": "d2", "q3": "d6", "q4": "d9"}
    qrels = {q: {d: 1} for q, d in needles.items()}
    run = {q: {d: float(len(ids) - i) for i, d in enumerate(ids)} for q, ids in runs.items()}
    ev = pytrec_eval.RelevanceEvaluator(qrels, {"recip_rank", "P_1", "success_5"})
    ref = ev.evaluate(run)
    ours = [{"rank": M.calculate_rank(runs[q], needles[q])} for q in runs]
    assert M.calculate_mrr(ours) == pytest.approx(sum(v["recip_rank"] for v in ref.values()) / len(ref))
    assert M.calculate_hit_rate(ours, 1) / 100 == pytest.approx(sum(v["P_1"] for v in ref.values()) / len(ref))
    assert M.calculate_hit_rate(ours, 5) / 100 == pytest.approx(sum(v["success_5"] for v in ref.values()) / len(ref))
    assert M.calculate_mrr(ours) == pytest.approx((1 / 2 + 1 + 1 / 4 + 0) / 4)
