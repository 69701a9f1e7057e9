"""``compare`` of two 1,000-question runs beside ``ranx.compare`` on the same metrics.

    python -m bench.compare_speed --ranx-python /path/to/venv/bin/python [--questions 1000] [--repeat 7]
        [--stat-test student] [--permutations 1000] [--json]

ranx is not a dependency of the project: install it in a separate virtual environment
(``python -m venv ../ranxvenv && ../ranxvenv/bin/pip install ranx``) and pass its interpreter.

Builds two synthetic runs (:func:`bench.compare.synthetic_run`, seeded: 5 retrieved chunks of 800
characters a row, grades), writes them as results files and, through ``benchmark.py export-run``,
as TREC runs with their qrels (document level). Then, alternately (A B B A ...), each in a fresh
process:

- ours: ``python benchmark.py compare A B`` (with ``--json``: also the comparison as JSON), start-up
  included: the means, paired differences with bootstrap intervals, sign-flip p-values and verdicts
  of hit@1, hit@5, MRR, MRR (document), nDCG@5 and the three grade metrics;
- ranx: ``Qrels.from_file``, ``Run.from_file`` for both runs, ``compare(qrels, runs, metrics=
  ["hit_rate@1", "hit_rate@5", "mrr@5", "ndcg@5"], stat_test=..., n_permutations=...)`` and printing
  the report, start-up included; the call to ``compare`` alone is timed inside the process too.

Prints the medians and the ratios (ranx / ours), and checks once that both sides give the same means
for the four metrics they share. Results also go to ``bench/out/compare_speed.json``.
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

from bench.compare import synthetic_run

ROOT = Path(__file__).resolve().parent.parent
RANX_METRICS = ("hit_rate@1", "hit_rate@5", "mrr@5", "ndcg@5")
OURS = {"hit_rate@1": ("hit_at_1_rate", 0.01), "hit_rate@5": ("hit_at_5_rate", 0.01), "mrr@5": ("mrr_doc", 1.0),
        "ndcg@5": ("ndcg_at_k", 1.0)}  # ranx's name → the means' field in compare --json, and its scale

RANX = """
import json, sys, time
from ranx import Qrels, Run, compare
qrels = Qrels.from_file(sys.argv[1], kind="trec")
runs = [Run.from_file(p, kind="trec") for p in sys.argv[2:4]]
for run, name in zip(runs, ("baseline", "modular-no-llm")):
    run.name = name
start, cpu = time.perf_counter(), time.process_time()
report = compare(qrels, runs, metrics=json.loads(sys.argv[4]), stat_test=sys.argv[5], n_permutations=int(sys.argv[6]),
                 max_p=0.05)
call, call_cpu = time.perf_counter() - start, time.process_time() - cpu
print(report)
scores = {name: {m: float(report.results[name][m]) for m in json.loads(sys.argv[4])} for name in report.results}
print(json.dumps({"compare_call_s": call, "compare_call_cpu_s": call_cpu, "scores": scores}))
"""


def _env(ours: bool = True) -> dict[str, str]:
    """No judge settings, no inherited import path; this checkout on it for ours, nothing for ranx."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_", "OPENAI_", "PYTHON"))}
    if ours:
        env["PYTHONPATH"] = str(ROOT)
    return env


def _timed(cmd: list[str], cwd: Path) -> tuple[float, float, str]:
    """(wall s, CPU s of that process, stdout)."""
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=cwd, env=_env(ours=cmd[0] == sys.executable), stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    out, err = proc.communicate()
    wall = time.perf_counter() - start
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd[:3])}... exited {proc.returncode}: {err[-2000:]}")
    return wall, _last_child_cpu(), out


_cpu_seen = [0.0]


def _last_child_cpu() -> float:
    import resource

    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    total = usage.ru_utime + usage.ru_stime
    cpu, _cpu_seen[0] = total - _cpu_seen[0], total
    return cpu


def prepare(tmp: Path, questions: int) -> dict[str, Path]:
    files = {}
    for name, strategy, seed in (("a", "baseline", 1), ("b", "modular-no-llm", 2)):
        path = tmp / f"{name}.json"
        path.write_text(json.dumps(synthetic_run(questions, strategy, seed, False, 800)))
        files[name] = path
        subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "export-run", str(path), "-o",
                        str(tmp / f"{name}.trec"), "--qrels", str(tmp / f"{name}.qrels"),
                        "--log-dir", str(tmp / "logs")],
                       cwd=tmp, env=_env(), check=True, capture_output=True)
        files[f"{name}.trec"] = tmp / f"{name}.trec"
    files["qrels"] = tmp / "a.qrels"
    _last_child_cpu()
    return files


