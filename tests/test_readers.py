"""The reader registry (components.readers): the built-in formats, which reader a path goes to, and a
new format added as one reader that the whole run then reads (the loader, the index cache's fingerprint)."""

from __future__ import annotations

import csv
import hashlib
import re
from pathlib import Path

import pytest

from components import api
from components.core.corpus import BUILTIN_SOURCE
from components.readers import (CORPUS, QUESTIONS, Reader, load_corpus, load_questions, reader_for, readers,
                                register_reader, unregister_reader)
from components.run.retrieval.index_cache import fingerprint
from tests.conftest import ROOT
from utils.errors import InputError

BEIR = ROOT / "docs" / "examples" / "beir"


def test_the_built_in_readers_in_the_order_they_are_asked():
    found = {name: (r.reads, r.module) for name, r in readers().items()}
    assert found == {"builtin": (CORPUS, "components.readers.builtin"), "beir": (CORPUS, "components.readers.beir"),
                     "markdown": (CORPUS, "components.readers.markdown"),
                     "beir-queries": (QUESTIONS, "components.readers.beir"),
                     "questions-json": (QUESTIONS, "components.readers.questions_json"),
                     "recorded": (QUESTIONS, "components.readers.recorded")}  # asked by name only


@pytest.mark.parametrize(("path", "reads", "reader"), [
    (None, CORPUS, "builtin"),
    (BEIR, CORPUS, "beir"),
    (BEIR / "corpus.jsonl", CORPUS, "beir"),
    (ROOT / "docs", CORPUS, "markdown"),
    ("no/such/folder", CORPUS, "markdown"),  # the last one reads what no other claims, and says what is wrong
    (BEIR, QUESTIONS, "beir-queries"),
    (BEIR / "queries.jsonl", QUESTIONS, "beir-queries"),
    (ROOT / "questions.json", QUESTIONS, "questions-json"),
    ("-", QUESTIONS, "questions-json"),
    (ROOT / "docs", QUESTIONS, "questions-json"),  # a folder without queries.jsonl: not BEIR queries
])
def test_a_path_goes_to_the_first_reader_that_detects_it(path, reads, reader):
    assert reader_for(path, reads).name == reader


def test_the_last_reader_of_each_kind_says_what_is_wrong(tmp_path: Path):
    with pytest.raises(InputError, match=r"corpus folder .*missing does not exist: pass --corpus a folder of Markdown"):
        load_corpus(tmp_path / "missing")
    with pytest.raises(InputError, match=r"questions file .*missing.json does not exist: pass --questions a JSON file"):
        load_questions(tmp_path / "missing.json")
    with pytest.raises(InputError, match="--qrels and --split apply to BEIR queries"):
        load_questions(ROOT / "questions.json", split="dev")


@pytest.mark.parametrize("path", [None, BEIR, ROOT / "docs" / "examples" / "beir" / "corpus.jsonl"])
def test_each_corpus_readers_fingerprint_is_its_corpus_digest(path):
    corpus = load_corpus(path)
    reader = reader_for(path, CORPUS)
    assert reader.fingerprint(Path(path) if path else None) == (frozenset(corpus.ids()), corpus.sha256)
    assert (corpus.source == BUILTIN_SOURCE) == (path is None)


def test_a_reader_reads_corpus_or_questions():
    with pytest.raises(ValueError, match="reads 'corpus' or 'questions'"):
        register_reader(Reader("odd", "rankings", lambda path: True, lambda path: None))


# --------------------------------------------------------------------------- a new format: one module

@pytest.fixture
def csv_reader():
    """The example reader of docs/formats.md ("Add an input format"), registered as its module would."""
    text = (ROOT / "docs" / "formats.md").read_text(encoding="utf-8")
    code = re.search(r"```python\n(# csv_reader\.py.*?)```", text, re.S).group(1)
    exec(compile(code, "docs/formats.md", "exec"), {"__name__": "csv_reader"})
    yield readers()["csv"]
    unregister_reader("csv")


def test_a_new_format_is_one_reader_that_the_run_then_reads(csv_reader, tmp_path: Path, quiet_library):
    docs = tmp_path / "docs.csv"
    with open(docs, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerows([("id", "title", "text"), ("apples", "Apples", "Apples are red or green fruit."),
                          ("boats", "Boats", "A boat floats on water and is moved by sails.")])
    assert list(readers())[0] == "csv"  # a plug-in's reader is asked first
    assert reader_for(docs, CORPUS) is csv_reader and reader_for(tmp_path, CORPUS).name == "markdown"
    assert load_corpus(docs).ids() == {"apples", "boats"}
    assert fingerprint(docs).doc_ids == {"apples", "boats"}  # the index cache fingerprints it through the reader
    questions = [{"id": "q1", "question": "How does a boat move?", "needle_doc_id": "boats"}]
    result = api.evaluate("baseline", questions, docs, judge="offline", cache_dir=tmp_path / "cache")
    assert result.rows[0].rank == 1 and result.run.corpus.documents == 2
    assert result.run.corpus.sha256 == hashlib.sha256(docs.read_bytes()).hexdigest()
    assert result.run.index["cache"] == "miss"
    unregister_reader("csv")
    assert "csv" not in readers() and reader_for(docs, CORPUS).name == "markdown"
