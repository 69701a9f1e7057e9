"""Start-up: the offline ``--quick`` run beside another checkout, what it imports, and a judged run.

    python -m bench.startup [--repeat 7] [--base DIR] [--judged] [--questions 100] [--delay 0.2]

1. ``python benchmark.py --strategy modular-no-llm --quick`` with the offline judge and a warm index
   cache (a temporary one, warmed by one run of each checkout first), each run in a fresh process and
   a fresh folder: median wall time, CPU time and peak memory of ``--repeat`` runs. With ``--base DIR``
   (another checkout of the project, e.g. ``git worktree add ../base <commit>``) the two checkouts
   run alternately (A B B A ...), each with its own import path, and the ratio of the medians is
   printed (this checkout's over the base's).
2. The same command under ``python -X importtime``: the heavy modules it imports (scipy, the
   Anthropic and OpenAI SDKs, httpx, matplotlib; wordllama is the hybrid's embedding model, so it is
   listed but expected).
3. ``--judged``: ``python benchmark.py --strategy modular-no-llm`` on ``--questions`` questions (the
   built-in ones, cycled), sequential, against the scripted Anthropic API of ``tests/loopback.py``
   answering every grading call after ``--delay`` seconds: the process's wall time (start-up, the
   model check, indexing from the warm cache and writing the results included) over the sum of the
   judge latencies (questions × delay; target <= 1.10). Beside it, the floor no run of this command
   can go under on this machine: an interpreter's start, the Anthropic SDK's own import, and as many
   bare SDK calls (``client.messages.create`` in a loop, nothing else) to the same server as the run
   makes; the run's own work is its wall time less that floor.

Results also go to ``bench/out/startup.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HEAVY = ("scipy", "anthropic", "openai", "httpx", "httpx2", "matplotlib", "wordllama")
QUICK = ("--strategy", "modular-no-llm", "--quick")


@dataclass(frozen=True)
class Timed:
    wall_s: float
    cpu_s: float
    peak_mb: float
    code: int


def clean_env(root: Path, cache: Path, **extra: str) -> dict[str, str]:
    """The environment of a run of the checkout at ``root``: no judge key (the offline judge), its own
    import path, the index cache under ``cache``."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("ANTHROPIC_", "BENCHMARK_", "OPENAI_", "PYTHON"))}
    env.update(PYTHONPATH=str(root), XDG_CACHE_HOME=str(cache), OPENBLAS_NUM_THREADS="1", **extra)
    return env


def timed(cmd: list[str], env: dict[str, str], cwd: Path, stderr: Path | None = None) -> Timed:
    """Run ``cmd`` once: wall time, CPU time (user + sys) and peak resident memory of that process."""
    err = open(stderr, "w") if stderr else subprocess.DEVNULL  # noqa: SIM115 - closed below
    try:
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
    finally:
        if stderr:
            err.close()
    return Timed(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, proc.returncode)


def quick(root: Path, cache: Path, work: Path, importtime: Path | None = None) -> Timed:
    cwd = Path(tempfile.mkdtemp(dir=work))
    flags = ["-X", "importtime"] if importtime else []
    out = timed([sys.executable, *flags, str(root / "benchmark.py"), *QUICK], clean_env(root, cache), cwd, importtime)
    if out.code != 0:
        raise SystemExit(f"{root}/benchmark.py {' '.join(QUICK)} exited {out.code}")
    return out


def imported(importtime: Path) -> list[str]:
    """The module names an ``-X importtime`` log lists."""
    names = []
    for line in importtime.read_text().splitlines():
        if line.startswith("import time:") and "|" in line and not line.rstrip().endswith("| package"):
            names.append(line.rsplit("|", 1)[1].strip())
    return names


def summary(runs: list[Timed]) -> dict:
    walls = [r.wall_s for r in runs]
    return {"runs": len(runs), "median_s": round(statistics.median(walls), 3), "min_s": round(min(walls), 3),
            "max_s": round(max(walls), 3), "median_cpu_s": round(statistics.median(r.cpu_s for r in runs), 3),
            "median_peak_mb": round(statistics.median(r.peak_mb for r in runs), 1)}


