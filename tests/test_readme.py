"""The README's commands run as written, and the user-facing pages stay user-facing.

The README's fenced ``bash`` blocks run, in order, in a copy of the project in a temporary folder
(``bench.readme_commands.make_workspace``), with the offline judge; each must exit 0. Not run here:
the lines that install the project or run the test suite (checked by ``tests/test_packaging.py``,
slow marker, and by the suite itself), and blocks that need the Kubernetes data or an API key (run
by ``python -m bench.readme_commands``, which also runs the reference pages' commands). The README's
Python API section is run by ``tests/test_api.py``.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from bench.readme_commands import PAGES, Block, blocks, environment, make_workspace, run_block
from tests.conftest import ROOT, TEST_CACHE_HOME, run_cli

README = "README.md"
MAX_README_LINES = 280  # the README shows each feature once with a link; the reference lives in docs/
# The README lines that install the project or run the tests: not run from a copy of the project.
SETUP_LINES = [
    'python3 -m venv .venv && . .venv/bin/activate && pip install -e ".[test]"',
    "python -m pytest -q",
]
INTERNAL = [
    (re.compile(r"\bseed \d{3}\b", re.I), "a seed number"),
    (re.compile(r"\bissues? #?\d+", re.I), "an issue number"),
    (re.compile(r"\bcommit [0-9a-f]{7,40}\b", re.I), "a commit hash"),
    (re.compile(r"\((?=[0-9a-f]*\d)(?=[0-9a-f]*[a-f])[0-9a-f]{7,10}[);,]"), "a commit hash in parentheses"),
    (re.compile(r"\b(raised|failed|crashed|flaked)\b[^.\n]{0,80}\bin CI\b|\bin CI\b[^.\n]{0,80}\b(raised|failed|"
                r"crashed|flaked)\b", re.I), "a CI anecdote"),
]


def _user_pages() -> list[Path]:
    return [ROOT / README, *sorted((ROOT / "docs").glob("*.md"))]


def _snapshot(folder: Path) -> set[str]:
    """Every path under ``folder`` but caches and ignored outputs: what a test must not change."""
    skip = {".git", ".venv", "__pycache__", ".pytest_cache", "logs", "runs", "build", "out"}
    found = set()
    for dirpath, dirnames, filenames in os.walk(folder):
        dirnames[:] = [d for d in dirnames if d not in skip and not d.endswith(".egg-info")]
        found |= {os.path.relpath(os.path.join(dirpath, f), folder) for f in filenames}
    return found


def test_readme_is_short():
    lines = (ROOT / README).read_text(encoding="utf-8").count("\n")
    assert lines <= MAX_README_LINES, f"README.md has {lines} lines: move reference material into docs/"


def test_the_readme_lines_not_run_here_are_only_the_install_and_test_lines():
    skipped = [line for b in blocks(README) if b.lang == "bash" for line in b.setup_lines()]
    assert skipped == SETUP_LINES


@pytest.mark.slow  # the README's shell blocks, each command a process in a copy of the project
def test_readme_commands_run_as_written(tmp_path: Path):
    before = _snapshot(ROOT)
    project = make_workspace(tmp_path)
    env = environment(TEST_CACHE_HOME)
    ran = []
    for block in blocks(README):
        if block.lang == "python" and block.file_name() is None:
            continue  # the API section: tests/test_api.py
        if block.lang == "bash" and (block.needs_key or block.uses_kubernetes or not block.runnable()):
            continue  # bench/readme_commands.py, or install/test lines only
        proc = run_block(block, project, env, timeout=600)
        assert proc.returncode == 0, (f"README {block.lang} block {block.index} ({block.first_line}) exited "
                                      f"{proc.returncode}:\n{proc.stdout[-1500:]}\n{proc.stderr[-3000:]}")
        ran.append(block)
    assert len([b for b in ran if b.lang == "bash"]) >= 8, "the README's commands were not found"
    produced = {p.name for p in project.iterdir()}
    assert {"benchmark_results.json", "runs", "logs", "report.html", "validation.json", "dataset.jsonl",
            "benchmark_results.baseline.json", "benchmark_results.modular-no-llm.json"} <= produced
    assert _snapshot(ROOT) == before, "a README command wrote into the project"


def test_a_failing_command_fails_the_check(tmp_path: Path):
    project = make_workspace(tmp_path)
    bad = Block(README, 1, "bash", "python benchmark.py --quick --k 0\n")
    assert run_block(bad, project, environment(TEST_CACHE_HOME), timeout=300).returncode == 2


@pytest.mark.parametrize("page", _user_pages(), ids=lambda p: p.name)
def test_user_pages_have_no_internal_references(page: Path):
    text = page.read_text(encoding="utf-8")
    found = [f"{what}: {m.group(0)!r}" for pattern, what in INTERNAL for m in pattern.finditer(text)]
    assert found == [], f"{page.name} speaks to maintainers, not users"


def _slug(heading: str) -> str:
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip().lower())
    return re.sub(r"[^\w\- ]", "", text).replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    return {_slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.+)$", text, re.M)}


@pytest.mark.parametrize("page", [ROOT / p for p in PAGES] + [ROOT / "docs" / "measured.md"], ids=lambda p: p.name)
def test_links_of_the_pages_resolve(page: Path):
    text = re.sub(r"^```.*?^```", "", page.read_text(encoding="utf-8"), flags=re.S | re.M)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue
        path, _, anchor = target.partition("#")
        file = (page.parent / path).resolve() if path else page
        if not file.exists():
            broken.append(target)
            continue
        if anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(target)
    assert broken == [], f"{page.name}: links to nothing"


def _help(*args: str) -> str:
    run = run_cli(*args, "--help")
    assert run.code == 0, run.stderr
    return run.stdout


def test_the_options_page_names_every_flag_variable_and_exit_code():
    """docs/options.md is the reference of the command line: a flag, a variable or an exit code the
    code has and the page does not is a gap in it."""
    from components.cli import COMMANDS
    from components.judges.providers import variables
    from utils import errors

    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    flags = set()
    for args in [(), *((name,) for name in COMMANDS)]:
        flags |= set(re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", _help(*args)))
    missing = sorted(f for f in flags - {"--help"} if f"`{f}" not in page and f"/{f}" not in page)
    settings = (ROOT / "utils" / "settings.py").read_text(encoding="utf-8")
    names = {v.name for _, v in variables()} | set(re.findall(r'"(BENCHMARK_[A-Z_]+)"', settings))
    missing += sorted(n for n in names if f"`{n}`" not in page)
    codes = {getattr(errors, n) for n in dir(errors) if n.startswith("EXIT_")}
    missing += sorted(f"exit {c}" for c in codes if f"\n| {c} |" not in page)
    assert not missing, f"docs/options.md does not document: {', '.join(missing)}"
