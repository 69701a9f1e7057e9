"""utils.files.output.write_json_atomic: the file's mode and the secrets it must not hold."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from utils.files.output import write_json_atomic


@pytest.fixture
def umask_022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_gets_the_mode_an_ordinary_write_gives(tmp_path: Path, umask_022):
    out = tmp_path / "r.json"
    write_json_atomic(out, {"a": 1})
    assert mode(out) == 0o644
    assert json.loads(out.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]  # no temp file left behind


def test_an_earlier_file_keeps_its_mode(tmp_path: Path, umask_022):
    out = tmp_path / "r.json"
    out.write_text("{}")
    out.chmod(0o640)
    write_json_atomic(out, {"a": 2})
    assert mode(out) == 0o640
    assert json.loads(out.read_text()) == {"a": 2}


def test_secrets_are_redacted(tmp_path: Path):
    out = tmp_path / "r.json"
    write_json_atomic(out, {"error": "bad key sk-ant-XYZ"}, secrets=["sk-ant-XYZ", ""])
    assert json.loads(out.read_text()) == {"error": "bad key [REDACTED]"}


def test_content_cleaned_once_is_written_as_it_is_and_as_save_writes_it(tmp_path: Path, monkeypatch):
    """A run writes its results to two files from one cleaning (``RunResult.strict_json``): each file
    holds what ``save`` writes, the secret redacted, and a :class:`StrictJSON` is not cleaned again."""
    from utils.files.output import StrictJSON
    from utils.results import JudgeInfo, RunInfo, RunResult

    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    result = RunResult(RunInfo(strategy="bm25 sk-ant-XYZ", k=5, judge=JudgeInfo("offline", "lexical")), [])
    content = result.strict_json(["sk-ant-XYZ"])
    for name in ("a.json", "b.json"):
        write_json_atomic(tmp_path / name, content)
    result.save(tmp_path / "saved.json", secrets=["sk-ant-XYZ"])
    saved = (tmp_path / "saved.json").read_bytes()
    assert (tmp_path / "a.json").read_bytes() == (tmp_path / "b.json").read_bytes() == saved
    assert json.loads(saved)["run"]["strategy"] == "bm25 [REDACTED]"
    write_json_atomic(tmp_path / "as_is.json", StrictJSON({"kept": "sk-ant-XYZ"}), secrets=["sk-ant-XYZ"])
    assert json.loads((tmp_path / "as_is.json").read_text()) == {"kept": "sk-ant-XYZ"}  # already clean: as it is