def offline(repeat: int, base: Path | None, work: Path) -> dict:
    roots = {"this": ROOT} | ({"base": base.resolve()} if base else {})
    cache = work / "cache"
    for root in roots.values():  # warm the index cache of each checkout
        quick(root, cache, work)
    runs: dict[str, list[Timed]] = {name: [] for name in roots}
    order = list(roots)
    for i in range(repeat):
        for name in order if i % 2 == 0 else order[::-1]:
            runs[name].append(quick(roots[name], cache, work))
    log = work / "importtime.txt"
    quick(ROOT, cache, work, importtime=log)
    heavy: dict[str, int] = {}
    for name in imported(log):
        if name.split(".")[0] in HEAVY:
            heavy[name.split(".")[0]] = heavy.get(name.split(".")[0], 0) + 1
    out = {name: summary(r) for name, r in runs.items()}
    out["heavy_modules"] = heavy
    if base:
        out["base_root"] = str(base)
        out["ratio"] = round(out["this"]["median_s"] / out["base"]["median_s"], 3)
    return out


def judged(questions: int, delay: float, work: Path) -> dict:
    from tests.loopback import LoopbackServer, Reply

    base = json.loads((ROOT / "questions.json").read_text())
    items = base["questions"] if isinstance(base, dict) else base
    cycled = [dict(q, id=f"{q['id']}-{i}") for i, q in zip(range(questions), itertools.cycle(items))]
    qfile = work / "questions.json"
    qfile.write_text(json.dumps({"questions": cycled} if isinstance(base, dict) else cycled))
    cache = work / "cache"
    cmd = [sys.executable, str(ROOT / "benchmark.py"), "--strategy", "modular-no-llm", "--questions", str(qfile)]
    quick(ROOT, cache, work)  # the index cache warm, as for the offline runs
    with LoopbackServer(default=Reply(delay=delay)) as server:
        env = clean_env(ROOT, cache, ANTHROPIC_API_KEY="bench-key", ANTHROPIC_BASE_URL=server.url)
        cwd = Path(tempfile.mkdtemp(dir=work))
        started = time.time()
        run = timed(cmd + ["--output", str(cwd / "r.json"), "--log-dir", str(cwd / "logs")], env, cwd)
        calls = len(server.requests)
        if run.code != 0:
            raise SystemExit(f"the judged run exited {run.code}")
        doc = json.loads((cwd / "r.json").read_text())
        least = floor(server.url, doc["run"]["judge"]["model"], questions, cache, work)
    rows = doc["results"]
    graded = sum(r.get("llm_grade") is not None for r in rows)
    judge_s = questions * delay
    measured = sum(r.get("grading_latency_ms") or 0 for r in rows) / 1000
    return {"questions": questions, "delay_s": delay, "graded": graded, "grading_calls": calls,
            "wall_s": round(run.wall_s, 3), "cpu_s": round(run.cpu_s, 3), "peak_mb": round(run.peak_mb, 1),
            "sum_judge_s": judge_s, "sum_measured_judge_s": round(measured, 3),
            "ratio": round(run.wall_s / judge_s, 4) if judge_s else None,
            "ratio_measured": round(run.wall_s / measured, 4) if measured else None,
            "phases_s": phases(next((cwd / "logs").glob("*.log")), started, run.wall_s, questions),
            "floor": least | {"floor_ratio": round(least["floor_s"] / judge_s, 4) if judge_s else None,
                              "own_work_s": round(run.wall_s - least["floor_s"], 3)}}


FLOOR_SCRIPT = """
import statistics, sys, time
start = time.perf_counter()
import anthropic
imported = time.perf_counter() - start
client = anthropic.Anthropic(api_key="bench-key", base_url=sys.argv[1], max_retries=0)
times = []
for _ in range(int(sys.argv[3])):
    start = time.perf_counter()
    client.messages.create(model=sys.argv[2], max_tokens=1024, messages=[{"role": "user", "content": "word " * 1500}])
    times.append(time.perf_counter() - start)
print(imported, statistics.median(times))
"""


