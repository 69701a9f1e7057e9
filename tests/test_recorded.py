"""Recorded retrievals: the ``recorded`` reader (a question set whose questions carry what their system
retrieved), ``--strategy recorded`` with and without ``--corpus``, ``validate`` on such a set, and
the set's ``version``/``name``/``description`` recorded in ``run``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.readers import QUESTIONS, load_questions, reader_for
from components.readers.recorded import recorded_items
from components.run.retrieval.recorded import RECORDED_SOURCE
from tests.conftest import ROOT, run_cli
from utils.errors import InputError

EXAMPLE = ROOT / "examples" / "recorded_retrievals.json"


def recorded_set(tmp_path: Path, questions: list[dict], file: str = "recorded.json", **about) -> Path:
    path = tmp_path / file
    path.write_text(json.dumps({**about, "questions": questions}))
    return path


def item(doc: str, text: str, **extra) -> dict:
    return {"doc_id": doc, "text": text, **extra}


QUESTIONS_ = [
    {"id": "a", "question": "How do I see the version?", "expected_answer": "run acme --version",
     "needle_doc_id": "install", "retrieved": [item("config", "timeout key"), item("install", "run acme --version",
                                                                                  score=0.5, title="Installing")]},
    {"id": "b", "question": "Where is the timeout set?", "expected_answer": "the timeout key of config.toml",
     "needle_doc_id": "config", "retrieved": [item("config", "the timeout key of config.toml", score=0.9)]},
]


def test_the_reader_is_asked_by_name_and_checks_every_question(tmp_path: Path):
    path = recorded_set(tmp_path, QUESTIONS_)
    assert reader_for(path, QUESTIONS).name == "questions-json"  # never detected: asked by --strategy recorded
    qset = load_questions(path, reader="recorded")
    items = recorded_items(qset)
    assert [i.doc_id for i in items["a"]] == ["config", "install"] and items["a"][1].score == 0.5
    assert items["a"][1].title == "Installing" and items["a"][0].id.startswith("config#")
    missing = recorded_set(tmp_path, [QUESTIONS_[0], {k: v for k, v in QUESTIONS_[1].items() if k != "retrieved"},
                                      {"id": "c", "question": "?", "needle_doc_id": "x"}])
    with pytest.raises(InputError, match=r"question #2 \(id 'b'\) has no \"retrieved\" list"):
        load_questions(missing, reader="recorded")


@pytest.mark.parametrize("bad,message", [
    ("nope", r"\"retrieved\" is a str, not a list"),
    ([{"text": "t"}], r"retrieved\[0\] has no \"doc_id\" text"),
    ([{"doc_id": "d"}], r"retrieved\[0\] \('d'\) has no \"text\""),
    ([{"doc_id": "d", "text": "t", "score": "high"}], r"\"score\" 'high' is not a number"),
    ([{"doc_id": "d", "text": "t", "title": 3}], r"\"title\" is a int, not a text"),
])
def test_a_bad_item_is_refused(tmp_path: Path, bad, message):
    path = recorded_set(tmp_path, [dict(QUESTIONS_[0], retrieved=bad)])
    with pytest.raises(InputError, match=message):
        load_questions(path, reader="recorded")


def test_the_set_describes_itself(tmp_path: Path):
    path = recorded_set(tmp_path, QUESTIONS_, version=2, name="log", description="two questions")
    assert load_questions(path).about == {"version": 2, "name": "log", "description": "two questions"}
    bad = recorded_set(tmp_path, QUESTIONS_, version=[1])
    with pytest.raises(InputError, match=r"\"version\" is a list: make it a whole number or a text"):
        load_questions(bad)
    with pytest.raises(InputError, match=r"\"name\" is a int, not a text"):
        load_questions(recorded_set(tmp_path, QUESTIONS_, name=3))


def test_recorded_without_a_corpus(tmp_path: Path):
    path = recorded_set(tmp_path, QUESTIONS_, version="2026-05", name="log")
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "recorded", "--questions", str(path), "--output", str(out))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["strategy"] == "recorded"
    assert data["run"]["question_set"] == {"version": "2026-05", "name": "log"}
    assert data["run"]["corpus"]["source"] == RECORDED_SOURCE  # no corpus loaded, not the built-in one
    assert data["run"]["corpus"]["documents"] == 2 and data["run"]["corpus"]["chunks"] == 3
    a, b = data["results"]
    assert (a["rank"], b["rank"]) == (2, 1)  # the needles, matched against the recorded items
    assert [x["text"].split("\n\n")[-1] for x in a["retrieved"]] == ["timeout key", "run acme --version"]
    assert a["retrieved"][1]["score"] == 0.5 and a["retrieved"][1]["title"] == "Installing"
    assert a["llm_grade"] is not None and a["diagnosis"] is None and "diagnosis_counts" not in data
    assert "Corpus <recorded retrievals>: 2 documents, 3 chunks" in run.stderr


def test_recorded_with_a_corpus_uses_it(tmp_path: Path):
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "install.md").write_text("# Installing\n\nRun acme --version to see the installed version.\n")
    (docs / "config.md").write_text("# Configuration\n\nThe timeout key of config.toml sets the timeout.\n")
    path = recorded_set(tmp_path, QUESTIONS_)
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "recorded,baseline", "--questions", str(path), "--corpus", str(docs),
                  "--output", str(out))
    assert run.code == 0, run.stderr
    recorded = json.loads((tmp_path / "r.recorded.json").read_text())
    assert recorded["run"]["corpus"]["source"] == str(docs) and recorded["diagnosis_counts"] is not None
    assert recorded["results"][0]["rank"] == 2 and recorded["results"][0]["diagnosis"] is not None
    assert "recorded vs" in run.stdout or "baseline vs recorded" in run.stdout  # compared with the retriever
    stray = recorded_set(tmp_path, [dict(QUESTIONS_[0], needle_doc_id="nowhere")], "stray.json")
    refused = run_cli("--strategy", "recorded", "--questions", str(stray), "--corpus", str(docs), "--output", str(out))
    assert refused.code == 2 and "needle 'nowhere' is not a document of the corpus" in refused.stderr
    validated = run_cli("validate", str(path), "--corpus", str(docs), "--json", str(tmp_path / "v.json"))
    assert validated.code == 0, validated.stderr
    report = json.loads((tmp_path / "v.json").read_text())
    assert report["corpus"]["source"] == str(docs) and report["summary"]["checked_count"] == 2


def test_a_set_without_recordings_is_refused_in_one_line(tmp_path: Path, few_questions: Path):
    run = run_cli("--strategy", "recorded", "--questions", str(few_questions), "--output", str(tmp_path / "r.json"))
    assert run.code == 2
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and "question #1 (id 'py_001') has no \"retrieved\" list" in errors[0]
    alone = run_cli("--strategy", "recorded,baseline", "--questions", str(EXAMPLE), "--output",
                    str(tmp_path / "r.json"))
    assert alone.code == 2 and "give --corpus to run other strategies beside it" in alone.stderr


def test_the_shipped_example_and_the_api(tmp_path: Path):
    from components.api import evaluate

    result = evaluate("recorded", str(EXAMPLE), judge="offline")
    assert result.run.corpus.source == RECORDED_SOURCE and result.run.question_set["name"] == "acme-support-log-sample"
    assert [r.rank for r in result.rows] == [1, 2, None, None] and result.rows[3].retrieved == []


def test_same_text_with_different_recordings_is_refused(tmp_path: Path):
    twin = dict(QUESTIONS_[1], id="b2", question=QUESTIONS_[0]["question"])
    path = recorded_set(tmp_path, [QUESTIONS_[0], twin])
    run = run_cli("--strategy", "recorded", "--questions", str(path), "--output", str(tmp_path / "r.json"))
    assert run.code == 2 and "questions 'a' and 'b2' ask the same text with different recorded items" in run.stderr
