"""No input can forge a console line: ``benchmark.py``'s ``error: ...`` line
escapes the control characters of the message (an InputError may quote a path, an id, a file name).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import run_cli

FORGE = "\r\x1b[2K"  # return to the start of the line and erase it
SHOWN = "\\r\\x1b[2K"


def _missing_questions_path(tmp: Path) -> list[str]:
    return ["--questions", str(tmp / f"q{FORGE}fake line.json")]


def _id_with_controls(tmp: Path) -> list[str]:
    q = {"id": f"q1{FORGE}", "question": "How?", "needle_doc_id": "for"}
    (tmp / "q.json").write_text(json.dumps([q, q]))  # a repeated id
    return ["--questions", str(tmp / "q.json")]


def _needle_with_controls(tmp: Path) -> list[str]:
    q = {"id": "q1", "question": "How?", "needle_doc_id": f"fo{FORGE}r"}
    (tmp / "q.json").write_text(json.dumps([q]))
    return ["--questions", str(tmp / "q.json")]


def _corpus_file_names(tmp: Path) -> list[str]:
    corpus = tmp / "c"
    corpus.mkdir()
    (corpus / f"for{FORGE}.md").write_text("# a\n")
    (corpus / f"for{FORGE}.MD").write_text("# b\n")
    (tmp / "q.json").write_text(json.dumps([{"id": "q1", "question": "How?", "needle_doc_id": "for"}]))
    return ["--questions", str(tmp / "q.json"), "--corpus", str(corpus)]


def _missing_corpus_newline(tmp: Path) -> list[str]:
    return ["--corpus", str(tmp / "no\nsuch | ERROR   | forged line")]


CASES = [
    ("missing-questions-path", _missing_questions_path, SHOWN),
    ("repeated-id", _id_with_controls, SHOWN),
    ("unknown-needle", _needle_with_controls, SHOWN),
    ("corpus-file-names", _corpus_file_names, SHOWN),
    ("corpus-path-with-newline", _missing_corpus_newline, "no\\nsuch"),
]


@pytest.mark.parametrize("make,shown", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_error_line_escapes_control_characters(tmp_path: Path, make, shown):
    run = run_cli(*make(tmp_path), "--output", str(tmp_path / "r.json"))
    assert run.code == 2, run.stderr
    lines = run.stderr.splitlines()
    errors = [ln for ln in lines if "| ERROR" in ln]
    assert len(errors) == 1 and shown in errors[0], run.stderr
    assert "\x1b" not in run.stderr
    # the line after the error line is the closing "Log file:" line, not a fragment of the message
    after = lines[lines.index(errors[0]) + 1]
    assert "| INFO" in after and "Log file:" in after, run.stderr
