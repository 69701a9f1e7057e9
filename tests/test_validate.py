"""validate: pinned verdicts on a hand-made corpus, flags, --write-clean, repeats, the LLM path with a
scripted judge, the CLI end to end on questions.json, and the Kubernetes adversarial set."""

from __future__ import annotations

import json
import math
import re
import statistics

import pytest

from components.cli import validate as validate_command
from components.core.chunking import chunk_corpus
from components.api import Settings
from components.dataset import validate
from components.dataset.context_index import ContextIndex
from components.judges.providers.scripted import Script, fail, play
from components.judges.retrieval_grader import RetrievalGrader
from components.readers import load_corpus, load_questions
from tests.conftest import K8S, ROOT, needs_k8s, run_cli
from tests.dataset_fixtures import (ANTHROPIC, OFFLINE, QUESTIONS, QUORUM_Q, VERDICTS, strict_load, validate_args,
                                    write_corpus, write_questions)
from utils.errors import InputError, JudgeError


@pytest.fixture
def tiny(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "questions.json")
    return corpus, questions


# --------------------------------------------------------------------------- offline, hand-made corpus

def test_pinned_verdicts_offline(tiny, tmp_path, capsys):
    corpus, questions = tiny
    out = tmp_path / "validation.json"
    assert validate_command.run(validate_args(questions, corpus, out), OFFLINE) == 0
    report = strict_load(out.read_text())
    by_id = {q["id"]: q for q in report["questions"]}
    assert [q["id"] for q in report["questions"]] == [q["id"] for q in QUESTIONS]
    assert {i: q["verdict"] for i, q in by_id.items()} == VERDICTS
    assert report["judge"]["label"] == "lexical" and all(q["judge"] == "lexical" for q in report["questions"])

    ok = by_id["q_pass"]
    assert ok["sufficiency"]["grades"] == [10] and ok["necessity"]["grades"] == [1]
    assert ok["sufficiency"]["chunk_ids"] == ["alpha#0", "alpha#1"]  # BM25 over alpha: the quorum section first
    assert ok["reasons"] == [] and ok["flags"] == []

    wrong = by_id["q_wrong_needle"]
    assert wrong["sufficiency"]["grade"] == 1 and wrong["necessity"]["grade"] == 10
    assert wrong["reasons"] == ["sufficiency: the needle's best chunks grade 1 < 7",
                                "necessity: random chunks of other documents grade 10 > 3"]
    generic = by_id["q_generic"]
    assert generic["sufficiency"]["passed"] is True and generic["necessity"]["passed"] is False
    assert "delta#0" in generic["necessity"]["chunk_ids"]

    assert by_id["q_dup"]["flags"] == ["duplicate"]
    assert by_id["q_dup"]["reasons"] == ["duplicate: same text as question 'q_pass'"]
    assert by_id["q_dup"]["sufficiency"] is None  # not graded
    assert by_id["q_empty"]["flags"] == ["empty_needle"] and by_id["q_empty"]["necessity"] is None
    assert by_id["q_unknown"]["flags"] == ["unknown_needle"]
    noanswer = by_id["q_noanswer"]
    assert noanswer["flags"] == ["no_expected_answer"]
    assert noanswer["warnings"] == ["no_expected_answer: the question has no expected answer"]
    assert noanswer["sufficiency"]["grades"] == [None]
    assert noanswer["reasons"][0].startswith("sufficiency: not graded (no_expected_answer")

    s = report["summary"]
    assert (s["question_count"], s["pass_count"], s["fail_count"]) == (8, 2, 6)
    assert s["flag_counts"] == {"duplicate": 1, "empty_needle": 1, "no_expected_answer": 1, "unknown_needle": 1}
    assert report["seed"] == 0 and report["k"] == 5 and report["judge_repeats"] == 1
    assert s["judge_consistency"] is None

    table = capsys.readouterr().out
    lines = table.splitlines()
    assert lines[0].split() == ["id", "verdict", "suff", "nec", "reasons", "/", "warnings"]
    assert lines[1].split()[:4] == ["q_pass", "pass", "10", "1"]
    assert lines[5].split()[:4] == ["q_dup", "fail", "-", "-"]
    assert "8 questions: 2 pass, 6 fail (judge: lexical" in lines[-1]


