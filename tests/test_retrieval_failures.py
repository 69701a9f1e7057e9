"""A retriever that fails: on every question the run ends ``retrieval_failed`` (exit 7); on some, the
summary says how many with the first error once, and the log holds its traceback once."""

from __future__ import annotations

import json
from pathlib import Path

from components import api
from tests.conftest import loguru_messages, run_cli
from tests.test_api import DOCS, QUESTIONS, KeywordRetriever
from tests.test_reliability import ALL_QUESTIONS, plugin
from utils.console import summary_table
from utils.errors import EXIT_RETRIEVAL


class Failing(KeywordRetriever):
    """Fails on the questions whose text holds one of ``words`` (every question: ``""``)."""

    def __init__(self, *words: str) -> None:
        self.words = words

    def retrieve(self, query, k):
        if any(w in query for w in self.words):
            raise RuntimeError("the index is not loaded")
        return super().retrieve(query, k)


def test_every_retrieval_failing_ends_retrieval_failed():
    result = api.evaluate(Failing(""), QUESTIONS, DOCS, judge="offline")
    assert result.run.status == "retrieval_failed"
    assert all(r.grade_error == "retrieval_error: RuntimeError: the index is not loaded" for r in result.rows)
    line = next(x for x in summary_table(result, proxy=True).splitlines() if x.startswith("retrieval failed"))
    assert line.split(None, 2)[2] == "3 of 3 questions (first: RuntimeError: the index is not loaded)"


def test_some_retrievals_failing_completes_and_the_summary_counts_them():
    result = api.evaluate(Failing("boat", "time"), QUESTIONS, DOCS, judge="offline")
    assert result.run.status == "completed"
    assert [r.retrieval_failed for r in result.rows] == [False, True, True]
    table = summary_table(result, proxy=True)
    assert "2 of 3 questions (first: RuntimeError: the index is not loaded)" in table
    assert table.count("the index is not loaded") == 1  # the first error, once
    clean = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline")
    assert "retrieval failed" not in summary_table(clean, proxy=True)


def test_the_same_error_logs_its_traceback_once():
    with loguru_messages("ERROR") as messages:
        api.evaluate(Failing(""), QUESTIONS, DOCS, judge="offline")
    failed = [m for m in messages if "retrieval failed" in m]
    assert failed == ["[q1] retrieval failed: RuntimeError: the index is not loaded",
                      "[q2] retrieval failed: RuntimeError: the index is not loaded (as for question q1: traceback "
                      "logged there)",
                      "[q3] retrieval failed: RuntimeError: the index is not loaded (as for question q1: traceback "
                      "logged there)"]
    assert any(m.startswith("The retriever failed on every question (3; first: RuntimeError") for m in messages)


def test_cli_exit_7_when_every_retrieval_fails_and_0_when_some_do(tmp_path: Path):
    env = plugin(tmp_path, retrieve="raise RuntimeError('no index')")
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps({"questions": ALL_QUESTIONS[:3]}))
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(qfile), "--output", str(out), "--strategy", "plug:make",
                  env={**env, "BENCHMARK_JUDGE": "offline"})
    assert run.code == EXIT_RETRIEVAL == 7, run.stderr[-3000:]
    assert json.loads(out.read_text())["run"]["status"] == "retrieval_failed"
    assert "retrieval failed   3 of 3 questions (first: RuntimeError: no index)" in run.stdout
    log = Path(json.loads(out.read_text())["run"]["log_file"]).read_text()
    assert log.count("Traceback") == 1
    some = plugin(tmp_path, retrieve="if self.calls == 2:\n    raise RuntimeError('no index')")
    run = run_cli("--questions", str(qfile), "--output", str(out), "--strategy", "plug:make",
                  env={**some, "BENCHMARK_JUDGE": "offline"})
    assert run.code == 0, run.stderr[-3000:]
    assert "retrieval failed   1 of 3 questions (first: RuntimeError: no index)" in run.stdout
