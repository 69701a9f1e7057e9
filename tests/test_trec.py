"""TREC out and in: export-run's files reproduce every question's document-level metrics in
pytrec_eval (graded, several relevant, repeating documents); a TREC run or a ranx run stands
beside the results in compare; the readers settle duplicates and refuse what TREC cannot carry."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components import api
from components.analysis.aggregate import build_report
from components.analysis.compare import RankedSystem, compare_runs
from components.core import Document
from tests.conftest import loguru_messages, run_cli
from tests.test_api import KeywordRetriever
from utils import metrics as M
from utils.errors import InputError
from utils.results import QuestionResult, RetrievedItem, RunInfo, load_run
from utils.records.trec import read_qrels, read_trec_run

K = 5
RUNS = {  # retrieved chunks' doc ids, best first; most repeat a document
    "q1": ["d1", "d1", "d2", "d3", "d1"],
    "q2": ["d4", "d4", "d4", "d5", "d2"],
    "q3": ["d7", "d8", "d7", "d6", "d8"],
    "q4": ["d1", "d2", "d3", "d4", "d5"],
    "q5": ["d3", "d3", "d3", "d3", "d3"],
    "q6": ["d2", "d9", "d2", "d1", "d6"],
    "q7": ["d5", "d4", "d3", "d2", "d1"],
}
GRADES = {  # graded, several relevant, some never retrieved (they count in the ideal DCG and recall)
    "q1": {"d2": 3, "d7": 1}, "q2": {"d2": 1, "d5": 2, "d9": 3}, "q3": {"d6": 2, "d7": 1}, "q4": {"d9": 1},
    "q5": {"d3": 2}, "q6": {"d1": 1, "d6": 3, "d2": 2}, "q7": {"d1": 1, "d2": 1},
}


def synthetic(k: int = K) -> api.RunResult:
    rows = []
    for qid, docs in RUNS.items():
        grades = GRADES[qid]
        rows.append(QuestionResult(
            question_id=qid, question=f"question {qid}?", needle_doc_id=next(iter(grades)),
            needle_doc_ids=list(grades), needle_grades=grades if any(g != 1 for g in grades.values()) else None,
            rank=M.chunk_rank(docs[:k], grades),
            retrieved=[RetrievedItem(rank=i, doc_id=d, chunk_id=f"{d}#{i}") for i, d in enumerate(docs, 1)]))
    rows.append(QuestionResult(question_id="q8", question="nothing retrieved?", needle_doc_id="d1",
                               needle_doc_ids=["d1"]))
    return build_report(RunInfo(k=k, strategy="toy run"), rows)


def evaluate_files(run_file: Path, qrels_file: Path, measures: set[str]) -> dict:
    pytrec_eval = pytest.importorskip("pytrec_eval")
    with open(qrels_file) as q, open(run_file) as r:
        return pytrec_eval.RelevanceEvaluator(pytrec_eval.parse_qrel(q), measures).evaluate(pytrec_eval.parse_run(r))


def test_export_run_reproduces_every_document_level_figure(tmp_path: Path):
    results = tmp_path / "results.json"
    synthetic().save(results)
    run_file, qrels_file = tmp_path / "run.trec", tmp_path / "qrels.txt"
    done = run_cli("export-run", str(results), "-o", str(run_file), "--qrels", str(qrels_file))
    assert done.code == 0, done.stderr[-2000:]
    assert "1 question(s) retrieved nothing" in done.stderr
    ref = evaluate_files(run_file, qrels_file, {f"ndcg_cut_{K}", f"recall_{K}", f"map_cut_{K}", "recip_rank"})
    rows = {r.question_id: r for r in load_run(results).rows}
    assert sorted(ref) == sorted(RUNS)  # q8 retrieved nothing: no line (trec_eval -c would count it as 0)
    for q, figures in ref.items():
        row = rows[q]
        assert row.ndcg_at_k == pytest.approx(figures[f"ndcg_cut_{K}"]), q
        assert row.recall_at_k == pytest.approx(figures[f"recall_{K}"]), q
        assert row.ap_at_k == pytest.approx(figures[f"map_cut_{K}"]), q
        assert row.rr_doc == pytest.approx(figures["recip_rank"]), q
    assert rows["q8"].ndcg_at_k == rows["q8"].rr_doc == 0.0
    # graded relevance is exercised: binary grades would give other nDCGs
    binary = {q: M.ndcg_at_k(RUNS[q], set(GRADES[q]), K) for q in RUNS}
    assert [q for q in RUNS if binary[q] != pytest.approx(rows[q].ndcg_at_k)] == ["q1", "q2", "q3", "q6"]
    lines = run_file.read_text().splitlines()
    assert lines[:3] == ["q1 Q0 d1 1 3 toy_run", "q1 Q0 d2 2 2 toy_run", "q1 Q0 d3 3 1 toy_run"]
    assert qrels_file.read_text().splitlines()[:2] == ["q1 0 d2 3", "q1 0 d7 1"]


def test_export_at_chunk_level_reproduces_mrr_and_context_precision(tmp_path: Path):
    results = tmp_path / "results.json"
    synthetic().save(results)
    run_file, qrels_file = tmp_path / "chunks.trec", tmp_path / "chunk-qrels.txt"
    done = run_cli("export-run", str(results), "-o", str(run_file), "--qrels", str(qrels_file), "--level", "chunk",
                   "--tag", "mine")
    assert done.code == 0, done.stderr[-2000:]
    ref = evaluate_files(run_file, qrels_file, {"recip_rank", f"P_{K}"})
    rows = {r.question_id: r for r in load_run(results).rows}
    scored = [q for q in RUNS if any(d in GRADES[q] for d in RUNS[q])]  # pytrec_eval skips unjudged queries
    assert sorted(ref) == sorted(scored)
    for q in scored:
        assert rows[q].rr == pytest.approx(ref[q]["recip_rank"]), q
        assert rows[q].context_precision == pytest.approx(ref[q][f"P_{K}"]), q
    assert run_file.read_text().splitlines()[0] == "q1 Q0 d1#1 1 5 mine"


def test_an_evaluated_run_with_graded_questions_exports_what_it_measured(tmp_path: Path):
    docs = [Document("apples", "Apples", "Apples are red or green fruit that grow on trees."),
            Document("pears", "Pears", "Pears are sweet fruit that grow on trees too."),
            Document("boats", "Boats", "A boat floats on water and is moved by sails or engines."),
            Document("clocks", "Clocks", "A clock tells the time with hands or digits.")]
    questions = [{"id": "f", "question": "Which fruit grow on trees?", "needles": {"pears": 3, "apples": 1}},
                 {"id": "b", "question": "What moves a boat on water?", "needles": {"boats": 2, "clocks": 1}},
                 {"id": "c", "question": "What tells the time?", "needle_doc_id": "clocks"}]
    result = api.evaluate(KeywordRetriever(), questions, docs, k=3, judge="offline")
    assert result.rows[0].needle_grades == {"pears": 3, "apples": 1} and result.rows[2].needle_grades is None
    results = tmp_path / "r.json"
    result.save(results)
    run_file, qrels_file = tmp_path / "run.trec", tmp_path / "qrels.txt"
    assert run_cli("export-run", str(results), "-o", str(run_file), "--qrels", str(qrels_file)).code == 0
    ref = evaluate_files(run_file, qrels_file, {"ndcg_cut_3", "recall_3", "map_cut_3", "recip_rank"})
    for row in result.rows:
        assert (row.ndcg_at_k, row.recall_at_k, row.ap_at_k, row.rr_doc) == pytest.approx(
            (ref[row.question_id]["ndcg_cut_3"], ref[row.question_id]["recall_3"],
             ref[row.question_id]["map_cut_3"], ref[row.question_id]["recip_rank"])), row.question_id
    assert result.metrics["ndcg_at_k"] == pytest.approx(sum(v["ndcg_cut_3"] for v in ref.values()) / 3)


def test_export_refuses_ids_trec_cannot_carry_and_its_own_input(tmp_path: Path):
    result = synthetic()
    rows = [QuestionResult(question_id="two words", needle_doc_ids=["d1"],
                           retrieved=[RetrievedItem(rank=1, doc_id="d1", chunk_id="d1#0")])]
    bad = tmp_path / "bad.json"
    build_report(RunInfo(k=5), rows).save(bad)
    done = run_cli("export-run", str(bad), "-o", str(tmp_path / "x.trec"))
    errors = [line for line in done.stderr.splitlines() if "| ERROR" in line]
    assert done.code == 2 and len(errors) == 1 and "question id 'two words' holds whitespace" in errors[0]
    assert not (tmp_path / "x.trec").exists()
    good = tmp_path / "good.json"
    result.save(good)
    before = good.read_text()
    same = run_cli("export-run", str(good), "-o", str(good))
    assert same.code == 2 and "is the results file being exported" in same.stderr and good.read_text() == before
    clash = run_cli("export-run", str(good), "-o", str(tmp_path / "a.trec"), "--qrels", str(tmp_path / "a.trec"))
    assert clash.code == 2 and "is the run file" in clash.stderr


# --------------------------------------------------------------------------- TREC and ranx runs in compare

def test_a_trec_run_and_a_ranx_run_stand_beside_the_results_in_compare(tmp_path: Path):
    base = tmp_path / "base.json"
    synthetic().save(base)
    run_file, qrels_file = tmp_path / "theirs.trec", tmp_path / "qrels.txt"
    assert run_cli("export-run", str(base), "-o", str(run_file), "--qrels", str(qrels_file)).code == 0
    ranking = read_trec_run(run_file)
    ranx = tmp_path / "ranx.json"
    ranx.write_text(json.dumps({q: {d: 10.0 - i for i, d in enumerate(docs)} for q, docs in ranking.items()}))
    out = tmp_path / "c.json"
    done = run_cli("compare", str(base), str(run_file), str(ranx), "--qrels", str(qrels_file), "--json", str(out))
    assert done.code == 0, done.stderr[-2000:]
    assert "rank-only system: the document ranking of" in done.stdout
    data = json.loads(out.read_text())
    means = {r["label"]: r["means"] for r in data["runs"]}
    kinds = {r["label"]: r["kind"] for r in data["runs"]}
    assert kinds == {"toy run": "run", "theirs": "reference", "ranx": "reference"}
    ranked = [r for r in load_run(base).rows if r.retrieved]  # q8 has no line in the run: left out
    ndcg = sum(r.ndcg_at_k for r in ranked) / len(ranked)
    mrr_doc = sum(r.rr_doc for r in ranked) / len(ranked)
    for label in ("theirs", "ranx"):  # the same rankings: the same document-level figures
        assert means[label]["ndcg_at_k"] == pytest.approx(ndcg)
        assert means[label]["mrr_doc"] == pytest.approx(mrr_doc)
        assert means[label]["mrr"] == pytest.approx(mrr_doc)  # rank only: its chunk rank is its document rank
        assert means[label]["avg_llm_grade"] is None
    assert any("theirs.trec ranks no document for 1 of the 8" in w for w in data["warnings"])  # q8


def test_compare_judges_a_trec_run_with_the_baseline_needles_or_the_qrels(tmp_path: Path):
    result = synthetic()
    docs = {q: M.doc_ranking(r.retrieved[:K]) for q, r in ((r.question_id, r) for r in result.rows)}
    system = RankedSystem("theirs", "theirs.trec", {q: list(reversed(d)) for q, d in docs.items() if d})
    by_needles = compare_runs([result], systems=[system])
    expected = sum(M.ndcg_at_k(list(reversed(docs[q])), GRADES[q], K) for q in RUNS) / len(RUNS)
    assert by_needles.runs[1].means["ndcg_at_k"] == pytest.approx(expected)
    flat = {q: {d: 1 for d in g} for q, g in GRADES.items()}
    by_qrels = compare_runs([result], systems=[system], qrels=flat)
    expected_flat = sum(M.ndcg_at_k(list(reversed(docs[q])), set(GRADES[q]), K) for q in RUNS) / len(RUNS)
    assert by_qrels.runs[1].means["ndcg_at_k"] == pytest.approx(expected_flat) != pytest.approx(expected)
    with pytest.raises(InputError, match="label 'toy run'"):
        compare_runs([result], systems=[RankedSystem("toy run", "x.trec", {})])


def test_compare_needs_a_results_file_first(tmp_path: Path):
    run_file = tmp_path / "r.trec"
    run_file.write_text("q1 Q0 d1 1 1.0 x\n")
    base = tmp_path / "base.json"
    synthetic().save(base)
    done = run_cli("compare", str(run_file), str(base))
    assert done.code == 2 and "the baseline" in done.stderr and "is a TREC or ranx run" in done.stderr


# --------------------------------------------------------------------------- the readers

def test_qrels_reader_takes_trec_and_beir_and_settles_duplicates(tmp_path: Path):
    path = tmp_path / "qrels.txt"
    path.write_text("q1 0 d1 2\nq1 0 d2 0\nq1 0 d1 2\nq2 Q0 d3 1\n\nq2 0 d3 3\n")
    with loguru_messages("WARNING") as warnings:
        qrels = read_qrels(path)
    assert qrels == {"q1": {"d1": 2, "d2": 0}, "q2": {"d3": 3}}
    assert len(warnings) == 1 and "2 duplicate lines (line 3: q1 d1, line 6: q2 d3)" in warnings[0]
    tsv = tmp_path / "test.tsv"
    tsv.write_text("query-id\tcorpus-id\tscore\nq1\td1\t1\n")
    assert read_qrels(tsv) == {"q1": {"d1": 1}}
    for text, words in [("q1 0 d1\n", None), ("q1 0 d1 two\n", "not a whole number"),
                        ("q1\tmy doc\t1\n", "document id 'my doc' holds whitespace"), ("a b c d e\n", "5 fields")]:
        path.write_text(text)
        if words is None:  # three whitespace-separated fields: a header only as the first line
            assert read_qrels(path) == {}
            continue
        with pytest.raises(InputError, match=words):
            read_qrels(path)


def test_run_reader_orders_as_trec_eval_and_keeps_the_best_duplicate(tmp_path: Path):
    path = tmp_path / "run.trec"
    path.write_text("q1 Q0 a 1 1.0 t\nq1 Q0 b 2 3.0 t\nq1 Q0 c 3 3.0 t\nq1 Q0 a 9 5.0 t\nq2 Q0 z 1 -1 t\n")
    with loguru_messages("WARNING") as warnings:
        ranking = read_trec_run(path)
    assert ranking == {"q1": ["a", "c", "b"], "q2": ["z"]}  # score first, ties by doc id in reverse
    assert len(warnings) == 1 and "highest score is kept" in warnings[0]
    for text, words in [("q1 Q0 a 1 x t\n", "not a finite number"), ("q1 Q0 a 1 1.0\n", "5 fields, not 6"),
                        ("q1 Q0 a 1 nan t\n", "not a finite number"), ("\n", "holds no ranking")]:
        path.write_text(text)
        with pytest.raises(InputError, match=words):
            read_trec_run(path)