def test_write_clean_keeps_the_input_format(tiny, tmp_path):
    corpus, questions = tiny
    clean = tmp_path / "clean.json"
    # --force: q_generic fails only necessity, which the lexical judge may not drop on its own
    args = validate_args(questions, corpus, tmp_path / "v.json", "--write-clean", str(clean), "--force")
    assert validate_command.run(args, OFFLINE) == 0
    doc = strict_load(clean.read_text())
    original = json.loads(questions.read_text())
    assert doc["description"] == "hand-made" and doc["question_count"] == 2
    assert doc["questions"] == [original["questions"][0], original["questions"][2]]  # raw items, order kept
    assert [q.id for q in load_questions(clean).questions] == ["q_pass", "q_pass2"]  # loads back


def test_write_clean_from_standard_input(tiny, tmp_path, monkeypatch):
    """Questions piped in (``-``): the clean file is built from what was read, not re-read from a path."""
    import io
    import sys

    corpus, questions = tiny
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(questions.read_bytes())))
    clean = tmp_path / "clean.json"
    assert validate_command.run(validate_args("-", corpus, tmp_path / "v.json", "--write-clean", str(clean), "--force"),
                        OFFLINE) == 0
    original = json.loads(questions.read_text())
    assert strict_load(clean.read_text())["questions"] == [original["questions"][0], original["questions"][2]]


def test_write_clean_bare_list(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = tmp_path / "bare.json"
    questions.write_text(json.dumps(QUESTIONS[:3]))
    clean = tmp_path / "clean.json"
    validate_command.run(validate_args(questions, corpus, tmp_path / "v.json", "--write-clean", str(clean)), OFFLINE)
    assert strict_load(clean.read_text()) == [QUESTIONS[0], QUESTIONS[2]]


def test_normalise():
    assert validate.normalise("  How do I turn on QUORUM mode? ") == validate.normalise("how do i turn on quorum-mode")


def test_bad_arguments(tiny, tmp_path):
    corpus, questions = tiny
    with pytest.raises(InputError, match="--k 0"):
        validate_command.run(validate_args(questions, corpus, tmp_path / "v.json", "--k", "0"), OFFLINE)
    with pytest.raises(InputError, match="--judge-repeats 0"):
        validate_command.run(validate_args(questions, corpus, tmp_path / "v.json", "--judge-repeats", "0"), OFFLINE)
    with pytest.raises(InputError, match="^--json .* is the questions file"):
        validate_command.run(validate_args(questions, corpus, questions), OFFLINE)
    assert not (tmp_path / "v.json").exists()


def test_random_draws_follow_the_seed(tiny):
    corpus, _ = tiny
    index = ContextIndex(chunk_corpus(load_corpus(corpus).documents))
    draw = index.random_others("q", ["beta"], 2, seed=7)
    assert draw == index.random_others("q", ["beta"], 2, seed=7)
    assert all(c.doc_id != "beta" and c.text.strip() for c in draw) and len(draw) == 2
    draws = {tuple(c.chunk_id for c in index.random_others("q", ["beta"], 2, seed=s)) for s in range(20)}
    assert len(draws) > 1  # the seed matters (5 chunks, 2 drawn: 20 possible ordered draws)
    everything = index.random_others("q", ["beta"], 99, seed=0)
    assert sorted(c.chunk_id for c in everything) == ["alpha#0", "alpha#1", "delta#0", "epsilon#0", "gamma#0"]


# --------------------------------------------------------------------------- scripted (LLM-path) judges

def scripted_grader(*steps) -> RetrievalGrader:
    """The run's grader over a scripted model: an int is a reply with that grade, anything else a
    step of :mod:`components.judges.providers.scripted` (``fail(...)``)."""
    return RetrievalGrader(Script(*[f'{{"grade": {g}, "reasoning": "scripted {g}"}}' if isinstance(g, int) else g
                                    for g in steps], model="claude-test-1"))


def chunk_ids(prompt: str) -> list[str]:
    """The chunk ids a grading prompt shows, in order."""
    return re.findall(r"chunk_id=([^\]\s]+)\]", prompt)


def scripted_settings() -> Settings:
    """The settings of a run judged by the scripted provider (inside :func:`play`)."""
    return Settings.from_env({"BENCHMARK_JUDGE": "scripted"})


def index_and_questions(tmp_path, ids):
    corpus = write_corpus(tmp_path / "corpus")
    qset = load_questions(write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ids]))
    return ContextIndex(chunk_corpus(load_corpus(corpus).documents)), qset


