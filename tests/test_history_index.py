"""The index of recent history folders in $XDG_STATE_HOME/retrieval-benchmark: a run id resolves
from anywhere; an unwritable state folder is one warning; the lookup's error names every folder."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import clean_env, run_cli
from utils.files.history_index import MAX_FOLDERS, index_path, record_history_folder, recent_history_folders
from utils.settings import default_state_dir


def test_the_state_folder_follows_xdg_state_home(tmp_path: Path):
    assert default_state_dir({"XDG_STATE_HOME": str(tmp_path), "HOME": "/h"}) == tmp_path / "retrieval-benchmark"
    assert default_state_dir({"XDG_STATE_HOME": "relative", "HOME": "/h"}) == Path(
        "/h/.local/state/retrieval-benchmark")
    assert default_state_dir({"HOME": "/h"}) == Path("/h/.local/state/retrieval-benchmark")


def test_the_index_keeps_recent_absolute_folders_once_most_recent_first(tmp_path: Path, monkeypatch):
    state = tmp_path / "state"
    folders = [tmp_path / f"p{i}" / "runs" for i in range(MAX_FOLDERS + 5)]
    for f in folders:
        f.mkdir(parents=True)
        record_history_folder(state, f)
    record_history_folder(state, folders[3])  # again: moves to the front, kept once
    monkeypatch.chdir(tmp_path)
    record_history_folder(state, Path("p0/runs"))  # a relative folder is stored absolute
    recent = recent_history_folders(state)
    assert recent[:2] == [folders[0], folders[3]] and len(recent) == MAX_FOLDERS == len(set(recent))
    assert recent[2] == folders[-1] and folders[5] not in recent  # the oldest dropped off
    stored = json.loads(index_path(state).read_text())
    assert stored["version"] == 1 and all(Path(f).is_absolute() for f in stored["folders"])
    folders[-1].rmdir()
    record_history_folder(state, folders[0])
    assert folders[-1] not in recent_history_folders(state)  # a folder gone is dropped when the index is written


@pytest.mark.parametrize("text", ["not json", '{"version": 2, "folders": ["/a"]}', '{"version": 1, "folders": "/a"}',
                                  '[1, 2]', '{"version": 1, "folders": ["relative/runs", 3, null]}'])
def test_an_index_that_is_not_one_reads_as_empty(tmp_path: Path, text: str):
    index_path(tmp_path).write_text(text)
    assert recent_history_folders(tmp_path) == []
    assert recent_history_folders(None) == []


def two_runs(out: Path, env: dict[str, str]) -> list[str]:
    """Two runs written to ``out`` (from the project folder); their run ids."""
    for strategy in ("baseline", "modular-no-llm"):
        done = run_cli("--limit", "2", "--strategy", strategy, "--output", str(out), env=env)
        assert done.code == 0, done.stderr[-2000:]
    return sorted(p.stem for p in (out.parent / "runs").glob("*.json"))


def test_a_recorded_run_id_resolves_from_any_folder(tmp_path: Path):
    """Runs written with --output DIR/x.json; compare and export-run by id from an unrelated folder."""
    env = clean_env(XDG_STATE_HOME=str(tmp_path / "state"))
    ids = two_runs(tmp_path / "project" / "results" / "x.json", env)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    compared = run_cli("compare", *ids, env=env, cwd=elsewhere)
    assert compared.code == 0, compared.stderr[-2000:]
    assert "Compared on 2 questions" in compared.stdout
    exported = run_cli("export-run", ids[0], "-o", str(tmp_path / "run.trec"), env=env, cwd=elsewhere)
    assert exported.code == 0 and (tmp_path / "run.trec").is_file()
    assert recent_history_folders(tmp_path / "state" / "retrieval-benchmark") == \
        [tmp_path / "project" / "results" / "runs"]


def test_the_error_lists_every_folder_searched(tmp_path: Path):
    state = tmp_path / "state"
    env = clean_env(XDG_STATE_HOME=str(state))
    indexed = tmp_path / "p" / "runs"
    indexed.mkdir(parents=True)
    record_history_folder(state / "retrieval-benchmark", indexed)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    missing = run_cli("compare", "20990101T000000Z_nope", "20990101T000000Z_other", env=env, cwd=elsewhere)
    assert missing.code == 2
    errors = [line for line in missing.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and "history folders searched" in errors[0], missing.stderr[-2000:]
    assert str(elsewhere / "runs") in errors[0] and str(indexed) in errors[0]


def test_an_unwritable_state_folder_is_one_warning_never_a_failure(tmp_path: Path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = clean_env(XDG_STATE_HOME=str(blocker / "state"))  # a folder cannot be made under a file
    out = tmp_path / "r.json"
    done = run_cli("--limit", "2", "--strategy", "baseline", "--output", str(out), env=env)
    assert done.code == 0, done.stderr[-2000:]
    assert json.loads(out.read_text())["run"]["status"] == "completed"
    warnings = [line for line in done.stderr.splitlines() if "| WARNING" in line]
    assert len(warnings) == 1 and "index of recent history folders" in warnings[0], warnings
    assert "set XDG_STATE_HOME" in warnings[0] and blocker.read_text() == "not a folder"
