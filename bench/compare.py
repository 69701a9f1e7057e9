"""Speed of ``compare`` on two 1,000-question runs (target: under 2 s in total).

    python -m bench.compare [--questions 1000] [--repeat 5] [--references] [--text 800]

Writes two synthetic results files (seeded; schema-2 rows: retrieved chunks with repeated documents,
``text`` of ``--text`` characters per chunk, grades, optional ``reference_ranks`` of three systems),
then times, each ``--repeat`` times: ``compare_runs`` in process (files already parsed), load + compare
+ format in process, and ``python benchmark.py compare A B --json OUT`` end to end. Prints medians.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def synthetic_run(n: int, strategy: str, seed: int, references: bool, text: int) -> dict:
    from utils.metrics import RetrievalMetrics as M

    rng = np.random.default_rng(seed)
    rows = []
    filler = ("lorem ipsum dolor sit amet " * (text // 27 + 1))[:text]
    for i in range(n):
        needle = f"doc{i % 300}"
        docs = [f"doc{int(d)}" for d in rng.integers(0, 300, 5)]
        if rng.random() < 0.85:
            docs[int(rng.integers(0, 5))] = needle
        rank = M.calculate_rank(docs, needle)
        grade = int(rng.integers(1, 11))
        row = {"question_id": f"q{i:04d}", "question": f"synthetic question {i}?", "expected_answer": "x",
               "needle_doc_id": needle, "needle_doc_ids": [needle], "needle_found": rank is not None, "rank": rank,
               "hit_at_1": rank == 1, "hit_at_5": rank is not None, "llm_grade": grade, "llm_reasoning": "r",
               "grade_error": None, "total_score": M.calculate_total_score(grade, rank), "latency_ms": 1.0,
               "retrieved": [{"rank": j, "doc_id": d, "chunk_id": f"{d}#{j}", "score": 1.0 / j, "title": d,
                              "heading_path": ["A", "B"], "text": filler} for j, d in enumerate(docs, 1)],
               "category": ["a", "b", "c"][i % 3]}
        row.update(M.row_metrics(docs, [needle], 5))
        if references:
            row["reference_ranks"] = {s: (int(r) if r <= 5 else None)
                                      for s, r in zip(("plm", "enriched", "naive"), rng.integers(1, 8, 3), strict=True)}
        rows.append(row)
    return {"schema_version": 2, "run": {"id": f"bench_{strategy}", "strategy": strategy, "k": 5,
                                         "status": "completed", "corpus": {"sha256": "c" * 64},
                                         "judge": {"provider": "offline", "model": "lexical", "prompt_sha256": "p"}},
            "results": rows}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--references", action="store_true", help="rows carry reference_ranks of three systems")
    p.add_argument("--text", type=int, default=800, help="characters of chunk text per retrieved item")
    args = p.parse_args()

    from components.analysis.compare import compare_runs, format_comparison
    from utils.results import load_run

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    with tempfile.TemporaryDirectory() as tmp:
        a, b, out = Path(tmp) / "a.json", Path(tmp) / "b.json", Path(tmp) / "cmp.json"
        runs = [synthetic_run(args.questions, s, seed, args.references, args.text)
                for s, seed in (("baseline", 1), ("modular-no-llm", 2))]
        for path, run in zip((a, b), runs, strict=True):
            path.write_text(json.dumps(run))
        size_mb = a.stat().st_size / 1e6
        pure, loaded, cli, cli_cpu = [], [], [], []
        for _ in range(args.repeat):
            t = time.perf_counter()
            compare_runs(runs)
            pure.append(time.perf_counter() - t)
            t = time.perf_counter()
            format_comparison(compare_runs([load_run(a), load_run(b)]))
            loaded.append(time.perf_counter() - t)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            t = time.perf_counter()
            subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "compare", str(a), str(b), "--json", str(out)],
                           cwd=tmp, env=env, check=True, capture_output=True)
            cli.append(time.perf_counter() - t)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cli_cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    med = {name: round(statistics.median(v), 3) for name, v in (("compare_runs", pure), ("load+compare+format", loaded),
                                                                 ("cli", cli), ("cli_cpu", cli_cpu))}
    # wall time on a shared VM also counts the time other tenants held the CPU: the load is printed beside it
    print(f"{args.questions} questions × 2 runs ({size_mb:.1f} MB each, references {args.references}), "
          f"median of {args.repeat}: compare_runs {med['compare_runs']}s, load+compare+format "
          f"{med['load+compare+format']}s, CLI end to end {med['cli']}s wall / {med['cli_cpu']}s CPU "
          f"(target < 2 s; load average {os.getloadavg()[0]:.1f})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
