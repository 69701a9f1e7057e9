"""--max-cost as a per-call worst-case reservation (components/run/calls/budget.py): reserved before the call,
the unspent part released after, a call that does not fit not made, a budget too small for one call
refused before the first, a reply past its cap priced as reported and learnt; sequential and concurrent
runs, chunk relevance, the query rewriter, --order-check and --judge-repeats all through it."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from components import api
from components.core import Chunk, Question, ScoredChunk
from components.judges.chunk_relevance import LLMRelevanceJudge
from components.judges.providers.scripted import Script, play, reply
from components.judges.retrieval_grader import RetrievalGrader
from components.run.benchmark_loop import BenchmarkLoop
from components.run.calls.budget import Budget, BudgetRefused, check_max_cost
from components.run.estimate import approximate_tokens
from components.run.calls.query_rewriter import QueryRewriter
from tests.conftest import first_questions, run_cli
from tests.loopback_openai import OpenAILoopback, Reply
from tests.test_api import DOCS, QUESTIONS, KeywordRetriever
from tests.test_openai_provider import openai_env
from utils.errors import InputError
from utils.pricing import Price

PRICE = Price(1.0, 10.0)  # $1 / $10 per million input / output tokens
CAP = 1000  # max_tokens: a reply at the cap costs $0.01


def worst(prompt: str, output: int = CAP) -> float:
    return (approximate_tokens(prompt) * PRICE.input_per_mtok + output * PRICE.output_per_mtok) / 1e6


def cost(input_tokens: int, output_tokens: int) -> float:
    return (input_tokens * PRICE.input_per_mtok + output_tokens * PRICE.output_per_mtok) / 1e6


# --------------------------------------------------------------------------- the rule, call by call


def test_a_call_reserves_its_worst_case_and_releases_the_unspent_part():
    budget = Budget(1.0)
    seen = []

    def answer(prompt: str):
        seen.append(budget.reserved)  # while the call is in flight
        return reply('{"grade": 8}', input_tokens=100, output_tokens=150)

    script = Script(answer, output_cap=CAP, price=PRICE)
    budget.complete(script, "p" * 400)
    assert seen == [pytest.approx(worst("p" * 400))]  # 100 tokens of input + 1,000 of output
    assert budget.reserved == 0 and budget.spent == pytest.approx(cost(100, 150)) and budget.calls == 1


def test_a_call_whose_worst_case_does_not_fit_is_not_made_nor_any_after_it():
    script = Script(then=reply('{"grade": 8}', input_tokens=100, output_tokens=150), output_cap=CAP, price=PRICE)
    budget = Budget(0.025)  # each call may cost $0.0101 and costs $0.0016
    for _ in range(10):  # the call after n others is made while 0.0016 × n + 0.0101 ≤ 0.025: n ≤ 9
        budget.complete(script, "p" * 400)
    with pytest.raises(BudgetRefused, match=r"^budget: --max-cost \$0.025 reached \(spent \$0.0160 in 10 calls"):
        budget.complete(script, "p" * 400)
    with pytest.raises(BudgetRefused):
        budget.complete(script, "")  # a smaller call is not made either: the budget is spent
    assert len(script.prompts) == 10 and budget.spent <= 0.025


def test_a_failed_call_costs_nothing_and_frees_its_reservation():
    from components.judges.providers.scripted import fail
    from utils.errors import JudgeError

    budget = Budget(0.02)
    script = Script(fail("overloaded"), output_cap=CAP, price=PRICE)
    with pytest.raises(JudgeError):
        budget.complete(script, "p")
    assert (budget.reserved, budget.spent, budget.calls) == (0, 0, 0)


def test_a_reply_without_usage_counts_at_its_worst_case():
    budget = Budget(1.0)
    budget.complete(Script('{"grade": 8}', output_cap=CAP, price=PRICE), "p" * 40)
    assert budget.spent == pytest.approx(worst("p" * 40))


def test_a_call_waits_for_the_calls_in_flight_when_only_they_are_in_the_way():
    """Budget $0.015: one call's worst case ($0.0101) fits, two do not; the second call waits for the
    first to return ($0.0016 spent), then fits."""
    budget = Budget(0.015)
    release = threading.Event()
    started = threading.Event()

    def slow(prompt: str):
        started.set()
        release.wait(10)
        return reply('{"grade": 8}', input_tokens=100, output_tokens=150)

    first = Script(slow, output_cap=CAP, price=PRICE)
    second = Script(then=reply('{"grade": 8}', input_tokens=100, output_tokens=150), output_cap=CAP, price=PRICE)
    t = threading.Thread(target=budget.complete, args=(first, "p" * 400))
    t.start()
    started.wait(10)
    done = []
    u = threading.Thread(target=lambda: done.append(budget.complete(second, "p" * 400)))
    u.start()
    u.join(0.3)
    assert second.prompts == [] and not done  # waiting: the first call's reservation is in the way
    release.set()
    t.join(10)
    u.join(10)
    assert len(second.prompts) == 1 and budget.spent == pytest.approx(2 * cost(100, 150)) and budget.reserved == 0


def test_a_reply_past_its_cap_is_priced_as_reported_and_becomes_the_worst_case():
    budget = Budget(1.0)
    script = Script(reply("x", input_tokens=100, output_tokens=3000),
                    then=reply("x", input_tokens=100, output_tokens=150), output_cap=CAP, price=PRICE)
    budget.complete(script, "p" * 400)
    assert budget.spent == pytest.approx(cost(100, 3000))  # as reported, not at the cap
    assert budget.overrun_calls == 1 and budget.overrun_usd == pytest.approx(cost(100, 3000) - worst("p" * 400))
    assert budget.worst_case(script, "p" * 400).usd == pytest.approx(worst("p" * 400, 3000))  # learnt
    budget.complete(script, "p" * 400)
    assert budget.overrun_calls == 1 and budget.to_json()["overrun_calls"] == 1


# --------------------------------------------------------------------------- before the first call


def test_a_budget_smaller_than_one_call_is_refused_naming_the_cap_and_the_price():
    script = Script(output_cap=16_000, price=Price(0.75, 4.5))
    with pytest.raises(InputError) as err:
        check_max_cost(0.05, {"judge": script})
    assert "max_tokens 16,000" in str(err.value) and "$4.5 per million output tokens" in str(err.value)
    assert "$0.0720" in str(err.value)
    check_max_cost(0.08, {"judge": script})  # fits
    with pytest.raises(InputError, match="needs the price"):
        check_max_cost(1.0, {"judge": Script(output_cap=16_000)})


def test_the_api_refuses_a_budget_too_small_for_one_call_before_calling():
    with play('{"grade": 8, "reasoning": "ok"}', output_cap=CAP, price=PRICE) as script:
        with pytest.raises(InputError, match=r"cannot pay for one judge call"):
            api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="scripted", max_cost_usd=0.005)
    assert script.prompts == []


# --------------------------------------------------------------------------- every call of a run through it

CHUNK = Chunk("doc", "doc#0", "Doc", (), "text", 0)
CHUNK2 = Chunk("doc", "doc#1", "Doc", (), "more text", 1)


class TwoChunks:
    def index(self, chunks) -> None:
        pass

    def retrieve(self, query: str, k: int):
        return [ScoredChunk(CHUNK, 1.0), ScoredChunk(CHUNK2, 0.5)]


def test_repeats_relevance_order_check_and_the_rewriter_all_reserve_and_spend():
    """Per question: a rewrite, 2 grades, an order check, a relevance rating: 5 calls of 5 clients,
    each priced, each through the one budget; the budget is spent where the next call's worst case no
    longer fits, whichever role that call is."""
    questions = [Question(f"q{i}", f"question {i}", "answer", ("doc",)) for i in range(1, 4)]
    priced = reply('{"grade": 8, "reasoning": "ok"}', input_tokens=100, output_tokens=150)
    scripts = {role: Script(then=priced, output_cap=CAP, price=PRICE) for role in ("grade", "relevance", "rewrite")}
    scripts["relevance"].then = reply("[3, 1]", input_tokens=100, output_tokens=150)
    scripts["rewrite"].then = reply("a better query", input_tokens=100, output_tokens=150)
    loop = BenchmarkLoop(TwoChunks(), RetrievalGrader(scripts["grade"]), k=2,
                         rewriter=QueryRewriter(scripts["rewrite"]),
                         relevance_judge=LLMRelevanceJudge(scripts["relevance"]), repeats=2,
                         order_check=["q1", "q2", "q3"], max_cost_usd=0.03)
    rows = loop.run(questions)
    calls = sum(len(s.prompts) for s in scripts.values())
    assert loop.budget.calls == calls and loop.budget.spent == pytest.approx(calls * cost(100, 150))
    assert loop.budget.spent <= 0.03 < loop.budget.spent + worst("")  # refused only when the next could not fit
    assert loop.budget_exhausted and len(scripts["rewrite"].prompts) == 3 and len(scripts["relevance"].prompts) >= 1
    assert rows[0].chunk_relevance == [3, 1] and rows[0].llm_grade_reversed == 8 and rows[0].llm_grades == [8, 8]
    refused = [e for r in rows for e in (r.grade_error, r.order_check_error, r.chunk_relevance_error) if e]
    assert refused and all(e.startswith("budget: --max-cost $0.03 reached") for e in refused)
    # the run's usage (judge + rewriter) is what the budget spent
    assert loop.judge_usage.cost_usd + loop.rewriter_usage.cost_usd == pytest.approx(loop.budget.spent)


# --------------------------------------------------------------------------- the case, end to end

REASONING_REPLY = Reply(usage={"prompt_tokens": 1000, "completion_tokens": 16_000, "total_tokens": 17_000})
# gpt-5.4-mini: $0.75 / $4.50 per million tokens, sent max_completion_tokens 16,000: a call costs $0.07275


@pytest.mark.parametrize("concurrency", ["1", "16"])
def test_a_reasoning_judge_at_its_cap_never_passes_the_budget(tmp_path: Path, concurrency: str):
    questions = first_questions(12, tmp_path / "q.json")
    out = tmp_path / "r.json"
    with OpenAILoopback(default=REASONING_REPLY) as server:
        done = run_cli("--questions", str(questions), "--strategy", "baseline", "--output", str(out),
                       "--max-cost", "0.5", "--concurrency", concurrency, env=openai_env(server.url, "gpt-5.4-mini"))
        calls = len(server.requests)
    assert done.code == 4, done.stderr[-3000:]
    result = json.loads(out.read_text())
    assert result["run"]["status"] == "budget_exhausted"
    assert result["run"]["cost_usd"] <= 0.5 and result["run"]["budget"]["spent_usd"] <= 0.5
    assert calls == 6  # $0.07275 each, and the 7th's worst case (cap + its prompt) would pass $0.5
    assert result["run"]["budget"]["overrun_calls"] == 0
    assert all(r["grade_error"].startswith("budget: ") for r in result["results"] if r["llm_grade"] is None)


def test_cli_refuses_a_budget_smaller_than_one_call_before_calling(tmp_path: Path, few_questions: Path):
    with OpenAILoopback(default=REASONING_REPLY) as server:
        done = run_cli("--questions", str(few_questions), "--strategy", "baseline", "--output",
                       str(tmp_path / "r.json"), "--max-cost", "0.05", env=openai_env(server.url, "gpt-5.4-mini"))
        assert server.requests == []
    assert done.code == 2, done.stderr[-3000:]
    line = next(x for x in done.stderr.splitlines() if "cannot pay for one judge call" in x)
    assert "max_completion_tokens 16,000" in line and "$4.5 per million output tokens" in line
    assert not (tmp_path / "r.json").exists() and not (tmp_path / "runs").exists()


def test_a_server_past_the_cap_is_priced_as_reported_and_the_overrun_is_bounded(tmp_path: Path):
    """Replies of 20,000 completion tokens against a cap of 16,000: the calls in flight when the first
    such reply comes back were reserved at the cap; later ones reserve 20,000. The overrun is what those
    cost beyond their reservations, at most --concurrency × 4,000 tokens × $4.50/M, and it is reported."""
    questions = first_questions(12, tmp_path / "q.json")
    out = tmp_path / "r.json"
    over = Reply(usage={"prompt_tokens": 1000, "completion_tokens": 20_000, "total_tokens": 21_000}, delay=0.05)
    with OpenAILoopback(default=over) as server:
        done = run_cli("--questions", str(questions), "--strategy", "baseline", "--output", str(out),
                       "--max-cost", "0.5", "--concurrency", "4", env=openai_env(server.url, "gpt-5.4-mini"))
    assert done.code == 4, done.stderr[-3000:]
    run = json.loads(out.read_text())["run"]
    budget = run["budget"]
    assert budget["overrun_calls"] >= 1 and budget["overrun_usd"] > 0
    assert run["cost_usd"] <= 0.5 + 4 * 4000 * 4.5e-6 + 1e-9  # bounded by the calls in flight
    assert "over the max_completion_tokens 16,000 it was sent" in done.stderr
    assert "more than was reserved" in done.stderr


@pytest.mark.parametrize("usage", [{"prompt_tokens": 1000, "completion_tokens": 100_000},
                                   {"prompt_tokens": 1_000_000, "completion_tokens": 100}])
def test_a_server_whose_usage_lies_stops_the_run_and_says_so(tmp_path: Path, usage: dict):
    """A server reporting 100,000 completion tokens (or 1,000,000 prompt tokens) a reply: each such reply
    costs more than --max-cost 0.5 alone. The first one settled past the budget stops the run (exit 4) with
    one plain line naming the server's figures; no call starts after it."""
    questions = first_questions(40, tmp_path / "q.json")
    out = tmp_path / "r.json"
    lie = Reply(usage={**usage, "total_tokens": sum(usage.values())}, delay=0.05)
    with OpenAILoopback(default=lie) as server:
        done = run_cli("--questions", str(questions), "--strategy", "baseline", "--output", str(out),
                       "--max-cost", "0.5", "--concurrency", "16", env=openai_env(server.url, "gpt-5.4-mini"))
        calls = len(server.requests)
    assert done.code == 4, done.stderr[-3000:]
    assert "--max-cost $0.5 passed" in done.stderr and "the server's own usage figures" in done.stderr
    run = json.loads(out.read_text())["run"]
    assert run["status"] == "budget_exhausted" and "passed" in run["budget"]["refused"]
    assert calls <= 16 + 1  # at most the calls already in flight when the first lie settled, never all 40
