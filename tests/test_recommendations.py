"""Recommendations after a comparison of several runs (best quality, fastest, best balance) pinned by
hand, their notes where the quality difference is not significant, the best value of each metric
highlighted in compare's table and the report, and the unrounded latency they are made on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.analysis.compare import compare_runs, format_comparison
from components.analysis.recommendations import best_columns, recommend
from components.report.page import render_comparison
from tests.conftest import run_cli
from tests.test_compare import A, B, results


def test_hand_computed_recommendations():
    # nDCG 0.8 / 0.8 / 0.4; MRR breaks the tie; latencies 10 / 30 / 2 ms, each pair apart on all 6 questions
    # (the paired sign-flip test's p is 2/64 < .05, so the differences are real, not noise)
    ndcg = [[0.8, 0.8], [1.0, 0.6], [0.4, 0.4]]
    mrr = [[0.5, 0.5], [1.0, 0.5], [0.2, 0.2]]
    latency = [[9.0, 10.0, 10.0, 10.0, 11.0, 12.0], [30.0, 30.0, 30.0, 30.0, 31.0, 32.0],
               [1.0, 2.0, 2.0, 2.0, 3.0, 4.0]]
    recs = recommend(["a", "b", "c"], ndcg, mrr, latency, 5)
    picks = {p.kind: p.label for p in recs.picks}
    assert picks == {"best_quality": "b", "fastest": "c", "best_balance": "a"}  # b: tie on nDCG, higher MRR
    a, b, c = recs.candidates
    assert (a.ndcg, b.ndcg, c.ndcg) == pytest.approx((0.8, 0.8, 0.4))
    assert (a.median_latency_ms, b.median_latency_ms, c.median_latency_ms) == (10.0, 30.0, 2.0)  # medians
    assert a.quality == pytest.approx(1.0) and c.quality == pytest.approx(0.5)
    assert a.speed == pytest.approx(1 - 8 / 28) and b.speed == 0.0 and c.speed == 1.0
    assert a.balance == pytest.approx((1 + 20 / 28) / 2) and c.balance == pytest.approx(0.75)
    data = recs.to_json()
    note = "its nDCG@5 is not significantly lower than that of b, the best quality (compare: no detectable difference)"
    assert data["best_balance"] == {"label": "a", "note": note, "ndcg_at_k": pytest.approx(0.8),
                                    "mrr": pytest.approx(0.5), "median_latency_ms": 10.0, "quality": pytest.approx(1.0),
                                    "speed": pytest.approx(20 / 28), "balance": pytest.approx((1 + 20 / 28) / 2)}
    assert data["fastest"]["label"] == "c" and "quality" not in data["fastest"]


def test_equal_latencies_and_no_timings():
    recs = recommend(["a", "b"], [[0.5], [1.0]], [[0.5], [1.0]], [[3.0], [3.0]], 5)
    assert [c.speed for c in recs.candidates] == [1.0, 1.0]  # no spread: every run is as fast
    # equally fast: the fastest pick is the better quality, and says why (it was the first run, "a")
    assert {p.kind: p.label for p in recs.picks} == {"best_quality": "b", "fastest": "b", "best_balance": "b"}
    assert recs.picks[1].note.startswith("the runs are equally fast: their latency differences are within noise")
    untimed = recommend(["a", "b"], [[0.5], [1.0]], [[0.5], [1.0]], [[0.0], [0.0]], 5)  # a file without timings
    assert [p.kind for p in untimed.picks] == ["best_quality"]
    assert recommend(["a"], [[1.0]], [[1.0]], [[1.0]], 5) is None


def test_a_note_where_the_quality_difference_is_not_significant():
    slow_fast = [[5.0] * 6, [1.0] * 6]  # b really faster (p 2/64); one question's latency alone is never
    few = recommend(["a", "b"], [[1.0, 1.0], [0.0, 1.0]], [[1.0, 1.0], [0.0, 1.0]], slow_fast, 5)
    best, fastest = few.picks[0], few.picks[1]
    assert best.label == "a" and "not significantly higher than that of b (compare: no detectable difference)" \
        in best.note
    assert fastest.label == "b" and "not significantly lower than that of a, the best quality" in fastest.note
    many = 30  # every question better by 1: p < .05, so no note
    clear = recommend(["a", "b"], [[1.0] * many, [0.0] * many], [[1.0] * many, [0.0] * many], slow_fast, 5)
    assert [p.note for p in clear.picks] == [None, None, None]


def test_compare_verdict_is_the_one_the_note_follows():
    base = [[0.0] * 30, [1.0] * 30]
    told_same = recommend(["a", "b"], base, base, [[5.0], [1.0]], 5,
                          verdicts={frozenset(("a", "b")): "no detectable difference"})
    assert told_same.picks[0].note is not None  # compare said so (e.g. Holm-adjusted), though alone p < .05
    told_better = recommend(["a", "b"], base, base, [[5.0], [1.0]], 5, verdicts={frozenset(("a", "b")): "better"})
    assert told_better.picks[0].note is None


@pytest.mark.parametrize("values,lower,best", [
    ([1.0, 2.0, 2.0], False, {1, 2}), ([1.0, 2.0, 3.0], True, {0}), ([2.0, 2.0], False, set()),
    ([None, 1.0], False, set()), ([None, 1.0, 0.5], False, {1}),
])
def test_best_columns(values, lower, best):
    assert best_columns(values, lower) == best


def test_compare_table_marks_the_best_and_ends_with_the_recommendations():
    c = compare_runs([A, B])
    text = format_comparison(c)
    assert c.recommendations is not None and c.to_json()["recommendations"]["best_quality"]["label"] == "new"
    mrr = next(line for line in text.splitlines() if line.startswith("MRR "))
    assert mrr.split() == ["MRR", "0.625", "0.833*"]
    hit5 = next(line for line in text.splitlines() if line.startswith("hit@5 "))
    assert "*" in hit5  # 75 against 100
    assert "(* best value of each metric)" in text and "\x1b[1m" not in text
    assert "Recommendations (quality: nDCG@5, ties by MRR; speed: median retrieval latency):" in text
    assert "  best quality  new" in text
    bold = format_comparison(c, bold=True)
    assert "\x1b[1m" in bold and "0.833*" not in bold and "(best value of each metric in bold)" in bold


def test_the_report_highlights_and_recommends():
    c = compare_runs([A, B]).to_json()
    html = render_comparison(c)
    assert "<h3>Recommendations</h3>" in html and "<th>best quality</th><td><b>new</b></td>" in html
    assert "<td class='num best'><b>0.833</b></td>" in html


def test_recommendations_after_a_run_of_several_strategies(tmp_path: Path):
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline,modular-no-llm", "--limit", "3", "--output", str(out))
    assert run.code == 0, run.stderr
    assert "Recommendations (quality: nDCG@5" in run.stdout and "best balance" in run.stdout
    rows = json.loads(out.read_text())["results"]
    assert any(r["latency_ms"] != round(r["latency_ms"], 3) for r in rows)  # unrounded timings


def test_compare_of_several_files_recommends(tmp_path: Path):
    # 4 questions cannot show a latency difference (the paired test's smallest p is 2/16): the same rows
    # twice over, under other ids, make 8 (p 2/256)
    twice = [dict(r, question_id=r["question_id"] + s) for s in ("", "b") for r in A["results"]]
    twice_new = [dict(r, question_id=r["question_id"] + s) for s in ("", "b") for r in B["results"]]
    timed = [dict(r, latency_ms=ms) for r, ms in zip(twice, (4.0, 5.0, 6.0, 7.0) * 2, strict=True)]
    fast = [dict(r, latency_ms=0.5) for r in twice_new]
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(results(timed, "base")))
    b.write_text(json.dumps(results(fast, "new")))
    out = tmp_path / "c.json"
    run = run_cli("compare", str(a), str(b), "--json", str(out))
    assert run.code == 0, run.stderr
    recs = json.loads(out.read_text())["recommendations"]
    assert recs["fastest"] == {"label": "new", "note": None, "ndcg_at_k": pytest.approx(recs["fastest"]["ndcg_at_k"]),
                               "mrr": pytest.approx(0.8333333), "median_latency_ms": 0.5}
    assert recs["candidates"][0]["median_latency_ms"] == 5.5
    assert "fastest       new" in run.stdout


def test_latency_noise_picks_nothing():
    """Four identical retrievers timed with jitter, and a clearly worse one 0.05 ms faster: no run is faster
    beyond noise, so "fastest" and the balance's speed term pick on quality, and the line says the runs are
    equally fast."""
    import numpy as np

    rng = np.random.default_rng(7)
    n = 40
    base = rng.uniform(0.55, 0.70, n)
    latency = [list(base + rng.normal(0, 0.07, n)) for _ in range(4)] + [list(base - 0.05)]
    good, worse = [1.0] * 20 + [0.0] * 20, [0.0] * 40
    ndcg = [good] * 4 + [worse]
    recs = recommend(["a", "b", "c", "d", "worse"], ndcg, ndcg, latency, 5)
    picks = {p.kind: p for p in recs.picks}
    assert picks["fastest"].label != "worse" and picks["best_balance"].label != "worse"
    assert picks["fastest"].note.startswith("the runs are equally fast")
    assert {c.speed for c in recs.candidates} == {1.0}


def test_a_real_latency_difference_still_counts():
    from components.analysis.recommendations import really_slower

    fast = [1.0, 1.1, 0.9, 1.0, 1.2, 1.0, 0.95, 1.05]
    assert really_slower([x * 1.5 for x in fast], fast)  # 50 % slower on every question: p 2/256
    assert not really_slower([x * 1.05 for x in fast], fast)  # under the 10 % gap, however consistent
    assert not really_slower([x + 0.4 * (-1) ** i for i, x in enumerate(fast)], fast)  # no consistent direction
    with pytest.raises(ValueError, match="same questions"):
        really_slower([1.0], fast)


def test_no_recommendations_beside_only_rank_only_systems():
    from components.analysis.compare import RankedSystem

    system = RankedSystem("trec", "trec.txt", {"q1": ["n"], "q2": ["o1", "n"]})
    c = compare_runs([A], systems=[system])
    assert c.recommendations is None and "recommendations" not in c.to_json()
    assert "Recommendations" not in format_comparison(c)
