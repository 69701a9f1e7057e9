"""Hostile or foreign files given to the commands around the run: one clear line, exit 2, no
traceback on the console, nothing written — and --resume checks its file before any judge call."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path

import pytest

from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer


def valid(tmp_path: Path) -> dict:
    """A graded run's results, made in process through the API (no command line needed)."""
    from components.api import evaluate
    from tests.conftest import ROOT

    questions = json.loads((ROOT / "questions.json").read_text())["questions"][:3]
    return evaluate("baseline", questions, judge="offline").to_json()


def _set(path: list, value):
    def change(doc: dict) -> None:
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return change


HOSTILE = [  # (name, text of the file made from a valid results dict, words of the error line)
    ("rank-as-string", lambda d: (_set(["results", 0, "rank"], "1")(d), json.dumps(d))[1], "rank is a string"),
    ("grade-as-string", lambda d: (_set(["results", 1, "llm_grade"], "9")(d), json.dumps(d))[1],
     "llm_grade is a string"),
    ("nan", lambda d: json.dumps(d).replace('"mrr": ', '"mrr": NaN, "x": ', 1), "NaN is not a JSON number"),
    ("infinity", lambda d: json.dumps(d).replace('"mrr": ', '"mrr": Infinity, "x": ', 1), "Infinity"),
    ("list-for-object", lambda d: (_set(["run"], [1, 2])(d), json.dumps(d))[1], "run is a list"),
    ("deep-nesting", lambda d: json.dumps(d)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
     "nested too deeply"),
    ("huge-integer", lambda d: json.dumps(d)[:-1] + ', "x": ' + "7" * 5000 + "}", "digits"),
    ("lone-surrogate", lambda d: json.dumps(d).replace('"question": "', '"question": "\\ud800', 1), "lone surrogate"),
    ("id-as-number", lambda d: (_set(["results", 0, "question_id"], 12)(d), json.dumps(d))[1],
     "question_id is a number"),
    ("token-counts-as-strings", lambda d: (_set(["run", "usage", "judge", "input_tokens"], "900")(d),
                                           _set(["run", "usage", "judge", "output_tokens"], "12")(d), json.dumps(d))[2],
     "run.usage.judge.input_tokens is a string"),
    ("call-count-as-string", lambda d: (_set(["run", "usage", "judge", "calls"], "3")(d), json.dumps(d))[1],
     "run.usage.judge.calls is a string"),
    ("usage-cost-as-string", lambda d: (_set(["run", "usage", "judge", "cost_usd"], "$1")(d), json.dumps(d))[1],
     "run.usage.judge.cost_usd is a string"),
]


