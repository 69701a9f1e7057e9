"""BEIR in: a corpus.jsonl and queries.jsonl + qrels as documents and graded questions; duplicates
said once; ids TREC cannot carry refused with one line; bounded reading; the index cache keyed on
the file; a whole run from a BEIR folder on the command line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.readers import beir, load_corpus, load_questions
from components.readers.questions_json import parse_questions
from components.run.retrieval.index_cache import cache_key, fingerprint, key_parts, prepare_index
from poc.bm25 import BM25Retriever
from tests.conftest import loguru_messages, run_cli
from utils.errors import InputError

DOCS = [
    {"_id": "apples", "title": "Apples", "text": "Apples are red or green fruit that grow on trees."},
    {"_id": "boats", "title": "", "text": "A boat floats on water and is moved by sails or engines."},
    {"_id": "clocks", "title": "Clocks", "text": "A clock tells the time with hands or digits.", "metadata": {"y": 1}},
    {"_id": "pears", "title": "Pears", "text": "Pears are sweet fruit that grow on trees too."},
    {"_id": 17, "title": "Seventeen", "text": "A number id is read as its text."},
]
QUERIES = [
    {"_id": "q1", "text": "Which fruit grow on trees?"},
    {"_id": "q2", "text": "How does a boat move?", "metadata": {"kind": "how"}},
    {"_id": "q3", "text": "What tells the time?", "expected_answer": "A clock."},
    {"_id": "q4", "text": "A query nobody judged"},
    {"_id": "q5", "text": "Only judged non-relevant"},
]
QRELS = "query-id\tcorpus-id\tscore\nq1\tapples\t2\nq1\tpears\t1\nq1\tboats\t0\nq2\tboats\t1\nq3\tclocks\t3\n" \
        "q5\tapples\t0\n"


def lines(items: list[dict]) -> str:
    return "".join(json.dumps(item) + "\n" for item in items)


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    root = tmp_path / "toy"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(lines(DOCS))
    (root / "queries.jsonl").write_text(lines(QUERIES))
    (root / "qrels" / "test.tsv").write_text(QRELS)
    (root / "qrels" / "dev.tsv").write_text("q2 0 clocks 1\n")  # TREC qrels work as well
    return root


def test_corpus_maps_each_line_to_a_document(folder: Path):
    corpus = load_corpus(folder)
    assert [d.doc_id for d in corpus.documents] == ["apples", "boats", "clocks", "pears", "17"]
    boats = corpus.documents[1]
    assert (boats.title, boats.text) == ("", "A boat floats on water and is moved by sails or engines.")
    assert corpus.documents[2].metadata == {"y": 1}
    assert corpus.source == str(folder) and len(corpus.sha256) == 64
    assert load_corpus(folder / "corpus.jsonl").sha256 == corpus.sha256  # the file itself, same digest


def test_queries_become_graded_questions_and_the_unjudged_are_skipped_with_one_warning(folder: Path):
    with loguru_messages("WARNING") as warnings:
        qset = load_questions(folder)
    assert [q.id for q in qset.questions] == ["q1", "q2", "q3"]
    q1, q2, q3 = qset.questions
    assert q1.needle_doc_ids == ("apples", "pears") and q1.needle_grades == {"apples": 2, "pears": 1}
    assert q1.relevance == {"apples": 2, "pears": 1} and q1.expected_answer is None  # grade 0 is not a needle
    assert q2.needle_grades is None and q2.extra == {"metadata": {"kind": "how"}}
    assert q3.expected_answer == "A clock." and q3.needle_grades == {"clocks": 3}
    assert len(warnings) == 1 and "2 of 5 queries have no relevant document" in warnings[0]
    assert "q4, q5" in warnings[0]


def test_split_and_qrels_choose_the_judgments(folder: Path):
    dev = load_questions(folder, split="dev")
    assert [(q.id, q.needle_doc_ids) for q in dev.questions] == [("q2", ("clocks",))]
    same = load_questions(folder / "queries.jsonl", qrels=folder / "qrels" / "dev.tsv")
    assert same.questions == dev.questions
    beside = load_questions(folder / "queries.jsonl")  # the queries file's folder's qrels/test.tsv
    assert [q.id for q in beside.questions] == ["q1", "q2", "q3"]
    assert dev.sha256 != load_questions(folder).sha256  # the qrels are part of the questions' identity
    with pytest.raises(InputError, match="choose --split among dev, test"):
        load_questions(folder, split="train")
    with pytest.raises(InputError, match="--qrels and --split apply to BEIR queries"):
        load_questions(Path(__file__).parent.parent / "questions.json", split="dev")


def test_duplicates_are_settled_the_same_way_and_said_once(tmp_path: Path):
    root = tmp_path / "dup"
    (root / "qrels").mkdir(parents=True)
    (root / "corpus.jsonl").write_text(lines([{"_id": "a", "text": "first"}, {"_id": "b", "text": "bee"},
                                              {"_id": "a", "text": "second"}]))
    (root / "queries.jsonl").write_text(lines([{"_id": "q", "text": "one"}, {"_id": "q", "text": "two"}]))
    (root / "qrels" / "test.tsv").write_text("q\ta\t1\nq\ta\t1\nq\tb\t1\nq\tb\t2\n")
    with loguru_messages("WARNING") as warnings:
        corpus = load_corpus(root)
        qset = load_questions(root)
    assert [(d.doc_id, d.text) for d in corpus.documents] == [("a", "second"), ("b", "bee")]  # the last line
    assert [(q.id, q.question) for q in qset.questions] == [("q", "two")]
    assert qset.questions[0].relevance == {"b": 2, "a": 1}  # the last grade; best graded first
    assert len(warnings) == 3, warnings  # corpus, qrels, queries: one line each
    assert "1 document id appears again (a)" in warnings[0]
    assert "2 duplicate lines" in warnings[1] and "last grade is kept" in warnings[1]
    assert "1 query id appears again (q)" in warnings[2]
    again = load_corpus(root)
    assert again == corpus  # deterministic


@pytest.mark.parametrize("line,words", [
    ({"_id": "has space", "text": "x"}, "line 2: id 'has space' holds whitespace, which TREC files cannot carry"),
    ({"_id": "tab\there", "text": "x"}, "holds whitespace"),
    ({"_id": "", "text": "x"}, "line 2: id '' is empty"),
    ({"text": "x"}, 'line 2 has no "_id"'),
    ({"_id": "ok", "text": 3}, 'line 2: "text" is int, not a string'),
])
def test_a_bad_document_is_refused_with_one_line_naming_file_line_and_id(tmp_path: Path, line, words):
    path = tmp_path / "corpus.jsonl"
    path.write_text(lines([{"_id": "fine", "text": "x"}, line]))
    with pytest.raises(InputError) as err:
        load_corpus(path)
    message = str(err.value)
    assert words in message and str(path) in message and "\n" not in message


def test_not_json_and_not_an_object_are_one_line(tmp_path: Path):
    path = tmp_path / "corpus.jsonl"
    path.write_text('{"_id": "a", "text": "x"}\n{"_id": \n')
    with pytest.raises(InputError, match=r"line 2 is not valid JSON"):
        load_corpus(path)
    path.write_text('["a"]\n')
    with pytest.raises(InputError, match=r"line 1 is list, not an object"):
        load_corpus(path)
    path.write_bytes(b'{"_id": "a", "text": "caf\xe9"}\n')
    with pytest.raises(InputError, match=r"line 1 is not valid UTF-8"):
        load_corpus(path)


def test_a_qrels_id_with_spaces_is_refused_with_one_line(folder: Path):
    (folder / "qrels" / "test.tsv").write_text("q1\tapples\t1\nq2\tmy doc\t1\n")
    with pytest.raises(InputError, match=r"test.tsv: line 2: document id 'my doc' holds whitespace"):
        load_questions(folder)


def test_reading_is_bounded(tmp_path: Path, monkeypatch):
    path = tmp_path / "corpus.jsonl"
    path.write_text(lines([{"_id": "a", "text": "short"}, {"_id": "b", "text": "x" * 5000}]))
    monkeypatch.setattr(beir, "MAX_DOCUMENT_BYTES", 1000)
    with pytest.raises(InputError, match=r"line 2 is over the 1,000-byte limit of a line"):
        load_corpus(path)
    no_newline = tmp_path / "one.jsonl"
    no_newline.write_bytes(b"x" * 10_000)  # one line, no end: never read whole
    with pytest.raises(InputError, match=r"line 1 is over the 1,000-byte limit"):
        load_corpus(no_newline)
    monkeypatch.setattr(beir, "MAX_CORPUS_BYTES", 100)
    with pytest.raises(InputError, match=r"over the 100-byte limit"):
        load_corpus(path)


def test_the_index_cache_key_follows_the_corpus_file(tmp_path: Path):
    path = tmp_path / "corpus.jsonl"
    path.write_text(lines(DOCS))
    fp = fingerprint(path)
    corpus = load_corpus(path)
    assert fp.sha256 == corpus.sha256 and fp.doc_ids == corpus.ids()
    key = cache_key(key_parts(fp.sha256, "baseline", BM25Retriever()))
    path.write_text(lines([*DOCS[:-1], {"_id": 17, "title": "Seventeen", "text": "Changed text."}]))
    assert fingerprint(path).sha256 != fp.sha256
    assert cache_key(key_parts(fingerprint(path).sha256, "baseline", BM25Retriever())) != key
    cache = tmp_path / "cache"
    first = prepare_index(path, "baseline", BM25Retriever, cache)
    second = prepare_index(path, "baseline", BM25Retriever, cache)
    assert (first.cache, second.cache) == ("miss", "hit") and second.chunks == first.chunks
    path.write_text(lines(DOCS))
    third = prepare_index(path, "baseline", BM25Retriever, cache)
    assert third.cache == "miss" and third.sha256 == fp.sha256


def test_graded_needles_in_a_questions_json_file():
    doc = {"questions": [{"id": "a", "question": "q?", "needles": {"d1": 2, "d2": 1, "d3": 0}},
                         {"id": "b", "question": "q?", "needles": {"d1": 1}},
                         {"id": "c", "question": "q?", "needle_doc_ids": ["d1", "d2"]}]}
    qset = parse_questions(json.dumps(doc).encode(), "q.json")
    a, b, c = qset.questions
    assert a.needle_doc_ids == ("d1", "d2") and a.needle_grades == {"d1": 2, "d2": 1}
    assert b.needle_grades is None and c.relevance == {"d1": 1, "d2": 1}
    for bad, words in [({"needles": {"d1": "2"}}, "grade '2'"), ({"needles": {"d1": 0}}, "no needle"),
                       ({"needles": {"d1": 1}, "needle_doc_id": "d1"}, "keep one of them"),
                       ({"needles": []}, "not a non-empty object")]:
        item = {"id": "x", "question": "q?", **bad}
        with pytest.raises(InputError, match=words):
            parse_questions(json.dumps([item]).encode(), "q.json")


def test_a_run_on_a_beir_folder_end_to_end(folder: Path, tmp_path: Path):
    out = tmp_path / "out" / "r.json"
    out.parent.mkdir()
    run = run_cli("--corpus", str(folder), "--questions", str(folder), "--strategy", "baseline", "--no-cache",
                  "--output", str(out))
    assert run.code == 0, run.stderr[-2000:]
    assert run.stderr.count("have no relevant document") == 1
    data = json.loads(out.read_text())
    rows = {r["question_id"]: r for r in data["results"]}
    assert sorted(rows) == ["q1", "q2", "q3"]
    assert rows["q1"]["needle_grades"] == {"apples": 2, "pears": 1} and rows["q2"]["needle_grades"] is None
    assert rows["q1"]["needle_doc_ids"] == ["apples", "pears"]
    assert data["run"]["corpus"]["documents"] == 5
    dev = run_cli("--corpus", str(folder / "corpus.jsonl"), "--questions", str(folder / "queries.jsonl"),
                  "--qrels", str(folder / "qrels" / "dev.tsv"), "--strategy", "baseline", "--no-cache",
                  "--output", str(out))
    assert dev.code == 0, dev.stderr[-2000:]
    dev_run = json.loads(out.read_text())
    assert [r["question_id"] for r in dev_run["results"]] == ["q2"]
    assert dev_run["run"]["qrels_file"] == str(folder / "qrels" / "dev.tsv")
    # --resume takes the qrels from the file: the same judgments, not the folder's default split
    resumed = run_cli("--resume", str(out), "--no-cache", "--output", str(tmp_path / "resumed.json"))
    assert resumed.code == 0, resumed.stderr[-2000:]
    again = json.loads((tmp_path / "resumed.json").read_text())
    assert [r["question_id"] for r in again["results"]] == ["q2"], again
    assert again["run"]["resumed_from"] == str(out) and again["run"]["qrels_file"] == str(folder / "qrels" / "dev.tsv")


def test_a_document_id_with_spaces_stops_the_run_with_one_line(folder: Path, tmp_path: Path):
    (folder / "corpus.jsonl").write_text(lines([*DOCS, {"_id": "two words", "text": "x"}]))
    out = tmp_path / "r.json"
    run = run_cli("--corpus", str(folder), "--questions", str(folder), "--strategy", "baseline",
                  "--output", str(out))
    assert run.code == 2
    errors = [line for line in run.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and "corpus.jsonl: line 6: id 'two words' holds whitespace" in errors[0], run.stderr
    assert not out.exists() and "Traceback" not in run.stderr


def test_the_shipped_example_folder_loads():
    example = Path(__file__).resolve().parent.parent / "docs" / "examples" / "beir"
    corpus, qset = load_corpus(example), load_questions(example)
    assert len(corpus.documents) == 6 and [q.id for q in qset.questions] == ["q1", "q2", "q3"]
    assert qset.questions[0].needle_grades == {"deployments": 2, "pods": 1}
    assert [q.id for q in load_questions(example, split="dev").questions] == ["q1", "q2", "q3"]