def test_repeats_report_spread_and_consistency(tmp_path):
    index, qset = index_and_questions(tmp_path, {"q_pass"})
    judge = scripted_grader(8, 6, 7, 1, 1, 2)  # sufficiency x3, then necessity x3
    run = validate.validate_questions(qset.questions, index, judge, k=2, repeats=3)
    item = run.items[0]
    assert [chunk_ids(p) for p in judge.llm.prompts[:3]] == [["alpha#0", "alpha#1"]] * 3
    assert item.sufficiency.grades == [8, 6, 7] and item.sufficiency.grade == 7.0 and item.sufficiency.spread == 2
    assert item.sufficiency.stdev == pytest.approx(1.0)  # sample sd of 8, 6, 7
    assert item.necessity.grade == pytest.approx(4 / 3) and item.necessity.spread == 1
    assert item.necessity.stdev == pytest.approx(statistics.stdev([1, 1, 2]))  # 0.57735
    assert item.verdict == "pass"
    consistency = validate.judge_consistency(run.items, 3)
    assert consistency == {"repeats": 3, "checks": 2, "grade_moved_2plus_rate": 50.0,
                           "mean_grade_stdev": pytest.approx((1.0 + 1 / math.sqrt(3)) / 2)}
    assert validate.table(run.items, {"checked_count": 1, "pass_count": 1, "fail_count": 0, "flag_counts": {},
                                      "judge_consistency": consistency}, "llm").splitlines()[1].split()[:6] == \
        ["q_pass", "pass", "7", "[6-8]", "1.33", "[1-2]"]


def test_repeat_mean_decides(tmp_path):
    index, qset = index_and_questions(tmp_path, {"q_pass"})
    run = validate.validate_questions(qset.questions, index, scripted_grader(7, 6, 3, 4), k=2, repeats=2)
    assert run.items[0].reasons == ["sufficiency: the needle's best chunks grade 6.50 < 7",
                                    "necessity: random chunks of other documents grade 3.50 > 3"]


def test_llm_path_through_run(tmp_path, monkeypatch, capsys):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ("q_pass", "q_noanswer")])
    judge = scripted_grader(9, fail("overloaded", "judge overloaded (529)"), 2, 8, 1)
    seen = {}

    def fake_make_judge(settings, chunks):
        seen["settings"], seen["chunks"] = settings, len(chunks)
        return judge

    monkeypatch.setattr(validate, "make_judge", fake_make_judge)
    out = tmp_path / "v.json"
    # a check the judge did not grade
    assert validate_command.run(validate_args(questions, corpus, out), ANTHROPIC) == 3
    report = strict_load(out.read_text())
    assert seen["settings"] is ANTHROPIC and seen["chunks"] == 7  # 6 documents, alpha has 2 chunks
    assert report["judge"]["label"] == "llm" and report["judge"]["model"] == "claude-test-1"
    first, second = report["questions"]
    assert first["sufficiency"]["grades"] == [9]
    overloaded = "overloaded: judge overloaded (529)"
    assert first["necessity"]["grades"] == [None] and first["necessity"]["errors"] == [overloaded]
    assert first["verdict"] == "not_graded" and first["reasons"] == [f"necessity: not graded ({overloaded})"]
    assert report["status"] == "judge_failed" and report["summary"]["not_graded_count"] == 1
    # the LLM judge grades a question without expected answer (reference-free): a warning, not a failure
    assert second["verdict"] == "fail" and second["flags"] == ["no_expected_answer"]
    assert second["sufficiency"]["grades"] == [2] and second["necessity"]["grades"] == [8]
    assert len(judge.llm.prompts) == 4  # one scripted grade left: exactly 4 calls
    assert "q_pass" in capsys.readouterr().out


def test_llm_path_reference_free_pass(tmp_path):
    index, qset = index_and_questions(tmp_path, {"q_noanswer"})
    run = validate.validate_questions(qset.questions, index, scripted_grader(8, 2), k=5)
    assert run.items[0].verdict == "pass" and [f.code for f in run.items[0].flags] == ["no_expected_answer"]


