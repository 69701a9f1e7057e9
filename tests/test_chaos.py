"""A bounded chaos test: :data:`RUNS` runs of ``benchmark.py --strategy
baseline`` on the built-in corpus with 3-6 questions and a loopback judge, each with one random
fault drawn from a seeded generator:

* a signal (SIGINT, SIGTERM or SIGHUP) at a random moment: half of them a random time after
  start (start-up included), half a random time after the console reported a random question (the
  loop, the retry pass and the final write);
* a judge fault: a 5xx burst, attempts that time out, a 401 from some call on, a garbage body, a
  rate limit with ``retry-after: 3600`` from some call on (the circuit breaker ends the run);
* a crashing plug-in retriever (an exception, ``sys.exit``, ``os._exit``, a segfault, a bare
  KeyboardInterrupt, a malformed return, a failing factory or ``index()``);
* a full disk: the output folder on a small tmpfs (root only; otherwise that fault is not drawn).

Each run draws, apart, its ``--concurrency`` (1, 1 or 3: the invariant holds with judge calls in
flight too) and a command run afterwards (``compare`` or ``report`` on its results, ``validate`` or
``export-dataset`` on its questions, or none), with a signal at a random moment or its output on a
full disk.

After each run the invariant must hold:

1. every question the console reported as done (its ``[i/n]`` line on stderr) is in the results
   (the ``--output`` file or the run's file under ``runs/``) or in the journal, with the grade the
   console showed;
2. an earlier results file is byte-identical or a valid newer results file (strict JSON);
3. no temp file (``.*.tmp``) is left;
4. a process that ended by itself did so with a documented exit code, without a traceback on the
   console, and, when it left a journal, its console names it;
5. the command run afterwards leaves its input files (results, questions) byte-identical, no temp
   file, and ends with a documented exit code and no traceback.

``CHAOS_SEED`` and ``CHAOS_RUNS`` override the seed and the number of runs, ``CHAOS_ONLY=3,17``
replays those runs (a failure's message names the seed and each failing run's plan). Two runs at a time; about two
minutes on two cores.
"""

from __future__ import annotations

import json
import os
import random
import re
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.conftest import ROOT, judge_env, mount_tmpfs, unmount
from tests.loopback import LoopbackServer, Reply, error

SEED = int(os.environ.get("CHAOS_SEED", "12"))
RUNS = int(os.environ.get("CHAOS_RUNS", "100"))
ONLY = {int(i) for i in os.environ.get("CHAOS_ONLY", "").split(",") if i.strip()}  # replay these runs
WORKERS = 2
RUN_TIMEOUT = 60  # seconds: a run that takes longer is a failure (a hang)
DOCUMENTED_EXITS = {0, 2, 3, 4, 5, 8, 130}
QUESTIONS = json.loads((ROOT / "questions.json").read_text())["questions"]
DONE_LINE = re.compile(r"\| \[(\d+)/(\d+)\] R\S* \S \| G(\d+|-)")
OK_TEXT = '{"grade": 7, "reasoning": "chaos ok"}'

PLUGIN = '''
import ctypes, os, sys
from poc.bm25 import BM25Retriever
from poc.retriever import ScoredChunk

KIND, AT = os.environ["CHAOS_PLUGIN"], int(os.environ["CHAOS_AT"])


def _recurse(n):
    return _recurse(n + 1) + 1


class R:
    calls = 0

    def __init__(self):
        self.inner = BM25Retriever()

    def index(self, chunks):
        if KIND == "index-raises":
            raise OSError("index file is corrupt")
        self.inner.index(chunks)

    def retrieve(self, query, k):
        self.calls += 1
        hits = self.inner.retrieve(query, k)
        if KIND == "string-scores":
            return [ScoredChunk(h.chunk, f"{h.score:.3f}") for h in hits]
        if self.calls != AT:
            return hits
        if KIND == "raise":
            raise RuntimeError("plug-in bug")
        if KIND == "sys-exit":
            sys.exit(2)
        if KIND == "os-exit":
            os._exit(9)
        if KIND == "segfault":
            ctypes.string_at(0)
        if KIND == "keyboard-interrupt":
            raise KeyboardInterrupt
        if KIND == "memory-error":
            raise MemoryError
        if KIND == "recursion":
            return _recurse(0)
        if KIND == "bad-return":
            return object()
        return hits


def make():
    if KIND == "factory-raises":
        raise ImportError("missing dependency")
    return R()
'''
PLUGIN_KINDS = ("raise", "sys-exit", "os-exit", "segfault", "keyboard-interrupt", "memory-error", "recursion",
                "bad-return", "string-scores", "index-raises", "factory-raises")
