"""Run the commands of the README and of the reference pages in docs/ exactly as written.

    python -m bench.readme_commands [--only PAGE ...] [--measured] [--keep DIR] [--list]

Every fenced ``bash`` block of a page is run with ``bash -e -o pipefail`` from a fresh copy of the
project (``benchmark.py``, ``components``, ``utils``, ``poc``, ``tests``, ``bench``, ``docs``,
``questions.json``) in a temporary folder, beside a link ``../shared`` to the real data sets, so
that ``../shared/datasets/kubernetes`` resolves as it does from a checkout and nothing is written
into the project. The blocks of all pages run in one copy, in :data:`PAGES` order (a page may use
what an earlier one wrote: the README's results, the Kubernetes runs of ``docs/compare.md``).

* A ``python`` block whose first line is ``# <name>.py…`` is written to that file (the README's
  retriever); any other ``python`` block of a page in docs/ is run as a script (the README's API
  section is run by ``tests/test_api.py``).
* A block whose first line is ``# needs ANTHROPIC_API_KEY`` runs against the scripted Anthropic API
  of ``tests/loopback.py`` (a test key, ``ANTHROPIC_BASE_URL`` set to it): what is checked is that
  the command runs as written, not what a real model would answer.
* Lines that install or run the test suite (:data:`SETUP`) are not run here: ``pip install .`` and
  ``retrieval-benchmark --quick`` are checked by ``tests/test_packaging.py`` (slow marker), the
  suite by itself.
* ``docs/measured.md`` (the benchmark scripts, about 45 minutes) only with ``--measured``.

The environment has no judge settings (the offline judge grades), every provider's base URL on a
closed loopback port (nothing a block runs can reach a real API) and its index cache in the
temporary folder. ``tests/test_readme.py`` runs the README's blocks that need neither the
Kubernetes data nor a key; this script runs the rest. It prints one line per block and exits 1
when one failed. ``--keep DIR`` runs in DIR and keeps it (e.g. to take ``docs/report.png`` from it).
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = ("README.md", "docs/options.md", "docs/results.md", "docs/metrics.md", "docs/compare.md",
         "docs/report.md", "docs/scale.md", "docs/datasets.md", "docs/batches.md", "docs/judge-settings.md",
         "docs/resume.md", "docs/suites.md")
MEASURED = "docs/measured.md"
COPIED = ("benchmark.py", "pyproject.toml", "questions.json", "components", "utils", "poc", "tests", "bench", "docs",
          "examples")
# Lines not run from a copy of the project: they install it or run the test suite.
SETUP = re.compile(r"^\s*(python3 -m venv |pip install |python -m pytest\b|retrieval-benchmark\b)")
NEEDS_KEY = "# needs ANTHROPIC_API_KEY"
TEST_KEY = "sk-ant-readme-commands-0123456789abcdef"
FILE_BLOCK = re.compile(r"#\s*([A-Za-z0-9_]+\.py)\b")
TIMEOUT_S = 3600


@dataclass(frozen=True)
class Block:
    page: str
    index: int  # 1-based position among the page's fenced blocks of this language
    lang: str
    body: str

    @property
    def first_line(self) -> str:
        return next((line for line in self.body.splitlines() if line.strip() and not line.startswith("# ")),
                    self.body.splitlines()[0] if self.body else "")

    @property
    def needs_key(self) -> bool:
        return self.body.startswith(NEEDS_KEY)

    @property
    def uses_kubernetes(self) -> bool:
        return "../shared/datasets/kubernetes" in self.body or "k8s/" in self.body

    def file_name(self) -> str | None:
        """The file a ``python`` block is meant to be saved as (``# my_retriever.py: …``)."""
        match = FILE_BLOCK.match(self.body)
        return match.group(1) if self.lang == "python" and match else None

    def runnable(self) -> str:
        """The block without its :data:`SETUP` lines (their continuation lines included)."""
        out, skipping = [], False
        for line in self.body.splitlines():
            if skipping or SETUP.match(line):
                skipping = line.rstrip().endswith("\\")
                continue
            out.append(line)
        return "\n".join(out).strip()

    def setup_lines(self) -> list[str]:
        return [line.strip() for line in self.body.splitlines() if SETUP.match(line)]


def blocks(page: str, root: Path = ROOT) -> list[Block]:
    """The fenced ``bash`` and ``python`` blocks of ``page``, in order."""
    text = (root / page).read_text(encoding="utf-8")
    found, counts = [], {"bash": 0, "python": 0}
    for match in re.finditer(r"^```(bash|python)\n(.*?)^```", text, re.S | re.M):
        lang = match.group(1)
        counts[lang] += 1
        found.append(Block(page, counts[lang], lang, match.group(2)))
    return found


def make_workspace(parent: Path, root: Path = ROOT) -> Path:
    """A copy of the project in ``parent/project`` and ``parent/shared`` linked to the data sets;
    returns the copy's folder."""
    project = parent / "project"
    project.mkdir(parents=True, exist_ok=True)
    for name in COPIED:
        source = root / name
        if source.is_dir():
            shutil.copytree(source, project / name, dirs_exist_ok=True,
                            ignore=shutil.ignore_patterns("__pycache__", "out", "*.pyc"))
        elif source.is_file():
            shutil.copy2(source, project / name)
    shared = (root.parent / "shared").resolve()
    link = parent / "shared"
    if shared.is_dir() and not link.exists():
        link.symlink_to(shared, target_is_directory=True)
    return project


# Where a block's judge calls go unless the block names its own server: a closed port on this machine,
# so that a command written for a real API (a placeholder key, no base URL) fails at once here
# instead of sending anything beyond the loopback interface.
NOWHERE = "http://127.0.0.1:9/v1"


def environment(cache: Path, **extra: str) -> dict[str, str]:
    """No judge settings (the offline judge), every provider's base URL on a closed loopback port
    (:data:`NOWHERE`), the index cache under ``cache``, this Python first on PATH."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "BENCHMARK_", "OPENAI_"))}
    env["ANTHROPIC_BASE_URL"] = NOWHERE.removesuffix("/v1")
    env["OPENAI_BASE_URL"] = NOWHERE
    for name in ("NO_PROXY", "no_proxy"):  # loopback traffic never through a proxy of the calling shell
        env[name] = ",".join(filter(None, [env.get(name), "127.0.0.1", "localhost"]))
    env["XDG_CACHE_HOME"] = str(cache)
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra)
    return env


def run_block(block: Block, cwd: Path, env: dict[str, str], timeout: float = TIMEOUT_S
              ) -> subprocess.CompletedProcess:
    """Run one block in ``cwd`` (a ``python`` block with a file name is only written there)."""
    name = block.file_name()
    if name is not None:
        (cwd / name).write_text(block.body, encoding="utf-8")
        return subprocess.CompletedProcess([name], 0, "", "")
    if block.lang == "python":
        return subprocess.run([sys.executable, "-c", block.body], cwd=cwd, env=env, capture_output=True,
                              text=True, timeout=timeout)
    return subprocess.run(["bash", "-e", "-o", "pipefail", "-c", block.runnable()], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=timeout)


def _loopback_env(env: dict[str, str]):
    sys.path.insert(0, str(ROOT))
    from tests.loopback import LoopbackServer

    server = LoopbackServer().__enter__()
    return server, {**env, "ANTHROPIC_API_KEY": TEST_KEY, "ANTHROPIC_BASE_URL": server.url}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m bench.readme_commands", description=__doc__.split("\n\n")[0])
    p.add_argument("--only", nargs="+", metavar="PAGE", help="only these pages (paths as in PAGES)")
    p.add_argument("--measured", action="store_true", help=f"also run {MEASURED} (the benchmark scripts, long)")
    p.add_argument("--keep", type=Path, metavar="DIR", help="run in DIR and keep it")
    p.add_argument("--list", action="store_true", help="list the blocks and exit")
    args = p.parse_args(argv)
    pages = list(args.only or PAGES) + ([MEASURED] if args.measured and not args.only else [])
    todo = [b for page in pages for b in blocks(page)]
    if args.list:
        for b in todo:
            print(f"{b.page} {b.lang}#{b.index}: {b.first_line[:100]}")
        return 0
    base = Path(args.keep) if args.keep else Path(tempfile.mkdtemp(prefix="readme-commands-"))
    base.mkdir(parents=True, exist_ok=True)
    failed = 0
    try:
        project = make_workspace(base)
        env = environment(base / "cache")
        for b in todo:
            if b.lang == "bash" and not b.runnable():
                print(f"skip  {b.page} bash#{b.index}: installs or runs the tests ({'; '.join(b.setup_lines())})")
                continue
            if b.page == "README.md" and b.lang == "python" and b.file_name() is None:
                print(f"skip  {b.page} python#{b.index}: run by tests/test_api.py::test_readme_api_section_runs")
                continue
            server = None
            block_env = env
            if b.needs_key:
                server, block_env = _loopback_env(env)
            start = time.monotonic()
            try:
                proc = run_block(b, project, block_env)
            finally:
                if server is not None:
                    server.__exit__(None, None, None)
            took = time.monotonic() - start
            status = "ok" if proc.returncode == 0 else f"FAIL (exit {proc.returncode})"
            print(f"{status:<5} {b.page} {b.lang}#{b.index} {took:6.1f}s  {b.first_line[:90]}", flush=True)
            if proc.returncode != 0:
                failed += 1
                print((proc.stdout[-1500:] + "\n" + proc.stderr[-3000:]).strip(), flush=True)
    finally:
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)
    print(f"{len(todo)} blocks, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
