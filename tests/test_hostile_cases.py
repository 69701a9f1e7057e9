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


def test_a_tau_that_is_not_defined_says_why():
    from components.analysis.compare import compare_runs
    from tests.test_certificate import run_of

    # judge b grades every run alike: its ranking cannot order them, so its τ is not defined
    grades = {"r1": (8, 5, 8), "r2": (6, 5, 6), "r3": (4, 5, 4), "r4": (2, 5, 2)}
    text = str(compare_runs([run_of(label, g) for label, g in grades.items()], list(grades),
                            metrics=["avg_llm_grade"]))
    assert "b τ n/a (ranks tied: it cannot order these runs)" in text and "τ -" not in text


def test_a_judge_that_graded_nothing_has_no_figures():
    from components.analysis.panel import summary_lines
    from components.report.panel import _judges_table

    from utils.records.sections import PanelSection

    panel = PanelSection.from_json({
        "judges": ["ok", "dead"], "aggregate": "median", "graded_by": {"1": 3},
        "agreement": {"pairs": [], "pass_marks": [7],
                      "alpha_ordinal": {"value": None, "ci95": None, "questions": 0, "method": "m", "resamples": 0,
                                        "seed": 0}},
        "per_judge": {"ok": {"graded": 3, "metrics": {"avg_llm_grade": 8.0, "pass_rate_7": 100.0},
                             "ci95": {"pass_rate_7": [100.0, 100.0]}, "grade_errors": {}, "unusable": None},
                      "dead": {"graded": 0, "metrics": {"avg_llm_grade": None, "pass_rate_7": 0.0},
                               "ci95": {"pass_rate_7": [0.0, 0.0]}, "grade_errors": {}, "unusable": "timeout"}}},
        "panel", "fix it")
    lines = summary_lines(panel)
    dead = next(line for line in lines if line.strip().startswith("dead"))
    assert "pass ≥ 7 n/a" in dead and "0.0" not in dead
    ok = next(line for line in lines if line.strip().startswith("ok"))
    assert "pass ≥ 7 100.0 [100.0, 100.0]%" in ok
    assert "<td class=num>n/a</td>" in _judges_table(panel, str)


def test_an_unknown_cost_is_never_a_saving():
    from components.analysis.adaptive import cost_line

    from utils.records.sections import AdaptiveCalls, AdaptiveCost, AdaptiveSection

    record = AdaptiveSection(mode="until_decided", judged=20, questions=40, calls=AdaptiveCalls(20, 20, 40),
                             cost_usd=AdaptiveCost(None, 0.0, None))
    line = cost_line(record)
    assert "$0.0000 saved" not in line and "20 calls saved, their cost unknown" in line
    priced = AdaptiveSection(mode="until_decided", judged=20, questions=40, calls=AdaptiveCalls(20, 20, 40),
                             cost_usd=AdaptiveCost(0.5, 0.5, 1.0))
    assert "(20 calls, $0.5000 saved;" in cost_line(priced)


def test_the_resume_hint_names_the_script_as_it_was_run(monkeypatch):
    from components.run.benchmark_run import _continue_command

    monkeypatch.setattr(sys, "argv", ["../tools/benchmark.py", "--quick"])
    assert _continue_command(["--quick"], Path("runs/x.journal.jsonl")).startswith(
        "python ../tools/benchmark.py --quick --resume runs/x.journal.jsonl")
    monkeypatch.setattr(sys, "argv", ["/usr/local/bin/retrieval-benchmark"])
    assert _continue_command([], Path("j")) == "retrieval-benchmark --resume j"


def test_a_configuration_name_reaches_the_console_escaped(tmp_path: Path):
    suite = tmp_path / "suite.yaml"
    suite.write_text('suites:\n  s:\n    - {name: "evil\\n\\u001b[31mred", strategy: baseline}\n'
                     '    - {name: b, strategy: baseline}\n')
    run = run_cli("--suite", f"{suite}:s", "--limit", "2", "--output", str(tmp_path / "out.json"))
    assert run.code == 0, run.stderr
    assert "\x1b" not in run.stdout and "== evil\\n\\x1b[31mred ==" in run.stdout
    assert all("\x1b" not in p.name and "\n" not in p.name for p in tmp_path.rglob("*"))


