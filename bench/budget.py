"""``--max-cost`` under concurrency: does the spend stay within the budget?

    python -m bench.budget [--questions 400] [--max-cost 0.5] [--delay 0.05] [--concurrency 1,4,16]

In process (the loop of a run, as ``python benchmark.py`` drives it), against a loopback
OpenAI-compatible judge serving ``gpt-5.4-mini`` (a reasoning model: sent ``max_completion_tokens``
16,000; $0.75 / $4.50 per million input / output tokens), ``--questions`` questions of the built-in
set (cycled), BM25, at each ``--concurrency``:

1. replies of **150** completion tokens (a grade and a sentence);
2. replies at the **cap**, 16,000 completion tokens (a model that reasons to the end of its room);
3. replies **past the cap**, 20,000 completion tokens (a server that does not keep to it): the
   overrun, against its bound — the calls in flight when the first such reply came back, each
   4,000 tokens over its reservation.

Each cell: the calls made, what they cost (as the replies reported), the budget, whether the
spend stayed within it (cases 1-2: it must; case 3: within the bound), and the most calls the budget
let be in flight together. Prints a table and writes ``bench/out/budget.json``.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
MODEL, CAP, OUTPUT_PRICE = "gpt-5.4-mini", 16_000, 4.50  # the request shape and price of the openai provider
REPLIES = (("150 tokens", 150), ("at the cap", CAP), ("past the cap", 20_000))


def one(n: int, concurrency: int, completion_tokens: int, max_cost: float, delay: float) -> dict:
    from bench.loop_inputs import loop_inputs
    from components.judges.providers.openai import OpenAIProvider, ProviderConfig
    from components.judges.retrieval_grader import RetrievalGrader
    from components.run.benchmark_loop import BenchmarkLoop
    from tests.loopback_openai import OpenAILoopback, Reply

    questions, retriever = loop_inputs(n)
    usage = {"prompt_tokens": 1000, "completion_tokens": completion_tokens, "total_tokens": 1000 + completion_tokens}
    with OpenAILoopback(default=Reply(usage=usage, delay=delay)) as server:
        provider = OpenAIProvider(ProviderConfig(api_key="bench-key", base_url=server.url, timeout=30))
        judge = RetrievalGrader(provider.model(provider.check_shape("judge", MODEL)))
        loop = BenchmarkLoop(retriever, judge, max_cost_usd=max_cost, concurrency=concurrency)
        start = time.perf_counter()
        rows = loop.run(questions)
        wall = time.perf_counter() - start
        calls = len(server.requests)
    spent = loop.judge_usage.cost_usd or 0.0
    over = max(0, completion_tokens - CAP) * OUTPUT_PRICE / 1e6  # what one reply costs beyond its reservation
    bound = max_cost + (concurrency * over)
    return {"replies": completion_tokens, "concurrency": concurrency, "questions": n, "calls": calls,
            "graded": sum(r.llm_grade is not None for r in rows), "spent_usd": round(spent, 6), "budget_usd": max_cost,
            "within_budget": spent <= max_cost, "bound_usd": round(bound, 6), "within_bound": spent <= bound + 1e-9,
            "overrun_usd": loop.budget.to_json()["overrun_usd"], "overrun_calls": loop.budget.overrun_calls,
            "peak_in_flight": loop.budget.peak, "wall_s": round(wall, 2)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--questions", type=int, default=400)
    p.add_argument("--max-cost", type=float, default=0.5)
    p.add_argument("--delay", type=float, default=0.05, help="seconds the loopback judge takes per call")
    p.add_argument("--concurrency", default="1,4,16")
    args = p.parse_args()
    levels = [int(x) for x in args.concurrency.split(",")]
    cells = [one(args.questions, c, tokens, args.max_cost, args.delay) for _, tokens in REPLIES for c in levels]
    print(f"--max-cost ${args.max_cost:g}, {args.questions} questions, judge {MODEL} (max_completion_tokens {CAP:,}, "
          f"${OUTPUT_PRICE:g}/M output), loopback {args.delay * 1000:g} ms a call")
    print("| replies | --concurrency | calls | spent | spent ≤ budget | overrun (calls) | bound | peak in flight |")
    print("|---|---|---|---|---|---|---|---|")
    for cell in cells:
        label = next(name for name, tokens in REPLIES if tokens == cell["replies"])
        bound = f"${cell['bound_usd']:.4f} ({'within' if cell['within_bound'] else 'PAST'})" \
            if cell["replies"] > CAP else "—"
        print(f"| {cell['replies']:,} ({label}) | {cell['concurrency']} | {cell['calls']} | ${cell['spent_usd']:.4f} | "
              f"{'yes' if cell['within_budget'] else 'no'} | ${cell['overrun_usd']:.4f} ({cell['overrun_calls']}) | "
              f"{bound} | {cell['peak_in_flight']} |")
    out = ROOT / "bench" / "out" / "budget.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"max_cost_usd": args.max_cost, "cells": cells}, indent=2))
    held = all(c["within_budget"] for c in cells if c["replies"] <= CAP) and all(c["within_bound"] for c in cells)
    return 0 if held else 1


if __name__ == "__main__":
    sys.exit(main())
