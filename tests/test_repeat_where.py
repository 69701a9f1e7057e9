"""--repeat-where: with --judge-repeats N, ``uncertain`` repeats only the questions whose first grade
is near a pass mark (at the question's rank) or whose panel judges disagree; ``all`` is unchanged.
Judges are scripted (components/judges/providers/scripted.py): each question's grades are written
in advance, so the questions repeated and the calls made are computed by hand."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path

import pytest

from components import api
from components.core import Document, ScoredChunk
from components.judges.providers.scripted import fail, play
from components.run.repeat_where import RepeatRule, pass_marks, repeat_rule
from components.analysis.targets import parse_targets
from tests.conftest import clean_env, run_cli
from tests.panel_fixtures import grade_reply, scripted_judges
from utils.errors import InputError

DOCS = [Document(f"d{i}", f"Topic {i}", f"# Topic {i}\n\nTopic {i} is about thing{i} alone.") for i in range(1, 9)]
QUESTIONS = [{"id": f"q{i}", "question": f"What is thing{i}?", "expected_answer": f"Thing{i} alone.",
              "needle_doc_id": f"d{i}"} for i in range(1, 9)]
NEEDLE_AT = {"q6": 2, "q7": 2, "q8": None}  # the needle's rank (None: not retrieved); rank 1 for the others
# first grade, then the repeats'; with the mark 7: near at rank 1 = 6, 7, 8; at rank 2 (weight 0.95) the
# grade reaching 7 is 7.37, so 7 and 8 are near and 6 is not; not retrieved (0.6) 7 is out of reach
GRADES = {"q1": [9, 9, 9], "q2": [8, 6, 6], "q3": [7, 7, 8], "q4": [6, 7, 7], "q5": [5, 5, 5],
          "q6": [7, 6, 9], "q7": [6, 6, 6], "q8": [8, 8, 8]}
REPEATED = ["q2", "q3", "q4", "q6"]


class PlacedRetriever:
    """The needle at the rank :data:`NEEDLE_AT` says, the other chunks after it in document order."""

    def index(self, chunks):
        self.chunks = list(chunks)

    def retrieve(self, query, k):
        qid = "q" + re.search(r"thing(\d+)", query).group(1)
        needle = next(c for c in self.chunks if c.doc_id == "d" + qid[1:])
        others = [c for c in self.chunks if c is not needle]
        rank = NEEDLE_AT.get(qid, 1)
        order = others if rank is None else others[:rank - 1] + [needle] + others[rank - 1:]
        return [ScoredChunk(c, 1.0) for c in order[:k]]


def grader(grades: dict[str, list[int]]):
    """A scripted judge's reply function: each question's grades in order (thread-safe per question)."""
    calls: dict[str, int] = {}
    lock = threading.Lock()

    def answer(prompt: str) -> str:
        qid = "q" + re.search(r"What is thing(\d+)\?", prompt).group(1)
        with lock:
            n = calls[qid] = calls.get(qid, 0) + 1
        return grade_reply(grades[qid][n - 1])
    return answer, calls


def run(repeat_where: str, concurrency: int = 1, questions=QUESTIONS, grades=GRADES):
    answer, calls = grader(grades)
    with play(then=answer):
        result = api.evaluate(PlacedRetriever(), questions, DOCS, k=3, judge="scripted", judge_repeats=3,
                              repeat_where=repeat_where, concurrency=concurrency)
    return result, calls


def test_only_questions_near_the_pass_mark_at_their_rank_are_repeated():
    result, calls = run("uncertain")
    assert [r.rank for r in result.rows] == [1, 1, 1, 1, 1, 2, 2, None]
    assert calls == {"q1": 1, "q2": 3, "q3": 3, "q4": 3, "q5": 1, "q6": 3, "q7": 1, "q8": 1}  # 16 calls, not 24
    assert result.run.usage["judge"]["calls"] == 16
    assert [r.question_id for r in result.rows if r.judge_repeats == 3] == REPEATED
    assert [r.judge_repeats for r in result.rows] == [1, 3, 3, 3, 1, 3, 1, 1]
    by_id = {r.question_id: r for r in result.rows}
    assert by_id["q2"].llm_grades == [8, 6, 6] and by_id["q2"].llm_grade == 6  # the median of the repeats
    assert by_id["q1"].llm_grades == [9] and by_id["q1"].grade_spread is None
    assert result.run.judge.repeat_where == {"rule": "uncertain", "pass_marks": [7.0], "near": 1, "disagree": 2}
    # the judge's noise is measured on the repeated questions only, and says so: spreads 2, 1, 1, 3 and
    # population SDs 0.9428, 0.4714, 0.4714, 1.2472
    assert result.judge_consistency.to_json() == {"questions": 4, "moved_2_or_more_rate": 50.0,
                                                  "mean_sd": pytest.approx(0.7832,
                                        abs=1e-4), "repeat_where": "uncertain", "graded": 8}


def test_concurrency_repeats_the_same_questions():
    sequential, _ = run("uncertain")
    concurrent, calls = run("uncertain", concurrency=4)
    assert sum(calls.values()) == 16
    assert [(r.question_id, r.llm_grades, r.judge_repeats) for r in concurrent.rows] == \
        [(r.question_id, r.llm_grades, r.judge_repeats) for r in sequential.rows]


def test_all_is_unchanged():
    result, calls = run("all")
    assert set(calls.values()) == {3} and result.run.usage["judge"]["calls"] == 24
    assert all(r.judge_repeats is None for r in result.rows) and result.run.judge.repeat_where is None
    assert "repeat_where" not in result.judge_consistency.to_json()
    saved = result.to_json()
    assert saved["run"]["judge"]["repeat_where"] is None and saved["results"][0]["judge_repeats"] is None


@pytest.mark.parametrize("first, rank, marks, repeated", [
    ([6], 1, (7.0,), True), ([8], 1, (7.0,), True), ([9], 1, (7.0,), False), ([5], 1, (7.0,), False),
    ([9], 1, (7.0, 8.0), True), ([10], 1, (7.0, 8.0), False), ([6], 4, (7.0,), False), ([9], 4, (7.0,), True),
    ([10], None, (7.0,), False), ([None], 1, (7.0,), True),  # no first grade: nothing says it is far
    ([9, 10], 1, (7.0,), False), ([10, 8], 1, (7.0,), True), ([3, 4], 1, (7.0,), False),
    ([4, None], 1, (7.0,), False), ([7, 6], 1, (6.5,), True),
    # not retrieved (weight 0.6): the best total is 6.0, so a 6.5 mark is never near; a 6.0 mark is, at 9 and 10
    ([10], None, (6.5,), False), ([9], None, (6.0,), True)])
def test_the_rule(first, rank, marks, repeated):
    assert RepeatRule("uncertain", marks).wants_more(first, rank) is repeated


def test_the_pass_marks_asked_for_are_seven_and_the_targets_pass_rates():
    assert pass_marks() == (7.0,)
    assert pass_marks(parse_targets("pass_rate_8=0.5,hit@1=0.6,pass_rate_6_5=0.7", 5)) == (6.5, 7.0, 8.0)


def test_a_panel_that_disagrees_is_repeated():
    """Judges a and b; per question (a's first grade, b's first grade): (9, 9) and (9, 10) agree far from
    7, (10, 5) disagree by 5, (7, 7) agree on the mark, (8, 9) agree (median 8.5 → 9): 2 repeated."""
    firsts = {"q1": (9, 9), "q2": (9, 10), "q3": (10, 5), "q4": (7, 7), "q5": (8, 9)}
    scripts = {name: grader({q: [g[i]] * 3 for q, g in firsts.items()}) for i, name in enumerate("ab")}
    with scripted_judges(a=scripts["a"][0], b=scripts["b"][0]):
        result = api.evaluate(PlacedRetriever(), QUESTIONS[:5], DOCS, k=3, judges=["a", "b"], judge_repeats=3,
                              repeat_where="uncertain")
    for name in "ab":
        assert scripts[name][1] == {"q1": 1, "q2": 1, "q3": 3, "q4": 3, "q5": 1}
    assert [r.judge_repeats for r in result.rows] == [1, 1, 3, 3, 1]
    assert result.rows[2].grades_by_judge["b"].grades == [5, 5, 5]
    assert result.rows[0].grades_by_judge["a"].grades is None


def test_bad_input_is_one_line_and_exit_2(tmp_path: Path):
    out = str(tmp_path / "r.json")
    for args, says in ((("--repeat-where", "uncertain"), "--repeat-where uncertain places the extra grades"),
                       (("--repeat-where", "uncertain", "--judge-repeats", "1"), "add --judge-repeats N"),
                       (("--repeat-where", "sometimes", "--judge-repeats", "3"),
                        "--repeat-where 'sometimes': use all or uncertain")):
        bad = run_cli("--quick", "--strategy", "baseline", "--output", out, *args)
        errors = [ln for ln in bad.stderr.splitlines() if "ERROR" in ln or "error" in ln.lower()]
        assert bad.code == 2 and len(errors) == 1 and says in errors[0], bad.stderr
    assert not (tmp_path / "r.json").exists()
    with pytest.raises(InputError, match="use all or uncertain"):
        repeat_rule("most", 3)
    with pytest.raises(InputError, match="add --judge-repeats N"):
        api.evaluate(PlacedRetriever(), QUESTIONS, DOCS, judge="offline", repeat_where="uncertain")


def batch_answer(grades: dict[str, list[int]], model_grades: dict[str, dict[str, list[int]]] | None = None):
    """The loopback batch API's answer to custom id ``q<index>r<repeat>``: that question's grade of
    that repeat (``model_grades``: per model, for a panel)."""
    from tests.loopback import Reply

    def answer(cid: str, params: dict, seen: int) -> Reply:
        index, repeat = map(int, re.fullmatch(r"q(\d+)r(\d+)", cid).groups())
        table = model_grades[params["model"]] if model_grades else grades
        return Reply(text=grade_reply(table[f"q{index + 1}"][repeat]))
    return answer


def batch_loop(repeat_where: str, **loop):
    from components.core.chunking import chunk_corpus
    from components.run.benchmark_loop import BenchmarkLoop
    from components.core import Question

    retriever = PlacedRetriever()
    retriever.index(chunk_corpus(DOCS))
    questions = [Question(id=q["id"], question=q["question"], expected_answer=q["expected_answer"],
                          needle_doc_ids=(q["needle_doc_id"],)) for q in QUESTIONS]
    return BenchmarkLoop(retriever, None, k=3, repeats=3, repeat_rule=repeat_rule(repeat_where, 3), **loop), questions


def test_judge_batch_sends_the_repeats_of_the_uncertain_questions_in_a_second_batch():
    from components.judges.providers.anthropic import MessageBatches
    from components.run.calls.judge_batch import BatchJudge, run_batch
    from tests.loopback import LoopbackServer
    from tests.test_judge_batch import SONNET, provider

    with LoopbackServer(batch_polls=0, batch_script=batch_answer(GRADES)) as srv:
        loop, questions = batch_loop("uncertain")
        rows = run_batch(loop, questions, {}, BatchJudge(MessageBatches(provider(srv.url), SONNET),
                                                         sleep=lambda s: None))
        batches = [sorted(r["custom_id"] for r in b["requests"]) for b in srv.batch_creates]
    assert batches == [[f"q{i}r0" for i in range(8)], ["q1r1", "q1r2", "q2r1", "q2r2", "q3r1", "q3r2", "q5r1", "q5r2"]]
    assert [r.question_id for r in rows if r.judge_repeats == 3] == REPEATED
    assert [r.llm_grades for r in rows] == [[9], [8, 6, 6], [7, 7, 8], [6, 7, 7], [5], [7, 6, 9], [6], [8]]
    assert not srv.requests  # nothing graded one call at a time


def test_judge_batch_stopped_in_the_second_round_resumes_without_a_new_create():
    """A stop while the second batch (the repeats of q2, q3, q4, q6) is polled: the questions decided
    with one grade are finished, the others are pending; --resume collects both batches again and
    submits nothing."""
    from components.judges.providers.anthropic import MessageBatches
    from components.run.calls.judge_batch import BatchJudge, run_batch
    from tests.loopback import LoopbackServer
    from tests.test_judge_batch import SONNET, provider

    with LoopbackServer(batch_polls=0, batch_script=batch_answer(GRADES)) as srv:
        loop, questions = batch_loop("uncertain")
        loop.should_stop = lambda: len(srv.batch_creates) == 2
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None,
                           should_stop=loop.should_stop)
        with pytest.raises(KeyboardInterrupt):
            run_batch(loop, questions, {}, judge)
        pending = [r.question_id for r in loop.results if r.llm_grade is None]
        assert pending == REPEATED and [r.judge_repeats for r in loop.results if r.llm_grade is not None] == [1] * 4
        done = {r.question_id: r.to_json() for r in loop.results if r.llm_grade is not None}
        previous = [r.to_json() for r in judge.all_records]
        loop, questions = batch_loop("uncertain")
        judge = BatchJudge(MessageBatches(provider(srv.url), SONNET), sleep=lambda s: None)
        rows = run_batch(loop, questions, done, judge, previous)
        assert len(srv.batch_creates) == 2  # both collected from the earlier run's batches
    assert [r.llm_grades for r in rows] == [[9], [8, 6, 6], [7, 7, 8], [6, 7, 7], [5], [7, 6, 9], [6], [8]]
    assert [r.judge_repeats for r in rows] == [1, 3, 3, 3, 1, 3, 1, 1]


def test_a_panel_through_judge_batch(tmp_path: Path):
    """Two judges (two models of the loopback API), --judge-batch: each judge's first grades in a
    batch, then each judge's repeats of q3 (10 and 5: they disagree) and q4 (7 and 7: on the mark)."""
    from tests.conftest import judge_env
    from tests.loopback import LoopbackServer

    qfile, corpus = write_inputs(tmp_path)
    haiku = {"q1": 9, "q2": 9, "q3": 10, "q4": 7, "q5": 8}
    sonnet = {"q1": 9, "q2": 10, "q3": 5, "q4": 7, "q5": 9}
    model_grades = {m: {q: [g] * 3 for q, g in grades.items()}
                    for m, grades in (("claude-haiku-4-5", haiku), ("claude-sonnet-5-5", sonnet))}
    out = tmp_path / "r.json"
    with LoopbackServer(batch_polls=0, batch_script=batch_answer({}, model_grades)) as srv:
        run = run_cli("--questions", str(qfile), "--corpus", str(corpus), "--strategy", "baseline", "--k", "1",
                      "--judges", "anthropic/claude-haiku-4-5,anthropic/claude-sonnet-5-5", "--judge-batch",
                      "--judge-repeats", "3", "--repeat-where", "uncertain", "--output", str(out),
                      env=judge_env(srv.url, BENCHMARK_BATCH_POLL_MAX="0.05"))
        assert run.code == 0, run.stderr
        batches = [(b["requests"][0]["params"]["model"], sorted(r["custom_id"] for r in b["requests"]))
                   for b in srv.batch_creates]
    firsts = [f"q{i}r0" for i in range(5)]
    assert batches == [("claude-haiku-4-5", firsts), ("claude-sonnet-5-5", firsts),
                       ("claude-haiku-4-5", ["q2r1", "q2r2", "q3r1", "q3r2"]),
                       ("claude-sonnet-5-5", ["q2r1", "q2r2", "q3r1", "q3r2"])]
    rows = json.loads(out.read_text())["results"]
    assert [r["judge_repeats"] for r in rows] == [1, 1, 3, 3, 1] and [r["rank"] for r in rows] == [1] * 5
    assert rows[2]["grades_by_judge"]["anthropic/claude-sonnet-5-5"]["grades"] == [5, 5, 5]


