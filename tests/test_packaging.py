"""The package installs and runs: every import is a declared dependency; ``pip install .`` into a
fresh virtual environment, then ``retrieval-benchmark --quick`` from another folder works and writes
into that folder only."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tomllib
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env

OWN = {"benchmark", "components", "poc", "utils", "tests", "bench"}


def _declared(optional: bool = False) -> set[str]:
    """The runtime dependencies of pyproject.toml; ``optional``: those of its extras but ``test``."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    specs = project["dependencies"] if not optional else [
        spec for extra, specs in project.get("optional-dependencies", {}).items() if extra != "test" for spec in specs]
    return {re.split(r"[<>=!~\[; ]", spec, maxsplit=1)[0].lower().replace("_", "-") for spec in specs}


def _imports(files: list[Path]) -> set[str]:
    names = set()
    for file in files:
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {alias.name.split(".")[0] for alias in node.names}
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.add(node.module.split(".")[0])
    return names - OWN - set(sys.stdlib_module_names)


def test_every_import_at_run_time_is_a_declared_dependency():
    files = [ROOT / "benchmark.py", *(f for pkg in ("components", "poc", "utils") for f in (ROOT / pkg).rglob("*.py"))]
    distributions = importlib.metadata.packages_distributions()
    runtime, optional = _declared(), _declared(optional=True)
    missing = []
    for name in sorted(_imports(files)):
        dists = {d.lower().replace("_", "-") for d in distributions.get(name, [name])}
        if not dists & (runtime | optional):
            missing.append(f"{name} ({', '.join(sorted(dists))})")
    assert missing == [], "imported at run time but not a dependency in pyproject.toml"


@pytest.mark.slow
def test_pip_install_then_run_from_another_folder(tmp_path: Path):
    project = sorted(os.listdir(ROOT))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    # from a copy: setuptools builds in the source folder (build/, *.egg-info), which must stay clean
    source = tmp_path / "source"
    shutil.copytree(ROOT, source, ignore=shutil.ignore_patterns(".git", ".venv", "__pycache__", "build", "dist",
                                                                 "*.egg-info", ".pytest_cache", "logs", "runs"))
    install = subprocess.run([str(python), "-m", "pip", "install", "-q", str(source)], capture_output=True, text=True,
                             timeout=1800)
    assert install.returncode == 0, install.stderr[-2000:]
    site = Path(subprocess.check_output(
        [str(python), "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], text=True).strip())

    def files() -> set[Path]:
        return {p for p in site.rglob("*") if "__pycache__" not in p.parts}

    before = files()
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = clean_env(PYTHONDONTWRITEBYTECODE="1")
    run = subprocess.run([str(venv / "bin" / "retrieval-benchmark"), "--quick"], cwd=elsewhere, env=env,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "hit@1" in run.stdout and "[5/5]" in run.stderr
    assert (elsewhere / "benchmark_results.json").is_file() and list((elsewhere / "runs").glob("*.json"))
    assert list((elsewhere / "logs").glob("benchmark_*.log"))
    assert files() == before  # nothing written into site-packages
    assert not (Path(sysconfig.get_paths()["purelib"]) / "logs").exists()
    same = subprocess.run([str(python), "-m", "benchmark", "--help"], cwd=elsewhere, env=env, capture_output=True,
                          text=True, timeout=120)
    assert same.returncode == 0 and "retrieval benchmark" in same.stdout.lower()
    assert sorted(os.listdir(elsewhere)) == ["benchmark_results.json", "logs", "runs"]
    assert sorted(os.listdir(ROOT)) == project  # the install left no build/ or *.egg-info in the project
