"""Wall time of a large ``--judge-batch`` run against the loopback Message Batches API (
item 4: a 10,000-question simulated run should finish in under a minute).

    python -m bench.judge_batch [--questions 10000] [--repeat 3] [--sequential 1000]

Generates a seeded 60-page corpus and ``--questions`` questions (``tests/batch_fixtures.py``), then
runs ``python benchmark.py --strategy baseline --judge-batch --no-text`` end to end against a
loopback server whose batch answers ``in_progress`` once, then ``ended`` with every request
succeeded; ``--repeat`` times, median. ``--sequential N`` also times a sequential run of the first N
questions against the same server (judge answering at once), for the per-question cost of each mode.
What is measured is this process's work (retrieval, request building, one upload, JSONL results,
rows, journal, results file), not the API's processing time, which a real batch adds (most batches
end within an hour).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def _run(args: list[str], env: dict[str, str]) -> float:
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=1800)
    elapsed = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"benchmark.py exited {proc.returncode}:\n{proc.stderr[-3000:]}")
    return elapsed


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=10_000)
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sequential", type=int, default=0, metavar="N",
                   help="also time a sequential run of the first N questions")
    args = p.parse_args()

    from tests.batch_fixtures import make_corpus, make_questions
    from tests.loopback import LoopbackServer

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    with tempfile.TemporaryDirectory() as tmp_name, LoopbackServer(batch_polls=1) as server:
        tmp = Path(tmp_name)
        docs = make_corpus(tmp / "docs")
        make_questions(tmp / "q.json", args.questions, docs)
        env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.url,
                   BENCHMARK_BATCH_POLL_MAX="0.05", XDG_CACHE_HOME=str(tmp / "cache"))
        common = ["--questions", str(tmp / "q.json"), "--corpus", str(tmp / "docs"), "--strategy", "baseline",
                  "--no-text", "--output", str(tmp / "r.json"), "--log-dir", str(tmp / "logs"),
                  "--log-level", "WARNING"]
        _run([*common, "--judge-batch", "--limit", "10"], env)  # warm the index cache and imports
        batch = [_run([*common, "--judge-batch"], env) for _ in range(args.repeat)]
        data = json.loads((tmp / "r.json").read_text())
        assert data["graded_count"] == args.questions, data["graded_count"]  # noqa: S101 - a bench's sanity check
        report = {"questions": args.questions, "repeat": args.repeat, "batch_s": [round(t, 2) for t in batch],
                  "batch_median_s": round(statistics.median(batch), 2),
                  "batch_ms_per_question": round(1000 * statistics.median(batch) / args.questions, 3),
                  "batch_creates": len(server.batch_creates), "cost_usd": data["run"].get("cost_usd")}
        if args.sequential:
            seq = [_run([*common, "--limit", str(args.sequential)], env) for _ in range(args.repeat)]
            report.update(sequential_questions=args.sequential, sequential_median_s=round(statistics.median(seq), 2),
                          sequential_ms_per_question=round(1000 * statistics.median(seq) / args.sequential, 3))
    json.dump(report, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
