"""Known answers (components/run/known_answers.py): which questions, what the judge is shown, the separation and
its interval, the AUC, the verdict, and bad input; graded by scripted judges."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from components.core.chunk import Chunk
from components.core.questions import Question
from components.run import known_answers as K
from utils.errors import InputError


def chunk(doc: str, i: int = 0) -> Chunk:
    return Chunk(doc, f"{doc}#{i}", doc.title(), (), f"text of {doc} {i}", i)


def question(i: int, needle: str) -> Question:
    return Question(f"q{i}", f"question {i}?", f"answer {i}", (needle,))


# q0..q9: the even ones retrieve their needle (doc{i}) first, then "misc"; the odd ones retrieve only "misc"
QUESTIONS = [question(i, f"doc{i}") for i in range(10)]
RETRIEVED = {q.id: ([chunk(f"doc{i}"), chunk("misc")] if i % 2 == 0 else [chunk("misc", 1)])
             for i, q in enumerate(QUESTIONS)}


class Scripted:
    """A judge grading from whether a needle's chunk is shown: ``right`` if so, else ``wrong``; counts its calls."""

    def __init__(self, right, wrong):
        self.right, self.wrong, self.calls = right, wrong, []

    def grade(self, question, expected_answer, chunks):
        self.calls.append([c.chunk_id for c in chunks])
        i = int(question.split()[1].rstrip("?"))
        shown = any(c.doc_id == f"doc{i}" for c in chunks)
        grade = self.right if shown else self.wrong
        grade = grade(i) if callable(grade) else grade
        return SimpleNamespace(grade=grade, error=None if grade is not None else "unparseable: no grade")


def retrieve(calls: list | None = None):
    def get(q: Question):
        if calls is not None:
            calls.append(q.id)
        return RETRIEVED[q.id]
    return get


def test_the_first_n_that_retrieved_their_needle_in_file_order_and_what_each_is_shown():
    seen: list[str] = []
    pairs = K.choose(QUESTIONS, retrieve(seen), 3)
    assert [p.question.id for p in pairs] == ["q0", "q2", "q4"]
    assert seen == ["q0", "q1", "q2", "q3", "q4"]  # retrieval stops once 3 are found
    assert [c.chunk_id for c in pairs[0].needle] == ["doc0#0"] and [c.chunk_id for c in pairs[0].other] == ["misc#0"]


def test_a_question_whose_retrieval_is_only_its_needle_borrows_what_others_retrieved():
    only = {"a": [chunk("install")], "b": [chunk("proxy")], "c": [chunk("config")]}
    qs = [Question("a", "a?", "x", ("install",)), Question("b", "b?", "x", ("install",)),
          Question("c", "c?", "x", ("config",))]
    seen: list[str] = []
    pairs = K.choose(qs, lambda q: seen.append(q.id) or only[q.id], 1)
    assert [c.chunk_id for c in pairs[0].other] == ["proxy#0"]  # b's chunk: not of a's needle document
    assert seen == ["a", "b"]  # retrieved further only to find another document's chunk


def test_a_constant_judge_is_blind_after_two_calls_per_question():
    judge = Scripted(8, 8)
    check = K.grade_pairs(K.choose(QUESTIONS, retrieve(), 5), judge)
    assert len(judge.calls) == 10 and check.calls == 10
    assert (check.verdict, check.pairs, check.separation, check.ci95, check.auc) == ("blind", 5, 0.0, [0.0, 0.0], 0.5)
    assert check.line() == ("known answers: on 5 question(s) the judge graded the needle's chunks 8.0 and other "
                            "documents' chunks 8.0 on average: separation +0.00 [95% CI +0.00, +0.00], AUC 0.50: blind")
    assert "status judge_blind" in K.stop_line({None: check})


def test_the_figures_by_hand():
    # differences 9-2, 8-3, 9-2, 7-3, 9-1 = 7, 5, 7, 4, 8: mean 6.2, squares about it 10.8, sd √(10.8/4) = 1.643168,
    # t(4) = 2.776445: half-width 2.776445 · 1.643168 / √5 = 2.040262
    needle = {0: 9, 2: 8, 4: 9, 6: 7, 8: 9}
    other = {0: 2, 2: 3, 4: 2, 6: 3, 8: 1}
    check = K.grade_pairs(K.choose(QUESTIONS, retrieve(), 5), Scripted(needle.get, other.get))
    half = 2.040262
    assert check.separation == pytest.approx(6.2) and check.ci95 == pytest.approx([6.2 - half, 6.2 + half], abs=1e-4)
    assert (check.verdict, check.auc, check.mean_needle, check.mean_other) == ("discriminates", 1.0, 8.4, 2.2)


@pytest.mark.parametrize("ci, expected", [((0.1, 0.99), "blind"), ((0.1, 1.0), "inconclusive"),
                                          ((1.0, 2.0), "discriminates"), ((-3.0, -1.0), "blind"),
                                          (None, "inconclusive")])
def test_the_rule(ci, expected):
    assert K.verdict(ci) == expected


def test_a_pair_without_a_grade_is_kept_with_its_reason_and_left_out_of_the_figures():
    needle = {0: 9, 2: None, 4: 9}
    check = K.grade_pairs(K.choose(QUESTIONS, retrieve(), 3), Scripted(needle.get, 2))
    assert check.pairs == 2 and check.rows[1].needle_grade is None
    assert check.rows[1].error == "needle: unparseable: no grade"
    assert check.verdict == "discriminates"  # 7 and 7: zero spread, the bound is the mean


