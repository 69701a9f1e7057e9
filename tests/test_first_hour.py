"""A new user's first hour: the log file (one line per record, the traceback once, a header,
--log-keep), did-you-mean for strategies, commands and question fields, one rule for default
outputs, the questions file as --questions, validate's offline notice and --force, and positives
that hold the answer in export-dataset."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from loguru import logger

from components import cli
from components.cli import export_dataset
from components.cli import validate as validate_command
from components.core import resolve_strategy
from components.readers import load_questions
from components.readers.questions_json import known_field_like
from tests.conftest import ROOT, SENTINEL_KEY, clean_env, loguru_messages, run_cli, run_cli_subprocess
from tests.dataset_fixtures import (FILLER, OFFLINE, QUESTIONS, export_args, strict_load, validate_args,
                                    write_corpus, write_questions)
from utils.errors import InputError
from utils.logger import LOG_NAME, add_sinks, log_file_path, prune_logs

BAD_QUESTIONS = [{"id": "q1", "question": "  ", "needle_doc_id": "for"}]  # no question text: an input error


def error_lines(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "| ERROR" in line]


@pytest.fixture
def sinks_cleanup():
    """The sinks a test adds (add_sinks) are removed after it, and only those."""
    opened = []
    yield opened
    for sinks in opened:
        sinks.remove()


# --------------------------------------------------------------------------- the log file

def test_file_sink_writes_one_line_per_record_and_a_traceback_once(tmp_path: Path, sinks_cleanup):
    log_file = tmp_path / "run.log"
    sinks = add_sinks("INFO", log_file)
    sinks_cleanup.append(sinks)
    logger.info("first")
    try:
        raise ValueError("boom")
    except ValueError as err:
        logger.opt(exception=err).debug("with its traceback")
    logger.info("last")
    sinks.close()
    lines = log_file.read_text().splitlines()
    assert "" not in lines, lines
    assert sum(1 for line in lines if line.startswith("Traceback")) == 1, lines
    assert lines[0].endswith("| first") and lines[1].endswith("| with its traceback") and lines[-1].endswith("| last")


def test_an_input_error_logs_no_blank_line_and_its_traceback_once(tmp_path: Path):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps(BAD_QUESTIONS))
    run = run_cli("--questions", str(questions), "--output", str(tmp_path / "r.json"))
    assert run.code == 2, run.stderr
    text = run.log_text()
    assert "has no question text" in text, run.stderr
    assert "" not in text.splitlines(), text
    assert text.count("Traceback (most recent call last)") == 1, text


def test_the_log_opens_with_the_command_line_and_the_run_inputs(tmp_path: Path):
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps(BAD_QUESTIONS))
    corpus = write_corpus(tmp_path / "corpus")
    env = clean_env(ANTHROPIC_API_KEY=SENTINEL_KEY, ANTHROPIC_BASE_URL="http://127.0.0.1:9")
    # the key typed on the command line (as an id filter) must not reach the log
    run = run_cli("--strategy", "baseline", "--questions", str(questions), "--corpus", str(corpus), "--ids",
                  SENTINEL_KEY, "--output", str(tmp_path / "r.json"), env=env)
    assert run.code == 2, run.stderr
    first, second = run.log_text().splitlines()[:2]
    assert "| command line: python benchmark.py " in first and "--strategy baseline" in first, first
    assert f"--questions {questions}" in first and "--ids [REDACTED]" in first, first
    assert f"(in {ROOT})" in first
    assert second.endswith(f"| strategy: baseline · corpus: {corpus} · questions: {questions}"), second
    assert SENTINEL_KEY not in run.log_text()


def _old_logs(folder: Path, count: int) -> list[Path]:
    """``count`` log files named as benchmark.py names them, oldest first (a day apart)."""
    folder.mkdir(parents=True, exist_ok=True)
    paths = []
    for i in range(count):
        path = folder / f"benchmark_2020010{i + 1}-120000_{100 + i}.log"
        path.write_text(f"old log {i}\n")
        os.utime(path, (1_600_000_000 + i * 86_400,) * 2)
        paths.append(path)
    return paths


def test_log_keep_deletes_the_oldest_logs_only(tmp_path: Path):
    log_dir = tmp_path / "logs"
    old = _old_logs(log_dir, 5)
    others = [log_dir / "notes.txt", log_dir / "benchmark_notes.log", log_dir / "benchmark_20200101-000000_1.txt"]
    for path in others:
        path.write_text("mine\n")
        os.utime(path, (1_500_000_000,) * 2)  # older than every log
    (log_dir / "benchmark_20190101-000000_9.log").symlink_to(old[0])  # a link is never deleted either
    run = run_cli("validate", "--questions", str(tmp_path / "none.json"), "--log-dir", str(log_dir),
                  "--log-keep", "3")
    assert run.code == 2 and run.log_file is not None, run.stderr
    logs = sorted(p.name for p in log_dir.iterdir() if LOG_NAME.fullmatch(p.name) and not p.is_symlink())
    assert logs == sorted([old[3].name, old[4].name, run.log_file.name])  # the current one and the 2 newest
    assert all(path.read_text() == "mine\n" for path in others)
    assert (log_dir / "benchmark_20190101-000000_9.log").is_symlink()
    assert "deleted 3 old log file(s)" in run.log_text()


def test_log_keep_0_keeps_every_log(tmp_path: Path):
    log_dir = tmp_path / "logs"
    old = _old_logs(log_dir, 3)
    run = run_cli("validate", "--questions", str(tmp_path / "none.json"), "--log-dir", str(log_dir),
                  "--log-keep", "0")
    assert run.code == 2, run.stderr
    assert all(path.exists() for path in old) and run.log_file.exists()
    bad = run_cli("validate", "--questions", str(tmp_path / "none.json"), "--log-dir", str(log_dir),
                  "--log-keep", "-1")
    assert bad.code == 2 and "-1 must be 0 or more" in bad.stderr


def test_prune_logs_never_deletes_the_current_log(tmp_path: Path):
    old = _old_logs(tmp_path, 3)
    current = log_file_path(tmp_path)
    assert LOG_NAME.fullmatch(current.name)  # the names benchmark.py gives are the ones pruned
    current.write_text("now\n")
    os.utime(current, (1_000_000_000,) * 2)  # the oldest of all by its time
    assert prune_logs(tmp_path, 1, current) == old
    assert [p.name for p in tmp_path.iterdir()] == [current.name]
    assert prune_logs(tmp_path / "missing", 1, current) == []  # never raises


# --------------------------------------------------------------------------- did you mean

def test_strategy_did_you_mean():
    with pytest.raises(InputError, match=r"unknown strategy 'modular-no-lm': did you mean 'modular-no-llm'"):
        resolve_strategy("modular-no-lm")
    with pytest.raises(InputError, match=r"did you mean 'poc\.bm25:BM25Retriever'\?"):
        resolve_strategy("poc.bm25.BM25Retriever")  # a factory written without its colon
    for name in ("poc.bm25.no_such_factory", "no_such_pkg.mod.factory", "bm99"):
        with pytest.raises(InputError) as err:
            resolve_strategy(name)
        assert "did you mean" not in str(err.value) and "package.module:factory" in str(err.value)


@pytest.mark.parametrize("word,message", [
    ("comapre", "unknown command 'comapre': did you mean compare?"),
    ("valdate", "unknown command 'valdate': did you mean validate?"),
    ("questions.json", "did you mean --questions questions.json?"),
    ("frobnicate", "the commands are compare, validate, export-dataset, export-run, report, label, calibrate"),
])
def test_a_mistyped_command_is_one_line(word: str, message: str):
    run = run_cli(word, "a.json", "b.json")
    assert run.code == 2
    lines = run.stderr.splitlines()
    assert len(lines) == 1 and "| ERROR" in lines[0] and message in lines[0], run.stderr


def _questions_with_lookalikes(path: Path) -> Path:
    path.write_text(json.dumps({"needle_doc_id": "alpha", "questions": [
        {"id": "a", "question": "How do I turn on quorum mode?", "answer": "The zephyr flag.", "needle": "beta",
         "category": "config", "difficulty": "easy", "reference_ranks": [1]},
        {"id": "b", "question": "What colour are bananas?", "answer": "Yellow.", "needle_doc_id": "beta"},
        # both spellings: the known field is read, the other is metadata, no warning for it
        {"id": "c", "question": "Which flag?", "expected_answer": "The zephyr flag.", "answer": "zephyr",
         "expectedAnswr": "x"},
    ]}))
    return path


@pytest.mark.parametrize("name, known", [
    ("Needles", "needles"),  # graded needles are a field of their own, not an alias of needle_doc_ids
    ("needle_ids", "needle_doc_ids"), ("expectedAnswer", "expected_answer"), ("expected_anwser", "expected_answer"),
    ("needles", None), ("category", None)])
def test_known_field_like(name: str, known: str | None):
    assert known_field_like(name) == known


def test_lookalike_question_fields_warn_once_per_file(tmp_path: Path):
    path = _questions_with_lookalikes(tmp_path / "q.json")
    with loguru_messages("WARNING") as warnings:
        qset = load_questions(path)
    assert len(warnings) == 1, warnings
    (warning,) = warnings
    assert warning.startswith(f"{path}: ")
    assert "'answer' in 2 questions (did you mean 'expected_answer'?)" in warning
    assert "'needle' in 1 question (did you mean 'needle_doc_id'?)" in warning
    for legitimate in ("category", "difficulty", "reference_ranks", "expectedAnswr"):
        assert legitimate not in warning
    assert qset.questions[0].extra["answer"] == "The zephyr flag."  # still kept as metadata
    with loguru_messages("WARNING") as clean:
        load_questions(write_questions(tmp_path / "fine.json"))
    assert clean == []


def test_lookalike_fields_are_named_before_any_work(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    path = _questions_with_lookalikes(tmp_path / "q.json")
    run = run_cli("validate", "--questions", str(path), "--corpus", str(corpus), "--json", str(tmp_path / "v.json"))
    assert run.code == 0, run.stderr
    lines = run.stderr.splitlines()
    warned = [i for i, line in enumerate(lines) if "did you mean 'expected_answer'" in line]
    started = [i for i, line in enumerate(lines) if "Validating" in line]
    assert len(warned) == 1 and started and warned[0] < started[0], run.stderr


# --------------------------------------------------------------------------- default outputs

def _default_outputs() -> dict[str, str]:
    from components.cli import report

    return {
        "run": Path(cli.run_parser().parse_args([]).output).name,
        "validate": str(cli.command_parser("validate", validate_command).parse_args(["q.json"]).json),
        "export-dataset": str(cli.command_parser("export-dataset", export_dataset)
                              .parse_args(["--questions", "q.json"]).output),
        "report": str(cli.command_parser("report", report).parse_args(["r.json"]).output),
    }


@pytest.mark.skipif(shutil.which("git") is None or not (ROOT / ".git").exists(), reason="not a git checkout")
def test_every_default_output_is_ignored_by_git():
    outputs = _default_outputs()
    assert outputs == {"run": "benchmark_results.json", "validate": "validation.json",
                       "export-dataset": "dataset.jsonl", "report": "report.html"}
    names = [*outputs.values(), "runs/20260101T000000Z_baseline.json", "logs/benchmark_20260101-000000_1.log",
             "some/folder/validation.json"]
    done = subprocess.run(["git", "check-ignore", "--no-index", "--verbose", "--non-matching", *names], cwd=ROOT,
                          capture_output=True, text=True)
    not_ignored = [line.split("\t")[-1] for line in done.stdout.splitlines() if line.startswith("::")]
    assert not_ignored == [] and done.returncode == 0, done.stdout + done.stderr


def test_export_dataset_writes_dataset_jsonl_in_the_current_folder(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] == "q_pass"])
    work = tmp_path / "work"
    work.mkdir()
    done = run_cli("export-dataset", "--questions", str(questions), "--corpus", str(corpus), cwd=work)
    assert done.code == 0, done.stderr
    assert [p.name for p in work.iterdir()] == ["dataset.jsonl"]
    assert [line["id"] for line in map(strict_load, (work / "dataset.jsonl").read_text().splitlines())] == ["q:q_pass"]


@pytest.mark.parametrize("command", ["validate", "export-dataset"])
def test_help_states_the_default_output_rule(command: str):
    run = run_cli(command, "--help")
    assert run.code == 0
    text = " ".join(run.stdout.split())
    assert "Every command writes its default output in the current folder under a fixed name" in text
    assert "--log-keep" in text


# ------------------------------------------------------------------- validate: --questions, offline notice, --force

def test_validate_takes_the_questions_file_as_an_option_too(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] == "q_pass"])
    out = tmp_path / "v.json"
    run = run_cli("validate", "--questions", str(questions), "--corpus", str(corpus), "--json", str(out))
    assert run.code == 0, run.stderr
    assert [q["id"] for q in strict_load(out.read_text())["questions"]] == ["q_pass"]
    same = run_cli("validate", str(questions), "--questions", str(questions), "--corpus", str(corpus), "--json",
                   str(out))
    assert same.code == 0, same.stderr


@pytest.mark.parametrize("args,message", [
    (["A.json", "--questions", "B.json"], "two questions files (A.json and --questions B.json): give one"),
    ([], "validate needs a questions file"),
])
def test_validate_questions_file_errors(tmp_path: Path, args: list[str], message: str):
    out = tmp_path / "v.json"
    run = run_cli("validate", *args, "--json", str(out))
    assert run.code == 2
    assert len(error_lines(run.stderr)) == 1 and message in error_lines(run.stderr)[0], run.stderr
    assert not out.exists()


def test_offline_validate_says_once_that_lexical_necessity_is_unreliable(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json")  # q_wrong_needle and q_generic fail necessity
    with loguru_messages("WARNING") as warnings:
        assert validate_command.run(validate_args(questions, corpus, tmp_path / "v.json"), OFFLINE) == 0
    notes = [w for w in warnings if "single-topic corpus" in w]
    assert len(notes) == 1 and notes[0].startswith("Note: 2 question(s) fail necessity"), warnings
    passing = write_questions(tmp_path / "p.json", [q for q in QUESTIONS if q["id"] in ("q_pass", "q_pass2")])
    with loguru_messages("WARNING") as quiet:
        validate_command.run(validate_args(passing, corpus, tmp_path / "v2.json"), OFFLINE)
    assert not [w for w in quiet if "single-topic" in w]  # nothing fails necessity: nothing to say


def test_write_clean_with_the_offline_judge_asks_for_force(tmp_path: Path):
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json")
    out, clean = tmp_path / "v.json", tmp_path / "clean.json"
    run = run_cli("validate", str(questions), "--corpus", str(corpus), "--json", str(out), "--write-clean", str(clean))
    assert run.code == 2, run.stderr
    (line,) = error_lines(run.stderr)
    assert "would drop 1 question(s) that fail only necessity (q_generic)" in line and "add --force" in line
    assert out.exists() and not clean.exists()  # the validation is kept; nothing dropped silently
    args = validate_args(questions, corpus, out, "--write-clean", str(clean), "--force")
    assert validate_command.run(args, OFFLINE) == 0
    assert [q["id"] for q in strict_load(clean.read_text())["questions"]] == ["q_pass", "q_pass2"]


def test_write_clean_with_the_llm_judge_needs_no_force(tmp_path: Path):
    from components.judges.providers.scripted import play
    from components.api import Settings

    grades = [9, 1, 9, 5]  # q_pass: sufficiency, necessity; q_pass2: sufficiency, then necessity 5 > 3
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] in ("q_pass", "q_pass2")])
    clean = tmp_path / "clean.json"
    with play(*(f'{{"grade": {g}, "reasoning": "scripted"}}' for g in grades)) as script, \
            loguru_messages("WARNING") as warnings:
        code = validate_command.run(validate_args(questions, corpus, tmp_path / "v.json", "--write-clean", str(clean)),
                                    Settings.from_env({"BENCHMARK_JUDGE": "scripted"}))
    assert code == 0 and len(script.prompts) == len(grades)
    report = strict_load((tmp_path / "v.json").read_text())
    assert [q["verdict"] for q in report["questions"]] == ["pass", "fail"]
    assert [q["id"] for q in strict_load(clean.read_text())["questions"]] == ["q_pass"]
    assert not [w for w in warnings if "single-topic" in w]


# --------------------------------------------------------------------------- export-dataset: positives hold the answer

ANSWER_DOCS = {
    # BM25 for the question prefers the first section; only the second holds the answer
    "zeta": "# Zeta\n\n## Timeout\n\nConfigure the widget timeout: the widget timeout is a widget setting. "
            f"{FILLER}\n\n"
            f"## Budget\n\nSet retry_budget to 30 seconds on the controller. {FILLER}\n",
    "eta": "# Eta\n\nThe gadget hums quietly at night.\n",
    "theta": "# Theta\n\nMoons circle planets.\n",
}
ANSWER_QUESTIONS = [
    {"id": "timeout", "question": "How do I configure the widget timeout?",
     "expected_answer": "Set retry_budget to 30 seconds.", "needle_doc_id": "zeta"},
    {"id": "hum", "question": "Why does the gadget hum?", "expected_answer": "Its flux capacitor vibrates.",
     "needle_doc_id": "eta"},
    {"id": "moons", "question": "What do moons circle?", "needle_doc_id": "theta"},
]


def test_positives_hold_the_expected_answer_first(tmp_path: Path, caplog_loguru):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for doc_id, text in ANSWER_DOCS.items():
        (corpus / f"{doc_id}.md").write_text(text)
    questions = tmp_path / "qs.json"
    questions.write_text(json.dumps({"questions": ANSWER_QUESTIONS}))
    out = tmp_path / "d.jsonl"
    assert export_dataset.run(export_args(questions, corpus, out, "--positives", "2"), OFFLINE) == 0
    lines = {line["id"]: line for line in map(strict_load, out.read_text().splitlines())}
    timeout = lines["qs:timeout"]
    assert [c["chunk_id"] for c in timeout["positive_ctxs"]] == ["zeta#1", "zeta#0"]  # the answer's chunk first
    assert timeout["positive_ctxs"][0]["bm25_score"] < timeout["positive_ctxs"][1]["bm25_score"]
    assert timeout["metadata"]["positive_has_answer"] is True
    assert lines["qs:hum"]["metadata"]["positive_has_answer"] is False  # no needle chunk holds it: flagged
    assert lines["qs:moons"]["metadata"]["positive_has_answer"] is None  # no expected answer to look for
    summary = [m for m in caplog_loguru if "dataset lines written" in m]
    assert len(summary) == 1 and "1 without a positive holding the expected answer's key terms" in summary[0]
    assert "(positive_has_answer false: hum)" in summary[0]


def test_the_options_page_gives_each_commands_real_default_output():
    """docs/options.md's "Where outputs go" table names each command's default output as its parser
    has it; an output option without a default is said to be required (export-run's -o has none)."""
    import importlib

    page = (ROOT / "docs" / "options.md").read_text(encoding="utf-8")
    table = page[page.index("## Where outputs go"):].split("\n\n")[2]
    rows = {cells[1].strip("` "): cells[2].strip() for line in table.splitlines()
            if len(cells := line.split("|")) > 3}
    checked = []
    for command, (module, _help) in cli.COMMANDS.items():
        if command not in rows:
            continue
        parser = cli.command_parser(command, importlib.import_module(module))
        action = next(a for a in parser._actions if a.dest in ("output", "json"))
        if action.required or action.default is None:
            assert "required" in rows[command], (command, rows[command])
        else:
            assert rows[command].startswith(f"`{action.default}`"), (command, rows[command], action.default)
        checked.append(command)
    assert sorted(checked) == ["audit-judge", "export-dataset", "export-run", "label", "pool", "report", "validate"]


@pytest.mark.slow  # the import path of a real process (benchmark.entry), where utils.py could shadow the benchmark's
def test_a_retriever_module_in_the_current_folder_is_found(tmp_path: Path):
    """The README's step 3 from the user's own folder: ``my_retriever.py`` beside the docs and
    questions, the benchmark run from there (as the installed ``retrieval-benchmark`` is) finds it;
    the folder comes last on the import path, so it shadows none of the benchmark's modules."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    step3 = readme[readme.index("**3. A retriever**"):]
    (tmp_path / "my_retriever.py").write_text(re.search(r"```python\n(.*?)```", step3, re.S).group(1))
    (tmp_path / "utils.py").write_text("raise SystemExit('the current folder shadowed the benchmark')\n")
    corpus = write_corpus(tmp_path / "corpus")
    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] == "q_pass"])
    done = run_cli_subprocess("--corpus", str(corpus), "--questions", str(questions), "--strategy",
                              "my_retriever:make", "--output", str(tmp_path / "r.json"), cwd=tmp_path)
    assert done.code == 0, done.stderr
    assert json.loads((tmp_path / "r.json").read_text())["run"]["strategy"] == "my_retriever:make"