@pytest.fixture(scope="module")
def good(tmp_path_factory) -> dict:
    return valid(tmp_path_factory.mktemp("good"))


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("make,words", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_commands_refuse_hostile_results_with_one_line(tmp_path: Path, good: dict, command: str, make, words):
    ok, bad = tmp_path / "ok.json", tmp_path / "bad.json"
    ok.write_text(json.dumps(good))
    bad.write_text(make(json.loads(json.dumps(good))))
    out = tmp_path / "out.html"
    args = [command, str(ok), str(bad)] + (["-o", str(out)] if command == "report" else ["--json", str(out)])
    run = run_cli(*args)
    assert run.code == 2, run.stderr[-2000:]
    errors = [line for line in run.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and words in errors[0] and "bad.json" in errors[0], run.stderr[-2000:]
    assert "Traceback" not in run.stderr and not out.exists()


@pytest.mark.parametrize("command", ["compare", "report"])
@pytest.mark.parametrize("special", ["fifo", "devzero", "runs-symlink-to-fifo"])
def test_readers_take_only_regular_files(tmp_path: Path, good: dict, special: str, command: str):
    ok = tmp_path / "ok.json"
    ok.write_text(json.dumps(good))
    if special == "fifo":
        target = tmp_path / "fifo.json"
        os.mkfifo(target)
        arg = str(target)
    elif special == "devzero":
        arg = "/dev/zero"
    else:
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        (tmp_path / "runs").mkdir()
        (tmp_path / "runs" / "20260101T000000Z_x.json").symlink_to(fifo)
        arg = str(tmp_path / "runs" / "20260101T000000Z_x.json")
    out = ["--json", str(tmp_path / "c.json")] if command == "compare" else ["-o", str(tmp_path / "r.html")]
    run = run_cli(command, str(ok), arg, *out, timeout=60)  # a FIFO with no writer must not hang the read
    assert run.code == 2 and "Traceback" not in run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and re.search(r"is (a FIFO|a character device), not a regular file", errors[0]), \
        run.stderr[-2000:]
    assert not (tmp_path / "c.json").exists() and not (tmp_path / "r.html").exists()


@pytest.mark.parametrize("edit,words", [
    (lambda row: row.update(llm_grade="9"), "llm_grade is a string"),
    (lambda row: row.update(retrieved=[{"rank": 1, "doc_id": 3}]), "doc_id is a number"),
    (lambda row: row.update(question_id=None), "has no question_id"),
])
def test_resume_checks_its_file_before_any_judge_call(tmp_path: Path, few_questions: Path, edit, words):
    out = tmp_path / "r.json"
    with LoopbackServer() as srv:
        first = run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
        assert first.code == 0, first.stderr
        data = json.loads(out.read_text())
        edit(data["results"][0])
        data["results"] = data["results"][:2]  # one question left to grade: it must not be paid for
        out.write_text(json.dumps(data))
        srv.requests.clear()
        again = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "again.json"), "--resume",
                        str(out), env=judge_env(srv.url))
        calls = [r for r in srv.requests if r.path.endswith("/v1/messages")]
    assert again.code == 2, again.stderr[-2000:]
    assert calls == [] and words in again.stderr and "Traceback" not in again.stderr
    assert not (tmp_path / "again.json").exists()


def test_resume_checks_an_edited_journal_before_any_judge_call(tmp_path: Path, few_questions: Path):
    journal = tmp_path / "run.journal.jsonl"
    journal.write_text(json.dumps({"journal": 1, "run": {}}) + "\n"
                       + json.dumps({"question_id": "py_001", "llm_grade": "9", "retrieved": []}) + "\n")
    with LoopbackServer() as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"), "--resume",
                      str(journal), env=judge_env(srv.url))
        calls = [r for r in srv.requests if r.path.endswith("/v1/messages")]
    assert run.code == 2 and calls == []
    line = next(ln for ln in run.stderr.splitlines() if "| ERROR" in ln)
    assert "line 2" in line and "llm_grade is a string" in line


# ---- the one output rule, for the commands that read results files

@pytest.fixture
def results_pair(tmp_path: Path, good: dict) -> tuple[Path, Path]:
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(good))
    b.write_text(json.dumps(good))
    return a, b


def _labels(tmp_path: Path, a: Path) -> Path:
    labels = tmp_path / "labels.jsonl"
    run = run_cli("label", str(a), "--sample", "2", "-o", str(labels))
    assert run.code == 0, run.stderr
    return labels


@pytest.mark.parametrize("command", ["report", "compare", "export-run", "label", "calibrate"])
@pytest.mark.parametrize("target", ["own-input", "other-spelling", "hard-link", "symlink", "dev-null"])
def test_no_command_writes_over_its_input_or_a_device(tmp_path: Path, results_pair, command: str, target: str):
    a, b = results_pair
    labels = _labels(tmp_path, a) if command == "calibrate" else None
    out = {"own-input": str(a), "other-spelling": str(tmp_path / "x" / ".." / "a.json"), "dev-null": "/dev/null",
           "hard-link": str(tmp_path / "hard.json"), "symlink": str(tmp_path / "soft.json")}[target]
    if target == "other-spelling":
        (tmp_path / "x").mkdir()
    elif target == "hard-link":
        os.link(a, out)
    elif target == "symlink":
        Path(out).symlink_to(a)
    option = {"report": "-o", "compare": "--json", "export-run": "-o", "label": "-o", "calibrate": "--json"}[command]
    args = {"report": [str(a), str(b)], "compare": [str(a), str(b)], "export-run": [str(a)],
            "label": [str(a), "--sample", "2"], "calibrate": [str(a), "--labels", str(labels)]}[command]
    before = a.read_bytes()
    run = run_cli(command, *args, option, out)
    assert run.code == 2, run.stderr[-1500:]
    assert len([ln for ln in run.stderr.splitlines() if "| ERROR" in ln]) == 1
    assert a.read_bytes() == before and stat.S_ISCHR(os.stat("/dev/null").st_mode)


