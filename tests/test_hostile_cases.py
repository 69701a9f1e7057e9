"""Hostile cases: inputs that are not what they claim (a FIFO, a device, an HTML page, the benchmark's own
questions as JSON Lines), outputs aimed at inputs or into the corpus, values out of range or given twice,
and messages that must point the right way. Each case failed before its fix."""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path

import pytest

from components.analysis.targets import parse_targets
from components.core.chunking import Chunking
from components.run.adaptive import parse_target_ci
from tests.conftest import ROOT, run_cli
from utils.errors import InputError
from utils.records.trec import read_trec_run

SUITE = """suites:
  pair:
    - {name: small, strategy: baseline, chunk_size: 200}
    - {name: big, strategy: baseline, chunk_size: 800}
"""


def _fifo(tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    os.mkfifo(path)
    return path


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no FIFOs on this system")
@pytest.mark.parametrize("option,name", [("--judges", "panel.toml"), ("--suite", "suite.yaml")])
def test_a_fifo_as_panel_or_suite_is_refused_at_once(tmp_path: Path, option: str, name: str):
    fifo = _fifo(tmp_path, name)
    started = time.monotonic()
    run = run_cli(option, str(fifo), "--quick", "--output", str(tmp_path / "out.json"), timeout=30)
    assert run.code == 2, run.stderr
    assert time.monotonic() - started < 5
    assert "a FIFO" in run.stderr and str(fifo) in run.stderr


def test_output_naming_the_suite_file_is_refused_and_the_suite_kept(tmp_path: Path):
    suite = tmp_path / "suite.yaml"
    suite.write_text(SUITE)
    run = run_cli("--suite", f"{suite}:pair", "--quick", "--output", str(suite))
    assert run.code == 2 and "the --suite file" in run.stderr, run.stderr
    assert suite.read_text() == SUITE


@pytest.mark.parametrize("option", ["--log-dir", "--cache-dir"])
def test_nothing_is_written_into_the_corpus(tmp_path: Path, option: str):
    corpus = tmp_path / "docs"
    corpus.mkdir()
    (corpus / "a.md").write_text("# A\nThe answer is here.\n")
    before = sorted(p.name for p in corpus.rglob("*"))
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({"questions": [{"id": "q1", "question": "Where is the answer?",
                                                    "expected_answer": "here", "needle_doc_id": "a"}]}))
    run = run_cli("--corpus", str(corpus), "--questions", str(questions), "--strategy", "baseline",
                  option, str(corpus / "inside"), "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and f"{option} {corpus / 'inside'} is inside the corpus folder" in run.stderr, run.stderr
    assert sorted(p.name for p in corpus.rglob("*")) == before


def test_a_baseline_that_is_a_device_is_named_as_one(tmp_path: Path):
    link = tmp_path / "base.json"
    link.symlink_to("/dev/zero")
    run = run_cli("--quick", "--until-decided", str(link), "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "character device" in run.stderr and "no such file" not in run.stderr, run.stderr


@pytest.mark.parametrize("value,message", [
    ("hit@1=0.6,hit@1=0.9", "named twice"), ("avg_llm_grade=11", "at most 10"), ("total=10.5", "at most 10"),
])
def test_targets_out_of_scale_or_repeated_are_refused(value: str, message: str):
    with pytest.raises(InputError, match=message):
        parse_targets(value, 5)


def test_targets_on_the_command_line(tmp_path: Path):
    for value in ("hit@1=0.6,hit@1=0.9", "avg_llm_grade=11", ""):
        run = run_cli("--quick", "--targets", value, "--output", str(tmp_path / "out.json"))
        assert run.code == 2, (value, run.stderr)
    assert not (tmp_path / "out.json").exists()


def test_target_ci_named_twice_is_refused(tmp_path: Path):
    with pytest.raises(InputError, match="named twice"):
        parse_target_ci("grade=1,grade=2")
    run = run_cli("--quick", "--target-ci", "grade=1,grade=2", "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "named twice" in run.stderr


def test_chunk_sizes_and_k_have_a_range(tmp_path: Path):
    with pytest.raises(ValueError, match="from 1 to 100,000"):
        Chunking(10 ** 30)
    suite = tmp_path / "suite.yaml"
    suite.write_text("suites:\n  huge:\n    - {name: huge, strategy: baseline, chunk_size: " + str(10 ** 30) + "}\n")
    run = run_cli("--suite", f"{suite}:huge", "--quick", "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "from 1 to 100,000" in run.stderr and "31-digit" in run.stderr, run.stderr
    run = run_cli("--quick", "--k", "1000001", "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "from 1 to 1,000" in run.stderr


def test_a_misspelt_panel_file_is_named_as_a_file(tmp_path: Path):
    run = run_cli("--quick", "--judges", "panel.tml", "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "panel.tml: no such file" in run.stderr and "is not a judge" not in run.stderr


def test_a_repeated_endpoint_names_both_judges(tmp_path: Path):
    panel = tmp_path / "panel.toml"
    panel.write_text('[[judge]]\nname = "kind"\nprovider = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
                     '[[judge]]\nname = "kind2"\nprovider = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n')
    run = run_cli("--quick", "--judges", str(panel), "--output", str(tmp_path / "out.json"))
    assert run.code == 2, run.stderr
    assert "'kind' and 'kind2' are the same judge" in run.stderr and "appears twice" not in run.stderr


def test_an_html_page_is_not_read_as_a_trec_run(tmp_path: Path):
    page = tmp_path / "report.html"
    page.write_text("<!doctype html>\n<html><head><title>x</title></head><body>a b c d e f g h</body></html>\n")
    with pytest.raises(InputError, match="an HTML or XML file, not a run"):
        read_trec_run(page)


def test_our_questions_as_json_lines_are_not_taken_for_beir_queries(tmp_path: Path):
    lines = tmp_path / "q.jsonl"
    data = json.loads((ROOT / "questions.json").read_text())["questions"][:3]
    lines.write_text("".join(json.dumps(q) + "\n" for q in data))
    run = run_cli("--questions", str(lines), "--quick", "--output", str(tmp_path / "out.json"))
    assert run.code == 2, run.stderr
    assert "the benchmark's own questions as JSON Lines" in run.stderr and "qrels" not in run.stderr.split("own")[0]


def test_the_installed_command_names_itself_in_help(monkeypatch, capsys):
    from components.cli import main

    monkeypatch.setattr(sys, "argv", [str(Path(shutil.which("python") or "x").parent / "retrieval-benchmark")])
    assert main(["compare", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: retrieval-benchmark compare")
    monkeypatch.setattr(sys, "argv", [str(ROOT / "benchmark.py")])
    assert main(["compare", "--help"]) == 0
    assert capsys.readouterr().out.startswith("usage: benchmark.py compare")
