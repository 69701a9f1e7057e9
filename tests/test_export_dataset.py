"""export-dataset: the mining schema line by line on the hand-made corpus, validation metadata, bad input."""

from __future__ import annotations

import json

import pytest

from components.cli import export_dataset, validate
from tests.conftest import K8S, needs_k8s, run_cli
from tests.dataset_fixtures import (OFFLINE, QUESTIONS, export_args, strict_load, validate_args, write_corpus,
                                    write_questions)
from utils.errors import InputError

CTX_KEYS = {"doc_id", "chunk_id", "title", "heading_path", "text", "bm25_score"}
# the questions whose needles exist (export refuses an unknown needle)
EXPORTABLE = [q for q in QUESTIONS if q["id"] != "q_unknown"]


@pytest.fixture
def tiny(tmp_path):
    return write_corpus(tmp_path / "corpus"), write_questions(tmp_path / "qs.json", EXPORTABLE)


def read_lines(path):
    text = path.read_text(encoding="utf-8")
    assert text.endswith("\n")
    return [strict_load(line) for line in text.splitlines()]


def test_schema_per_line(tiny, tmp_path):
    corpus, questions = tiny
    out = tmp_path / "dataset.jsonl"
    assert export_dataset.run(export_args(questions, corpus, out), OFFLINE) == 0
    lines = read_lines(out)
    assert [line["id"] for line in lines] == [f"qs:{q['id']}" for q in EXPORTABLE]
    for line, q in zip(lines, EXPORTABLE, strict=True):
        assert set(line) == {"id", "source", "query", "positive_ctxs", "negative_ctxs", "metadata"}
        assert line["source"] == "benchmark_mining" and line["query"] == q["question"]
        for rank, ctx in enumerate(line["positive_ctxs"], start=1):
            assert set(ctx) == CTX_KEYS | {"rank_relevance"} and ctx["rank_relevance"] == rank
            assert ctx["doc_id"] == q["needle_doc_id"] and ctx["text"].strip()
        scores = [ctx["bm25_score"] for ctx in line["negative_ctxs"]]
        assert scores == sorted(scores, reverse=True) and all(s > 0 for s in scores)
        for ctx in line["negative_ctxs"]:
            assert set(ctx) == CTX_KEYS | {"is_hard_negative"} and ctx["is_hard_negative"] is True
            assert ctx["doc_id"] != q["needle_doc_id"]
        meta = line["metadata"]
        assert meta["needle_doc_ids"] == [q["needle_doc_id"]] and meta["expected_answer"] == q.get("expected_answer")
        assert meta["questions_file"] == "qs.json" and meta["validation"] is None
    first = lines[0]
    assert first["metadata"]["category"] == "config" and first["metadata"]["difficulty"] == "easy"
    pos = first["positive_ctxs"]
    assert [c["chunk_id"] for c in pos] == ["alpha#0"]  # --positives 1: the quorum section
    assert pos[0]["title"] == "Alpha" and pos[0]["heading_path"] == ["Alpha", "Quorum"]
    assert pos[0]["text"].startswith("Alpha > Alpha > Quorum\n\nThe zephyr flag enables quorum mode")
    # "How do I turn on quorum mode?": only epsilon ("Turn the dial ...") shares a term outside alpha
    assert [c["chunk_id"] for c in first["negative_ctxs"]] == ["epsilon#0"]
    by_id = {line["id"]: line for line in lines}
    assert by_id["qs:q_empty"]["positive_ctxs"] == []  # the needle document has no text
    # "What do planets do?" (needle gamma): delta is the hard negative
    assert [c["doc_id"] for c in by_id["qs:q_generic"]["negative_ctxs"]] == ["delta"]


def test_positives_and_negatives_counts(tiny, tmp_path):
    corpus, questions = tiny
    out = tmp_path / "d.jsonl"
    export_dataset.run(export_args(questions, corpus, out, "--positives", "2", "--hard-negatives", "0"), OFFLINE)
    first = read_lines(out)[0]
    assert [(c["chunk_id"], c["rank_relevance"]) for c in first["positive_ctxs"]] == [("alpha#0", 1), ("alpha#1", 2)]
    assert first["negative_ctxs"] == []


def test_validation_verdicts_in_metadata(tiny, tmp_path):
    corpus, questions = tiny
    vfile = tmp_path / "v.json"
    validate.run(validate_args(questions, corpus, vfile), OFFLINE)
    out = tmp_path / "d.jsonl"
    export_dataset.run(export_args(questions, corpus, out, "--validation", str(vfile)), OFFLINE)
    meta = {line["id"]: line["metadata"]["validation"] for line in read_lines(out)}
    assert meta["qs:q_pass"] == {"verdict": "pass", "flags": [], "reasons": [], "sufficiency_grade": 10.0,
                                 "necessity_grade": 1.0, "judge": "lexical"}
    assert meta["qs:q_dup"]["verdict"] == "fail" and meta["qs:q_dup"]["flags"] == ["duplicate"]
    assert meta["qs:q_dup"]["sufficiency_grade"] is None


