"""What a new user meets in the run: one strategy twice, --resume taking its settings from the
file, compare finding run ids where the run kept them, a summary that says what was run, and a
question line that explains itself."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.conftest import ROOT, run_cli


def test_one_strategy_twice_is_labelled_and_compared(tmp_path: Path):
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline,baseline", "--limit", "3", "--output", str(out))
    assert run.code == 0, run.stderr  # it used to write both runs, then exit 2: "labels must be distinct"
    assert "== baseline ==" in run.stdout and "== baseline-2 ==" in run.stdout
    assert (tmp_path / "r.baseline.json").is_file() and (tmp_path / "r.baseline-2.json").is_file()
    comparison = json.loads(next((tmp_path / "runs").glob("*_comparison.json")).read_text())
    assert [r["label"] for r in comparison["runs"]] == ["baseline", "baseline-2"]
    assert all(m["delta"] == 0 for m in comparison["comparisons"][0]["metrics"] if m["n"])  # results repeat


def test_the_summary_says_what_was_run_and_the_line_explains_itself(tmp_path: Path):
    run = run_cli("--limit", "2", "--strategy", "baseline", "--output", str(tmp_path / "r.json"))
    assert run.code == 0, run.stderr
    first, *head = run.stdout.splitlines()[:6]
    assert first.split() == ["results", str(tmp_path / "r.json")]  # first: where the results went
    assert head[0].split() == ["strategy", "baseline"]
    assert head[1].startswith("corpus") and "documents" in head[1] and "chunks" in head[1]
    assert head[2].startswith("questions") and "questions.json: 2" in head[2]
    assert head[3].split() == ["k", "5"] and head[4].startswith("judge") and "lexical proxy" in head[4]
    lines = run.stderr.splitlines()
    first = next(i for i, line in enumerate(lines) if "[1/2]" in line)
    assert "legend: R3 ~ = needle at rank 3" in lines[first + 1]
    assert run.stderr.count("legend:") == 1


def test_resume_takes_the_recorded_settings(tmp_path: Path):
    questions = tmp_path / "q.json"
    shutil.copy(ROOT / "questions.json", questions)
    out = tmp_path / "r.json"
    first = run_cli("--limit", "3", "--k", "3", "--strategy", "baseline", "--questions", str(questions),
                    "--output", str(out))
    assert first.code == 0, first.stderr
    again = run_cli("--resume", str(out), "--limit", "3", "--output", str(tmp_path / "again.json"))
    assert again.code == 0, again.stderr  # questions file, strategy and k came from the file
    data = json.loads((tmp_path / "again.json").read_text())
    assert (data["run"]["strategy"], data["run"]["k"], data["run"]["questions_file"]) == ("baseline", 3, str(questions))
    assert data["run"]["resumed_rows"] == 3
    questions.write_text(questions.read_text().replace("?", "? ", 1))  # a real conflict is still refused
    refused = run_cli("--resume", str(out), "--limit", "3", "--output", str(tmp_path / "x.json"))
    assert refused.code == 2
    line = next(ln for ln in refused.stderr.splitlines() if "| ERROR" in ln)
    assert "the questions file differs" in line and f"the recorded questions file {questions}" in line
    assert "run with the same questions file as the run you continue" in line


def test_compare_finds_run_ids_in_the_runs_folder_of_the_output(tmp_path: Path):
    out = tmp_path / "results" / "base.json"
    out.parent.mkdir()
    assert run_cli("--limit", "2", "--strategy", "baseline", "--output", str(out)).code == 0
    assert run_cli("--limit", "2", "--strategy", "modular-no-llm", "--output", str(out)).code == 0
    ids = sorted(p.stem for p in (tmp_path / "results" / "runs").glob("*.json"))
    compared = run_cli("compare", str(out), ids[0])  # the id lives in results/runs/, not ./runs/
    assert compared.code == 0, compared.stderr
    assert "Compared on 2 questions" in compared.stdout


def test_resume_keeps_the_selection_of_the_run(tmp_path: Path):
    out = tmp_path / "r.json"
    assert run_cli("--quick", "--strategy", "baseline", "--output", str(out)).code == 0
    again = run_cli("--resume", str(out), "--output", str(tmp_path / "again.json"))
    assert again.code == 0, again.stderr
    data = json.loads((tmp_path / "again.json").read_text())
    assert data["question_count"] == 5 and data["run"]["resumed_rows"] == 5  # not the file's 44 questions


def test_resume_refuses_another_judge_repeats(tmp_path: Path):
    """The kept rows hold two grades each: a resumed run asking for one would record one count while
    its rows hold another. Refused before any grading, with the fix."""
    out = tmp_path / "r.json"
    assert run_cli("--limit", "2", "--strategy", "baseline", "--judge-repeats", "2", "--output", str(out)).code == 0
    again = run_cli("--resume", str(out), "--output", str(tmp_path / "again.json"))
    assert again.code == 2, again.stderr
    errors = [line for line in again.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and "graded each question 2 time(s), this one asks --judge-repeats 1" in errors[0], errors
    assert "run with --judge-repeats 2" in errors[0] and not (tmp_path / "again.json").exists()
    same = run_cli("--resume", str(out), "--judge-repeats", "2", "--output", str(tmp_path / "same.json"))
    assert same.code == 0, same.stderr


def test_resume_refuses_a_changed_chunk_relevance_prompt(tmp_path: Path):
    """The relevance prompt's hash is recorded in run.judge and checked on --resume, as the grading
    prompt's is: rows rated with another prompt are not mixed with new ones."""
    out = tmp_path / "r.json"
    assert run_cli("--limit", "2", "--strategy", "baseline", "--output", str(out)).code == 0
    data = json.loads(out.read_text())
    recorded = data["run"]["judge"]["relevance_prompt_sha256"]
    assert isinstance(recorded, str) and len(recorded) == 64
    same = run_cli("--resume", str(out), "--output", str(tmp_path / "same.json"))
    assert same.code == 0, same.stderr
    data["run"]["judge"]["relevance_prompt_sha256"] = "0" * 64  # rated with another relevance prompt
    (tmp_path / "old.json").write_text(json.dumps(data))
    refused = run_cli("--resume", str(tmp_path / "old.json"), "--output", str(tmp_path / "x.json"))
    assert refused.code == 2 and not (tmp_path / "x.json").exists()
    errors = [line for line in refused.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1, errors
    assert "the chunk-relevance prompt differs (relevance_prompt_sha256 differs" in errors[0], errors


def test_resume_alone_writes_to_the_output_the_run_recorded(tmp_path: Path):
    """``--resume FILE`` without ``--output``, from another folder: the results go where the run
    wrote them (FILE itself here), not to ./benchmark_results.json, and the run says where."""
    out = tmp_path / "results" / "r.json"
    assert run_cli("--limit", "2", "--strategy", "baseline", "--output", str(out)).code == 0
    recorded = json.loads(out.read_text())["run"]
    assert recorded["output"] == str(out)  # absolute
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    for resume in (out, next((tmp_path / "results" / "runs").glob("*.json"))):  # the output, or its history file
        again = run_cli("--resume", str(resume), cwd=elsewhere)
        assert again.code == 0, again.stderr[-2000:]
        assert f"the results go to {out}, the output of the run it continues" in again.stderr
        assert json.loads(out.read_text())["run"]["resumed_rows"] == 2
        assert list(elsewhere.iterdir()) == []  # nothing written where the command was run
    given = run_cli("--resume", str(out), "--output", str(tmp_path / "given.json"), cwd=elsewhere)
    assert given.code == 0 and (tmp_path / "given.json").is_file()  # --output still wins


def test_resume_alone_of_a_file_without_a_recorded_output(tmp_path: Path):
    """A results file written before outputs were recorded: FILE itself, or benchmark_results.json
    beside the runs/ folder it sits in."""
    out = tmp_path / "r.json"
    assert run_cli("--limit", "2", "--strategy", "baseline", "--output", str(out)).code == 0
    old = json.loads(out.read_text())
    del old["run"]["output"]
    (tmp_path / "old" / "runs").mkdir(parents=True)
    plain, history = tmp_path / "old" / "old.json", tmp_path / "old" / "runs" / "20250101T000000Z_baseline.json"
    for path in (plain, history):
        path.write_text(json.dumps(old))
    assert run_cli("--resume", str(plain), cwd=tmp_path).code == 0
    assert json.loads(plain.read_text())["run"]["resumed_rows"] == 2
    assert run_cli("--resume", str(history), cwd=tmp_path).code == 0
    assert json.loads((tmp_path / "old" / "benchmark_results.json").read_text())["run"]["resumed_rows"] == 2
    assert json.loads(history.read_text()) == old  # the history file itself is never written over


STOPPER = """
class Stopper:
    def index(self, chunks):
        pass

    def retrieve(self, query, k):
        raise KeyboardInterrupt  # as Ctrl-C during the first question


def make():
    return Stopper()
"""


def test_a_run_that_fails_before_writing_leaves_no_empty_output_folder(tmp_path: Path):
    out = tmp_path / "new" / "deeper" / "r.json"
    refused = run_cli("--strategy", "no-such-strategy", "--output", str(out))
    assert refused.code == 2 and not (tmp_path / "new").exists()  # refused after --output was checked
    (tmp_path / "stopper.py").write_text(STOPPER)
    stopped = run_cli("--strategy", "stopper:make", "--limit", "2", "--output", str(out), cwd=tmp_path)
    assert stopped.code == 130, stopped.stderr[-2000:]
    assert not (tmp_path / "new").exists()  # runs/ was made for the journal, and nothing was written: gone
    kept = tmp_path / "kept"
    (kept / "runs").mkdir(parents=True)
    stopped = run_cli("--strategy", "stopper:make", "--limit", "2", "--output", str(kept / "r.json"), cwd=tmp_path)
    assert stopped.code == 130 and (kept / "runs").is_dir()  # a folder the run did not make stays
