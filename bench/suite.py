"""Wall time of the test suite's layers, each command run once from the project root.

    python -m bench.suite            # the README's test command: the fast layer
    python -m bench.suite --slow     # then the slow layer, as .ci/run runs it after the fast one
    python -m bench.suite --ci       # `bash .ci/run` end to end: install, fast layer, slow layer

1. ``python -m pytest -q``: the README's one test command; ``addopts`` makes it every test but the
   ``slow`` ones, on every core (pytest-xdist).
2. ``python -m pytest -q -m slow``: the slow layer (real processes: signals, ``entry()``, ``pip
   install``, the chaos loop; the 10,000-question batch and the cold Kubernetes index).
3. ``bash .ci/run``: what CI runs on a clean machine (it may install jq and Chromium first).

Prints each command's wall time, pytest's last line and the load average before and after: other
work on the machine lengthens wall time, so measure on an idle machine. Results to
``bench/out/suite.json``. Not collected by pytest (``bench/`` is outside ``testpaths``, and the name
does not start with ``test_``).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
FAST = [sys.executable, "-m", "pytest", "-q"]
SLOW = [sys.executable, "-m", "pytest", "-q", "-m", "slow"]
CI = ["bash", ".ci/run"]


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def timed(name: str, cmd: list[str]) -> dict:
    """Run ``cmd`` once from the project root: its wall time, exit code and last output line."""
    before = _load()
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True)
    wall = time.perf_counter() - start
    lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if ln.strip()]
    row = {"layer": name, "command": " ".join(["python" if c == sys.executable else c for c in cmd]),
           "wall_s": round(wall, 1), "exit": proc.returncode, "last_line": lines[-1] if lines else "",
           "load_before": before, "load_after": _load(), "cpus": os.cpu_count()}
    print(f"{name:<5} {row['command']:<32} {wall:7.1f} s  exit {proc.returncode}  load {before} -> "
          f"{row['load_after']}  | {row['last_line']}", flush=True)
    if proc.returncode != 0:
        sys.stderr.write("\n".join(lines[-40:]) + "\n")
    return row


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--slow", action="store_true", help="also the slow layer, after the fast one")
    p.add_argument("--ci", action="store_true", help="`bash .ci/run` end to end instead")
    args = p.parse_args()
    rows = [timed("ci", CI)] if args.ci else [timed("fast", FAST), *([timed("slow", SLOW)] if args.slow else [])]
    if len(rows) == 2:
        print(f"fast + slow: {rows[0]['wall_s'] + rows[1]['wall_s']:.1f} s (install not included)")
    out = ROOT / "bench" / "out"
    out.mkdir(parents=True, exist_ok=True)
    (out / "suite.json").write_text(json.dumps(rows, indent=2) + "\n")
    return max(r["exit"] for r in rows)


if __name__ == "__main__":
    sys.exit(main())