def write_inputs(tmp_path: Path) -> tuple[Path, Path]:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for d in DOCS[:5]:
        (corpus / f"{d.doc_id}.md").write_text(d.text)
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps({"questions": QUESTIONS[:5]}))
    return qfile, corpus


def test_resume_keeps_the_rows_and_the_rule(tmp_path: Path):
    """The first run stops after q1-q3 (a fatal judge error on q4); --resume grades q4 and q5 under the
    same rule: q4 (6) is repeated, q5 (5) is not; another rule or another N is refused."""
    qfile, corpus = write_inputs(tmp_path)
    out = tmp_path / "r.json"
    args = ("--questions", str(qfile), "--corpus", str(corpus), "--strategy", "baseline", "--k", "1",
            "--judge-repeats", "3", "--output", str(out))
    env = clean_env(BENCHMARK_JUDGE="scripted")
    answer, calls = grader(GRADES)
    with play(then=lambda prompt: fail("auth", "scripted revoked key") if "thing4" in prompt else answer(prompt)):
        done = run_cli(*args, "--repeat-where", "uncertain", env=env)
    assert done.code == 3, done.stderr
    rows = json.loads(out.read_text())["results"]
    assert [r["rank"] for r in rows] == [1] * 5
    assert [r["judge_repeats"] for r in rows[:3]] == [1, 3, 3] and rows[3]["llm_grade"] is None
    assert calls == {"q1": 1, "q2": 3, "q3": 3}
    for other, says in ((("--repeat-where", "all"), "the --repeat-where differs"),
                        (("--repeat-where", "uncertain", "--judge-repeats", "2"), "asked --judge-repeats 3")):
        with play() as idle:  # no step: a call would fail the test
            bad = run_cli("--resume", str(out), "--judge-repeats", "3", *other, "--output", str(tmp_path / "o.json"),
                          env=env)
        assert bad.code == 2 and says in bad.stderr and idle.prompts == [], bad.stderr
    answer2, calls2 = grader(GRADES)
    with play(then=answer2):
        again = run_cli("--resume", str(out), "--judge-repeats", "3", "--repeat-where", "uncertain", "--output",
                        str(out), env=env)
    assert again.code == 0, again.stderr
    assert calls2 == {"q4": 3, "q5": 1}
    data = json.loads(out.read_text())
    assert [r["judge_repeats"] for r in data["results"]] == [1, 3, 3, 3, 1]
    assert data["run"]["judge"]["repeat_where"]["rule"] == "uncertain"


def test_estimate_prices_the_worst_case_and_says_so(tmp_path: Path):
    from tests.conftest import judge_env
    from tests.loopback import LoopbackServer

    qfile, corpus = write_inputs(tmp_path)
    with LoopbackServer() as server:
        done = run_cli("--questions", str(qfile), "--corpus", str(corpus), "--strategy", "baseline", "--estimate",
                       "--judge-repeats", "3", "--repeat-where", "uncertain", "--output", str(tmp_path / "r.json"),
                       env=judge_env(server.url))
        assert done.code == 0, done.stderr
        assert server.requests == []
    grading = next(line.split() for line in done.stdout.splitlines() if line.strip().startswith("grading"))
    assert grading[1] == "15"  # 5 questions × 3: every question repeated
    assert "--repeat-where uncertain: priced at the worst case, every question graded 3 times" in done.stdout
