"""Speed of ``report``: 3 runs × 40 questions (target: under 3 s end to end) and 10 runs × 200.

    python -m bench.report [--repeat 5] [--sizes 3x40,10x200] [--text 800]

For each size ``RUNSxQUESTIONS``, writes that many synthetic results files (seeded; every run on the
same questions, each row with 5 retrieved chunks of ``--text`` characters, a grade, a category and a
difficulty; the aggregates, intervals and groups made by ``build_report``, as a run makes them), then
times ``--repeat`` times, after one warm-up:

* ``write_report`` in process (read the files, compare the runs, draw the plots, render and write
  the page): the report's own work;
* ``python benchmark.py report RUN... -o report.html`` end to end (interpreter start, imports, the
  same work, the log file): wall time and the child's CPU time.

Prints the medians, the page's size and the load average (wall time on a shared machine also counts
the time other processes held the CPU; the CPU time does not).
"""

from __future__ import annotations

import argparse
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
STRATEGIES = ("baseline", "modular-no-llm", "modular", "hybrid", "bm25", "dense", "rerank", "hyde", "multi", "plain")


def synthetic_run(path: Path, questions: int, index: int, text: int) -> Path:
    """Run ``index`` of a set: ``questions`` graded rows on the same questions as the other runs."""
    from components.analysis.aggregate import build_report
    from utils.results import CorpusInfo, JudgeInfo, QuestionResult, RetrievedItem, RunInfo

    rng = np.random.default_rng(index + 1)
    filler = ("lorem ipsum dolor sit amet " * (text // 27 + 1))[:text]
    rows = []
    for i in range(questions):
        needle = f"doc{i % 300}"
        docs = [f"doc{int(d)}" for d in rng.integers(0, 300, 5)]
        if rng.random() < 0.85:
            docs[int(rng.integers(0, 5))] = needle
        rank = docs.index(needle) + 1 if needle in docs else None
        retrieved = [RetrievedItem(rank=j, doc_id=d, chunk_id=f"{d}#{j}", score=1.0 / j, title=d,
                                   heading_path=["A", "B"], text=filler) for j, d in enumerate(docs, start=1)]
        rows.append(QuestionResult(
            question_id=f"q{i:04d}", question=f"synthetic question {i}?", expected_answer="an answer",
            needle_doc_id=needle, needle_doc_ids=[needle], rank=rank, llm_grade=int(rng.integers(1, 11)),
            llm_reasoning="the chunks hold part of the answer", retrieved=retrieved,
            extra={"category": ("setup", "config", "errors")[i % 3], "difficulty": ("easy", "medium", "hard")[i % 3]}))
    strategy = STRATEGIES[index % len(STRATEGIES)] + (
        f"-{index // len(STRATEGIES) + 1}" if index >= len(STRATEGIES) else "")
    info = RunInfo(id=f"20261127T000000Z_{strategy}", strategy=strategy, status="completed", k=5,
                   corpus=CorpusInfo(source="builtin:pydoc_data.topics", documents=300, chunks=900, sha256="c" * 64),
                   judge=JudgeInfo(provider="offline", model="lexical-idf-v1"))
    build_report(info, rows).save(path)
    return path


def time_size(runs: int, questions: int, repeat: int, text: int, env: dict[str, str]) -> dict:
    from loguru import logger

    from components.report.page import write_report

    logger.remove()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [synthetic_run(Path(tmp) / f"run{i}.json", questions, i, text) for i in range(runs)]
        out = Path(tmp) / "report.html"
        write_report(paths, out)  # warm-up: the imports, the first file reads
        in_process, wall, cpu = [], [], []
        for _ in range(repeat):
            start = time.perf_counter()
            write_report(paths, out)
            in_process.append(time.perf_counter() - start)
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            start = time.perf_counter()
            subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "report", *map(str, paths), "-o", str(out),
                            "--log-dir", str(Path(tmp) / "logs")], cwd=tmp, env=env, check=True, capture_output=True)
            wall.append(time.perf_counter() - start)
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        size_mb = out.stat().st_size / 1e6
    return {"runs": runs, "questions": questions, "page_mb": round(size_mb, 2),
            "in_process_s": round(statistics.median(in_process), 3), "cli_wall_s": round(statistics.median(wall), 3),
            "cli_cpu_s": round(statistics.median(cpu), 3), "load": round(os.getloadavg()[0], 1)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--sizes", default="3x40,10x200", help="comma-separated RUNSxQUESTIONS (default: %(default)s)")
    p.add_argument("--text", type=int, default=800, help="characters of chunk text per retrieved chunk")
    args = p.parse_args()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    for size in args.sizes.split(","):
        runs, questions = (int(n) for n in size.lower().split("x"))
        r = time_size(runs, questions, args.repeat, args.text, env)
        target = " (target < 3 s)" if (runs, questions) == (3, 40) else ""
        print(f"report of {r['runs']} runs × {r['questions']} questions ({r['page_mb']} MB page), median of "
              f"{args.repeat}: in process {r['in_process_s']}s; CLI end to end {r['cli_wall_s']}s wall / "
              f"{r['cli_cpu_s']}s CPU{target} (load average {r['load']})")
    return 0


if __name__ == "__main__":
    sys.exit(main())
