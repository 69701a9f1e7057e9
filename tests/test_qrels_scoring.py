"""compare --qrels: results files rescored against pooled labels match pytrec_eval (relevance level 2
for P@k, recall@k and MRR; the 0-3 labels as nDCG gains) on the same qrels and runs; the unjudged
share is the documents the pool never saw; the needle table is unchanged."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from components.analysis.qrels_scoring import question_scores, score_rankings
from components.judges.providers.scripted import play
from tests.conftest import clean_env, run_cli
from tests.test_pool import chunks_shown, runs
from utils.records.trec import read_qrels
from utils.results import load_run

pytrec_eval = pytest.importorskip("pytrec_eval")


def graded_judge(prompt: str) -> str:
    """3 for a chunk with the expected answer; a filler's label is its number modulo 4 (its text names it)."""
    expected = re.search(r"^EXPECTED ANSWER \(ground truth\): (.*)$", prompt, re.MULTILINE).group(1)
    labels = []
    for _, _, text in chunks_shown(prompt):
        text = text.replace("│ ", "")
        filler = re.search(r"about filler(\d)", text)
        labels.append(3 if expected in text else int(filler.group(1)) % 4 if filler else 0)
    return json.dumps(labels)


def test_hand_computed_scores_of_one_question():
    # ranking d1 (label 3), d2 (unjudged), d3 (1), d4 (2); the qrels also label d5 2 (not retrieved)
    judged = {"d1": 3, "d3": 1, "d4": 2, "d5": 2}
    p, recall, rr, ndcg = question_scores(["d1", "d2", "d3", "d4"], judged, 5)
    assert p == pytest.approx(2 / 5) and recall == pytest.approx(2 / 3) and rr == 1.0
    dcg = 3 / 1 + 1 / 2 + 2 / math.log2(5)  # d1, d3, d4 at ranks 1, 3, 4: log2(2), log2(4), log2(5)
    idcg = 3 / 1 + 2 / math.log2(3) + 2 / 2 + 1 / math.log2(5)  # 3, 2, 2, 1
    assert ndcg == pytest.approx(dcg / idcg)
    score = score_rankings("x", {"q": ["d2", "d4"], "r": []}, {"q": judged, "r": {"d9": 0}, "s": {}}, 2)
    assert score.questions == 2 and score.mrr == pytest.approx(0.5 / 2) and score.unjudged == pytest.approx(1 / 2)


def test_compare_qrels_matches_pytrec_eval_and_says_how_much_is_unjudged(tmp_path: Path):
    a, b, c = runs(tmp_path)
    env = clean_env(BENCHMARK_JUDGE="scripted")
    with play(graded_judge):
        pooled = run_cli("pool", str(a), str(b), "-o", str(tmp_path / "pooled"), "--depth", "5",
                         "--store", str(tmp_path / "s.sqlite"), env=env)
    assert pooled.code == 0, pooled.stderr
    qrels_path = tmp_path / "pooled" / "qrels.tsv"
    out = tmp_path / "cmp.json"
    done = run_cli("compare", str(a), str(b), str(c), "--qrels", str(qrels_path), "--json", str(out))
    assert done.code == 0, done.stderr
    assert f"against {qrels_path}" in done.stdout
    scores = {s["label"]: s for s in json.loads(out.read_text())["against_qrels"]["runs"]}

    qrels = read_qrels(qrels_path)
    assert {g for judged in qrels.values() for g in judged.values()} == {0, 1, 2, 3}
    evaluator = pytrec_eval.RelevanceEvaluator(qrels, {"P_5", "recall_5", "recip_rank", "ndcg_cut_5"},
                                               relevance_level=2)
    for path, label in ((a, "A"), (b, "B"), (c, "C")):
        result = load_run(path)
        run = {row.question_id: {doc: float(10 - i) for i, doc in
                                 enumerate(dict.fromkeys(x.doc_id for x in row.retrieved))} for row in result.rows}
        expected = evaluator.evaluate(run)
        mean = {m: sum(q[m] for q in expected.values()) / len(expected)
                for m in ("P_5", "recall_5", "recip_rank", "ndcg_cut_5")}
        got = scores[label]
        assert got["questions"] == len(expected) == 4
        assert got["precision"] == pytest.approx(mean["P_5"])
        assert got["recall"] == pytest.approx(mean["recall_5"])
        assert got["mrr"] == pytest.approx(mean["recip_rank"])
        assert got["ndcg"] == pytest.approx(mean["ndcg_cut_5"])
    assert scores["A"]["unjudged"] == 0 and scores["B"]["unjudged"] == 0
    assert scores["C"]["unjudged"] == pytest.approx(2 / 5)  # filler6 and filler7: never pooled
    assert re.search(r"C\s+5\s+.*40\.0%", done.stdout)

    plain = run_cli("compare", str(a), str(b), str(c))
    assert plain.code == 0
    assert done.stdout.startswith(plain.stdout.rstrip("\n"))  # the needle table unchanged, the second table after it