JUDGE_KINDS = ("5xx-burst", "timeout", "401", "garbage", "rate-limit")
COMMANDS = (None, "compare", "report", "validate", "export-dataset")
GARBAGE = (b"<html>502 Bad Gateway</html>", b'{"content": [{"type": "text", "text": "unterminated',
           b"[" * 5000 + b"]" * 5000, b'{"content": 1e999}', b"\xff\xfe\x00garbage")


def can_mount_tmpfs(folder: Path) -> bool:
    folder.mkdir()
    if mount_tmpfs(folder, "64k") is not None:
        return False
    unmount(folder)
    return True


@dataclass
class Plan:
    """One run: its questions, judge pace and the one fault injected."""

    index: int
    n: int  # questions
    delay: float  # the judge's answer time
    earlier: bool  # an earlier results file at --output
    fault: str  # signal | judge | plugin | disk
    kind: str  # which signal / judge fault / plug-in crash; the disk size for "disk"
    at: float  # seconds after start or after a line (signal), request number (judge), retrieve() call (plug-in)
    extra: dict = field(default_factory=dict)

    concurrency: int = 1
    command: str | None = None  # compare | report (on the results) | validate | export-dataset, run afterwards
    command_fault: str = ""  # signal | disk
    command_at: float = 0.0  # seconds after the command's start (signal)

    def __str__(self) -> str:
        where = f" after line {self.extra['after_line']}" if self.extra.get("after_line") else ""
        then = f"; then {self.command} with {self.command_fault} at {self.command_at:g}" if self.command else ""
        return (f"run {self.index}: {self.fault}={self.kind} at {self.at:g}{where}, {self.n} questions, judge "
                f"delay {self.delay:.2f}s, earlier file {'yes' if self.earlier else 'no'}, concurrency "
                f"{self.concurrency}{then}")


def make_plans(rng: random.Random, runs: int, disk: bool) -> list[Plan]:
    faults = ["signal", "judge", "plugin"] + (["disk"] if disk else [])
    plans = []
    for i in range(runs):
        n = rng.randint(3, 6)
        fault = rng.choice(faults)
        plan = Plan(i, n, rng.uniform(0.0, 0.25), rng.random() < 0.6, fault, "", 0.0)
        if fault == "signal":
            plan.kind = rng.choice(["SIGINT", "SIGTERM", "SIGHUP"])
            after = rng.choice([0, rng.randint(1, n)])  # 0: from the start
            plan.extra = {"after_line": after}
            plan.at = round(rng.uniform(0.0, 2 * plan.delay + 0.1) if after else
                            rng.uniform(0.05, 1.5 + n * plan.delay + 0.5), 3)
        elif fault == "judge":
            plan.kind = rng.choice(JUDGE_KINDS)
            plan.at = rng.randint(0, n - 1)
            plan.extra = {"burst": rng.randint(1, 4), "status": rng.choice([500, 502, 503, 529]),
                          "garbage": rng.randrange(len(GARBAGE))}
        elif fault == "plugin":
            plan.kind = rng.choice(PLUGIN_KINDS)
            plan.at = rng.randint(1, n)
        else:
            plan.kind = "tmpfs"
            plan.at = rng.choice([8, 16, 32, 48, 64, 96, 128, 192, 256])  # KiB
        apart = random.Random(f"{SEED}:{i}")  # drawn apart: the faults above stay those of the seed
        plan.concurrency = apart.choice([1, 1, 3])
        plan.command = apart.choice(COMMANDS)
        plan.command_fault = apart.choice(["signal"] + (["disk"] if disk else []))
        plan.command_at = round(apart.uniform(0.25, 2.5), 3)  # from 0.25 s: before that, Python itself starts
        plans.append(plan)
    return plans


