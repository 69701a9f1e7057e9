"""Proxy chunk-relevance metrics: hand-computed values, pytrec_eval cross-check, empty input."""

from __future__ import annotations

import math

import pytest
import pytrec_eval

from utils import metrics as registry
from utils.metrics import RetrievalMetrics as M

# [3, 0, 2, 1, 0]: DCG = 3/log2(2) + 2/log2(4) + 1/log2(5) = 3 + 1 + 0.430677 = 4.430677
# ideal [3, 2, 1, 0, 0]: IDCG = 3 + 2/log2(3) + 1/log2(4) = 3 + 1.261860 + 0.5 = 4.761860
NDCG_30210 = 4.430677 / 4.761860  # 0.930451


@pytest.mark.parametrize("scores,ndcg", [
    ([3, 0, 2, 1, 0], NDCG_30210),
    ([3, 2, 1, 0, 0], 1.0),  # already ideal
    ([0, 0, 0, 3], 3 / math.log2(5) / 3),  # 1/log2(5) = 0.430677
    ([0, 1], (1 / math.log2(3)) / 1),  # 0.630930
    ([2], 1.0),
    ([0, 0, 0], 0.0),  # nothing relevant: documented 0.0
    ([], 0.0),
])
def test_proxy_ndcg(scores, ndcg):
    assert M.proxy_ndcg_at_k(scores) == pytest.approx(ndcg, abs=1e-6)


@pytest.mark.parametrize("scores", [[3, 0, 2, 1, 0], [0, 0, 0, 3], [1, 2, 3], [2, 2, 0, 1, 3, 0, 1]])
def test_proxy_ndcg_matches_pytrec_eval(scores):
    # qrels = the judge's own scores, run = the retrieved order: trec_eval's nDCG is then the proxy nDCG.
    qrels = {"q": {f"c{i}": s for i, s in enumerate(scores)}}
    run = {"q": {f"c{i}": float(len(scores) - i) for i in range(len(scores))}}
    expected = pytrec_eval.RelevanceEvaluator(qrels, {"ndcg"}).evaluate(run)["q"]["ndcg"]
    assert M.proxy_ndcg_at_k(scores) == pytest.approx(expected, abs=1e-9)


@pytest.mark.parametrize("scores,precision", [
    ([3, 0, 2, 1, 0], 0.4),
    ([1, 1, 1], 0.0),  # 1 = marginal, not relevant
    ([2, 3], 1.0),
    ([], 0.0),
])
def test_proxy_precision(scores, precision):
    assert M.proxy_precision_at_k(scores) == pytest.approx(precision)


def relevance_aggregates(rows):
    """The run's proxy aggregates, as build_report computes them: each proxy metric of the registry."""
    out = {m.key: m.aggregate(rows, 5) for m in registry.metrics(level="proxy")}
    out["chunk_relevance_count"] = sum(1 for r in rows if registry._get(r, "chunk_relevance") is not None)
    return out


def test_relevance_aggregates_hand_computed():
    rows = [
        {"chunk_relevance": [3, 0, 2, 1, 0]},  # ndcg 0.930451, precision 0.4
        {"chunk_relevance": [0, 3, 3]},  # DCG 3/log2(3) + 3/2 = 3.392789; IDCG 3 + 3/log2(3) = 4.892789
        {"chunk_relevance": None},  # not scored: left out
    ]
    agg = relevance_aggregates(rows)
    assert agg["chunk_relevance_count"] == 2
    assert agg["proxy_ndcg_at_k"] == pytest.approx((NDCG_30210 + 3.392789 / 4.892789) / 2, abs=1e-6)
    assert agg["proxy_precision_at_k"] == pytest.approx((0.4 + 2 / 3) / 2)
    # pooled over 8 chunks: sum 12, three 3s, three 0s
    assert agg["proxy_avg_chunk_relevance"] == pytest.approx(12 / 8)
    assert agg["proxy_highly_relevant_rate"] == pytest.approx(37.5)
    assert agg["proxy_irrelevant_rate"] == pytest.approx(37.5)


def test_relevance_aggregates_reads_attributes():
    class Row:
        chunk_relevance = [2, 2]

    assert relevance_aggregates([Row()])["proxy_precision_at_k"] == 1.0


@pytest.mark.parametrize("rows", [[], [{"chunk_relevance": None}]])
def test_relevance_aggregates_nothing_scored(rows):
    agg = relevance_aggregates(rows)
    assert agg == {"proxy_avg_chunk_relevance": None, "proxy_highly_relevant_rate": None,
                   "proxy_irrelevant_rate": None, "proxy_ndcg_at_k": None, "proxy_precision_at_k": None,
                   "chunk_relevance_count": 0}


def test_relevance_aggregates_question_without_chunks():
    agg = relevance_aggregates([{"chunk_relevance": []}, {"chunk_relevance": [3]}])
    assert agg["chunk_relevance_count"] == 2
    assert agg["proxy_ndcg_at_k"] == 0.5 and agg["proxy_precision_at_k"] == 0.5
    assert agg["proxy_avg_chunk_relevance"] == 3.0 and agg["proxy_highly_relevant_rate"] == 100.0


def test_every_proxy_key_is_named_proxy():
    keys = [m.key for m in registry.metrics(level="proxy")]
    assert len(keys) == 5 and all(key.startswith("proxy_") for key in keys)