def test_compare_and_report_redact_the_environments_key(tmp_path: Path, good: dict):
    """A results file from elsewhere may hold the key (pasted into a question): the comparison JSON
    and the HTML page written here never carry the key of this environment."""
    from tests.conftest import clean_env

    key = "sk-ant-api03-" + "Zq7" * 20
    doc = json.loads(json.dumps(good))
    doc["results"][0]["question"] = f"why does {key} fail?"
    doc["run"]["strategy"] = f"mine-{key}"  # compare names the runs by their strategies
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    a.write_text(json.dumps(doc))
    b.write_text(json.dumps(good))
    env = {**clean_env(), "ANTHROPIC_API_KEY": key}
    page, comparison = tmp_path / "r.html", tmp_path / "c.json"
    assert run_cli("report", str(a), "-o", str(page), env=env).code == 0
    assert run_cli("compare", str(a), str(b), "--json", str(comparison), env=env).code == 0
    for written in (page, comparison):
        text = written.read_text(encoding="utf-8")
        assert key not in text and "Zq7Zq7Zq7" not in text, written.name
    assert '"mine-' in comparison.read_text(encoding="utf-8")  # the run's name is there, its key is not
    assert "why does" in page.read_text(encoding="utf-8")  # the question is there, its key is not


# ---- export-dataset --validation: a hostile validation file is one clear line, nothing written


def _entry(field: str, value):
    def change(doc: dict) -> str:
        doc["questions"][0][field] = value
        return json.dumps(doc)
    return change


def _devzero(path: Path) -> None:
    path.unlink()
    path.symlink_to("/dev/zero")


def _fifo_in_place(path: Path) -> None:
    path.unlink()
    os.mkfifo(path)


HOSTILE_VALIDATION = [  # (name, the text made from the good validation dict, or a change of the file; words)
    ("deep-nesting", lambda d: json.dumps(d)[:-1] + ', "x": ' + "[" * 200_000 + "]" * 200_000 + "}",
     "nested too deeply"),
    ("huge-integer", lambda d: json.dumps(d)[:-1] + ', "x": ' + "7" * 5000 + "}", "digits"),
    ("nan", lambda d: json.dumps(d)[:-1] + ', "x": NaN}', "NaN is not a JSON number"),
    ("not-utf8", lambda d: "\udcff" + json.dumps(d), "not valid UTF-8"),
    ("entry-is-a-list", lambda d: (d["questions"].insert(0, [1]), json.dumps(d))[1], "questions[0] is a list"),
    ("id-as-number", _entry("id", 5), "questions[0].id is a number"),
    ("sufficiency-as-list", _entry("sufficiency", [1]), "questions[0].sufficiency is a list"),
    ("necessity-as-string", _entry("necessity", "high"), "questions[0].necessity is a string"),
    ("grade-as-string", _entry("sufficiency", {"grade": "9"}), "questions[0].sufficiency.grade is a string"),
    ("flags-as-string", _entry("flags", "empty_needle"), "questions[0].flags is a string"),
    ("verdict-as-object", _entry("verdict", {"a": 1}), "questions[0].verdict is an object"),
    ("dev-zero", _devzero, "not a regular file"),
    ("fifo", _fifo_in_place, "not a regular file"),
]