def judge_script(plan: Plan):
    ok = Reply(text=OK_TEXT, delay=plan.delay)
    if plan.fault != "judge":
        return lambda n, body: ok
    first, burst = int(plan.at), plan.extra["burst"]

    def script(n: int, body: dict) -> Reply:
        if plan.kind == "401":
            return error(401, "authentication_error", "invalid x-api-key") if n >= first else ok
        if plan.kind == "rate-limit":
            return error(429, "rate_limit_error", "slow down", **{"retry-after": "3600"}) if n >= first else ok
        if not first <= n < first + burst:
            return ok
        if plan.kind == "5xx-burst":
            return error(plan.extra["status"], "api_error", "scripted", **{"retry-after-ms": "10"})
        if plan.kind == "timeout":
            return Reply(text=OK_TEXT, delay=1.0)
        return Reply(raw_body=GARBAGE[plan.extra["garbage"]])

    return script


@dataclass
class Outcome:
    plan: Plan
    code: int | None  # None: did not end within RUN_TIMEOUT
    stderr: str
    violations: list[str]
    wall: float


def earlier_results(folder: Path) -> bytes:
    """A valid results file from a quick offline run: what --output holds before a run."""
    questions = folder / "q.json"
    questions.write_text(json.dumps({"questions": QUESTIONS[:2]}))
    out = folder / "earlier.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
    subprocess.run([sys.executable, str(ROOT / "benchmark.py"), "--strategy", "baseline", "--questions",
                    str(questions), "--output", str(out), "--log-dir", str(folder / "logs")], cwd=ROOT, env=env,
                   capture_output=True, check=True, timeout=120)
    return out.read_bytes()


def reported(stderr: str, questions: list[dict]) -> dict[str, int | None]:
    """{question id: the grade its last ``[i/n]`` console line showed (None: not graded)}."""
    done: dict[str, int | None] = {}
    for m in DONE_LINE.finditer(stderr):
        done[questions[int(m.group(1)) - 1]["id"]] = None if m.group(3) == "-" else int(m.group(3))
    return done


def strict_load(path: Path) -> dict:
    def refuse(name: str):
        raise ValueError(f"{name} in {path}")

    return json.loads(path.read_bytes().decode("utf-8"), parse_constant=refuse)


def journal_rows(path: Path) -> dict[str, dict]:
    rows: dict[str, dict] = {}
    lines = path.read_text(encoding="utf-8").splitlines()
    for line in lines[1:]:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        rows[row["question_id"]] = row
    return rows


STARTUP_FAILURE = "Fatal Python error: init_import_site"  # what CPython prints for it


def check(plan: Plan, out: Path, earlier: bytes | None, code: int | None, stderr: str,
          questions: list[dict]) -> list[str]:
    problems = []
    folder = out.parent
    if code is None:
        return [f"did not end within {RUN_TIMEOUT}s"]
    if plan.fault == "signal" and STARTUP_FAILURE in stderr:
        # the signal came while the interpreter itself was starting (its site module), before a line
        # of benchmark.py ran: no program can handle it, and nothing was written (a loaded machine)
        unchanged = earlier is None or (out.exists() and out.read_bytes() == earlier)
        return [] if unchanged else ["--output changed before the program ran"]
    kept, journals = _kept(out, earlier, problems)
    for qid, grade in reported(stderr, questions).items():
        rows = [k[qid] for k in kept if qid in k]
        if not rows:
            problems.append(f"{qid} was reported done but is in no results file and no journal")
        elif grade is not None and all(r.get("llm_grade") != grade for r in rows):
            problems.append(f"{qid} was reported graded {grade} but is kept as {[r.get('llm_grade') for r in rows]}")
    temps = [str(p.relative_to(folder)) for p in folder.rglob(".*.tmp")]
    if temps:
        problems.append(f"temp files left: {temps}")
    problems += _ending_problems(plan, code, stderr, journals)
    if code == 0 and not kept:
        problems.append("exit 0 but no results written")
    return problems


