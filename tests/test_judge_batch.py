"""``--judge-batch``: grading through the Message Batches API, over the real SDK
against the loopback batch API: create / poll / results, every entry kind, the transient
re-submission, custom ids for any question id, interruption and ``--resume`` without a new create,
cost at half price, rows shaped as a sequential run's, and a 10,000-question simulated run."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from components.core import Question
from components.judges.batch import Skipped, result_lines
from components.judges.providers.anthropic import AnthropicProvider, MessageBatches, ModelSettings, ProviderConfig
from components.run.benchmark_loop import BenchmarkLoop
from components.run.journal import Journal, read_rows
from components.run.calls.judge_batch import (BatchJudge, BatchRecord, BatchRequest, PollSchedule, custom_id, repeat_of,
                                        run_batch, split_requests)
from tests.batch_fixtures import make_corpus, make_questions
from tests.conftest import ROOT, clean_env, judge_env, run_cli, wait_for_line
from tests.loopback import CANCELED, EXPIRED, LoopbackServer, Reply, error
from utils.errors import JudgeError

FAST = {"BENCHMARK_BATCH_POLL_MAX": "0.05"}
OK = Reply(text='{"grade": 8, "reasoning": "fine"}', usage={"input_tokens": 1000, "output_tokens": 100})
SONNET = ModelSettings(requested="claude-sonnet-5-5", thinking={"type": "between_tools"}, effort=None,
                       max_tokens=1024, source="models_api")


def provider(url: str) -> AnthropicProvider:
    return AnthropicProvider(ProviderConfig(api_key="sk-test", base_url=url, max_retries=0))


def cli(tmp_path: Path, *args: str, url: str, out: str = "r.json", **env: str):
    return run_cli(*args, "--output", str(tmp_path / out), "--log-dir", str(tmp_path / "logs"),
                   env=judge_env(url, **{**FAST, **env}))


# --------------------------------------------------------------------------- pieces


def test_poll_schedule_doubles_up_to_its_cap():
    waits = PollSchedule().waits()
    assert [next(waits) for _ in range(9)] == [1, 2, 4, 8, 16, 32, 60, 60, 60]
    small = PollSchedule(first_s=5, max_s=2).waits()
    assert [next(small) for _ in range(2)] == [2, 2]


def test_custom_ids_round_trip_and_match_the_api_pattern():
    ids = [custom_id(i, r, repeats) for i in (0, 7, 99_999) for repeats in (1, 3) for r in range(repeats)]
    assert all(re.fullmatch(r"[A-Za-z0-9_-]{1,64}", c) for c in ids) and len(set(ids)) == len(ids)
    assert custom_id(7) == "q7" and custom_id(7, 2, 3) == "q7r2"
    assert [repeat_of(c) for c in ("q7", "q7r2", "weird")] == [0, 2, 0]


def test_split_requests_by_count_and_by_bytes():
    reqs = [BatchRequest(f"q{i}", f"id{i}", {"x": "a" * 10}) for i in range(5)]
    assert [len(b) for b in split_requests(reqs, max_requests=2)] == [2, 2, 1]
    one = len(json.dumps(reqs[0].to_json())) + 2
    envelope = len('{"requests": []}')
    # room for exactly three requests per batch
    assert [len(b) for b in split_requests(reqs, max_bytes=envelope + 3 * one)] == [3, 2]
    assert [len(b) for b in split_requests(reqs, max_bytes=envelope + 3 * one - 1)] == [2, 2, 1]
    assert [c.custom_id for b in split_requests(reqs, max_requests=2) for c in b] == [r.custom_id for r in reqs]
    assert split_requests([]) == []


def test_result_lines_are_bounded():
    assert list(result_lines(iter([b'{"a"', b': 1}\n{"b": 2}\n', b"\n", b'{"c": 3}']), cap=100)) == [
        b'{"a": 1}', b'{"b": 2}', b'{"c": 3}']
    # a line over the cap is discarded in pieces, and the lines around it are kept
    assert list(result_lines(iter([b"ok\n", b"x" * 11, b"yyy", b"\nfine\n", b"z" * 11]), cap=10)) == [
        b"ok", Skipped("over_line_cap"), b"fine", Skipped("over_line_cap")]
    assert list(result_lines(iter([b"1\n2\n3\n", b"4\n"]), cap=10, budget=7)) == [
        b"1", b"2", b"3", Skipped("budget")]


def test_batch_record_from_json_rejects_what_is_not_one():
    good = {"id": "msgbatch_1", "custom_ids": {"q0": "a b/c"}, "status": "submitted"}
    assert BatchRecord.from_json(good).custom_ids == {"q0": "a b/c"}
    for bad in (None, [], {"id": 3, "custom_ids": {}}, {"id": "x"}, {"id": "x", "custom_ids": {"q0": 1}}):
        assert BatchRecord.from_json(bad) is None


def test_journal_returns_batch_lines_in_the_run_and_rows_as_before(tmp_path: Path):
    journal = Journal(tmp_path / "j.jsonl", {"strategy": "baseline"})
    journal.append({"batch": {"id": "msgbatch_1", "custom_ids": {"q0": "a"}, "status": "submitted"}})
    journal.append({"question_id": "a", "llm_grade": 7})
    with journal.grouped():
        journal.append({"question_id": "b", "llm_grade": None})
    journal.append({"batch": {"id": "msgbatch_1", "custom_ids": {"q0": "a"}, "status": "collected"}})
    journal.append({"batch": {"id": "msgbatch_2", "custom_ids": {"q1": "b"}, "status": "submitted"}})
    journal.close()
    run, rows = read_rows(tmp_path / "j.jsonl")
    assert set(rows) == {"a", "b"} and rows["a"].llm_grade == 7
    assert [(b["id"], b["status"]) for b in run["judge_batch"]] == [("msgbatch_1", "collected"),
                                                                    ("msgbatch_2", "submitted")]
    assert run["strategy"] == "baseline"
    plain = Journal(tmp_path / "k.jsonl", {"strategy": "baseline"})
    plain.close()
    assert "judge_batch" not in read_rows(tmp_path / "k.jsonl")[0]


def test_create_poll_results_over_the_sdk_every_entry_kind():
    """Over the real SDK: one create, polls with growing waits and a progress line each, results
    matched by custom id whatever their order; the validating mode turns a request the model does
    not accept into an errored entry."""
    script = {"q1": error(400, "invalid_request_error", "prompt is bad"), "q2": EXPIRED, "q3": CANCELED,
              "q4": Reply(text="I will not grade this", stop_reason="refusal"),
              "q5": Reply(text='{"grade": ', stop_reason="max_tokens")}
    slept: list[float] = []
    with LoopbackServer(batch_script=script, batch_polls=3) as srv:
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), schedule=PollSchedule(first_s=0.01, max_s=0.03),
                           sleep=slept.append)
        reqs = [judge.request(custom_id(i), f"question {i}", f"prompt {i}") for i in range(6)]
        bad = BatchJudge(MessageBatches(provider(srv.url), ModelSettings("claude-sonnet-5-5", {"type": "disabled"},
                                                                         None, 1024, "test")))
        reqs.append(bad.request("q6", "question 6", "prompt 6"))
        record = judge.submit(reqs)
        judge.wait(record)
        entries = judge.collect(record)
        body = srv.batch_creates[0]
    assert len(srv.batch_creates) == 1
    assert body["requests"][0] == {"custom_id": "q0", "params": {
        "model": "claude-sonnet-5-5", "max_tokens": 1024, "thinking": {"type": "between_tools"},
        "messages": [{"role": "user", "content": "prompt 0"}]}}
    assert slept == [0.01, 0.02, 0.03]  # three in_progress polls, growing waits, capped
    assert record.processing_status == "ended" and record.request_counts == {
        "processing": 0, "succeeded": 3, "errored": 2, "expired": 1, "canceled": 1}
    assert {c: e.kind for c, e in entries.items()} == {
        "q0": "succeeded", "q1": "errored", "q2": "expired", "q3": "canceled", "q4": "succeeded",
        "q5": "succeeded", "q6": "errored"}
    grades = {c: e.grade("reference", 5.0) for c, e in entries.items()}
    assert grades["q0"].grade == 8 and grades["q0"].reply.request_id == f"{record.id}:q0"
    assert grades["q0"].reply.input_tokens == 10 and grades["q0"].latency_ms == 5.0
    assert grades["q1"].error == "batch_errored: invalid_request_error: prompt is bad"
    assert grades["q2"].error.startswith("batch_expired: ") and grades["q3"].error.startswith("batch_canceled: ")
    assert grades["q4"].error.startswith("refusal: ") and grades["q4"].raw == "I will not grade this"
    assert grades["q5"].error.startswith("truncated: the reply was cut at its output cap")
    assert grades["q6"].error.startswith("batch_errored: invalid_request_error: thinking.type: 'disabled'")
    assert not any(e.transient for e in entries.values())


def _loop_and_questions(n: int, record=lambda row: None):
    from components.core.chunking import chunk_corpus
    from components.readers.builtin import builtin_corpus
    from poc.bm25 import BM25Retriever

    corpus = builtin_corpus()
    retriever = BM25Retriever()
    retriever.index(chunk_corpus(corpus.documents))
    ids = [d.doc_id for d in corpus.documents]
    questions = [Question(id=f"id {i}", question=f"what does {ids[i]} do?", expected_answer=f"{ids[i]} does it",
                          needle_doc_ids=(ids[i],)) for i in range(n)]
    return BenchmarkLoop(retriever, None, k=3, record=record), questions


def test_run_batch_splits_and_matches_every_row(tmp_path: Path):
    lines: list[dict] = []
    with LoopbackServer(batch_polls=0) as srv:
        loop, questions = _loop_and_questions(5, record=lines.append)
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), record=lines.append, max_requests=2,
                           sleep=lambda s: None)
        rows = run_batch(loop, questions, {}, judge)
    assert len(srv.batch_creates) == 3 and [len(b["requests"]) for b in srv.batch_creates] == [2, 2, 1]
    assert [r.question_id for r in rows] == [q.id for q in questions]
    assert all(r.llm_grade == 8 for r in rows)
    assert [r.request_id for r in rows] == ["msgbatch_loopback_1:q0", "msgbatch_loopback_1:q1",
                                            "msgbatch_loopback_2:q2", "msgbatch_loopback_2:q3",
                                            "msgbatch_loopback_3:q4"]
    batch_lines = [x["batch"] for x in lines if "batch" in x]
    # each batch journaled when created, then once more when collected
    assert [(b["id"], b["status"]) for b in batch_lines] == [
        ("msgbatch_loopback_1", "submitted"), ("msgbatch_loopback_2", "submitted"),
        ("msgbatch_loopback_3", "submitted"), ("msgbatch_loopback_1", "collected"),
        ("msgbatch_loopback_2", "collected"), ("msgbatch_loopback_3", "collected")]
    assert batch_lines[0]["custom_ids"] == {"q0": "id 0", "q1": "id 1"}
    assert sum(1 for x in lines if "question_id" in x) == 5


def test_run_batch_with_repeats_sends_each_question_n_times():
    with LoopbackServer(batch_polls=0, batch_script={"q1r0": Reply(text='{"grade": 4}'),
                                                     "q1r2": Reply(text='{"grade": 6}')}) as srv:
        loop, questions = _loop_and_questions(2)
        loop.repeats = 3
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        rows = run_batch(loop, questions, {}, judge)
    assert sorted(r["custom_id"] for r in srv.batch_creates[0]["requests"]) == [
        "q0r0", "q0r1", "q0r2", "q1r0", "q1r1", "q1r2"]
    assert rows[0].llm_grades == [8, 8, 8] and rows[1].llm_grades == [4, 8, 6]
    assert rows[1].llm_grade == 6 and rows[1].grade_spread == 4


def test_stop_while_polling_writes_pending_rows_and_keeps_the_batch():
    stop = {"now": False}
    with LoopbackServer(batch_polls=10**6) as srv:
        loop, questions = _loop_and_questions(3)
        loop.should_stop = lambda: stop["now"]
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: stop.update(now=True),
                           should_stop=loop.should_stop)
        with pytest.raises(KeyboardInterrupt):
            run_batch(loop, questions, {}, judge)
    assert len(loop.results) == 3 and all(r.llm_grade is None for r in loop.results)
    assert all(r.grade_error.startswith("batch_pending: in batch msgbatch_loopback_1, not collected")
               for r in loop.results)
    assert [r.status for r in judge.records] == ["submitted"] and judge.records[0].id == "msgbatch_loopback_1"


def test_interrupt_while_rows_are_finished_writes_each_row_once():
    """A signal after a row is kept but before the loop counted it: no row twice, no cost twice."""
    lines: list[dict] = []
    with LoopbackServer(batch_polls=0) as srv:
        loop, questions = _loop_and_questions(3, record=lines.append)
        shown = []

        def on_row(row, i, n):
            shown.append(1)
            if len(shown) == 2:
                raise KeyboardInterrupt("SIGINT")

        loop.on_row = on_row
        with pytest.raises(KeyboardInterrupt):
            run_batch(loop, questions, {}, BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None))
    assert [r.question_id for r in loop.results] == ["id 0", "id 1", "id 2"]
    assert [x["question_id"] for x in lines if "question_id" in x] == ["id 0", "id 1", "id 2"]
    assert loop.judge_usage.calls == 3


def _submitted(srv: LoopbackServer, batches: list[list[tuple[str, str]]], retry_last: bool = False) -> list[dict]:
    """Batches created by an earlier run (custom id, question id): their records, as journaled."""
    judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
    out = []
    for i, batch in enumerate(batches):
        record = judge.submit([judge.request(cid, qid, f"prompt {qid}") for cid, qid in batch],
                              retry=retry_last and i == len(batches) - 1)
        out.append(record.to_json())
    return out


def test_resume_adopts_earlier_batches_in_submission_order():
    """A question submitted twice (its first entry transient, then a retry batch): --resume adopts
    both, in the order they were submitted, so the retry batch's grade is the one kept — in this
    run and in the next one that continues it."""
    script = {"q0": [error(529, "overloaded_error", "busy"), Reply(text='{"grade": 9}')]}
    with LoopbackServer(batch_polls=0, batch_script=script) as srv:
        previous = _submitted(srv, [[("q0", "id 0"), ("q1", "id 1")], [("q0", "id 0")]], retry_last=True)
        first, retry = previous[0]["id"], previous[1]["id"]
        for _ in range(2):  # the run that continues, then (as if it had been interrupted) the next one
            loop, questions = _loop_and_questions(2)
            judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
            rows = run_batch(loop, questions, {}, judge, previous)
            assert [r.id for r in judge.records] == [first, retry]
            assert [(r.llm_grade, r.grade_error) for r in rows] == [(9, None), (8, None)]
            previous = [{**r.to_json(), "status": "submitted"} for r in judge.all_records]
        assert len(srv.batch_creates) == 2


def test_a_narrower_resume_leaves_the_batch_partial_and_the_next_collects_the_rest():
    with LoopbackServer(batch_polls=0) as srv:
        previous = _submitted(srv, [[(f"q{i}", f"id {i}") for i in range(4)]])
        loop, questions = _loop_and_questions(4)
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        rows = run_batch(loop, questions[:2], {}, judge, previous)
        assert [r.llm_grade for r in rows] == [8, 8] and [r.status for r in judge.records] == ["partial"]
        done = {r.question_id: r.to_json() for r in rows}
        recorded = [r.to_json() for r in judge.all_records]  # what the narrower run's results hold
        loop, questions = _loop_and_questions(4)
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        rows = run_batch(loop, questions, done, judge, recorded)
        assert [r["llm_grade"] if isinstance(r, dict) else r.llm_grade for r in rows] == [8, 8, 8, 8]
        assert [r.status for r in judge.records] == ["collected"]
        assert len(srv.batch_creates) == 1  # never submitted again


def test_earlier_batches_not_collected_are_carried_into_the_results():
    with LoopbackServer(batch_polls=0) as srv:
        previous = _submitted(srv, [[("q0", "id 0")], [("q1", "id 1")]])
        loop, questions = _loop_and_questions(2)
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        run_batch(loop, questions[:1], {}, judge, previous)
    assert [(r.id, r.status) for r in judge.all_records] == [(previous[0]["id"], "collected"),
                                                             (previous[1]["id"], "submitted")]


def test_interrupt_while_a_retry_batch_is_polled_leaves_the_question_pending():
    """--judge-repeats 3, one repeat re-submitted: a stop while the second batch is polled writes
    that question as batch_pending (not a row graded from two of its three repeats)."""
    lines: list[dict] = []
    stop = {"now": False}
    with LoopbackServer(batch_polls=0, batch_script={"q0r1": [error(529, "overloaded_error", "busy"),
                                                               Reply(text='{"grade": 3}')]}) as srv:

        def record(line: dict) -> None:
            lines.append(line)
            if line.get("batch", {}).get("retry"):
                srv.batch_polls = 10**6  # the retry batch never ends

        loop, questions = _loop_and_questions(2, record=record)
        loop.repeats = 3
        loop.should_stop = lambda: stop["now"]
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), record=record,
                           sleep=lambda s: stop.update(now=True), should_stop=loop.should_stop)
        with pytest.raises(KeyboardInterrupt):
            run_batch(loop, questions, {}, judge)
    assert loop.results[0].llm_grade is None and loop.results[0].grade_error.startswith(
        f"batch_pending: in batch {judge.records[1].id}")
    assert loop.results[1].llm_grades == [8, 8, 8]
    assert [x["question_id"] for x in lines if "question_id" in x] == ["id 1"]


def test_a_batch_of_another_repeat_count_is_not_adopted(caplog_loguru):
    with LoopbackServer(batch_polls=0) as srv:
        previous = _submitted(srv, [[("q0", "id 0")]])
        loop, questions = _loop_and_questions(1)
        loop.repeats = 2
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        rows = run_batch(loop, questions, {}, judge, previous)
        assert [r["custom_id"] for r in srv.batch_creates[-1]["requests"]] == ["q0r0", "q0r1"]
    assert rows[0].llm_grades == [8, 8]
    assert any("another --judge-repeats" in m for m in caplog_loguru)


def test_a_request_that_cannot_be_built_is_that_question_s_error():
    with LoopbackServer(batch_polls=0) as srv:
        loop, questions = _loop_and_questions(3)
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        build = judge.request

        def request(cid: str, qid: str, prompt: str):
            if qid == "id 1":
                raise ValueError("no prompt for you")
            return build(cid, qid, prompt)

        judge.request = request
        rows = run_batch(loop, questions, {}, judge)
        assert [r["custom_id"] for r in srv.batch_creates[0]["requests"]] == ["q0", "q2"]
    assert [r.llm_grade for r in rows] == [8, None, 8]
    assert rows[1].grade_error == "internal_error: ValueError: no prompt for you"


def test_create_refused_with_529_is_tried_again_and_never_after_a_timeout(monkeypatch):
    import components.judges.providers.anthropic as llm_provider

    with LoopbackServer(batch_create_faults=[error(529, "overloaded_error", "busy", **{"retry-after-ms": "10"}),
                                             error(429, "rate_limit_error", "slow down")]) as srv:
        retrying = AnthropicProvider(ProviderConfig(api_key="sk-test", base_url=srv.url, max_retries=2, timeout=0.3))
        slept: list[float] = []
        judge = BatchJudge(MessageBatches(retrying, SONNET), sleep=slept.append, schedule=PollSchedule(max_s=0.05))
        record = judge.submit([judge.request("q0", "a", "p")])
        assert srv.batch_create_calls == 3 and len(srv.batch_creates) == 1 and record.id == "msgbatch_loopback_1"
        assert slept == [0.01, 0.05]  # its retry-after, then 2 s capped by the poll maximum
    monkeypatch.setattr(llm_provider, "BATCH_TRANSFER_TIMEOUT_S", 0.5)
    for fault, kind in ((Reply(delay=2.0), "timeout"), (error(500, "api_error", "oops"), "server_error")):
        with LoopbackServer(batch_create_faults=[fault]) as srv:
            retrying = AnthropicProvider(ProviderConfig(api_key="sk-test", base_url=srv.url, max_retries=2,
                                                        timeout=0.3))
            judge = BatchJudge(MessageBatches(retrying, SONNET), sleep=lambda s: None)
            with pytest.raises(JudgeError) as err:
                judge.submit([judge.request("q0", "a", "p")])
            assert err.value.kind == kind and not err.value.fatal
            assert kind != "timeout" or "may have created the batch" in str(err.value)
            assert srv.batch_create_calls == 1  # not repeated: the batch may exist (it does after a timeout)
            assert judge.records == []


# --------------------------------------------------------------------------- the command


def test_cli_every_entry_kind_and_a_transient_error_resubmitted_once(tmp_path: Path, few_questions: Path):
    data = json.loads(few_questions.read_text())["questions"]
    extra = json.loads((ROOT / "questions.json").read_text())["questions"][3:6]
    (tmp_path / "six.json").write_text(json.dumps({"questions": data + extra}))
    script = {"q1": [error(529, "overloaded_error", "Overloaded"), Reply(text='{"grade": 3}')],
              "q2": EXPIRED, "q3": CANCELED, "q4": error(400, "invalid_request_error", "bad thing"),
              "q5": [error(500, "api_error", "Internal"), error(500, "api_error", "Internal again")]}
    with LoopbackServer(batch_script=script) as srv:
        run = cli(tmp_path, "--questions", str(tmp_path / "six.json"), "--judge-batch", url=srv.url)
    assert run.code == 8, run.stderr  # four grades missing: status incomplete
    assert not srv.requests  # nothing went through POST /v1/messages
    assert [sorted(r["custom_id"] for r in b["requests"]) for b in srv.batch_creates] == [
        ["q0", "q1", "q2", "q3", "q4", "q5"], ["q1", "q5"]]  # the transient ones, once
    data = json.loads((tmp_path / "r.json").read_text())
    rows = {r["question_id"]: r for r in data["results"]}
    ids = [r["question_id"] for r in data["results"]]
    assert [rows[i]["llm_grade"] for i in ids] == [8, 3, None, None, None, None]
    errors = [rows[i]["grade_error"] or "" for i in ids]
    assert errors[2].startswith("batch_expired: ") and errors[3].startswith("batch_canceled: ")
    assert errors[4] == "batch_errored: invalid_request_error: bad thing"
    assert errors[5] == "batch_errored: api_error: Internal again"
    assert [rows[i]["recovered"] for i in ids] == [False, True, False, False, False, False]
    assert data["run"]["recovered"] == 1 and data["run"]["judge"]["mode"] == "batch"
    batches = data["run"]["judge_batch"]
    assert [(b["id"], b["status"], b["retry"]) for b in batches] == [
        ("msgbatch_loopback_1", "collected", False), ("msgbatch_loopback_2", "collected", True)]
    assert batches[0]["custom_ids"] == {f"q{i}": qid for i, qid in enumerate(ids)}
    assert batches[0]["request_counts"] == {"processing": 0, "succeeded": 1, "errored": 3, "expired": 1,
                                            "canceled": 1}
    assert "Re-submitting 2 request(s)" in run.stderr and "Second batch: 1 of 2 question(s) recovered" in run.stderr
    assert re.search(r"Batch msgbatch_loopback_1: in_progress, 0/6 requests processed; next check in", run.stderr)
    assert not list((tmp_path / "runs").glob("*.journal.jsonl"))


def test_cli_cost_at_half_price_and_rows_shaped_as_a_sequential_run(tmp_path: Path, few_questions: Path):
    with LoopbackServer(default=OK) as srv:
        seq = cli(tmp_path, "--questions", str(few_questions), url=srv.url, out="seq.json")
        bat = cli(tmp_path, "--questions", str(few_questions), "--judge-batch", url=srv.url, out="bat.json")
    assert seq.code == 0 and bat.code == 0, bat.stderr
    s, b = (json.loads((tmp_path / f).read_text()) for f in ("seq.json", "bat.json"))
    assert [set(r) for r in s["results"]] == [set(r) for r in b["results"]]
    assert set(s["run"]) == set(b["run"]) and set(s) == set(b)
    assert (s["run"]["judge"]["mode"], b["run"]["judge"]["mode"]) == ("sequential", "batch")
    assert s["run"]["judge_batch"] is None and len(b["run"]["judge_batch"]) == 1
    # 1000 input and 100 output tokens at $2 / $10 per million: $0.003 a call, $0.0015 in a batch
    assert [r["cost_usd"] for r in s["results"]] == pytest.approx([0.003] * 3)
    assert [r["cost_usd"] for r in b["results"]] == pytest.approx([0.0015] * 3)
    assert (s["run"]["cost_usd"], b["run"]["cost_usd"]) == pytest.approx((0.009, 0.0045))
    assert b["run"]["usage"]["judge"]["batch"] is True and b["run"]["usage"]["judge"]["calls"] == 3
    same = ("llm_grade", "llm_reasoning", "rank", "total_score", "input_tokens", "output_tokens", "stop_reason",
            "judge_model", "prompt_variant", "llm_raw_reply")
    assert [[r[k] for k in same] for r in s["results"]] == [[r[k] for k in same] for r in b["results"]]
    assert "$0.0045" in bat.stdout


def test_cli_question_ids_of_any_characters(tmp_path: Path):
    docs = make_corpus(tmp_path / "docs", docs=10)
    ids = make_questions(tmp_path / "q.json", 10, docs, odd_ids=True)
    with LoopbackServer() as srv:
        run = cli(tmp_path, "--questions", str(tmp_path / "q.json"), "--corpus", str(tmp_path / "docs"),
                  "--strategy", "baseline", "--judge-batch", url=srv.url)
        sent = [r["custom_id"] for r in srv.batch_creates[0]["requests"]]
    assert run.code == 0, run.stderr
    assert sent == [f"q{i}" for i in range(10)]  # the loopback refuses ids outside [A-Za-z0-9_-]{1,64}
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["run"]["judge_batch"][0]["custom_ids"] == {f"q{i}": qid for i, qid in enumerate(ids)}
    assert [r["question_id"] for r in data["results"]] == ids and all(r["llm_grade"] == 8 for r in data["results"])


@pytest.mark.parametrize("args,env,fix", [
    ((), {"BENCHMARK_JUDGE": "offline"}, "--judge-batch needs the LLM judge"),
    (("--max-cost", "1"), {}, "--max-cost cannot be enforced with --judge-batch"),
    (("--chunk-relevance",), {}, "--chunk-relevance is not sent through --judge-batch"),
])
def test_cli_refused_combinations_exit_2_before_anything(tmp_path: Path, few_questions: Path, args, env, fix):
    with LoopbackServer() as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--judge-batch", *args, url=srv.url, **env)
        assert not srv.model_requests and not srv.batch_creates
    assert run.code == 2 and run.stderr.count(fix) == 1 and "Corpus " not in run.stderr
    assert not (tmp_path / "r.json").exists()


def test_offline_judge_without_a_key_exits_2(tmp_path: Path, few_questions: Path):
    run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"), "--judge-batch",
                  "--log-dir", str(tmp_path / "logs"), env=clean_env())
    assert run.code == 2 and "--judge-batch needs the LLM judge" in run.stderr


def test_cli_endpoint_without_the_batch_api_is_a_judge_failure(tmp_path: Path, few_questions: Path):
    with LoopbackServer(batch_api=False) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--judge-batch", url=srv.url)
    assert run.code == 3, run.stderr
    assert "no Message Batches API" in run.stderr and "run without --judge-batch" in run.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["run"]["status"] == "judge_failed" and data["run"]["judge_batch"] == []
    assert all(r["llm_grade"] is None and r["grade_error"].startswith("not_found: the endpoint has no Message")
               for r in data["results"])


def _start(tmp_path: Path, url: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"), "--output", str(tmp_path / "r.json"),
                             "--log-dir", str(tmp_path / "logs"), "--judge-batch", *args], cwd=ROOT,
                            env=judge_env(url, BENCHMARK_BATCH_POLL_MAX="0.1"), stderr=subprocess.PIPE,
                            stdout=subprocess.DEVNULL, text=True)



@pytest.mark.slow  # a signal from outside
def test_sigint_while_polling_then_resume_collects_without_a_new_create(tmp_path: Path, few_questions: Path):
    with LoopbackServer(default=OK, batch_polls=10**6) as srv:
        proc = _start(tmp_path, srv.url, "--questions", str(few_questions))
        wait_for_line(proc, "next check in")
        proc.send_signal(signal.SIGINT)
        rest = proc.stderr.read()
        assert proc.wait(timeout=30) == 130, rest
        data = json.loads((tmp_path / "r.json").read_text())
        batch = data["run"]["judge_batch"]
        assert data["run"]["status"] == "interrupted" and len(batch) == 1
        assert batch[0]["status"] == "submitted" and batch[0]["id"] == "msgbatch_loopback_1"
        assert len(data["results"]) == 3 and all(
            r["grade_error"].startswith("batch_pending: in batch msgbatch_loopback_1") for r in data["results"])
        assert "--judge-batch" in rest and "--resume" in rest  # the command that continues it
        srv.batch_polls = 0  # the batch has ended meanwhile
        run = cli(tmp_path, "--questions", str(few_questions), "--judge-batch", "--resume", str(tmp_path / "r.json"),
                  url=srv.url, out="r2.json")
    assert run.code == 0, run.stderr
    assert len(srv.batch_creates) == 1  # collected, never submitted again
    assert "Resuming batch msgbatch_loopback_1 (3 request(s)) without submitting it again" in run.stderr
    done = json.loads((tmp_path / "r2.json").read_text())
    assert [r["llm_grade"] for r in done["results"]] == [8, 8, 8]
    assert [(b["id"], b["status"], b["resumed"]) for b in done["run"]["judge_batch"]] == [
        ("msgbatch_loopback_1", "collected", True)]
    assert done["run"]["cost_usd"] == pytest.approx(0.0045)


@pytest.mark.slow  # the process killed
def test_killed_while_polling_then_resume_from_the_journal(tmp_path: Path, few_questions: Path):
    """SIGKILL (nothing written but the journal): the journal's batch line is enough to collect it."""
    with LoopbackServer(default=OK, batch_polls=10**6) as srv:
        proc = _start(tmp_path, srv.url, "--questions", str(few_questions))
        wait_for_line(proc, "next check in")
        proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
        assert not (tmp_path / "r.json").exists()
        (journal,) = (tmp_path / "runs").glob("*.journal.jsonl")
        assert read_rows(journal)[0]["judge_batch"][0]["id"] == "msgbatch_loopback_1"
        srv.batch_polls = 0
        run = cli(tmp_path, "--questions", str(few_questions), "--judge-batch", "--resume", str(journal),
                  url=srv.url)
    assert run.code == 0, run.stderr
    assert len(srv.batch_creates) == 1
    assert [r["llm_grade"] for r in json.loads((tmp_path / "r.json").read_text())["results"]] == [8, 8, 8]


@pytest.mark.slow  # a long end-to-end run: 10,000 questions
def test_ten_thousand_questions_in_one_batch(tmp_path: Path):
    """The simulated large run (figures: bench/judge_batch.py): 10,000 questions, BM25 baseline on a
    tiny generated corpus, one batch. Its time is measured by bench/judge_batch.py, not here."""
    docs = make_corpus(tmp_path / "docs")
    make_questions(tmp_path / "q.json", 10_000, docs)
    with LoopbackServer(batch_polls=1) as srv:
        run = run_cli("--questions", str(tmp_path / "q.json"), "--corpus", str(tmp_path / "docs"), "--strategy",
                      "baseline", "--judge-batch", "--no-text", "--output", str(tmp_path / "r.json"),
                      "--log-dir", str(tmp_path / "logs"), "--log-level", "WARNING",
                      env=judge_env(srv.url, **FAST), timeout=900)
    assert run.code == 0, run.stderr[-2000:]
    assert len(srv.batch_creates) == 1 and len(srv.batch_creates[0]["requests"]) == 10_000
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["question_count"] == 10_000 and data["graded_count"] == 10_000