@pytest.mark.parametrize("make,words", [h[1:] for h in HOSTILE_VALIDATION], ids=[h[0] for h in HOSTILE_VALIDATION])
def test_export_dataset_refuses_a_hostile_validation_file(tmp_path: Path, make, words):
    from components.cli import export_dataset, validate
    from tests.dataset_fixtures import OFFLINE, QUESTIONS, export_args, validate_args, write_corpus, write_questions
    from utils.errors import InputError

    questions = write_questions(tmp_path / "q.json", [q for q in QUESTIONS if q["id"] != "q_unknown"])
    corpus = write_corpus(tmp_path / "corpus")
    vfile = tmp_path / "v.json"
    assert validate.run(validate_args(questions, corpus, vfile), OFFLINE) == 0
    if make in (_devzero, _fifo_in_place):  # the file replaced by a special one
        make(vfile)
    else:
        vfile.write_bytes(make(json.loads(vfile.read_text())).encode("utf-8", "surrogateescape"))
    out = tmp_path / "d.jsonl"
    with pytest.raises(InputError) as err:
        export_dataset.run(export_args(questions, corpus, out, "--validation", str(vfile)), OFFLINE)
    message = str(err.value)
    assert words in message and message.startswith(f"--validation {vfile}") and "\n" not in message, message
    assert not out.exists()


# ---- a symbolic link loop, a plug-in that exits while imported: one clear line, exit 2


def _loop(tmp_path: Path) -> Path:
    (tmp_path / "a.json").symlink_to(tmp_path / "b.json")
    (tmp_path / "b.json").symlink_to(tmp_path / "a.json")
    return tmp_path / "a.json"


LOOPS = [  # (name, the command line from the loop and tmp_path, words of the one error line)
    ("run-questions", lambda lp, t: ["--questions", str(lp), "--output", str(t / "r.json")], "symbolic links"),
    ("validate-questions", lambda lp, t: ["validate", str(lp), "--json", str(t / "v.json")], "symbolic links"),
    ("export-dataset-questions", lambda lp, t: ["export-dataset", "--questions", str(lp), "-o", str(t / "d.jsonl")],
     "symbolic links"),
    ("run-output", lambda lp, t: ["--questions", str(ROOT_QUESTIONS), "--output", str(lp)], "symbolic links"),
    ("report-input", lambda lp, t: ["report", str(lp), "-o", str(t / "r.html")], "symbolic links"),
]
ROOT_QUESTIONS = Path(__file__).resolve().parent.parent / "questions.json"


@pytest.mark.parametrize("args,words", [h[1:] for h in LOOPS], ids=[h[0] for h in LOOPS])
def test_a_symlink_loop_is_one_clear_line(tmp_path: Path, args, words):
    from tests.conftest import clean_env

    run = run_cli(*args(_loop(tmp_path), tmp_path), env=clean_env(BENCHMARK_JUDGE="offline"), timeout=120)
    assert run.code == 2, run.stderr[-2000:]
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and words in errors[0] and "internal error" not in errors[0], run.stderr[-2000:]
    assert "Traceback" not in run.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.json", "b.json"]  # nothing written


EXITS_AT_IMPORT = [
    ("sys-exit-message", "sys.exit('bye from the plug-in')", "exiter:make"),
    ("sys-exit-code", "sys.exit(3)", "exiter:make"),
    ("raise-system-exit-0", "raise SystemExit(0)", "exiter:make"),
    ("dotted-name-looked-up-for-a-suggestion", "sys.exit('bye from the plug-in')", "exiter.make"),
]


@pytest.mark.parametrize("code,strategy", [h[1:] for h in EXITS_AT_IMPORT], ids=[h[0] for h in EXITS_AT_IMPORT])
def test_a_plugin_exiting_at_import_is_one_clear_line(tmp_path: Path, few_questions: Path, code, strategy):
    from tests.conftest import clean_env

    (tmp_path / "plug").mkdir()
    (tmp_path / "plug" / "exiter.py").write_text(f"import sys\n{code}\n\ndef make():\n    pass\n")
    out = tmp_path / "r.json"
    run = run_cli("--questions", str(few_questions), "--strategy", strategy, "--output", str(out),
                  env=clean_env(BENCHMARK_JUDGE="offline", PYTHONPATH=str(tmp_path / "plug")))
    assert run.code == 2, run.stderr[-2000:]
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and repr(strategy) in errors[0], run.stderr[-2000:]
    assert "Traceback" not in run.stderr and not out.exists()
