"""BenchmarkLoop with a scripted retriever and judge: the stop check between steps."""

from __future__ import annotations

from components.core import Chunk, Question, ScoredChunk
from components.judges.chunk_relevance import LLMRelevanceJudge
from components.judges.providers.scripted import Script
from components.judges.retrieval_grader import RetrievalGrader
from components.run.benchmark_loop import BenchmarkLoop

CHUNK = Chunk("doc", "doc#0", "Doc", (), "text", 0)


class Retriever:
    def __init__(self, on_call=lambda n: None) -> None:
        self.calls = 0
        self.on_call = on_call

    def index(self, chunks) -> None:
        pass

    def retrieve(self, query: str, k: int) -> list[ScoredChunk]:
        self.calls += 1
        self.on_call(self.calls)
        return [ScoredChunk(CHUNK, 1.0)]


def judge() -> RetrievalGrader:
    """The run's grader over a scripted model that grades every question 8 (``.llm.prompts``: what it was sent)."""
    return RetrievalGrader(Script(then='{"grade": 8, "reasoning": "ok"}'))


def graded(grader: RetrievalGrader) -> list[str]:
    """The questions ``grader`` was asked to grade, in order (read from the prompts its model was sent)."""
    return [next(q.question for q in QUESTIONS if f"{q.question}\n" in prompt) for prompt in grader.llm.prompts]


QUESTIONS = [Question(f"q{i}", f"question {i}", "answer", ("doc",)) for i in range(1, 5)]


def test_runs_every_question_when_never_told_to_stop():
    grader = judge()
    results = BenchmarkLoop(Retriever(), grader).run(QUESTIONS)
    assert [r.question_id for r in results] == ["q1", "q2", "q3", "q4"]
    assert graded(grader) == ["question 1", "question 2", "question 3", "question 4"]
    assert [r.total_score for r in results] == [8.0] * 4


def test_a_stop_during_retrieval_abandons_that_question_before_the_judge():
    """What happens when an extension swallows the KeyboardInterrupt of a signal that arrives while
    question 3 is being retrieved: the signal handler's flag is still seen."""
    stop = []
    retriever = Retriever(on_call=lambda n: stop.append(True) if n == 3 else None)
    grader = judge()
    loop = BenchmarkLoop(retriever, grader, should_stop=lambda: bool(stop))
    results = loop.run(QUESTIONS)
    assert [r.question_id for r in results] == ["q1", "q2"]
    assert graded(grader) == ["question 1", "question 2"]
    assert retriever.calls == 3
    assert loop.results is results


def test_a_stop_requested_before_the_run_runs_nothing():
    retriever, grader = Retriever(), judge()
    assert BenchmarkLoop(retriever, grader, should_stop=lambda: True).run(QUESTIONS) == []
    assert retriever.calls == 0 and grader.llm.prompts == []


def test_a_relevance_call_admitted_after_the_breaker_opened_is_not_made():
    """In a concurrent run a relevance call may wait for its slot while other calls open the circuit
    breaker: once admitted it is not made, as a sequential run would not make it."""
    from components.run.calls.concurrency import Gate

    script = Script(then='{"chunks": [{"chunk": 1, "relevance": 2}]}')
    loop = BenchmarkLoop(Retriever(), judge(), relevance_judge=LLMRelevanceJudge(script), concurrency=2)
    loop.gate = Gate(2)
    assert loop._rate(QUESTIONS[0], [CHUNK]) is not None and len(script.prompts) == 1  # all is well: called
    loop.rate_limited = "rate_limit: not graded: the judge answered rate_limit 3 times in a row"
    assert loop._rate(QUESTIONS[1], [CHUNK]) is None and len(script.prompts) == 1  # the breaker is open: not called
    assert loop.gate.in_flight == 0


def test_the_budget_is_checked_again_when_the_gate_admits_a_grading_call():
    """``--max-cost`` with calls in flight: what other calls spent while this one waited for its slot
    counts before it is made (budget $2; the call's worst case is max_tokens 100 at $10,000 per million
    output tokens = $1 plus its input; spent $0.10: it fits; spent $1.90 by the time the gate admits
    it: it does not)."""
    from components.run.calls.concurrency import Gate
    from utils.pricing import Price

    script = Script('{"grade": 8}', output_cap=100, price=Price(0.0, 10_000.0))
    loop = BenchmarkLoop(Retriever(), RetrievalGrader(script), max_cost_usd=2.0, concurrency=2)
    loop.budget.spent, loop.budget.calls = 0.1, 1

    class SpentWhileWaiting(Gate):
        def acquire(self) -> None:
            loop.budget.spent = 1.9
            super().acquire()

    loop.gate = SpentWhileWaiting(2)
    result = loop._grade_once(QUESTIONS[0], [CHUNK])
    assert script.prompts == [] and result.grade is None
    assert result.error == ("budget: --max-cost $2 reached (spent $1.9000 in 1 calls; the next call may cost up to "
                            "$1.0000)")
    assert loop.budget_exhausted and loop.gate.in_flight == 0