def test_fatal_judge_error_stops_and_exits_3(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ("q_pass", "q_pass2")])
    out, clean = tmp_path / "v.json", tmp_path / "clean.json"
    with play(fail("auth", "the judge API refused the credentials (401)")):
        code = validate_command.run(validate_args(questions, corpus, out, "--write-clean", str(clean)),
                                    scripted_settings())
    assert code == 3
    report = strict_load(out.read_text())
    assert report["status"] == "judge_failed" and report["judge_failure"].startswith("auth: ")
    assert [q["verdict"] for q in report["questions"]] == ["not_graded", "not_graded"]
    assert report["questions"][1]["reasons"][0].startswith("not checked: the judge failed (auth:")
    assert not clean.exists()  # an incomplete validation writes no clean file


def test_interrupt_writes_the_finished_questions_and_exits_130(tmp_path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ("q_pass", "q_pass2")])
    out, clean = tmp_path / "v.json", tmp_path / "clean.json"
    with play('{"grade": 9, "reasoning": "r"}', '{"grade": 1, "reasoning": "r"}', KeyboardInterrupt()):
        code = validate_command.run(validate_args(questions, corpus, out, "--write-clean", str(clean)),
                                    scripted_settings())
    assert code == 130
    report = strict_load(out.read_text())
    assert report["status"] == "interrupted" and [q["id"] for q in report["questions"]] == ["q_pass"]
    assert report["summary"]["question_count"] == 2 and report["summary"]["checked_count"] == 1
    assert not clean.exists()


def test_transient_judge_error_escaping_a_judge_propagates(tmp_path):
    # judges turn transient errors into ungraded results; one that escapes is a bug, not a failed judge
    # (a judge object that breaks that rule, written here for the purpose)
    class Escaping:
        model = "claude-test-1"

        def grade(self, question, expected_answer, chunks):
            raise JudgeError("timeout", "t", fatal=False)

    index, qset = index_and_questions(tmp_path, {"q_pass"})
    with pytest.raises(JudgeError):
        validate.validate_questions(qset.questions, index, Escaping())


# --------------------------------------------------------------------------- end to end

def test_cli_end_to_end_on_questions_json(tmp_path):
    out, clean = tmp_path / "v.json", tmp_path / "clean.json"
    result = run_cli("validate", "questions.json", "--json", str(out), "--write-clean", str(clean), "--seed", "3",
                     "--force")
    assert result.code == 0, result.stderr
    report = strict_load(out.read_text())
    qset = load_questions(ROOT / "questions.json")
    assert [q["id"] for q in report["questions"]] == [q.id for q in qset.questions]
    assert report["seed"] == 3 and report["judge"]["label"] == "lexical"
    for q, item in zip(qset.questions, report["questions"], strict=True):
        suff, nec = item["sufficiency"], item["necessity"]
        assert all(c.split("#")[0] in q.needle_doc_ids for c in suff["chunk_ids"]) and len(suff["chunk_ids"]) >= 1
        assert all(c.split("#")[0] not in q.needle_doc_ids for c in nec["chunk_ids"]) and len(nec["chunk_ids"]) == 5
        expected = suff["grade"] >= validate.SUFFICIENCY_MIN and nec["grade"] <= validate.NECESSITY_MAX
        assert item["verdict"] == ("pass" if expected else "fail"), item
        assert any(line.split()[:2] == [q.id, item["verdict"]] for line in result.stdout.splitlines())
    passing = [item["id"] for item in report["questions"] if item["verdict"] == "pass"]
    assert [q["id"] for q in strict_load(clean.read_text())["questions"]] == passing
    again = run_cli("validate", "questions.json", "--json", str(tmp_path / "v2.json"), "--seed", "3")
    assert again.code == 0
    assert strict_load((tmp_path / "v2.json").read_text())["questions"] == report["questions"]  # reproducible


def test_cli_bad_input_exits_2(tmp_path):
    result = run_cli("validate", str(tmp_path / "none.json"), "--json", str(tmp_path / "v.json"))
    assert result.code == 2 and "does not exist" in result.stderr
    assert not (tmp_path / "v.json").exists()


@needs_k8s
def test_kubernetes_adversarial_offline(tmp_path):
    """Questions whose answers are newer than the 2024-08-31 snapshot (releases 1.32 and 1.35, per the
    data set's README) cannot be answered from their needle: the check must say so."""
    out = tmp_path / "v.json"
    result = run_cli("validate", str(K8S / "needle_questions_adversarial.json"), "--corpus", str(K8S / "docs"),
                     "--json", str(out))
    assert result.code == 0, result.stderr
    by_id = {q["id"]: q for q in strict_load(out.read_text())["questions"]}
    assert len(by_id) == 20
    for qid in ("adv_v03", "adv_v04"):
        assert by_id[qid]["verdict"] == "fail" and by_id[qid]["sufficiency"]["passed"] is False
    doc = (K8S / "docs" / "tasks_administer-cluster_topology-manager.md").read_text()
    assert "1.32" not in doc and "1.35" not in doc



