"""Wall time of ``--estimate`` on 1,000 questions against the loopback API (target: under 5 s).

    python -m bench.estimate [--questions 1000] [--repeat 5] [--order-check]

Generates a seeded 60-page corpus and ``--questions`` questions (``tests/batch_fixtures.py``), then
times ``python benchmark.py --strategy baseline --estimate`` end to end (start-up, the Models API
check, indexing, retrieval of every question, every prompt built, token counting on the loopback
``POST /v1/messages/count_tokens``, the table), ``--repeat`` times after one warm-up run that fills
the index cache; prints each time, the median, and how many token-counting calls were made.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--order-check", action="store_true",
                   help="also estimate the order check (one more prompt per question)")
    args = p.parse_args()

    from tests.batch_fixtures import make_corpus, make_questions
    from tests.loopback import LoopbackServer

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    with tempfile.TemporaryDirectory() as tmp_name, LoopbackServer() as server:
        tmp = Path(tmp_name)
        docs = make_corpus(tmp / "docs")
        make_questions(tmp / "q.json", args.questions, docs)
        env.update(ANTHROPIC_API_KEY="sk-ant-bench", ANTHROPIC_BASE_URL=server.url, XDG_CACHE_HOME=str(tmp / "cache"))
        command = [sys.executable, str(ROOT / "benchmark.py"), "--questions", str(tmp / "q.json"), "--corpus",
                   str(tmp / "docs"), "--strategy", "baseline", "--estimate", "--output", str(tmp / "r.json"),
                   "--log-dir", str(tmp / "logs"), *(["--order-check"] if args.order_check else [])]
        times = []
        for i in range(args.repeat + 1):
            before = len(server.count_requests)
            start = time.perf_counter()
            proc = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
            elapsed = time.perf_counter() - start
            if proc.returncode != 0:
                raise SystemExit(f"benchmark.py exited {proc.returncode}:\n{proc.stderr[-3000:]}")
            counted = len(server.count_requests) - before
            if i == 0:
                print(f"warm-up (index cache filled): {elapsed:.2f} s, {counted} token-counting calls")
                print(proc.stdout)
                continue
            times.append(elapsed)
            print(f"run {i}: {elapsed:.2f} s ({counted} token-counting calls, {len(server.requests)} message calls)")
    print(f"--estimate on {args.questions} questions: median {statistics.median(times):.2f} s over {len(times)} runs "
          f"(min {min(times):.2f}, max {max(times):.2f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
