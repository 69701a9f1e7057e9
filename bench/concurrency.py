"""Judge calls in flight at once (``--concurrency N``) against a loopback judge answering in 1 s.

    python -m bench.concurrency [--questions 200] [--concurrency 16] [--delay 1.0] [--sequential 30] [--repeat 3]

For each repeat, in process (the loop of a run, as ``python benchmark.py`` drives it):

1. ``--questions`` questions at ``--concurrency`` N: the loop's wall time against the ideal,
   Σ judge latency / N (target: wall ≤ 1.15 × ideal);
2. ``--sequential`` questions at concurrency 1: wall / Σ judge latency (target ≤ 1.02, as the
   sequential loop measures in ``bench/harness.py``).

Prints the medians over the repeats and writes ``bench/out/concurrency.json``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(n: int, concurrency: int, delay: float) -> dict:
    from bench.loop_inputs import loop_inputs
    from components.judges.providers.anthropic import AnthropicProvider, ProviderConfig
    from components.judges.retrieval_grader import RetrievalGrader
    from components.run.benchmark_loop import BenchmarkLoop
    from tests.loopback import LoopbackServer, Reply

    questions, retriever = loop_inputs(n)
    with LoopbackServer(default=Reply(delay=delay)) as server:
        provider = AnthropicProvider(ProviderConfig(api_key="bench-key", base_url=server.url, timeout=30))
        judge = RetrievalGrader(provider.model(provider.check_model_settings("claude-sonnet-5-5")))
        loop = BenchmarkLoop(retriever, judge, concurrency=concurrency)
        start = time.perf_counter()
        rows = loop.run(questions)
        wall = time.perf_counter() - start
    latency = sum(r.grading_latency_ms for r in rows) / 1000
    ideal = latency / concurrency
    return {"questions": n, "concurrency": concurrency, "wall_s": round(wall, 3), "sum_latency_s": round(latency, 3),
            "ideal_s": round(ideal, 3), "ratio": round(wall / ideal, 4),
            "graded": sum(r.llm_grade is not None for r in rows),
            "peak": loop.gate.peak if loop.gate is not None else 1}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--delay", type=float, default=1.0)
    p.add_argument("--sequential", type=int, default=30, help="questions of the concurrency-1 measurement")
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    wide = [one(args.questions, args.concurrency, args.delay) for _ in range(args.repeat)]
    narrow = [one(args.sequential, 1, args.delay) for _ in range(args.repeat)]
    for label, runs, target in (("concurrency", wide, 1.15), ("sequential", narrow, 1.02)):
        ratios = [r["ratio"] for r in runs]
        r0 = runs[0]
        print(f"{label}: {r0['questions']} questions at {r0['concurrency']}, judge {args.delay:g} s: median wall "
              f"{statistics.median(r['wall_s'] for r in runs):.2f} s, "
              f"ideal {statistics.median(r['ideal_s'] for r in runs):.2f} s,"
              f" ratio median {statistics.median(ratios):.4f} (runs {', '.join(f'{x:.4f}' for x in ratios)}; "
              f"target <= {target}); peak in flight {max(r['peak'] for r in runs)}; graded {r0['graded']}")
    out = ROOT / "bench" / "out" / "concurrency.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"concurrency": wide, "sequential": narrow}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