def test_validation_of_another_file_is_refused(tiny, tmp_path):
    corpus, questions = tiny
    vfile = tmp_path / "v.json"
    validate.run(validate_args(questions, corpus, vfile), OFFLINE)
    other = write_questions(tmp_path / "other.json", EXPORTABLE[:2])
    with pytest.raises(InputError, match="made for another questions file"):
        export_dataset.run(export_args(other, corpus, tmp_path / "d.jsonl", "--validation", str(vfile)), OFFLINE)
    (tmp_path / "junk.json").write_text("{")
    with pytest.raises(InputError, match="not valid JSON"):
        export_dataset.run(export_args(other, corpus, tmp_path / "d.jsonl", "--validation",
                                       str(tmp_path / "junk.json")), OFFLINE)
    assert not (tmp_path / "d.jsonl").exists()


def test_bad_input(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "qs.json")  # includes q_unknown
    with pytest.raises(InputError, match="'nosuch' is not a document"):
        export_dataset.run(export_args(questions, corpus, tmp_path / "d.jsonl"), OFFLINE)
    with pytest.raises(InputError, match="--hard-negatives -1"):
        export_dataset.run(export_args(questions, corpus, tmp_path / "d.jsonl", "--hard-negatives", "-1"), OFFLINE)
    with pytest.raises(InputError, match="^--output .* is the questions file"):
        export_dataset.run(export_args(questions, corpus, questions), OFFLINE)
    assert not (tmp_path / "d.jsonl").exists()


@needs_k8s
def test_cli_kubernetes_informed(tmp_path):
    out = tmp_path / "informed.jsonl"
    result = run_cli("export-dataset", "--questions", str(K8S / "informed_questions.json"), "--corpus",
                     str(K8S / "docs"), "-o", str(out))
    assert result.code == 0, result.stderr
    lines = read_lines(out)
    questions = json.loads((K8S / "informed_questions.json").read_text())["questions"]
    assert len(lines) == len(questions) == 25
    for line, q in zip(lines, questions, strict=True):
        assert [c["doc_id"] for c in line["positive_ctxs"]] == [q["doc_id"]]
        assert len(line["negative_ctxs"]) == 5 and all(c["doc_id"] != q["doc_id"] for c in line["negative_ctxs"])
        assert line["metadata"]["reference_ranks"] == q["reference_ranks"]


def test_required_concepts_are_the_answers_key_concepts(tiny, tmp_path):
    corpus, questions = tiny
    out = tmp_path / "dataset.jsonl"
    assert export_dataset.run(export_args(questions, corpus, out), OFFLINE) == 0
    concepts = {line["id"].split(":")[1]: line["metadata"]["required_concepts"] for line in read_lines(out)}
    # every key term of the answer is in one chunk of 7 (alpha#0: the same IDF); "quorum" occurs twice in the
    # needle (heading and text), the others once: quorum first, then the answer's order
    assert concepts["q_pass"] == ["quorum", "zephyr", "flag", "enables", "mode"]
    assert concepts["q_pass2"] == ["bananas", "yellow"]
    assert concepts["q_wrong_needle"] == ["zephyr", "flag", "enables", "quorum", "mode"]  # none in beta: answer order
    assert concepts["q_noanswer"] is None


def test_a_questions_own_required_concepts_are_kept(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    own = [{**EXPORTABLE[0], "required_concepts": ["quorum mode"]}, EXPORTABLE[2]]
    out = tmp_path / "dataset.jsonl"
    assert export_dataset.run(export_args(write_questions(tmp_path / "qs.json", own), corpus, out), OFFLINE) == 0
    assert [line["metadata"]["required_concepts"] for line in read_lines(out)] == [["quorum mode"],
                                                                                     ["bananas", "yellow"]]


def test_required_concepts_rank_specific_terms_of_the_needle_first():
    from components.core import Chunk
    from components.dataset.required_concepts import required_concepts
    from components.judges.lexical_judge import TermStats

    def chunk(doc, i, text):
        return Chunk(doc, f"{doc}#{i}", "t", (), text, i)

    needle = [chunk("n", 0, "Agents run concurrently. A parallel agent runs agents concurrently."),
              chunk("n", 1, "Run it.")]
    others = [chunk(f"o{i}", 0, "run the tool") for i in range(8)]
    stats = TermStats(needle + others)
    # "run": in 9 of 10 chunks; "agents" (stem agent) and "concurrently": only in n#0, 3 and 2 times; "parallel" once
    answer = "Run the agents concurrently with a parallel agent."
    assert required_concepts(answer, needle, stats) == ["agents", "concurrently", "parallel", "run"]
    assert required_concepts(answer, needle, stats, limit=2) == ["agents", "concurrently"]
    assert required_concepts("", needle, stats) is None and required_concepts("the a", needle, stats) == []
