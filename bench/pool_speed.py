"""``pool`` with the judgment store warm: 2 runs x 1,000 questions x depth 10 (target <= 5 s).

    python -m bench.pool_speed [--repeat 3] [--questions 1000] [--depth 10]

Two results files of ``--questions`` questions with 10 retrieved chunks each (~600 characters of text;
half of each question's chunks shared by the two runs, so ~15,000 distinct pairs), written to a
temporary folder. A first ``pool`` fills a new store (a scripted judge, in process: no network);
then ``python benchmark.py pool A B -o DIR --depth 10 --store STORE`` is timed in a fresh child
process, ``--repeat`` times: wall time of the whole process (start-up included), the imports
``main()`` makes (timed apart: the start-up), and the time ``main()`` then took (the pool's work).
The median CPU time (user + sys) of the child is beside the wall time: on a shared machine the wall
time also counts the time other tenants held the CPU. Each timed pool must make 0 judge calls.
Results to ``bench/out/pool_speed.json``.
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

ROOT = Path(__file__).resolve().parent.parent

CHILD = """
import json, os, sys, time
t = time.perf_counter()
from components.judges.providers.scripted import play
from components.cli import main
import components.cli.pool, components.run.benchmark_run  # what main() imports: timed apart
imports = time.perf_counter() - t
with play(lambda prompt: "[]") as script:
    t = time.perf_counter()
    code = main(sys.argv[1:], {"BENCHMARK_JUDGE": "scripted", "HOME": os.environ["HOME"]})
    inside = time.perf_counter() - t
print(json.dumps({"code": code, "main_s": inside, "imports_s": imports, "calls": len(script.prompts)}))
"""

def _text(q: int, j: int) -> str:
    return (f"Section {j} of document {q}-{j}\n\n" + f"The setting alpha{q}_{j} controls the behaviour of part {j}. "
            * 8)


def write_runs(folder: Path, questions: int, depth: int) -> list[Path]:
    from utils.results import JudgeInfo, QuestionResult, RetrievedItem, RunInfo, RunResult

    paths = []
    for r, offset in (("A", 0), ("B", depth // 2)):
        rows = []
        for q in range(questions):
            docs = [(f"d{q}-{j}", _text(q, j)) for j in range(offset, offset + depth)]
            rows.append(QuestionResult(question_id=f"q{q}", question=f"How is alpha{q} set?",
                                       expected_answer=f"alpha{q}_0 controls it", needle_doc_id=f"d{q}-0",
                                       needle_doc_ids=[f"d{q}-0"],
                                       retrieved=[RetrievedItem(i, d, f"{d}#0", text=t)
                                                  for i, (d, t) in enumerate(docs, start=1)]))
        info = RunInfo(status="completed", strategy=r, id=r, k=depth,
                       judge=JudgeInfo("scripted", "scripted-1", "x", "y"))
        path = folder / f"{r}.json"
        RunResult(run=info, rows=rows, question_count=questions).save(path)
        paths.append(path)
    return paths


def warm(paths: list[Path], folder: Path, depth: int) -> dict:
    from components.judges.providers.scripted import play
    from components.judges.settings import Settings
    from components.pool.pool import PoolRequest, run_pool

    def judge(prompt: str) -> str:
        return json.dumps([1] * prompt.count("[END CHUNK "))

    with play(judge) as script:
        request = PoolRequest(runs=paths, output=folder / "warm", depth=depth, store=folder / "judgments.sqlite")
        summary = run_pool(request, Settings.from_env({"BENCHMARK_JUDGE": "scripted"}), {}).summary
    return {"pairs": summary["pairs"], "calls": len(script.prompts)}


def timed(paths: list[Path], folder: Path, depth: int, i: int) -> dict:
    argv = ["pool", *map(str, paths), "-o", str(folder / f"out{i}"), "--depth", str(depth),
            "--store", str(folder / "judgments.sqlite"), "--log-dir", str(folder / "logs")]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", CHILD, *argv], cwd=ROOT, capture_output=True,
                          text=True, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(folder)})
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if proc.returncode != 0:
        raise SystemExit(f"pool failed: {proc.stderr[-2000:]}")
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    if out["code"] != 0 or out["calls"] != 0:
        raise SystemExit(f"the warm pool exited {out['code']} with {out['calls']} judge calls")
    return {"wall_s": wall, "cpu_s": cpu, "main_s": out["main_s"], "imports_s": out["imports_s"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--questions", type=int, default=1000)
    parser.add_argument("--depth", type=int, default=10)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        paths = write_runs(folder, args.questions, args.depth)
        filled = warm(paths, folder, args.depth)
        times = [timed(paths, folder, args.depth, i) for i in range(args.repeat)]
    result = {"questions": args.questions, "depth": args.depth, **filled,
              "wall_s": statistics.median(t["wall_s"] for t in times),
              "main_s": statistics.median(t["main_s"] for t in times),
              "imports_s": statistics.median(t["imports_s"] for t in times),
              "cpu_s": statistics.median(t["cpu_s"] for t in times),
              "load_average": round(os.getloadavg()[0], 2),
              "wall_s_all": [round(t["wall_s"], 3) for t in times]}
    out = ROOT / "bench" / "out"
    out.mkdir(exist_ok=True)
    (out / "pool_speed.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