def floor(url: str, model: str, questions: int, cache: Path, work: Path, repeat: int = 3, calls: int = 20) -> dict:
    """What a judged run of ``questions`` calls cannot go under here: an interpreter's start (median of
    ``repeat`` ``python -c pass``), the SDK's import and one bare SDK call to the server at ``url``
    (medians of ``repeat`` processes making ``calls`` calls each), the calls counted ``questions`` times."""
    env = clean_env(ROOT, cache)
    start = statistics.median(timed([sys.executable, "-c", "pass"], env, work).wall_s for _ in range(repeat))
    imports, calls_s = [], []
    for _ in range(repeat):
        out = subprocess.run([sys.executable, "-c", FLOOR_SCRIPT, url, model, str(calls)], env=env, cwd=work,
                             capture_output=True, text=True, check=True).stdout.split()
        imports.append(float(out[0]))
        calls_s.append(float(out[1]))
    sdk, call = statistics.median(imports), statistics.median(calls_s)
    total = start + sdk + questions * call
    return {"interpreter_s": round(start, 3), "sdk_import_s": round(sdk, 3), "bare_call_ms": round(call * 1000, 2),
            "floor_s": round(total, 3)}


def phases(log: Path, started: float, wall: float, questions: int) -> dict[str, float]:
    """Where the judged run's wall time went, from the log file's timestamps: start-up (to the log's
    first line: the interpreter and the command line's imports), the judge and the index (to the
    first question's line: the SDK's import, the model check, the index cache), the questions (to the
    last question's line) and the end (aggregates, results written, exit)."""
    marks: dict[str, float] = {}
    for line in log.read_text().splitlines():
        at = line[:23]
        if len(at) < 23 or not at[:4].isdigit():
            continue
        t = datetime.strptime(at, "%Y-%m-%d %H:%M:%S.%f").timestamp()
        marks.setdefault("header", t)
        if "| [1/" in line and "R" in line.split("| [1/", 1)[1][:12]:
            marks.setdefault("first", t)
        if f"| [{questions}/{questions}] R" in line:
            marks["last"] = t
    end = started + wall
    if not {"header", "first", "last"} <= marks.keys():
        return {}
    return {"to_log_header": round(marks["header"] - started, 3), "judge_and_index_to_question_1": round(
        marks["first"] - marks["header"], 3), "questions_2_to_last": round(marks["last"] - marks["first"], 3),
        "after_last_question": round(end - marks["last"], 3)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=7)
    p.add_argument("--base", type=Path, help="another checkout of the project to run alternately with this one")
    p.add_argument("--judged", action="store_true", help="also time a sequential judged run against a loopback judge")
    p.add_argument("--no-offline", action="store_true", help="skip the offline --quick runs")
    p.add_argument("--questions", type=int, default=100)
    p.add_argument("--delay", type=float, default=0.2)
    args = p.parse_args()
    report: dict = {"load_average_before": round(os.getloadavg()[0], 2)}
    with tempfile.TemporaryDirectory() as tmp:
        if not args.no_offline:
            report["offline_quick"] = res = offline(args.repeat, args.base, Path(tmp))
            for name in ("this", "base"):
                if name in res:
                    r = res[name]
                    print(f"offline --quick, {name}: median {r['median_s']}s of {r['runs']} (min {r['min_s']}, max "
                          f"{r['max_s']}); CPU {r['median_cpu_s']}s; peak memory {r['median_peak_mb']} MB")
            if "ratio" in res:
                print(f"ratio this / base: {res['ratio']} (target <= 0.65)")
            print("heavy modules imported (package: modules): "
                  + (", ".join(f"{k}: {n}" for k, n in sorted(res["heavy_modules"].items())) or "none"))
        if args.judged:
            report["judged"] = j = judged(args.questions, args.delay, Path(tmp))
            print(f"judged run: {j['questions']} questions, judge {j['delay_s'] * 1000:.0f} ms, {j['graded']} graded: "
                  f"wall {j['wall_s']}s (CPU {j['cpu_s']}s) / judge {j['sum_judge_s']}s = {j['ratio']} "
                  f"(target <= 1.10); / the measured grading latencies {j['sum_measured_judge_s']}s = "
                  f"{j['ratio_measured']}; peak memory {j['peak_mb']} MB")
            print(f"  where the time went (s): {j['phases_s']}")
            f = j["floor"]
            print(f"  the floor here: an interpreter {f['interpreter_s']}s + the SDK's import {f['sdk_import_s']}s + "
                  f"{j['questions']} bare SDK calls × {f['bare_call_ms']} ms = {f['floor_s']}s = {f['floor_ratio']} × "
                  f"the judge latencies; the run's own work (wall - floor): {f['own_work_s']}s")
    report["load_average_after"] = round(os.getloadavg()[0], 2)
    out = ROOT / "bench" / "out" / "startup.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(report, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
