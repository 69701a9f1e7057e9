"""Logs never take a run down, and what the sinks write.

:func:`utils.logger.add_sinks` never raises: a log folder that cannot be created or written drops
to console-only logging with one warning line; a log file that fills up stops file logging with
one warning line (never a traceback, never one line per record). Both sinks redact every secret in
its raw, JSON-escaped and repr forms, and escape control characters (except newlines).
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from pathlib import Path

import pytest
from loguru import logger

from tests.conftest import ROOT, run_cli
from utils.logger import add_sinks

SECRET = 'sk-ant-q"uo\\te\n-0123456789'


@pytest.fixture
def sinks_cleanup():
    """The sinks a test adds (add_sinks) are removed after it, and only those."""
    opened = []
    yield opened
    for s in opened:
        s.remove()


def _under_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("not a folder")
    return tmp / "a-file" / "logs" / "run.log"


def _parent_is_a_file(tmp: Path) -> Path:
    (tmp / "a-file").write_text("not a folder")
    return tmp / "a-file" / "run.log"


def _log_file_is_a_folder(tmp: Path) -> Path:
    (tmp / "logs" / "run.log").mkdir(parents=True)
    return tmp / "logs" / "run.log"


def _log_file_is_a_fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "run.log")
    return tmp / "run.log"


UNUSABLE = [
    ("folder-under-a-file", _under_a_file),
    ("parent-is-a-file", _parent_is_a_file),
    ("log-file-is-a-folder", _log_file_is_a_folder),
    ("log-file-is-a-fifo", _log_file_is_a_fifo),  # opening it for writing would wait for a reader forever
]


def _add_sinks_within(seconds: float, *args, **kwargs):
    box: dict = {}

    def target():
        try:
            box["sinks"] = add_sinks(*args, **kwargs)
        except BaseException as err:  # noqa: BLE001 - the assertion below names it
            box["error"] = err

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(seconds)
    assert not t.is_alive(), f"add_sinks still running after {seconds}s"
    assert "error" not in box, f"add_sinks raised {box['error']!r}"
    return box["sinks"]


@pytest.mark.parametrize("make", [u[1] for u in UNUSABLE], ids=[u[0] for u in UNUSABLE])
def test_unusable_log_folder_drops_to_console_only(tmp_path: Path, capsys, sinks_cleanup, make):
    log_file = make(tmp_path)
    sinks = _add_sinks_within(10, "INFO", log_file)
    sinks_cleanup.append(sinks)
    logger.info("first record")
    logger.info("second record")
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if "| WARNING" in ln]
    assert len(warnings) == 1 and "console only" in warnings[0] and str(log_file) in warnings[0], err
    assert "first record" in err and "second record" in err
    assert "Traceback" not in err and "Logging error" not in err
    assert sinks.path is None


def test_read_only_log_folder_drops_to_console_only(tiny_tmpfs: Path, capsys, sinks_cleanup):
    subprocess.run(["mount", "-o", "remount,ro", str(tiny_tmpfs)], check=True)
    sinks = add_sinks("INFO", tiny_tmpfs / "logs" / "run.log")
    sinks_cleanup.append(sinks)
    logger.info("still on the console")
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if "| WARNING" in ln]
    assert len(warnings) == 1 and "Read-only file system" in warnings[0], err
    assert "still on the console" in err and "Traceback" not in err
    assert sinks.path is None


def test_a_log_file_that_fills_up_stops_with_one_warning(tiny_tmpfs: Path, capsys, sinks_cleanup):
    log_file = tiny_tmpfs / "logs" / "run.log"
    sinks = add_sinks("INFO", log_file)
    sinks_cleanup.append(sinks)
    for i in range(400):  # ~400 kB of records on a 64 kB disk
        logger.info("record {} {}", i, "z" * 1000)
    err = capsys.readouterr().err
    warnings = [ln for ln in err.splitlines() if "| WARNING" in ln]
    assert len(warnings) == 1, err[-3000:]
    assert str(log_file) in warnings[0] and "No space left on device" in warnings[0]
    assert "console only" in warnings[0]
    assert "Traceback" not in err and "Logging error" not in err
    assert err.count("| INFO") == 400  # the console lost nothing
    assert sinks.path == log_file and log_file.stat().st_size > 0


def test_sinks_redact_every_form_of_a_secret(tmp_path: Path, capsys, sinks_cleanup):
    log_file = tmp_path / "run.log"
    sinks = add_sinks("TRACE", log_file, secrets=[SECRET, ""])
    sinks_cleanup.append(sinks)
    logger.info("raw {}", SECRET)
    logger.info("json {}", json.dumps({"key": SECRET}))
    logger.info("json ascii {}", json.dumps({"key": SECRET + "é"}, ensure_ascii=True))
    logger.info("repr {!r}", SECRET)
    logger.info("repr of a dict {}", {"key": SECRET})
    try:
        raise ValueError(f"bad key {SECRET!r}")
    except ValueError as exc:
        logger.opt(exception=exc).debug("with a traceback")
    sinks.close()
    console, file_text = capsys.readouterr().err, log_file.read_text()
    forms = {SECRET, json.dumps(SECRET)[1:-1], repr(SECRET)[1:-1], "0123456789"}
    for where, text in (("console", console), ("file", file_text)):
        for form in forms:
            assert form not in text, f"{form!r} in the {where}"
        assert text.count("[REDACTED]") >= 5, text
    assert "ValueError" in file_text and "Traceback" not in console


def test_sinks_escape_control_characters_but_keep_newlines(tmp_path: Path, capsys, sinks_cleanup):
    log_file = tmp_path / "run.log"
    sinks = add_sinks("INFO", log_file)
    sinks_cleanup.append(sinks)
    logger.info("id {} done", "q1\r\x1b[2K\x07\x85\u2028forged")
    logger.info("a table\nsecond row")
    sinks.close()
    for text in (capsys.readouterr().err, log_file.read_text()):
        assert "id q1\\r\\x1b[2K\\x07\\x85\\u2028forged done" in text, text
        assert "a table\nsecond row" in text
        assert "\r" not in text and "\x1b" not in text and "\u2028" not in text


# --------------------------------------------------------------------------- end to end

def test_log_dir_flag(tmp_path: Path):
    log_dir = tmp_path / "my logs"
    run = run_cli("--quick", "--output", str(tmp_path / "r.json"), "--log-dir", str(log_dir))
    assert run.code == 0, run.stderr
    files = list(log_dir.iterdir())
    assert len(files) == 1 and files[0].name.startswith("benchmark_") and files[0].suffix == ".log"
    assert "Results written to" in files[0].read_text()
    assert json.loads((tmp_path / "r.json").read_text())["run"]["log_file"] == str(files[0])


def test_unusable_log_dir_does_not_stop_the_run(tmp_path: Path):
    (tmp_path / "a-file").write_text("x")
    run = run_cli("--quick", "--output", str(tmp_path / "r.json"), "--log-dir", str(tmp_path / "a-file" / "logs"))
    assert run.code == 0, run.stderr
    warnings = [ln for ln in run.stderr.splitlines() if "| WARNING" in ln]
    assert len(warnings) == 1 and "console only" in warnings[0], run.stderr
    assert "Traceback" not in run.stderr
    data = json.loads((tmp_path / "r.json").read_text())
    assert data["run"]["status"] == "completed" and data["run"]["log_file"] is None


def test_every_command_accepts_log_dir(monkeypatch):
    import types

    from components import cli

    module = types.SimpleNamespace(add_arguments=lambda p: p.add_argument("--n", type=int, default=1))
    monkeypatch.setitem(cli.COMMANDS, "fake", ("fake.module", "a fake command"))
    args = cli.command_parser("fake", module).parse_args(["--n", "2", "--log-dir", "/tmp/x"])
    assert args.log_dir == Path("/tmp/x") and args.n == 2
    default = cli.command_parser("fake", module).parse_args([])
    assert default.log_dir == Path("logs")  # in the current folder, like every output


def _tree(root: Path) -> set[str]:
    skip = {".git", "__pycache__", ".venv", ".pytest_cache"}
    out = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d not in skip]
        out.update(str(Path(folder, f).relative_to(root)) for f in files)
    return out


def test_a_cli_run_leaves_the_working_tree_alone(tmp_path: Path):
    before = _tree(ROOT)
    run = run_cli("--quick", "--output", str(tmp_path / "r.json"))
    assert run.code == 0, run.stderr
    assert _tree(ROOT) - before == set()
    assert run.log_file is not None and not run.log_file.resolve().is_relative_to(ROOT)