# --------------------------------------------------------------------------- the real SDK, loopback server

def test_llm_path_against_the_loopback_server(tmp_path):
    """validate through run_cli with the Anthropic judge: sufficiency prompts hold the needle's
    chunks, necessity prompts other documents'; grades are scripted by what the prompt shows."""
    from tests.conftest import judge_env, run_cli
    from tests.loopback import LoopbackServer, Reply

    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ("q_pass", "q_pass2")])

    def script(n: int, body: dict) -> Reply:
        prompt = body["messages"][0]["content"]
        needle = "alpha" if f"USER QUESTION: {QUORUM_Q}" in prompt else "beta"
        holds_needle = f"doc_id={needle} " in prompt
        return Reply(text=json.dumps({"grade": 9 if holds_needle else 2, "reasoning": "scripted"}))

    out = tmp_path / "v.json"
    with LoopbackServer(script) as srv:
        run = run_cli("validate", str(questions), "--corpus", str(corpus), "--json", str(out), env=judge_env(srv.url))
        assert len(srv.requests) == 4  # two checks per question
        assert {r.body["thinking"]["type"] for r in srv.requests} == {"between_tools"}  # claude-sonnet-5-5
    assert run.code == 0, run.stderr
    report = strict_load(out.read_text())
    assert report["judge"]["label"] == "llm" and report["judge"]["model"] == "claude-sonnet-5-5"
    for q in report["questions"]:
        assert (q["verdict"], q["sufficiency"]["grades"], q["necessity"]["grades"]) == ("pass", [9], [2])


def test_a_judge_that_answers_every_call_429_or_500_grades_nothing_and_writes_no_clean_file(tmp_path):
    """Through the real SDK against a loopback API answering 429 and 500: exit 3 as a run's judge
    failure, no clean file, every question "not_graded" (never "fail"), and the console says so; after
    3 questions in a row the judge is not called again."""
    from tests.conftest import judge_env
    from tests.loopback import LoopbackServer, error

    write_corpus(tmp_path / "corpus")
    ids = ("q_pass", "q_pass2", "q_noanswer")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ids])
    out, clean = tmp_path / "v.json", tmp_path / "clean.json"
    busy = [error(429, "rate_limit_error", "slow down"), error(500, "api_error", "boom")]
    with LoopbackServer(script=lambda n, body: busy[n % 2]) as srv:
        run = run_cli("validate", str(questions), "--corpus", str(tmp_path / "corpus"), "--json", str(out),
                      "--write-clean", str(clean), env=judge_env(srv.url))
        calls = len(srv.requests)
    assert run.code == 3, run.stderr[-3000:]
    assert not clean.exists()
    report = strict_load(out.read_text())
    assert report["status"] == "judge_failed"
    assert [q["verdict"] for q in report["questions"]] == ["not_graded"] * 3
    assert report["summary"]["not_graded_count"] == 3 and report["summary"]["fail_count"] == 0
    assert "3 of 3 question(s) were not graded" in run.stderr and "--write-clean skipped" in run.stderr
    assert "0 pass, 0 fail, 3 not graded" in run.stdout
    assert calls == 3 * 2 * 3  # 3 questions × 2 checks × the SDK's 3 attempts, then no more


def test_the_judge_is_not_called_after_three_questions_in_a_row_not_graded(tmp_path):
    index, qset = index_and_questions(tmp_path, {"q_pass", "q_pass2", "q_noanswer", "q_generic"})
    down = fail("server_error", "judge server error (500) after 3 attempts")
    judge = scripted_grader(*[down] * 6)
    run = validate.validate_questions(qset.questions, index, judge, k=2)
    assert len(judge.llm.prompts) == 6 and [i.verdict for i in run.items] == ["not_graded"] * len(qset.questions)
    assert run.status == "judge_failed" and run.judge_failure.startswith("the judge's calls failed for 3 questions")
    assert run.items[-1].not_checked.startswith("not checked: the judge failed")
