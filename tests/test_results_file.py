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
