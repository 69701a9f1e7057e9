"""The retrieval deadline: a retrieve() that never returns gets a retrieval_error row, its thread is
abandoned (named in the log, no --concurrency slot taken) and the run goes on; --resume runs it again."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from components import api
from components.run.retrieval.deadline import RetrievalDeadline, RetrievalTimeout
from tests.conftest import loguru_messages, run_cli
from tests.test_api import DOCS, QUESTIONS, KeywordRetriever
from tests.test_reliability import ALL_QUESTIONS, plugin


@pytest.fixture
def release():
    """An event the stuck retrievals wait on: set after the test, so no thread is left behind."""
    event = threading.Event()
    yield event
    event.set()


class Stuck(KeywordRetriever):
    """Never returns for the questions whose text holds one of ``words`` (until ``release`` is set)."""

    def __init__(self, release: threading.Event, *words: str) -> None:
        self.release, self.words = release, words
        self.threads: list[str] = []

    def retrieve(self, query, k):
        self.threads.append(threading.current_thread().name)
        if any(w in query for w in self.words):
            self.release.wait(60)
        return super().retrieve(query, k)


def test_a_retrieval_that_never_returns_is_abandoned_and_the_run_goes_on(release):
    retriever = Stuck(release, "boat")
    with loguru_messages("ERROR") as messages:
        result = api.evaluate(retriever, QUESTIONS, DOCS, judge="offline", retrieval_timeout=0.2)
    assert [r.llm_grade is not None for r in result.rows] == [True, False, True]
    assert result.rows[1].grade_error == ("retrieval_error: timeout: retrieve() did not return within 0.2 s "
                                          "(thread retrieval-1 abandoned)")
    assert result.run.status == "completed"
    assert retriever.threads == ["retrieval-1", "retrieval-1", "retrieval-2"]  # a new thread after the stuck one
    assert any("[q2] retrieve() did not return within 0.2 s: thread retrieval-1 is abandoned" in m for m in messages)


def test_a_stuck_retrieval_takes_no_concurrency_slot(release):
    """Two stuck retrievals with --concurrency 2: the other questions are graded all the same."""
    questions = [dict(q, id=f"{q['id']}-{i}") for i in range(3) for q in QUESTIONS]
    result = api.evaluate(Stuck(release, "boat"), questions, DOCS, judge="offline", retrieval_timeout=0.1,
                          concurrency=2)
    stuck = [r for r in result.rows if "boat" in r.question]
    assert len(stuck) == 3 and all(r.grade_error.startswith("retrieval_error: timeout: ") for r in stuck)
    assert all(r.llm_grade is not None for r in result.rows if r not in stuck)


def test_no_deadline_runs_retrieve_in_the_calling_thread():
    retriever = Stuck(threading.Event())
    api.evaluate(retriever, QUESTIONS, DOCS, judge="offline", retrieval_timeout=0)
    assert set(retriever.threads) == {threading.current_thread().name}
    with pytest.raises(api.InputError, match="not a number of seconds"):
        api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline", retrieval_timeout=-1)


def test_the_deadline_passes_on_what_retrieve_raises():
    deadline = RetrievalDeadline(5)
    with pytest.raises(SystemExit):
        deadline.call(lambda: exit(3), "retrieve()")
    assert deadline.call(lambda: 42, "retrieve()") == 42 and deadline.abandoned == []
    with pytest.raises(RetrievalTimeout):
        RetrievalDeadline(0.05).call(lambda: threading.Event().wait(1), "retrieve()")


def test_cli_retrieval_timeout_and_resume(tmp_path: Path):
    """A plug-in stuck on its first call: that question is written with a retrieval error, the run
    exits 0 (the others were graded); --resume runs it again."""
    marker = tmp_path / "stuck"
    marker.write_text("")
    env = {**plugin(tmp_path, retrieve=f"if os.path.exists({str(marker)!r}) and self.calls == 1:\n"
                                       f"    import time; time.sleep(5)"), "BENCHMARK_JUDGE": "offline"}
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps({"questions": ALL_QUESTIONS[:3]}))
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(qfile), "--output", str(out), "--strategy", "plug:make",
                  "--retrieval-timeout", "0.3", env=env)
    assert run.code == 0, run.stderr[-3000:]
    rows = json.loads(out.read_text())["results"]
    assert rows[0]["grade_error"].startswith("retrieval_error: timeout: retrieve() did not return within 0.3 s")
    assert [r["llm_grade"] is not None for r in rows] == [False, True, True]
    assert "thread retrieval-1 is abandoned" in run.stderr
    marker.unlink()
    resumed = run_cli("--resume", str(out), "--output", str(out), env=env)
    assert resumed.code == 0, resumed.stderr[-3000:]
    assert all(r["llm_grade"] is not None for r in json.loads(out.read_text())["results"])
    bad = run_cli("--questions", str(qfile), "--output", str(out), "--retrieval-timeout", "soon", env=env)
    assert bad.code == 2 and "--retrieval-timeout" in bad.stderr
