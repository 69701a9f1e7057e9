"""Loop overhead and offline start-up.

    python -m bench.harness [--questions 100] [--delay 0.2] [--repeat 5]

0. The start-up model check (``GET /v1/models/{id}``) against the loopback server: median ms
   (target < 50 ms).
1. 100 questions against a loopback judge answering after 200 ms: the loop's wall time divided
   by the sum of the judge latencies (1.00 = the loop adds nothing; target <= 1.02), in process.
2. ``python benchmark.py --strategy modular-no-llm --quick`` with the offline judge: median wall
   time of ``--repeat`` runs (target <= 1.5 s).
"""

from __future__ import annotations

import argparse
import itertools
import json
import logging
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def loop_overhead(n: int, delay: float) -> dict:
    from loguru import logger

    from components.core import Question, resolve_strategy
    from components.core.chunking import chunk_corpus
    from components.judges.providers.anthropic import AnthropicProvider, ProviderConfig
    from components.judges.retrieval_grader import RetrievalGrader
    from components.readers import load_questions
    from components.readers.builtin import builtin_corpus
    from components.run.benchmark_loop import BenchmarkLoop
    from tests.loopback import LoopbackServer, Reply

    logger.remove()
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    base = load_questions(ROOT / "questions.json").questions
    questions = [Question(f"{q.id}-{i}", q.question, q.expected_answer, q.needle_doc_ids)
                 for i, q in zip(range(n), itertools.cycle(base))]
    retriever = resolve_strategy("modular-no-llm").factory()
    retriever.index(chunk_corpus(builtin_corpus().documents))
    with LoopbackServer(default=Reply(delay=delay)) as server:
        provider = AnthropicProvider(ProviderConfig(api_key="bench-key", base_url=server.url, timeout=30))
        judge_llm = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
        loop = BenchmarkLoop(retriever, RetrievalGrader(judge_llm))
        start = time.perf_counter()
        results = loop.run(questions)
        wall = time.perf_counter() - start
    judge = sum(r.grading_latency_ms for r in results) / 1000
    return {"questions": n, "judge_delay_s": delay, "loop_wall_s": round(wall, 3), "sum_judge_s": round(judge, 3),
            "ratio": round(wall / judge, 4), "graded": sum(r.llm_grade is not None for r in results)}


def startup_check(repeat: int) -> dict:
    """What the start-up model check adds to a keyed run: one ``GET /v1/models/{id}`` through the SDK
    against the loopback server (the SDK itself is imported by any keyed run, so it is not counted),
    then choosing the settings. Median of ``repeat`` checks, each with a fresh provider (client)."""
    import anthropic  # noqa: F401  (imported once, as a keyed run does anyway)
    from loguru import logger

    from components.judges.providers.anthropic import AnthropicProvider, ProviderConfig
    from tests.loopback import LoopbackServer

    logger.remove()
    times = []
    with LoopbackServer() as server:
        for _ in range(repeat):
            start = time.perf_counter()
            provider = AnthropicProvider(ProviderConfig(api_key="bench-key", base_url=server.url))
            provider.check_model_settings("claude-sonnet-5-5")
            times.append(time.perf_counter() - start)
    return {"checks": repeat, "median_ms": round(statistics.median(times) * 1000, 2),
            "max_ms": round(max(times) * 1000, 2)}


def quick_wall(repeat: int) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    times, cpu = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for _ in range(repeat):
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "--strategy", "modular-no-llm", "--quick",
                            "--output", str(Path(tmp) / "r.json")], cwd=ROOT, env=env, check=True,
                           capture_output=True)
            times.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    # CPU time (user + sys, all threads: it can exceed wall time) is given next to wall time, which on
    # a shared VM also counts the time other tenants held the CPU and moves by +-30% from minute to minute.
    return {"runs": repeat, "median_s": round(statistics.median(times), 3), "min_s": round(min(times), 3),
            "max_s": round(max(times), 3), "median_cpu_s": round(statistics.median(cpu), 3)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--delay", type=float, default=0.2)
    p.add_argument("--repeat", type=int, default=5)
    args = p.parse_args()
    check = startup_check(max(args.repeat, 20))
    print(f"start-up model check: median {check['median_ms']} ms of {check['checks']} (max {check['max_ms']} ms; "
          "target < 50 ms)")
    overhead = loop_overhead(args.questions, args.delay)
    print(f"loop: {overhead['questions']} questions, judge {args.delay * 1000:.0f} ms: wall {overhead['loop_wall_s']}s"
          f" / judge {overhead['sum_judge_s']}s = {overhead['ratio']} (target <= 1.02)")
    quick = quick_wall(args.repeat)
    print(f"offline --quick: median {quick['median_s']}s of {quick['runs']} runs "
          f"(min {quick['min_s']}, max {quick['max_s']}; CPU median {quick['median_cpu_s']}s; target <= 1.5 s)")
    out = ROOT / "bench" / "out" / "harness.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"startup_check": check, "loop": overhead, "offline_quick": quick}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
