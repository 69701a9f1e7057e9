"""Warm start from the index cache: load + index time and end-to-end ``--quick`` wall time.

    python -m bench.cache [--repeat 7] [--corpus DIR] [--questions FILE]

1. Kubernetes corpus, ``modular-no-llm``: ``prepare_index`` in a fresh process, cold (a new cache
   folder: parse, chunk, index, store) and warm (the stored entry): load+chunk s, index s, and
   their sum (target warm <= 0.5 s).
2. ``python benchmark.py --strategy modular-no-llm --quick --corpus … --questions …/needle_questions.json``
   warm, end to end (target <= 1.5 s), and the same on the built-in corpus (target <= 1.0 s); the
   cold runs (``--no-cache``) for comparison.

Medians of ``--repeat`` runs, with min/max and the median CPU time (user + sys of the child): on a
shared VM wall time also counts the time other tenants held the CPU. Everything goes to a
temporary cache folder; results to ``bench/out/cache.json``.
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
K8S = ROOT.parent / "shared" / "datasets" / "kubernetes"

PREPARE = """
import json, sys, time
t = time.perf_counter()
from loguru import logger
logger.remove()
from components.core import resolve_strategy
from components.run.retrieval.index_cache import prepare_index
imports = time.perf_counter() - t
corpus = None if sys.argv[1] == "builtin" else sys.argv[1]
p = prepare_index(corpus, sys.argv[2], resolve_strategy(sys.argv[2]).factory, sys.argv[3])
print(json.dumps({"cache": p.cache, "load_s": p.load_s, "index_s": p.index_s, "save_s": p.save_s,
                  "imports_s": imports, "chunks": len(p.chunks)}))
"""


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    env.setdefault("OPENBLAS_NUM_THREADS", "1")  # what benchmark.py sets for itself
    return env


def _timed(cmd: list[str]) -> tuple[float, float, str]:
    """(wall s, CPU s of the child, stdout)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, env=_env(), capture_output=True, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{proc.stderr[-2000:]}")
    return wall, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime, proc.stdout


def _stats(values: list[float]) -> dict:
    return {"median": round(statistics.median(values), 3), "min": round(min(values), 3),
            "max": round(max(values), 3), "n": len(values)}


def prepare_times(corpus: str, strategy: str, cache: Path, cold: int, warm: int) -> dict:
    rows: dict[str, list[dict]] = {"cold": [], "warm": []}
    for i in range(cold):
        folder = cache / f"cold-{i}"
        rows["cold"].append(json.loads(_timed([sys.executable, "-c", PREPARE, corpus, strategy, str(folder)])[2]))
    warm_folder = cache / "cold-0"
    for _ in range(warm):
        rows["warm"].append(json.loads(_timed([sys.executable, "-c", PREPARE, corpus, strategy, str(warm_folder)])[2]))
    assert all(r["cache"] == "miss" for r in rows["cold"]) and all(r["cache"] == "hit" for r in rows["warm"])
    out = {}
    for phase, runs in rows.items():
        out[phase] = {name: _stats([r[name] for r in runs]) for name in ("load_s", "index_s", "save_s", "imports_s")}
        out[phase]["load_plus_index_s"] = _stats([r["load_s"] + r["index_s"] for r in runs])
    out["chunks"] = rows["warm"][0]["chunks"]
    return out


def quick_times(args: list[str], cache: Path, repeat: int, out: Path) -> dict:
    base = [sys.executable, str(ROOT / "benchmark.py"), "--strategy", "modular-no-llm", "--quick", *args,
            "--output", str(out)]
    result = {}
    for phase, extra in (("cold", ["--no-cache"]), ("warm", ["--cache-dir", str(cache)])):
        if phase == "warm":
            _timed(base + extra)  # fill the cache
        walls, cpus = [], []
        for _ in range(repeat):
            wall, cpu, _ = _timed(base + extra)
            walls.append(wall)
            cpus.append(cpu)
        status = json.loads(out.read_text())["run"]["index"]["cache"]
        assert status == ("off" if phase == "cold" else "hit"), status
        result[phase] = {"wall_s": _stats(walls), "cpu_s": _stats(cpus)}
    return result


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--cold", type=int, default=3, help="cold prepare_index runs")
    p.add_argument("--corpus", type=Path, default=K8S / "docs")
    p.add_argument("--questions", type=Path, default=K8S / "needle_questions.json")
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "cache.json")
    args = p.parse_args()
    report: dict = {"repeat": args.repeat, "loadavg_before": os.getloadavg()}
    with tempfile.TemporaryDirectory(prefix="bench-cache-") as tmp:
        tmp = Path(tmp)
        if args.corpus.is_dir():
            report["k8s_prepare"] = prepare_times(str(args.corpus), "modular-no-llm", tmp / "prep", args.cold,
                                                  args.repeat)
            report["k8s_quick"] = quick_times(["--corpus", str(args.corpus), "--questions", str(args.questions)],
                                              tmp / "quick-k8s", args.repeat, tmp / "r.json")
        else:
            sys.stderr.write(f"skipped the Kubernetes figures: {args.corpus} is absent\n")
        report["builtin_quick"] = quick_times([], tmp / "quick-builtin", args.repeat, tmp / "r.json")
    report["loadavg_after"] = os.getloadavg()

    def line(label: str, s: dict, target: str = "") -> str:
        return f"{label:<52}{s['median']:>8.3f}{s['min']:>8.3f}{s['max']:>8.3f}  {target}\n"

    out = sys.stdout
    out.write(f"{'seconds (median / min / max of ' + str(args.repeat) + ')':<52}{'median':>8}{'min':>8}{'max':>8}\n")
    if "k8s_prepare" in report:
        prep = report["k8s_prepare"]
        out.write(line("k8s modular-no-llm cold load+chunk+index", prep["cold"]["load_plus_index_s"]))
        out.write(line("k8s modular-no-llm cold: storing the entry", prep["cold"]["save_s"]))
        out.write(line("k8s modular-no-llm warm load+index", prep["warm"]["load_plus_index_s"], "target <= 0.5"))
        out.write(line("  of which load (fingerprint + chunks)", prep["warm"]["load_s"]))
        out.write(line("  of which index (bm25s + vectors + WordLlama)", prep["warm"]["index_s"]))
        q = report["k8s_quick"]
        out.write(line("k8s --quick end to end, --no-cache", q["cold"]["wall_s"]))
        out.write(line("k8s --quick end to end, warm", q["warm"]["wall_s"], "target <= 1.5"))
        out.write(line("  CPU (user+sys)", q["warm"]["cpu_s"]))
    q = report["builtin_quick"]
    out.write(line("built-in --quick end to end, --no-cache", q["cold"]["wall_s"]))
    out.write(line("built-in --quick end to end, warm", q["warm"]["wall_s"], "target <= 1.0"))
    out.write(line("  CPU (user+sys)", q["warm"]["cpu_s"]))
    out.write(f"load average before/after: {report['loadavg_before'][0]:.2f} / {report['loadavg_after'][0]:.2f}\n")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(report, indent=2))
    out.write(f"written: {args.json}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