def _kept(out: Path, earlier: bytes | None, problems: list[str]) -> tuple[list[dict[str, dict]], list[Path]]:
    """Every place rows survive (a newer --output, the results files and the journals under runs/),
    as question id → row each, and the journals; what is wrong with them goes into ``problems``."""
    kept: list[dict[str, dict]] = []
    if out.exists() and (earlier is None or out.read_bytes() != earlier):
        try:
            data = strict_load(out)
            assert isinstance(data.get("run"), dict) and isinstance(data.get("results"), list)
            kept.append({r["question_id"]: r for r in data["results"]})
        except (ValueError, AssertionError, KeyError, TypeError) as err:
            problems.append(f"--output is neither the earlier file nor a valid newer results file ({err!r})")
    elif earlier is not None and not out.exists():
        problems.append("the earlier results file is gone")
    runs = out.parent / "runs"
    for path in sorted(runs.glob("*.json")) if runs.is_dir() else []:
        try:
            kept.append({r["question_id"]: r for r in strict_load(path)["results"]})
        except (ValueError, KeyError, TypeError) as err:
            problems.append(f"{path.name} is not a valid results file ({err!r})")
    journals = sorted(runs.glob("*.journal.jsonl")) if runs.is_dir() else []
    kept += [journal_rows(path) for path in journals]
    return kept, journals


def _ending_problems(plan: Plan, code: int, stderr: str, journals: list[Path]) -> list[str]:
    """What is wrong with how a run that ended by itself ended: its exit code, a traceback, a journal unnamed."""
    if code < 0 or (plan.fault == "plugin" and plan.kind == "os-exit"):
        return []
    problems = []
    if code not in DOCUMENTED_EXITS:
        problems.append(f"exit code {code} is not a documented one")
    if "Traceback" in stderr:
        problems.append("a traceback on the console")
    problems += [f"the journal {path.name} is left but the console does not name it"
                 for path in journals if str(path) not in stderr]
    return problems