def test_a_panel_names_its_blind_judge():
    pairs = K.choose(QUESTIONS, retrieve(), 5)
    checks = K.check_judges(pairs, {"offline": Scripted(9, 2), "qj": Scripted(8, 8)})
    assert [c.judge for c in K.blind(checks)] == ["qj"]
    doc = K.record(checks)
    assert doc["verdict"] == "blind" and doc["blind"] == ["qj"]
    assert doc["judges"]["offline"]["verdict"] == "discriminates"
    assert "the judge qj graded the needle's chunks 8.0" in K.stop_line(checks)
    assert K.record({None: checks["offline"]})["verdict"] == "discriminates"
    assert K.estimate_calls(5, judges=2) == 20


@pytest.mark.parametrize("value, message", [
    (0, "--known-answers 0: give a number of questions from 1 to the run's 10 (at least 1)"),
    (-2, "--known-answers -2: give a number of questions from 1 to the run's 10 (at least 1)"),
    (11, "--known-answers 11: give a number of questions from 1 to the run's 10 (the run has 10)"),
    ("2.5", "--known-answers '2.5': give a whole number of questions, from 1 to the run's 10"),
    (2.0, "--known-answers 2.0: give a whole number of questions, from 1 to the run's 10"),
    (True, "--known-answers True: give a whole number of questions, from 1 to the run's 10"),
])
def test_bad_counts_are_one_line(value, message):
    with pytest.raises(InputError) as err:
        K.check_count(value, 10)
    assert str(err.value) == message and "\n" not in message
    assert K.check_count("4", 10) == 4


def test_no_needle_retrieved_or_too_few_is_refused_saying_how_many():
    with pytest.raises(InputError, match=r"^--known-answers: bm25 retrieved no chunk of a needle's document for any "
                                         r"of the 10 questions"):
        K.choose(QUESTIONS, lambda q: [chunk("misc")], 2, strategy="bm25")
    with pytest.raises(InputError, match=r"^--known-answers 6: only 5 of the 10 questions retrieved a chunk of their "
                                         r"needle's document with the strategy: give --known-answers 5 or fewer$"):
        K.choose(QUESTIONS, retrieve(), 6)


def test_the_run_check_retrieves_with_the_retriever_and_marks_every_question_unjudged_when_blind():
    class Retriever:
        def retrieve(self, query, k):
            i = int(query.split()[1].rstrip("?"))
            return [SimpleNamespace(chunk=c, score=1.0) for c in RETRIEVED[f"q{i}"]][:k]

    replies: list = []
    outcome = K.run_check(3, QUESTIONS, Retriever().retrieve, 5, {None: Scripted(8, 8)}, on_reply=replies.append)
    assert outcome.blind and len(replies) == 6 and outcome.record()["verdict"] == "blind"
    rule = outcome.unjudged(lambda q: None)
    assert rule(QUESTIONS[7]).startswith("not judged: the judge is blind (--known-answers)")
    fine = K.run_check(3, QUESTIONS, Retriever().retrieve, 5, {None: Scripted(9, 2)})
    assert not fine.blind and fine.unjudged(lambda q: None)(QUESTIONS[0]) is None
    with pytest.raises(InputError, match="retrieving question 'q0' with the strategy failed \\(ValueError: down\\)"):
        K.run_check(1, QUESTIONS, lambda query, k: (_ for _ in ()).throw(ValueError("down")), 5, {None: Scripted(8, 8)})


def test_the_api_stops_a_blind_judge_before_judging(tmp_path):
    import json

    from components import api
    from components.judges.providers.scripted import play
    from tests.test_blind_judge import recorded_set

    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(recorded_set()))
    with play(then='{"grade": 8, "reasoning": "scripted"}') as script:
        result = api.evaluate("recorded", str(path), judge="scripted", known_answers=3)
    assert len(script.prompts) == 6  # two per question checked, none for the run's questions
    assert result.run.status == "judge_blind" and result.run.extra["known_answers"]["verdict"] == "blind"
    assert result.graded_count == 0 and result.run.spec["known_answers"] == 3
    with pytest.raises(InputError, match="--known-answers 0: give a whole number of questions, 1 or more"):
        api.evaluate("recorded", str(path), judge="offline", known_answers=0)


def test_the_check_goes_through_the_runs_budget_and_its_judge_breaker(tmp_path):
    """The check's calls are the run's: --max-cost holds them (they are priced and reserved like any other), and
    a judge whose calls time out 3 times in a row is given up during the check as during the run (exit 3's
    status), not called again for every question."""
    import json

    from components import api
    from components.judges.providers.scripted import fail, play, reply
    from tests.test_blind_judge import recorded_set
    from utils.pricing import Price

    path = tmp_path / "recorded.json"
    path.write_text(json.dumps(recorded_set()))
    answer = reply('{"grade": 8, "reasoning": "scripted"}', input_tokens=1000, output_tokens=1000)
    with play(then=answer, output_cap=1000, price=Price(1.0, 10.0)) as script:  # a call costs at most ~$0.012
        result = api.evaluate("recorded", str(path), judge="scripted", known_answers=4, max_cost_usd=0.05)
    assert result.run.cost_usd <= 0.05 + 1e-9 and result.run.budget["spent_usd"] == result.run.cost_usd
    assert len(script.prompts) < 8  # the budget stopped the check's 8 calls before they were all made
    with play(then=fail("timeout")) as timing_out:
        result = api.evaluate("recorded", str(path), judge="scripted", known_answers=4)
    assert len(timing_out.prompts) == 3 and result.run.status == "judge_failed"
