"""``--estimate`` and ``--max-cost``'s check: requests built as the run builds them, tokens counted by
the loopback's token-counting endpoint (or approximated), prices by hand, no judge call."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from components.core import Chunk, Question
from components.judges.chunk_relevance import build_relevance_prompt
from components.judges.providers import ModelChoice
from components.judges.providers.anthropic import PRICES, AnthropicProvider, ProviderConfig, choose_settings
from components.judges.retrieval_grader import build_prompt
from components.run import estimate as E
from components.run.calls.query_rewriter import REWRITE_PROMPT
from tests.conftest import SENTINEL_KEY, judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, count_tokens_rule


def chunk(doc: str, i: int, text: str) -> Chunk:
    return Chunk(doc_id=doc, chunk_id=f"{doc}#{i}", title=doc, heading_path=(), text=text, position=i)


CHUNKS = [chunk("a", 0, "alpha text " * 20), chunk("b", 1, "beta text " * 30), chunk("c", 2, "gamma " * 10)]


class Retriever:
    def retrieve(self, query: str, k: int):
        if query == "broken?":
            raise RuntimeError("no index")
        return CHUNKS[:k] if query != "single?" else CHUNKS[:1]


QUESTIONS = [Question("q1", "what is alpha?", "alpha is the first", ("a",)),
             Question("q2", "single?", None, ("b",)),
             Question("q3", "broken?", "x", ("c",))]


def tokens(prompt: str) -> int:
    return count_tokens_rule({"messages": [{"role": "user", "content": prompt}]})


@dataclass
class Setup:
    judge_provider: object
    judge: object
    rewriter_provider: object = None
    rewriter: object = None


def choice(model: str = "claude-sonnet-5-5") -> ModelChoice:
    settings = choose_settings(model, None, source="builtin_table")
    return ModelChoice("anthropic", "judge", model, native=settings)


def test_requests_are_the_runs_prompts():
    wanted = E.requests(Retriever(), QUESTIONS, 3, repeats=2, order_check={"q1", "q2"}, relevance=True, rewrites=True)
    grading = {build_prompt("what is alpha?", "alpha is the first", CHUNKS): 2,
               build_prompt("single?", None, CHUNKS[:1]): 2}
    assert wanted["grading"] == grading  # q3's retrieval fails: no judge call, as in the run
    assert wanted["relevance"] == {build_relevance_prompt("what is alpha?", "alpha is the first", CHUNKS): 1,
                                   build_relevance_prompt("single?", None, CHUNKS[:1]): 1}
    # the order check: only q1 (q2 has one chunk), chunks reversed
    assert wanted["order check"] == {build_prompt("what is alpha?", "alpha is the first", CHUNKS[::-1]): 1}
    assert wanted["rewriter"] == {REWRITE_PROMPT.replace("{question}", q.question): 1 for q in QUESTIONS}


def test_estimate_counts_with_the_token_counting_endpoint_and_prices_by_hand():
    with LoopbackServer() as server:
        provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url=server.url))
        est = E.estimate(Retriever(), QUESTIONS, 3, Setup(provider, choice()), strategy="s", repeats=2,
                         order_check={"q1"})
        assert server.requests == []  # no message was sent
        bodies = server.count_requests
    grading = [build_prompt("what is alpha?", "alpha is the first", CHUNKS), build_prompt("single?", None, CHUNKS[:1])]
    reversed_prompt = build_prompt("what is alpha?", "alpha is the first", CHUNKS[::-1])
    assert len(bodies) == 3  # each distinct prompt counted once (repeats multiply, they are not counted again)
    assert all(b["model"] == "claude-sonnet-5-5" and "max_tokens" not in b
               and b["thinking"] == {"type": "between_tools"} for b in bodies)
    roles = {r.role: r for r in est.roles}
    g = roles["grading"]
    assert g.calls == 4 and g.input_tokens == 2 * sum(tokens(p) for p in grading)
    assert g.output_tokens == 4 * E.ASSUMED_OUTPUT_TOKENS["grading"] and "token counting" in g.counted
    assert g.usd == pytest.approx(g.input_tokens * 2.0 / 1e6 + g.output_tokens * 10.0 / 1e6)  # $2 / $10 per MTok
    assert g.usd_batch == pytest.approx(g.usd / 2)
    o = roles["order check"]
    assert o.calls == 1 and o.input_tokens == tokens(reversed_prompt) and o.usd_batch is None
    assert roles["relevance"].calls == 0 and roles["rewriter"].calls == 0
    assert est.usd == pytest.approx(g.usd + o.usd)
    assert est.usd_batch == pytest.approx(g.usd_batch)  # the order check is not sent with --judge-batch
    table = est.table()
    assert "grading" in table and f"{g.input_tokens:,}" in table and f"{est.usd:.4f}" in table and "—" in table


def test_without_token_counting_the_approximation_is_used():
    with LoopbackServer(token_counting=False) as server:
        provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url=server.url))
        assert provider.count_tokens(choice(), ["abc"]) is None
        est = E.estimate(Retriever(), QUESTIONS[:1], 3, Setup(provider, choice()))
    g = est.roles[0]
    assert g.input_tokens == math.ceil(len(build_prompt("what is alpha?", "alpha is the first", CHUNKS)) / 4)
    assert g.counted.startswith("approximation")


def test_count_tokens_against_the_loopback():
    with LoopbackServer(count_tokens=lambda body: len(body["messages"][0]["content"])) as server:
        provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url=server.url))
        assert provider.count_tokens(choice(), ["abc", "x" * 10]) == [3, 10]


def test_many_prompts_are_counted_on_a_sample_and_scaled(monkeypatch):
    monkeypatch.setattr(E, "COUNT_SAMPLE", 2)

    class Counter:
        seen: list[str] = []

        def count_tokens(self, _choice, prompts):
            self.seen += prompts
            return [len(p) // 2 for p in prompts]  # 1 token per 2 characters

    prompts = {"a" * 10: 1, "b" * 20: 3, "c" * 30: 1, "d" * 40: 1, "e" * 50: 2}
    counter = Counter()
    total, how = E.count_input_tokens(counter, object(), prompts)
    assert len(counter.seen) == 2 and "2 of 5 prompts" in how
    # every prompt at 1 token per 2 characters, whether counted or scaled
    assert total == sum(len(p) // 2 * n for p, n in prompts.items())


def test_the_offline_judge_is_free():
    from components.judges.providers.offline import OfflineProvider

    est = E.estimate(Retriever(), QUESTIONS, 3, Setup(OfflineProvider(None, None), None), relevance=True)
    assert est.free and est.usd == 0.0 and est.usd_batch == 0.0
    assert [(r.calls, r.input_tokens, r.output_tokens) for r in est.roles] == [(0, 0, 0)] * len(E.ROLES)
    assert est.table() == (f"Cost estimate: strategy ?, {len(QUESTIONS)} question(s), judge offline: the offline judge "
                           "makes no calls and costs nothing ($0; it grades here, from the retrieved chunks)\n")


def test_the_offline_judge_with_a_rewriter_counts_only_the_rewriters_calls():
    from components.judges.providers.offline import OfflineProvider

    provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url="http://127.0.0.1:9"))
    provider.count_tokens = lambda _choice, prompts: [100] * len(prompts)  # no call leaves the test
    est = E.estimate(Retriever(), QUESTIONS, 3, Setup(OfflineProvider(None, None), None, provider, choice()),
                     relevance=True, rewrites=True)
    calls = {r.role: r.calls for r in est.roles}
    assert calls == {"grading": 0, "relevance": 0, "order check": 0, "rewriter": 3} and not est.free
    table = est.table()
    assert "rewriter" in table and "  grading: the offline judge makes no calls and costs nothing" in table
    rows = [line.split()[0] for line in table.splitlines()[2:] if line.startswith("  ") and line.split()[1].isdigit()]
    assert rows == ["rewriter", "total"]  # no row for a call never made
    assert f"prices as of {PRICES.as_of}" in table  # the rewriter's price table


def test_over_budget_says_how_far_the_budget_goes():
    est = E.CostEstimate("s", 10, "anthropic", "claude-sonnet-5-5", False, PRICES.as_of,
                         [E.RoleEstimate("grading", 10, 100_000, 1_500, 0.215, 0.1075, "x")])
    assert E.over_budget(est, 0.25) is None
    # $0.2 of $0.215 → floor(10 · 0.2 / 0.215) = 9 questions
    line = E.over_budget(est, 0.2)
    assert "$0.2150" in line and "about 9 of 10 question(s)" in line and "at least $0.22" in line


def test_cli_estimate_sends_no_judge_call_and_writes_nothing(tmp_path: Path, few_questions: Path):
    out = tmp_path / "results.json"
    with LoopbackServer() as server:
        done = run_cli("--questions", str(few_questions), "--strategy", "baseline", "--estimate", "--order-check",
                       "--judge-repeats", "2", "--output", str(out), env=judge_env(server.url))
        assert done.code == 0, done.stderr
        assert server.requests == [] and len(server.count_requests) == 6  # 3 grading + 3 order check prompts
    assert "Cost estimate" in done.stdout and "order check" in done.stdout and "grading" in done.stdout
    assert "     6" in done.stdout  # 3 questions × 2 repeats
    assert not out.exists() and not (tmp_path / "runs").exists()
    assert SENTINEL_KEY not in done.stdout + done.stderr


def test_cli_max_cost_over_the_estimate_warns_then_the_budget_stops_grading(tmp_path: Path, few_questions: Path):
    out = tmp_path / "results.json"
    priced = Reply(text='{"grade": 8, "reasoning": "fine"}', usage={"input_tokens": 1000, "output_tokens": 100})
    # $0.003 a call; the estimate (real prompt sizes) is higher ($0.0193); each call first reserves its worst case
    # (max_tokens 1024 at $10/M plus its prompt: $0.0157 for the first), so $0.016 pays for one
    with LoopbackServer(default=priced) as server:
        done = run_cli("--questions", str(few_questions), "--strategy", "baseline", "--max-cost", "0.016",
                       "--output", str(out), env=judge_env(server.url))
        calls = len(server.requests)
    warnings = [line for line in done.stderr.splitlines() if "the estimated cost of this run" in line]
    assert len(warnings) == 1 and "over --max-cost $0.016" in warnings[0] and "of 3 question(s)" in warnings[0]
    assert "after about 1 of 3 question(s)" in warnings[0]  # the reserve for one call's worst case counted
    first_call = done.stderr.index("[1/3]")
    assert done.stderr.index("the estimated cost of this run") < first_call  # said before the first judge call
    assert done.code == 4 and calls == 1  # then the budget stops grading, as without the estimate
    result = json.loads(out.read_text())
    assert result["run"]["status"] == "budget_exhausted"
    assert [r["llm_grade"] for r in result["results"]] == [8, None, None]


def test_cli_estimate_with_the_offline_judge(tmp_path: Path, few_questions: Path):
    """No token counts for calls that will never be made: one line saying the offline judge is free."""
    done = run_cli("--questions", str(few_questions), "--estimate", "--output", str(tmp_path / "r.json"))
    assert done.code == 0, done.stderr
    assert "the offline judge makes no calls and costs nothing" in done.stdout
    assert "tokens" not in done.stdout and "relevance" not in done.stdout and "grading " not in done.stdout
    assert not (tmp_path / "r.json").exists()


def test_cli_estimate_with_an_openai_compatible_judge(tmp_path: Path, few_questions: Path):
    """No token counting (characters / 4), the openai price table, and no batch API: "—" for $ batch."""
    from tests.loopback_openai import OpenAILoopback
    from tests.test_openai_provider import openai_env

    out = tmp_path / "results.json"
    with OpenAILoopback() as server:
        done = run_cli("--questions", str(few_questions), "--strategy", "baseline", "--estimate", "--order-check",
                       "--output", str(out), env=openai_env(server.url, "gpt-5.4-mini"))
        assert server.requests == []  # no chat completion was asked for
    assert done.code == 0, done.stderr
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines()
            if line.startswith(("  grading", "  order", "  total"))}
    grading = rows["grading"]
    calls, input_tokens, output_tokens = (int(x.replace(",", "")) for x in grading[1:4])
    assert (calls, output_tokens) == (3, 3 * E.ASSUMED_OUTPUT_TOKENS["grading"])
    # gpt-5.4-mini: $0.75 / $4.50 per million input / output tokens
    assert grading[4] == f"{input_tokens * 0.75e-6 + output_tokens * 4.5e-6:.4f}"
    assert grading[5] == "—" and " ".join(grading[6:]) == "approximation (characters / 4)"
    assert rows["order"][6] == "—" and rows["total"][5] == "—"  # no batch API: --judge-batch is not available
    assert "the openai judge has no batch API" in done.stdout and not out.exists()


def test_cli_estimate_of_a_rewriting_strategy_counts_the_rewriter_and_calls_nothing(tmp_path: Path,
                                                                                    few_questions: Path):
    with LoopbackServer() as server:
        done = run_cli("--questions", str(few_questions), "--strategy", "modular", "--estimate",
                       "--output", str(tmp_path / "r.json"), env=judge_env(server.url))
        assert done.code == 0, done.stderr
        assert server.requests == []  # neither the judge nor the query rewriter was called
        models = {b["model"] for b in server.count_requests}
    rows = {line.split()[0]: line.split() for line in done.stdout.splitlines() if line.startswith("  ")}
    assert rows["grading"][1] == "3" and rows["rewriter"][1] == "3"
    assert rows["rewriter"][4] == rows["rewriter"][5]  # the rewriter is not batched: the standard price twice
    assert len(models) == 2  # the judge's and the rewriter's prompts counted with their own models