@pytest.mark.parametrize("variable", ["SK-ANT-API03-ABCDEFGHIJKLMNOP", "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"])
def test_a_key_pasted_into_api_key_env_is_refused_unshown(tmp_path: Path, variable: str):
    panel = tmp_path / "panel.toml"
    panel.write_text(f'[[judge]]\nname = "j"\nprovider = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
                     f'api_key_env = "{variable}"\n')
    run = run_cli("--quick", "--judges", str(panel), "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "never the key itself" in run.stderr, run.stderr
    assert variable not in run.stderr + run.stdout and variable.lower() not in (run.stderr + run.stdout).lower()


def test_a_name_in_capitals_stays_a_valid_api_key_env():
    from utils.redaction import looks_like_a_key

    assert not looks_like_a_key("LOCAL_A_KEY") and not looks_like_a_key("MY_JUDGE_KEY_2")
    assert looks_like_a_key("sk-proj-abc") and looks_like_a_key("A1" * 16)


def test_a_key_in_an_error_message_is_masked(tmp_path: Path):
    suite = tmp_path / "suite.yaml"
    suite.write_text("suites:\n  s:\n    - {name: a, strategy: baseline, chunk_size: sk-ant-api03-PASTEDKEY0123456}\n")
    run = run_cli("--suite", f"{suite}:s", "--quick", "--output", str(tmp_path / "out.json"))
    assert run.code == 2 and "PASTEDKEY" not in run.stderr and "[REDACTED]" in run.stderr, run.stderr


def test_report_redacts_the_key_a_panel_judges_variable_holds(tmp_path: Path):
    from tests.test_certificate import run_of

    key = "local-judge-key-7f3a9c2e1d"
    run = run_of("r1", (8, 6, 8))
    run.run.judge.details["judges"][1]["api_key_env"] = "MY_JUDGE_KEY"
    doc = run.to_json()
    doc["results"][0]["question"] = f"what is {key}?"
    path = tmp_path / "run.json"
    path.write_text(json.dumps(doc))
    from tests.conftest import clean_env

    done = run_cli("report", str(path), "-o", str(tmp_path / "r.html"), env=clean_env(MY_JUDGE_KEY=key))
    assert done.code == 0, done.stderr
    page = (tmp_path / "r.html").read_text()
    assert key not in page and "what is [REDACTED]?" in page


def test_the_report_links_its_audit_and_shows_no_empty_field(tmp_path: Path):
    from components.report.page import render_report
    from tests.test_certificate import run_of

    run = run_of("r1", (8, 6, 8))
    page = render_report([run], ["r1"], extra="<section id=judge-audit><h2>Judge audit</h2></section>")
    assert page.index('href="#judge-audit"') < page.index("<section id=judge-audit>")
    doc = run.to_json()
    doc["run"]["index"] = {"cache": "miss", "key": ""}
    page = render_report([doc], ["r1"])
    assert "cache miss" in page and "key </td>" not in page and ", key" not in page


def test_a_panel_judges_key_in_its_own_variable_is_in_no_output(tmp_path: Path):
    """A panel run whose openai judge's key is in a custom variable (api_key_env), with that key pasted into a
    question and an expected answer: the key is in no output: console, log, results, journal, report."""
    from tests.conftest import clean_env
    from tests.loopback_openai import OpenAILoopback

    key = "local-judge-key-9d8c7b6a5f4e3d2c"
    data = json.loads((ROOT / "questions.json").read_text())["questions"][:3]
    data[0]["question"] += f" (my key is {key})"
    data[1]["expected_answer"] = f"{data[1]['expected_answer']} {key}"
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps({"questions": data}))
    logs = tmp_path / "logs"
    with OpenAILoopback() as server:
        panel = tmp_path / "panel.toml"
        panel.write_text('[[judge]]\nname = "offline"\nprovider = "offline"\n[[judge]]\nname = "local"\n'
                         f'provider = "openai"\nmodel = "gpt-5.4-mini"\nbase_url = "{server.url}"\n'
                         'api_key_env = "MY_JUDGE_KEY"\n')
        run = run_cli("--judges", str(panel), "--questions", str(questions), "--strategy", "baseline",
                      "--output", str(tmp_path / "out.json"), "--log-dir", str(logs),
                      env=clean_env(MY_JUDGE_KEY=key))
    assert run.code in (0, 8), run.stderr[-2000:]
    report = run_cli("report", str(tmp_path / "out.json"), "-o", str(tmp_path / "r.html"),
                     env=clean_env(MY_JUDGE_KEY=key))
    assert report.code == 0, report.stderr
    written = [p for p in tmp_path.rglob("*") if p.is_file() and p.name not in ("q.json", "panel.toml")]
    assert any(p.name == "out.json" for p in written) and any(p.suffix == ".log" for p in written)
    for text in (run.stdout, run.stderr, report.stdout, report.stderr, *(p.read_text() for p in written)):
        assert key not in text
    assert "[REDACTED]" in (tmp_path / "out.json").read_text()


