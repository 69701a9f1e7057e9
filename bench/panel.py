"""The grading phase of a panel of judges (``--judges``) at ``--concurrency N``: three loopback judges
answering in 1 s.

    python -m bench.panel [--questions 200] [--judges 3] [--concurrency 16] [--delay 1.0] [--repeat 3]

Each judge is its own loopback Messages API server (``tests/loopback.py``) answering every grading
call after ``--delay`` seconds with a grade of its own; the panel is read as a panel file's entries
are (``name``, ``provider``, ``model``, ``base_url``, ``api_key_env``), checked at start-up, and the
run's question loop grades ``--questions`` synthetic questions (the built-in questions, cycled, over
the built-in corpus, baseline retrieval) with every judge, ``--concurrency`` calls in flight across
the panel. Measured: the loop's wall time against the ideal, judges × questions × delay / N
(target: wall ≤ 1.15 × ideal), and the most calls in flight.

Prints the medians over the repeats and writes ``bench/out/panel.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import logging
import statistics
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def one(n: int, judges: int, concurrency: int, delay: float) -> dict:
    from loguru import logger

    from components.core import Question, resolve_strategy
    from components.core.chunking import chunk_corpus
    from components.judges.panel import panel_settings, parse_judges
    from components.readers import load_questions
    from components.readers.builtin import builtin_corpus
    from components.run.benchmark_loop import BenchmarkLoop
    from components.run.evaluation import Judging
    from components.run.panel.judges import Panel
    from tests.loopback import LoopbackServer, Reply

    logger.remove()
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    base = load_questions(ROOT / "questions.json").questions
    questions = [Question(f"{q.id}-{i}", q.question, q.expected_answer, q.needle_doc_ids)
                 for i, q in zip(range(n), itertools.cycle(base))]
    chunks = chunk_corpus(builtin_corpus().documents)
    retriever = resolve_strategy("baseline").factory()
    retriever.index(chunks)
    with contextlib.ExitStack() as stack:
        servers = [stack.enter_context(LoopbackServer(default=Reply(text=f'{{"grade": {5 + j}, "reasoning": "r"}}',
                                                                    delay=delay))) for j in range(judges)]
        specs = parse_judges([{"name": f"judge-{j}", "provider": "anthropic", "model": "claude-sonnet-5-5",
                               "base_url": server.url, "api_key_env": "BENCH_JUDGE_KEY"}
                              for j, server in enumerate(servers)])
        settings = panel_settings(specs, {"BENCH_JUDGE_KEY": "bench-key", "BENCHMARK_JUDGE_TIMEOUT": "30"})
        setups = Panel.check(settings)
        judging = Judging.build(settings, setups[0], chunks, chunk_relevance=False, setups=setups)
        loop = BenchmarkLoop(retriever, judging.judge, concurrency=concurrency, judges=Panel.start(judging, "median"))
        start = time.perf_counter()
        rows = loop.run(questions)
        wall = time.perf_counter() - start
        calls = sum(len(s.requests) for s in servers)
    ideal = judges * n * delay / concurrency
    return {"questions": n, "judges": judges, "concurrency": concurrency, "delay_s": delay, "calls": calls,
            "wall_s": round(wall, 3), "ideal_s": round(ideal, 3), "ratio": round(wall / ideal, 4),
            "graded_by_all": sum(r.panel_graded == judges for r in rows), "peak": loop.gate.peak}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--questions", type=int, default=200)
    p.add_argument("--judges", type=int, default=3)
    p.add_argument("--concurrency", type=int, default=16)
    p.add_argument("--delay", type=float, default=1.0)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    runs = [one(args.questions, args.judges, args.concurrency, args.delay) for _ in range(args.repeat)]
    ratios = [r["ratio"] for r in runs]
    r0 = runs[0]
    print(f"panel of {r0['judges']} judges, {r0['questions']} questions at --concurrency {r0['concurrency']}, each "
          f"judge {args.delay:g} s: median wall {statistics.median(r['wall_s'] for r in runs):.2f} s, ideal "
          f"{r0['ideal_s']:.2f} s, ratio median {statistics.median(ratios):.4f} (runs "
          f"{', '.join(f'{x:.4f}' for x in ratios)}; target <= 1.15); peak in flight {max(r['peak'] for r in runs)}; "
          f"{r0['calls']} calls, {r0['graded_by_all']} questions graded by every judge")
    out = ROOT / "bench" / "out" / "panel.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({"runs": runs, "target_ratio": 1.15}, indent=2) + "\n")
    return 0 if statistics.median(ratios) <= 1.15 else 1


if __name__ == "__main__":
    raise SystemExit(main())