def same_means(ours_json: Path, ranx_scores: dict) -> list[str]:
    """The shared metrics on which the two sides differ (by more than rounding)."""
    runs = json.loads(ours_json.read_text())["runs"]
    bad = []
    for run, name in zip(runs, ("baseline", "modular-no-llm"), strict=True):
        for metric, (field, scale) in OURS.items():
            if abs(run["means"][field] * scale - ranx_scores[name][metric]) > 1e-9:
                bad.append(f"{name} {metric}: ours {run['means'][field] * scale}, ranx {ranx_scores[name][metric]}")
    return bad


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--ranx-python", type=Path, required=True, help="the interpreter of a venv with ranx installed")
    p.add_argument("--questions", type=int, default=1000)
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--stat-test", default="student", choices=("student", "fisher", "tukey"))
    p.add_argument("--permutations", type=int, default=1000, help="ranx's n_permutations (fisher)")
    p.add_argument("--json", action="store_true", help="ours also writes the comparison as JSON (--json FILE)")
    args = p.parse_args()
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        f = prepare(tmp, args.questions)
        ours_cmd = [sys.executable, str(ROOT / "benchmark.py"), "compare", str(f["a"]), str(f["b"]),
                    "--log-dir", str(tmp / "logs")] + (["--json", str(tmp / "cmp.json")] if args.json else [])
        ranx_cmd = [str(args.ranx_python), "-c", RANX, str(f["qrels"]), str(f["a.trec"]), str(f["b.trec"]),
                    json.dumps(RANX_METRICS), args.stat_test, str(args.permutations)]
        # once each before timing: ranx compiles its numba functions into its cache on the first call
        _timed(ours_cmd + ["--json", str(tmp / "check.json")] if not args.json else ours_cmd, tmp)
        _, _, out = _timed(ranx_cmd, tmp)
        check = json.loads(out.strip().splitlines()[-1])
        differ = same_means(tmp / ("cmp.json" if args.json else "check.json"), check["scores"])
        ours, ranx, calls = [], [], []
        for i in range(args.repeat):
            for side in ("ours", "ranx") if i % 2 == 0 else ("ranx", "ours"):
                if side == "ours":
                    ours.append(_timed(ours_cmd, tmp)[:2])
                else:
                    wall, cpu, out = _timed(ranx_cmd, tmp)
                    ranx.append((wall, cpu))
                    timing = json.loads(out.strip().splitlines()[-1])
                    calls.append((timing["compare_call_s"], timing["compare_call_cpu_s"]))
    med = {name: (statistics.median(w for w, _ in v), statistics.median(c for _, c in v))
           for name, v in (("ours", ours), ("ranx", ranx))}
    call, call_cpu = statistics.median(c for c, _ in calls), statistics.median(c for _, c in calls)
    result = {
        "questions": args.questions, "repeat": args.repeat, "json": args.json, "stat_test": args.stat_test,
        "permutations": args.permutations, "metrics_ranx": list(RANX_METRICS), "means_differ": differ,
        "ours_wall_s": round(med["ours"][0], 3), "ours_cpu_s": round(med["ours"][1], 3),
        "ranx_wall_s": round(med["ranx"][0], 3), "ranx_cpu_s": round(med["ranx"][1], 3),
        "ranx_compare_call_s": round(call, 3), "ranx_compare_call_cpu_s": round(call_cpu, 3),
        "ratio_process": round(med["ranx"][0] / med["ours"][0], 2),
        "ratio_compare_call": round(call / med["ours"][0], 2),
        "ratio_compare_call_cpu": round(call_cpu / med["ours"][1], 2),
        "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
    }
    print(f"{args.questions} questions × 2 runs, median of {args.repeat}, alternating; load average "
          f"{result['load_average'][0]} → {result['load_average'][1]}")
    print(f"  ours  benchmark.py compare{' --json' if args.json else ''}: {result['ours_wall_s']} s wall, "
          f"{result['ours_cpu_s']} s CPU (target <= 1.3 s)")
    print(f"  ranx  process (import, load, compare, print; {args.stat_test}): {result['ranx_wall_s']} s wall, "
          f"{result['ranx_cpu_s']} s CPU; the compare call alone {result['ranx_compare_call_s']} s wall, "
          f"{result['ranx_compare_call_cpu_s']} s CPU")
    print(f"  ratio ranx / ours: {result['ratio_process']} (process), {result['ratio_compare_call']} (ranx's "
          f"compare call alone against our whole process; target >= 1.7); in CPU time "
          f"{result['ratio_compare_call_cpu']}")
    print("  the shared metrics' means: " + ("the same on both sides" if not differ else "; ".join(differ)))
    out_file = ROOT / "bench" / "out" / "compare_speed.json"
    out_file.parent.mkdir(parents=True, exist_ok=True)
    out_file.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