def execute(plan: Plan, root: Path, earlier_bytes: bytes, plugin_dir: Path) -> Outcome:
    folder = root / f"run{plan.index:03d}"
    folder.mkdir()
    questions = QUESTIONS[:plan.n]
    qfile = folder / "q.json"
    qfile.write_text(json.dumps({"questions": questions}))
    mounted = None
    out_dir = folder / "out"
    out_dir.mkdir()
    if plan.fault == "disk":
        why_not = mount_tmpfs(out_dir, f"{int(plan.at)}k")
        if why_not is not None:
            raise RuntimeError(why_not)
        mounted = out_dir
    try:
        out = out_dir / "r.json"
        earlier = None
        if plan.earlier:
            try:
                out.write_bytes(earlier_bytes)
                earlier = earlier_bytes
            except OSError:  # a tmpfs too small to hold it
                out.unlink(missing_ok=True)
        strategy = "baseline"
        with LoopbackServer(judge_script(plan)) as srv:
            env = judge_env(srv.url, BENCHMARK_JUDGE_TIMEOUT="0.3", BENCHMARK_RETRY_WAIT_MAX="0")
            if plan.fault == "plugin":
                env.update(PYTHONPATH=str(plugin_dir), CHAOS_PLUGIN=plan.kind, CHAOS_AT=str(int(plan.at)))
                strategy = "chaosplug:make"
            start = time.monotonic()
            proc = subprocess.Popen(
                [sys.executable, str(ROOT / "benchmark.py"), "--strategy", strategy, "--questions", str(qfile),
                 "--output", str(out), "--log-dir", str(folder / "logs"), "--concurrency", str(plan.concurrency)],
                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
            lines: list[str] = []
            marker = f"| [{plan.extra.get('after_line')}/{plan.n}] R"
            seen = threading.Event()

            def read() -> None:
                for line in proc.stderr:
                    lines.append(line)
                    if marker in line:
                        seen.set()
                seen.set()  # the end of the output: no such line will come

            reader = threading.Thread(target=read, daemon=True)
            reader.start()
            if plan.fault == "signal":
                if plan.extra["after_line"]:
                    seen.wait(timeout=RUN_TIMEOUT)
                try:
                    proc.wait(timeout=plan.at)
                except subprocess.TimeoutExpired:
                    proc.send_signal(getattr(signal, plan.kind))
            try:
                code: int | None = proc.wait(timeout=RUN_TIMEOUT)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = None
            reader.join(timeout=10)
            wall = time.monotonic() - start
        stderr = "".join(lines)
        problems = check(plan, out, earlier, code, stderr, questions)
        if plan.command is not None and out.exists():
            problems += afterwards(plan, folder, out)
        return Outcome(plan, code, stderr, problems, wall)
    finally:
        if mounted is not None:
            unmount(mounted)


def afterwards(plan: Plan, folder: Path, results: Path) -> list[str]:
    """Run ``plan.command`` on the run's results with its fault; what it must keep (invariant 5)."""
    questions = folder / "q.json"
    inputs = {p: p.read_bytes() for p in (results, questions, *sorted((folder / "out" / "runs").glob("*.json")))
              if p.is_file()}
    target = folder / "cmd"
    target.mkdir()
    mounted = None
    if plan.command_fault == "disk":
        if mount_tmpfs(target, "8k") is None:
            mounted = target
    try:
        other = next((p for p in inputs if p not in (results, questions)), results)
        args = {"compare": ["compare", str(results), str(other), "--json", str(target / "c.json")],
                "report": ["report", str(results), "-o", str(target / "r.html")],
                "validate": ["validate", str(questions), "--json", str(target / "v.json")],
                "export-dataset": ["export-dataset", "--questions", str(questions), "-o", str(target / "d.jsonl")],
                }[plan.command]
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_"))}
        proc = subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"), *args, "--log-dir", str(folder / "logs")],
                                cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        if plan.command_fault == "signal":
            try:
                proc.wait(timeout=plan.command_at)
            except subprocess.TimeoutExpired:
                proc.send_signal(signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            proc.kill()
            return [f"{plan.command} did not end within {RUN_TIMEOUT}s"]
        problems = []
        if proc.returncode not in DOCUMENTED_EXITS:
            problems.append(f"{plan.command} ended with exit code {proc.returncode}, not a documented one")
        if "Traceback" in err:
            problems.append(f"{plan.command}: a traceback on the console")
        if any(p.read_bytes() != data for p, data in inputs.items()):
            problems.append(f"{plan.command} changed its input files")
        temps = [p.name for p in target.rglob(".*.tmp")]
        if temps:
            problems.append(f"{plan.command} left temp files: {temps}")
        return problems
    finally:
        if mounted is not None:
            unmount(mounted)


@pytest.mark.slow
def test_chaos_invariant(tmp_path: Path):
    disk = can_mount_tmpfs(tmp_path / "probe")
    plans = [p for p in make_plans(random.Random(SEED), RUNS, disk) if not ONLY or p.index in ONLY]
    (tmp_path / "plugins").mkdir()
    (tmp_path / "plugins" / "chaosplug.py").write_text(PLUGIN)
    earlier = earlier_results(tmp_path)
    with ThreadPoolExecutor(WORKERS) as pool:
        outcomes = list(pool.map(lambda p: execute(p, tmp_path, earlier, tmp_path / "plugins"), plans))
    reported_total = sum(len(reported(o.stderr, QUESTIONS[:o.plan.n])) for o in outcomes)
    assert reported_total > 0, "no [i/n] console line parsed: the invariant would hold vacuously (line format?)"
    failures = [o for o in outcomes if o.violations]
    codes: dict[str, int] = {}
    for o in outcomes:
        codes[str(o.code)] = codes.get(str(o.code), 0) + 1
    walls: dict[str, list[float]] = {}
    for o in outcomes:
        walls.setdefault(o.plan.fault, []).append(o.wall)
    summary = (f"seed {SEED}, {len(outcomes)} runs{'' if disk else ' (no tmpfs: no full-disk faults)'}; exit codes "
               f"{dict(sorted(codes.items()))}; seconds per run by fault: "
               + ", ".join(f"{k} {sum(v) / len(v):.1f} (max {max(v):.1f}, n={len(v)})"
                           for k, v in sorted(walls.items())))
    assert not failures, summary + "\n" + "\n\n".join(
        f"{o.plan}: {'; '.join(o.violations)}\n--- stderr (last 25 lines) ---\n"
        + "\n".join(o.stderr.strip().splitlines()[-25:]) for o in failures[:8])
    print(summary)
