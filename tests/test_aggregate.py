"""components.analysis.aggregate.build_report's aggregates: document-level aggregates derived from rows that lack
them, 95% bootstrap intervals (checked against scipy), groups, and judge repeats."""

from __future__ import annotations

import json
import math
from dataclasses import replace

import numpy as np
import pytest

from components.stats import statistics as S
from components.analysis.aggregate import build_report
from utils import metrics as registry
from utils.metrics import RetrievalMetrics as M
from utils.results import QuestionResult, RetrievedItem, RunInfo

QUALITY_METRICS = [m.key for m in registry.metrics() if m.requires is None]  # every metric with an interval


def aggregate(rows, index_time_s=0.0, group_by=None):
    return build_report(RunInfo(k=5), rows, index_time_s=index_time_s, group_by=group_by)


def row(qid: str, docs: list[str], needles: list[str], grade: int | None, **extra) -> QuestionResult:
    rank = M.calculate_rank(docs, needles)
    return QuestionResult(
        question_id=qid, question=f"question {qid}?", expected_answer="answer", needle_doc_id=needles[0],
        needle_doc_ids=needles, needle_found=rank is not None, rank=rank, hit_at_1=rank == 1,
        hit_at_5=rank is not None and rank <= 5, llm_grade=grade, llm_reasoning=None,
        grade_error=None if grade is not None else "timeout: no reply", llm_raw_reply=None,
        prompt_variant="reference", total_score=M.calculate_total_score(grade, rank), latency_ms=1.0,
        grading_latency_ms=0.0, retrieved=[RetrievedItem(i, d, f"{d}#{i}", None) for i, d in enumerate(docs, 1)],
        extra=extra)


ROWS = [  # hand-computed per row: rank, doc_rank, rr, rr_doc, ndcg, recall, ap, context precision, total
    row("q1", ["d1", "d1", "d2", "d3", "d1"], ["d2"], 8, category="a", difficulty="easy"),  # 3,2,1/3,1/2,L3,1,.5,.2,7.6
    row("q2", ["x", "y", "z", "w", "v"], ["d9"], 3, category="a"),  # -, -, 0, 0, 0, 0, 0, 0, 1.8
    row("q3", ["n", "n", "o", "p", "q"], ["n"], 9, category="b"),  # 1, 1, 1, 1, 1, 1, 1, .4, 9.0
    row("q4", ["a", "b", "c", "d", "e"], ["e"], None),  # 5, 5, .2, .2, 1/log2(6), 1, .2, .2, null
]
L3 = 1 / math.log2(3)


def test_hand_computed_aggregates_from_rows_without_the_new_fields():
    agg = aggregate(ROWS, index_time_s=0.5)
    # today's fields, unchanged
    assert (agg.metrics["accuracy"], agg.metrics["hit_at_1_rate"], agg.metrics["hit_at_5_rate"]) == (75.0, 25.0, 75.0)
    assert agg.metrics["mrr"] == pytest.approx((1 / 3 + 0 + 1 + 0.2) / 4)
    assert agg.metrics["avg_llm_grade"] == pytest.approx(20 / 3)
    assert agg.metrics["avg_total_score"] == pytest.approx((7.6 + 1.8 + 9) / 3)
    assert (agg.metrics["pass_rate_8"], agg.metrics["pass_rate_7"], agg.metrics["pass_rate_6_5"]) == (25.0, 50.0, 50.0)
    assert (agg.question_count, agg.graded_count, agg.ungraded_count, agg.grade_errors) == (4, 3, 1, {"timeout": 1})
    # new ones
    assert agg.metrics["hit_at_k_rate"] == 75.0
    assert agg.metrics["mrr_doc"] == pytest.approx((0.5 + 0 + 1 + 0.2) / 4)  # 0.425: q1 is 2nd document, 3rd chunk
    assert agg.metrics["ndcg_at_k"] == pytest.approx((L3 + 0 + 1 + 1 / math.log2(6)) / 4)  # 0.504446
    assert agg.metrics["ndcg_at_k"] == pytest.approx(0.504446, abs=1e-6)
    assert agg.metrics["recall_at_k"] == 0.75
    assert agg.metrics["map_at_k"] == pytest.approx((0.5 + 0 + 1 + 0.2) / 4)
    assert agg.metrics["context_precision"] == pytest.approx((0.2 + 0 + 0.4 + 0.2) / 4)
    json.dumps(agg.to_json(), allow_nan=False)  # strict JSON


def test_stored_row_fields_are_kept():
    stored = replace(ROWS[0], doc_rank=1, hit_at_k=True, rr=1 / 3, rr_doc=1.0, ndcg_at_k=1.0, recall_at_k=1.0,
                     ap_at_k=1.0, context_precision=0.2)
    agg = aggregate([stored], index_time_s=0.0)
    assert (agg.metrics["mrr_doc"], agg.metrics["ndcg_at_k"], agg.metrics["map_at_k"]) == (1.0, 1.0, 1.0)
    assert agg.metrics["mrr"] == pytest.approx(1 / 3)  # chunk level comes from rank, as before