@pytest.mark.parametrize("placeholder", ["x", "none", "EMPTY", "dummy"])
def test_a_placeholder_key_is_not_cut_out_of_every_word(placeholder: str):
    """Local servers accept any key; users set OPENAI_API_KEY=x or EMPTY. Redacting that would cut it out of
    every word holding it ("e[REDACTED]it 8", "pro[REDACTED]y"): a known placeholder is not a secret, while
    any other value of 3 characters or more is, however short."""
    from utils.redaction import Redactor

    text = "exit 8: proxy none, EMPTY or dummy values"
    assert Redactor([placeholder])(text) == text
    assert Redactor(["s3cr3t!"])("pw s3cr3t! here") == "pw [REDACTED] here"
    assert Redactor(["q7z"])("a short q7z password") == "a short [REDACTED] password"


def test_a_recorded_needle_listed_three_times_ranks_at_its_first_position(tmp_path: Path):
    data = json.loads((ROOT / "examples" / "recorded_retrievals.json").read_text())
    first = data["questions"][0]
    needle, other = first["retrieved"][0], first["retrieved"][1]
    cases = {"front": [needle, needle, needle, other], "behind": [other, needle, needle, needle],
             "texts": [other, dict(needle, text=needle["text"] + " (a)"), dict(needle, text=needle["text"] + " (b)"),
                       needle]}
    data["questions"] = [dict(first, id=name, question=f"{first['question']} ({name})", retrieved=items)
                         for name, items in cases.items()]
    recorded = tmp_path / "recorded.json"
    recorded.write_text(json.dumps(data))
    run = run_cli("--strategy", "recorded", "--questions", str(recorded), "--output", str(tmp_path / "out.json"))
    assert run.code == 0, run.stderr
    ranks = {r["question_id"]: r["rank"] for r in json.loads((tmp_path / "out.json").read_text())["results"]}
    assert ranks == {"front": 1, "behind": 2, "texts": 2}


def test_the_report_of_several_runs_has_unique_element_ids(tmp_path: Path):
    import re

    from components.report.page import render_report
    from tests.test_certificate import run_of

    runs = [run_of(f"r{i}", (8 - i, 6, 8 - i)) for i in range(3)]
    page = render_report(runs, ["r0", "r1", "r2"],
                         extra="<section id=judge-audit><h2>Judge audit</h2></section>")
    ids = re.findall(r"""\sid=["']?([^"'\s>]+)""", page)
    assert ids and len(ids) == len(set(ids)), sorted(i for i in ids if ids.count(i) > 1)


def test_a_known_answers_count_refused_after_retrieval_leaves_nothing(tmp_path: Path):
    """--known-answers N with fewer eligible questions than N is found out only once retrieval ran: exit 2,
    and like every other exit 2, nothing written: no journal, no command to continue."""
    run = run_cli("--strategy", "baseline", "--quick", "--known-answers", "5", "--output", str(tmp_path / "o.json"),
                  cwd=tmp_path)
    assert run.code == 2, run.stderr
    assert "known-answers" in run.stderr and "to continue" not in run.stderr.lower()
    assert not (tmp_path / "o.json").exists() and not list(tmp_path.rglob("*.journal.jsonl"))
