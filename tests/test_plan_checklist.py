"""The plan's final checklist, run literally: a copy of the project at
poc/modular_retrieval_pipeline/ in a scratch repository, every verification command of the plan run
from that repository's root (the slow layer: real processes). jq's commands are skipped when jq is
absent; the rest runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, mount_tmpfs, unmount

pytestmark = pytest.mark.slow

MODULE = "poc/modular_retrieval_pipeline"
RESULTS = f"{MODULE}/benchmark_results.json"
RUN = f"{sys.executable} {MODULE}/benchmark.py --strategy modular-no-llm --quick"
JQ_ROW = f"jq '.results[0] | {{llm_grade, llm_reasoning, rank, hit_at_1, hit_at_5, total_score}}' {RESULTS}"
JQ_AGGREGATES = ("jq '{accuracy, hit_at_1_rate, hit_at_5_rate, mrr, avg_llm_grade, avg_total_score, pass_rate_8, "
                 f"pass_rate_7, pass_rate_6_5}}' {RESULTS}")
JQ_GRADES = f"jq '[.results[].llm_grade] | map(select(. != null)) | all(. >= 1 and . <= 10)' {RESULTS}"
GREP = f'{RUN} 2>&1 | grep -E "(hit_at_1|mrr|avg_llm_grade|pass_rate)"'
_SKIP = shutil.ignore_patterns(".git", ".venv", "__pycache__", ".pytest_cache", ".ruff_cache", "runs", "logs",
                               "benchmark_results*.json", "*.egg-info")


def copy_project(root: Path) -> Path:
    """The project at ``root``/poc/modular_retrieval_pipeline, in a fresh git repository."""
    target = root / MODULE
    shutil.copytree(ROOT, target, ignore=_SKIP)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return target


def shell(command: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


@pytest.fixture(scope="module")
def scratch(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("scratch-repo")
    copy_project(root)
    return root


def test_the_plans_checklist_from_the_repository_root(scratch):
    env = clean_env()
    run = shell(RUN, scratch, env)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[0] == f"results            {RESULTS}"
    assert (scratch / RESULTS).is_file()
    assert (scratch / MODULE / "runs").is_dir() and (scratch / MODULE / "logs").is_dir()
    assert sorted(p.name for p in scratch.iterdir()) == [".git", "poc"]  # nothing written at the root
    grep = shell(GREP, scratch, env)
    assert grep.returncode == 0 and len(grep.stdout.splitlines()) >= 4, grep.stdout
    for name in ("hit_at_1_rate", "mrr", "avg_llm_grade", "pass_rate_8", "pass_rate_7", "pass_rate_6_5"):
        assert f"METRIC {name}=" in grep.stdout
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed: the plan's three jq inspections are skipped (the run and grep passed)")
    row = shell(JQ_ROW, scratch, env)
    assert row.returncode == 0, row.stderr
    assert set(json.loads(row.stdout)) == {"llm_grade", "llm_reasoning", "rank", "hit_at_1", "hit_at_5", "total_score"}
    aggregates = shell(JQ_AGGREGATES, scratch, env)
    assert aggregates.returncode == 0, aggregates.stderr
    assert all(isinstance(v, (int, float)) for v in json.loads(aggregates.stdout).values())
    grades = shell(JQ_GRADES, scratch, env)
    assert (grades.returncode, grades.stdout.strip()) == (0, "true")


def test_other_folders_keep_writing_where_they_did(scratch, tmp_path):
    env = clean_env()
    script = scratch / MODULE / "benchmark.py"
    (scratch / RESULTS).unlink(missing_ok=True)
    elsewhere = shell(f"{sys.executable} {script} --quick --output x.json", tmp_path, env)  # an unrelated folder
    assert elsewhere.returncode == 0, elsewhere.stderr
    assert (tmp_path / "x.json").is_file() and (tmp_path / "runs").is_dir() and (tmp_path / "logs").is_dir()
    assert not (scratch / RESULTS).exists()
    module = shell(f"{sys.executable} benchmark.py --quick", scratch / MODULE, env)  # the module folder itself
    assert module.returncode == 0 and (scratch / RESULTS).is_file()
    (scratch / RESULTS).unlink()
    as_module = shell(f"{sys.executable} -m benchmark --quick --log-dir {tmp_path / 'm-logs'}", scratch,
                      {**env, "PYTHONPATH": str(scratch / MODULE)})  # python -m: the current folder
    assert as_module.returncode == 0, as_module.stderr
    assert (scratch / "benchmark_results.json").is_file() and not (scratch / RESULTS).exists()
    (scratch / "benchmark_results.json").unlink()
    shutil.rmtree(scratch / "runs")


def test_a_read_only_module_folder_writes_to_the_current_folder_and_says_so(tmp_path):
    if os.geteuid() != 0:
        root = tmp_path / "repo"
        module = copy_project(root)
        module.chmod(0o555)
    else:
        root = tmp_path / "repo"
        (root / "poc").mkdir(parents=True)
        (root / MODULE).mkdir()
        why_not = mount_tmpfs(root / MODULE, "64m")
        if why_not is not None:
            pytest.skip(why_not)
        shutil.copytree(ROOT, root / MODULE, ignore=_SKIP, dirs_exist_ok=True)
        subprocess.run(["mount", "-o", "remount,ro", str(root / MODULE)], check=True, capture_output=True)
    try:
        run = shell(RUN, root, clean_env(PYTHONDONTWRITEBYTECODE="1"))
    finally:
        if os.geteuid() == 0:
            unmount(root / MODULE)
        else:
            (root / MODULE).chmod(0o755)
    assert run.returncode == 0, run.stderr
    assert "the module folder poc/modular_retrieval_pipeline cannot be written: the results, runs/ and logs/ go to " \
           "the current folder instead" in run.stderr
    assert run.stdout.splitlines()[0] == "results            benchmark_results.json"
    assert (root / "benchmark_results.json").is_file() and (root / "runs").is_dir()