def test_confidence_intervals_are_scipys_percentile_bootstrap():
    stats = pytest.importorskip("scipy.stats")
    rows = ROWS * 5  # 20 questions
    agg = aggregate(rows, index_time_s=0.0)
    assert set(agg.ci95) == set(QUALITY_METRICS)
    assert agg.bootstrap.to_json() == {"resamples": 10_000, "seed": S.BOOTSTRAP_SEED, "method": "percentile"}

    def scipy_ci(values):
        res = stats.bootstrap((np.asarray(values, float),), np.mean, method="percentile", n_resamples=10_000,
                              rng=np.random.default_rng(S.BOOTSTRAP_SEED))
        return [res.confidence_interval.low, res.confidence_interval.high]

    rr = [1 / 3, 0, 1, 0.2] * 5
    assert agg.ci95["mrr"] == pytest.approx(scipy_ci(rr), abs=1e-6)
    assert agg.ci95["hit_at_1_rate"] == pytest.approx(scipy_ci([0, 0, 100, 0] * 5), abs=1e-6)  # percent
    assert agg.ci95["avg_llm_grade"] == pytest.approx(scipy_ci([8, 3, 9] * 5), abs=1e-6)  # graded questions only
    assert agg.ci95["pass_rate_7"] == pytest.approx(scipy_ci([100, 0, 100, 0] * 5), abs=1e-6)  # all questions
    for name, (lo, hi) in agg.ci95.items():
        assert lo <= agg.metrics[name] <= hi, name


def test_no_interval_below_two_questions():
    agg = aggregate(ROWS[:1], index_time_s=0.0)
    assert agg.ci95 == {name: None for name in QUALITY_METRICS}
    agg = aggregate(ROWS[2:], index_time_s=0.0)  # two questions, one graded
    assert agg.ci95["mrr"] is not None and agg.ci95["avg_llm_grade"] is None
    empty = aggregate([], index_time_s=0.0)
    assert empty.ci95 == {name: None for name in QUALITY_METRICS} and empty.groups == {}
    zero = ("mrr_doc", "ndcg_at_k", "recall_at_k", "map_at_k", "context_precision")
    assert [empty.metrics[m] for m in zero] == [0.0] * 5


def test_groups_by_default_fields_the_rows_carry():
    agg = aggregate(ROWS, index_time_s=0.0)
    assert list(agg.groups) == ["category", "difficulty"]  # no row has type or section
    cat = agg.groups["category"]
    assert list(cat) == ["(none)", "a", "b"]
    assert [cat[v]["count"] for v in cat] == [1, 2, 1]
    assert cat["a"]["mrr"] == pytest.approx((1 / 3 + 0) / 2) and cat["a"]["mrr_doc"] == pytest.approx(0.25)
    assert cat["a"]["avg_llm_grade"] == 5.5 and cat["(none)"]["avg_llm_grade"] is None
    assert cat["b"]["hit_at_1_rate"] == 100.0 and cat["b"]["context_precision"] == pytest.approx(0.4)
    assert set(cat["a"]) == {"count", *QUALITY_METRICS}
    assert agg.groups["difficulty"]["easy"]["count"] == 1 and agg.groups["difficulty"]["(none)"]["count"] == 3


def test_group_by_chosen_fields():
    agg = aggregate(ROWS, index_time_s=0.0, group_by=["difficulty"])
    assert list(agg.groups) == ["difficulty"]
    assert aggregate(ROWS, index_time_s=0.0, group_by=[]).groups == {}
    numbers = [replace(r, extra={"level": i % 2}) for i, r in enumerate(ROWS)]
    assert list(aggregate(numbers, index_time_s=0.0, group_by=["level"]).groups["level"]) == ["0", "1"]


def test_judge_repeats_widen_the_grade_intervals():
    # each question's judge gave 4 and 8 on repeats; the recorded grade is their mean, 6
    rows = [replace(row(f"q{i}", ["n"], ["n"], 6), extra={"llm_grades": [4, 8]}) for i in range(30)]
    plain = aggregate([replace(r, extra={}) for r in rows], index_time_s=0.0)
    noisy = aggregate(rows, index_time_s=0.0)
    assert plain.ci95["avg_llm_grade"] == [6.0, 6.0]  # the questions agree: no spread
    lo, hi = noisy.ci95["avg_llm_grade"]
    assert lo < 5.5 and hi > 6.5  # ± 1.96 · 2 / √30 ≈ ± 0.72
    assert plain.ci95["pass_rate_7"] == [0.0, 0.0]  # 6 never passes
    lo, hi = noisy.ci95["pass_rate_7"]  # a repeat of 8 passes, one of 4 does not: 50% ± 1.96 · 50 / √30 ≈ ± 18
    assert 25 < lo < 40 and 60 < hi < 75
    assert noisy.bootstrap.method == "percentile-two-level"
    assert noisy.ci95["mrr"] == plain.ci95["mrr"] == [1.0, 1.0]
