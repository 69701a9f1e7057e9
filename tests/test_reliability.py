"""Reliability of the run, the judge and the journal: one row per failure reported against the
run, the judge and the journal. Every row ran against the code before these fixes and failed there
(35 of 35 rows; only the unit test of the redactor, not a row, passes), each for the reported
reason (``OverflowError: cannot convert float infinity to integer``, ``type str doesn't define
__round__``, the key in the results, no ``--resume`` …). To repeat that check, copy
``tests/{conftest,in_process,loopback,test_reliability}.py`` into a worktree of that older code and run
``PYTHONPATH=. python -m pytest tests/test_reliability.py`` there (the old CLI has no --log-dir:
accept and ignore it; the old judge sends thinking "disabled", which today's default Sonnet
refuses: ``judge_env(..., BENCHMARK_SONNET_MODEL="claude-haiku-4-5")``).

The other reported cases are rows of the tables beside this one: ``--output`` equal to the
questions file, a device, a symlink to one (``REFUSED`` in tests/test_output_safety.py); the
3,000-space heading and the other hostile pages, YAML alias and merge bombs, ``--questions
/dev/zero`` and stdin from it (``HOSTILE_PAGES``, the front-matter table and ``QUESTION_ROWS`` in
tests/test_input_bounds.py). The bounded chaos test is tests/test_chaos.py.

The runs are ``benchmark.main`` in the test process (:func:`tests.conftest.run_cli`) against a
loopback judge (:class:`tests.loopback.LoopbackServer`) or the offline judge; plug-in retrievers are
modules written to ``tmp_path`` and loaded with ``--strategy plug:make`` (``PYTHONPATH`` = tmp_path).
The cases whose point is the process (a signal, a thread left running, a plug-in that patches
``os.fsync``) run ``python benchmark.py`` as a child and are marked ``slow``.
"""

from __future__ import annotations

import itertools
import json
import re
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import (ROOT, CliRun, clean_env, judge_env, mount_tmpfs, run_cli, run_cli_subprocess, unmount,
                            wait_for_line)
from tests.loopback import LoopbackServer, Reply, error

OK = Reply(text='{"grade": 8, "reasoning": "fine"}')
SLOW_OK = Reply(text='{"grade": 7, "reasoning": "slow but fine"}', delay=0.3)
ALL_QUESTIONS = json.loads((ROOT / "questions.json").read_text())["questions"]
EARLIER = '{"earlier": true}\n'
DONE_LINE = re.compile(r"\| \[(\d+)/(\d+)\] R")


# --------------------------------------------------------------------------- helpers


def questions_file(tmp_path: Path, n: int, name: str = "q.json") -> Path:
    path = tmp_path / name
    path.write_text(json.dumps({"questions": ALL_QUESTIONS[:n]}))
    return path


def _args(tmp_path: Path, args: tuple[str, ...]) -> list[str]:
    """The log files under tmp_path; BM25 (quick to index) unless a strategy is given."""
    return [*args, *(() if "--strategy" in args else ("--strategy", "baseline")), "--log-dir", str(tmp_path / "logs")]


def cli(tmp_path: Path, *args: str, env: dict[str, str] | None = None, timeout: float = 120,
        process: bool = False) -> CliRun:
    """The run in this process, or (``process``) in a child ``python benchmark.py``."""
    return (run_cli_subprocess if process else run_cli)(*_args(tmp_path, args), env=env, timeout=timeout)


def popen(tmp_path: Path, *args: str, env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "benchmark.py"), *_args(tmp_path, args)],
                            cwd=ROOT, env=env, stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True)



def strict_json(path: Path) -> dict:
    """The file as strict JSON: UTF-8, no NaN/Infinity, no lone surrogates in any string."""
    text = path.read_bytes().decode("utf-8")  # strict: a lone surrogate cannot be encoded

    def refuse(name: str):
        raise AssertionError(f"{path} holds {name}: not strict JSON")

    def check(value):
        if isinstance(value, str):
            value.encode("utf-8")  # raises on a lone surrogate written as "\\ud800"
        elif isinstance(value, dict):
            for k, v in value.items():
                check(k)
                check(v)
        elif isinstance(value, list):
            for v in value:
                check(v)

    data = json.loads(text, parse_constant=refuse)
    check(data)
    return data


def done_questions(stderr: str, questions: list[dict]) -> set[str]:
    """The ids of the questions whose ``[i/n]`` line the console printed."""
    return {questions[int(m.group(1)) - 1]["id"] for m in DONE_LINE.finditer(stderr)}


def journal_rows(path: Path) -> dict[str, dict]:
    lines = path.read_text(encoding="utf-8").splitlines()
    header = json.loads(lines[0])
    assert "run" in header
    rows = {}
    for line in lines[1:]:
        try:
            row = json.loads(line)
        except ValueError:  # a torn last line
            continue
        rows[row["question_id"]] = row
    return rows


def listing(folder: Path) -> list[Path]:
    return sorted(folder.iterdir()) if folder.is_dir() else []


def temp_files(folder: Path) -> list[Path]:
    return [p for p in folder.rglob(".*.tmp")]


def plugin(tmp_path: Path, *, retrieve: str = "", index: str = "", factory: str = "", top: str = "") -> dict:
    """A plug-in retriever module ``plug`` (BM25 inside) with code injected at three places;
    returns the env that makes ``--strategy plug:make`` import it."""
    source = f"""
import math, os, signal, sys
from poc.bm25 import BM25Retriever
from poc.retriever import ScoredChunk
{top}

class R:
    calls = 0

    def __init__(self):
        self.inner = BM25Retriever()

    def index(self, chunks):
{_indent(index)}
        self.inner.index(chunks)

    def retrieve(self, query, k):
        self.calls += 1
        hits = self.inner.retrieve(query, k)
{_indent(retrieve)}
        return hits


def make():
{_indent(factory, 4)}
    return R()
"""
    (tmp_path / "plug.py").write_text(source)
    return {"PYTHONPATH": str(tmp_path)}


def _indent(code: str, width: int = 8) -> str:
    return "\n".join(" " * width + line for line in (code or "pass").splitlines())


def continue_command(stderr: str) -> list[str]:
    """The command the last console line gives to continue the run: its arguments after
    ``python benchmark.py`` (the script as it was run: ``python /path/to/benchmark.py`` from a child process)."""
    last = stderr.strip().splitlines()[-1]
    m = re.search(r"(?:to continue(?: this run)?): (python \S*benchmark\.py .*)$", last, re.I)
    assert m, f"the last console line gives no command to continue: {last!r}"
    words = shlex.split(m.group(1))
    assert words[0] == "python" and words[1].endswith("benchmark.py") and "--resume" in words
    return words[2:]


# --------------------------------------------------------------------------- judge replies on question 3

_NESTED = "[" * 1000 + "8" + "]" * 1000
REPLIES = {
    # name: (the reply text to question 3, its expected grade, its expected grade_error prefix)
    "grade-inf-string": ('{"grade": "inf", "reasoning": "x"}', None, "unparseable"),
    "grade-Infinity": ('{"grade": Infinity, "reasoning": "x"}', None, "unparseable"),
    "grade-1e999": ('{"grade": 1e999, "reasoning": "x"}', None, "unparseable"),
    "grade-5000-digits": ('{"grade": ' + "9" * 5000 + ', "reasoning": "x"}', None, "unparseable"),
    "grade-5000-digit-string": ('{"grade": "' + "9" * 5000 + '"}', None, "unparseable"),
    "grade-nested-1000-deep": ('{"grade": ' + _NESTED + ', "reasoning": "x"}', None, "unparseable"),
    "lone-surrogate-grade": ('{"grade": "\ud800"}', None, "unparseable"),
    "lone-surrogate-reasoning": ('{"grade": 6, "reasoning": "half a pair: \ud800"}', 6, None),
}


@pytest.mark.parametrize("name", list(REPLIES))
def test_hostile_reply_on_question_3_keeps_questions_1_and_2(name: str, tmp_path: Path, few_questions: Path):
    text, grade, kind = REPLIES[name]
    out = tmp_path / "r.json"
    with LoopbackServer([OK, OK, Reply(text=text)], OK) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert run.code == (0 if grade is not None else 8), run.stderr[-3000:]  # a grade missing: incomplete, exit 8
    data = strict_json(out)
    assert data["run"]["status"] == ("completed" if grade is not None else "incomplete")
    rows = data["results"]
    assert [r["llm_grade"] for r in rows] == [8, 8, grade]
    row = rows[2]
    if kind is None:
        assert row["grade_error"] is None and "half a pair" in row["llm_reasoning"]
    else:
        assert row["grade_error"].startswith(kind + ":"), row["grade_error"]
        assert row["total_score"] is None
    # the raw reply is kept (a lone surrogate as U+FFFD: any text can be written)
    assert row["llm_raw_reply"] == text.replace("\ud800", "\ufffd")
    strict_json(next((tmp_path / "runs").glob("*.json")))


# --------------------------------------------------------------------------- plug-in retrievers


RETRIEVERS = {
    # name: (code in retrieve(), expected grades, the ungraded row's grade_error must contain)
    "string-score": ("hits = [ScoredChunk(h.chunk, str(h.score)) for h in hits]", [8, 8, 8], None),
    "word-score": ("hits = [ScoredChunk(h.chunk, 'high') for h in hits]", [8, 8, 8], None),
    "sys-exit-in-retrieve": ("if self.calls == 2:\n    sys.exit(3)", [8, None, 8], "SystemExit"),
    "sys-exit-message-in-retrieve": ("if self.calls == 2:\n    sys.exit('bye')", [8, None, 8], "SystemExit"),
}


@pytest.mark.parametrize("name", list(RETRIEVERS))
def test_plugin_retriever_faults_keep_the_graded_work(name: str, tmp_path: Path, few_questions: Path):
    code, grades, error_part = RETRIEVERS[name]
    env = plugin(tmp_path, retrieve=code)
    out = tmp_path / "r.json"
    with LoopbackServer(default=OK) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--strategy", "plug:make",
                  env=judge_env(srv.url, **env))
        calls = len(srv.requests)
    assert run.code == 0, run.stderr[-3000:]
    data = strict_json(out)
    assert data["run"]["status"] == "completed"
    assert [r["llm_grade"] for r in data["results"]] == grades
    assert calls == grades.count(8)  # every graded row is the judge's grade, kept
    for row, grade in zip(data["results"], grades, strict=True):
        if grade is None:
            assert error_part in row["grade_error"]
        else:
            assert all(item["score"] is None or isinstance(item["score"], float) for item in row["retrieved"])
    assert "Traceback" not in run.stderr


STARTUP_FAULTS = {
    "factory-raises": {"factory": "raise RuntimeError('no model file')"},
    "factory-sys-exit": {"factory": "sys.exit(1)"},
    "index-raises": {"index": "raise ValueError('bad chunk')"},
    "index-sys-exit": {"index": "sys.exit('index gave up')"},
}


@pytest.mark.parametrize("name", list(STARTUP_FAULTS))
def test_plugin_factory_or_index_failure_exits_2_naming_it(name: str, tmp_path: Path, few_questions: Path):
    env = plugin(tmp_path, **STARTUP_FAULTS[name])
    out = tmp_path / "r.json"
    out.write_text(EARLIER)
    run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--strategy", "plug:make",
              env=clean_env(**env))
    assert run.code == 2, run.stderr[-3000:]
    assert "'plug:make'" in run.stderr
    assert "internal error" not in run.stderr and "Traceback" not in run.stderr
    assert out.read_text() == EARLIER
    assert not list(tmp_path.rglob("*.journal.jsonl"))


# --------------------------------------------------------------------------- signals


_ENDLESS = """
import itertools


def _endless(hits):
    for n, hit in enumerate(itertools.cycle(hits)):
        if n > 100_000:  # a reader without a bound gets this, not the machine's memory
            raise RuntimeError("read 100,000 hits of an endless iterator")
        yield hit
"""
FORGED_ID = "py_001\n12:00:00 | INFO    | [1/3] R1 ✓ | G10 forged\x1b[2K\r"

# name: (plug-in code at its top, in index(), in retrieve(); the questions' first id; what must hold)
PLUGIN_HANGS = {
    # an endless iterator from retrieve() is cut at k while read: every row graded, k hits each
    "endless-iterator-from-retrieve": (_ENDLESS, "", "return _endless(hits)", None, "graded"),
    # a non-daemon thread the plug-in leaves running does not keep the process alive once written
    "non-daemon-thread-left-running": ("import threading, time", "threading.Thread(target=time.sleep, "
                                       "args=(3600,), daemon=False).start()", "", None, "graded"),
    # the retrieval-error line prints the question id (and the error) escaped: no forged line
    "forged-id-on-the-retrieval-error-path": ("", "", "raise RuntimeError('broken\\nFAKE | ERROR | x\\x1b[2K')",
                                              FORGED_ID, "retrieval_error"),
}


# the process's own exit is the point: benchmark.entry() ends it once the results are written
IN_A_CHILD = {"non-daemon-thread-left-running"}


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in IN_A_CHILD else n
                                  for n in PLUGIN_HANGS])
def test_plugin_cannot_hang_the_run_or_forge_a_line(name: str, tmp_path: Path):
    top, index, retrieve, first_id, outcome = PLUGIN_HANGS[name]
    env = plugin(tmp_path, top=top, index=index, retrieve=retrieve)
    questions = [dict(q) for q in ALL_QUESTIONS[:3]]
    if first_id is not None:
        questions[0]["id"] = first_id
    qfile = tmp_path / "q.json"
    qfile.write_text(json.dumps({"questions": questions}))
    out = tmp_path / "r.json"
    with LoopbackServer(default=OK) as srv:
        try:
            run = cli(tmp_path, "--questions", str(qfile), "--output", str(out), "--strategy", "plug:make",
                      env=judge_env(srv.url, **env), timeout=90, process=name in IN_A_CHILD)
        except subprocess.TimeoutExpired:
            pytest.fail("the process did not end after writing its results")
    assert run.code == (0 if outcome == "graded" else 7), run.stderr[-3000:]  # 7: every retrieval failed
    data = strict_json(out)
    if outcome == "graded":
        assert [r["llm_grade"] for r in data["results"]] == [8, 8, 8]
        assert all(len(r["retrieved"]) == data["run"]["k"] for r in data["results"])
    else:
        assert all(r["grade_error"].startswith("retrieval_error: RuntimeError") for r in data["results"])
        assert data["results"][0]["question_id"] == first_id  # the data keeps the id as given
        assert not any(ch in run.stderr + run.stdout for ch in ("\x1b", "\r"))
        assert not [ln for ln in run.stderr.splitlines() if ln.startswith(("12:00:00", "FAKE"))], run.stderr
        failed = [ln for ln in run.stderr.splitlines() if "retrieval failed" in ln]
        assert len(failed) == 3 and "[py_001\\n12:00:00" in failed[0], failed
    assert "Traceback" not in run.stderr


_FSYNC_HOOK = """
_real_fsync = os.fsync
_SENT = []


def _fsync(fd):
    _real_fsync(fd)
    try:
        name = os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))
    except OSError:
        name = ""
    if name.endswith(".tmp") and os.environ["HOOK_FILE"] in name and not _SENT:
        _SENT.append(name)
        for sig in os.environ["HOOK_SIGNALS"].split(","):
            os.kill(os.getpid(), getattr(signal, sig))


os.fsync = _fsync  # the final write fsyncs its temp file: a signal arrives in the middle of it
"""

FINAL_WRITE_SIGNALS = {
    # name: (signals sent while the temp file is being written, which file's temp)
    "sigint-writing-output": ("SIGINT", ".r.json."),
    "sigterm-writing-runs-file": ("SIGTERM", "_plug-make.json."),
    "sighup-writing-output": ("SIGHUP", ".r.json."),
    "two-sigints-writing-output": ("SIGINT,SIGINT", ".r.json."),
}


@pytest.mark.slow  # a signal to the process, and a plug-in that patches os.fsync: a child process
@pytest.mark.parametrize("name", list(FINAL_WRITE_SIGNALS))
def test_signal_during_the_final_write(name: str, tmp_path: Path, few_questions: Path):
    """Ctrl-C (or SIGTERM/SIGHUP, or two Ctrl-C) while the final write's temp file is open: no temp
    file is left, the earlier results are intact or replaced by a complete newer file, exit 130."""
    signals, which = FINAL_WRITE_SIGNALS[name]
    env = plugin(tmp_path, top=_FSYNC_HOOK)
    out = tmp_path / "r.json"
    out.write_text(EARLIER)
    run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--strategy", "plug:make",
              env=clean_env(HOOK_FILE=which, HOOK_SIGNALS=signals, **env), process=True)
    assert run.code == 130, run.stderr[-3000:]
    assert not temp_files(tmp_path)
    text = out.read_text()
    if text != EARLIER:
        assert len(strict_json(out)["results"]) == 3
    rows = {}
    for path in [out, *(tmp_path / "runs").glob("*.json")]:
        if path.read_text() != EARLIER:
            rows.update({r["question_id"]: r for r in strict_json(path)["results"]})
    for path in (tmp_path / "runs").glob("*.journal.jsonl"):
        rows.update(journal_rows(path))
    assert done_questions(run.stderr, ALL_QUESTIONS[:3]) <= set(rows)
    assert len(rows) == 3


@pytest.mark.slow  # a signal from outside
def test_sighup_mid_run_keeps_the_rows_and_names_the_command_to_continue(tmp_path: Path):
    """The terminal closes (SIGHUP) mid-run: exit 130, every row the console reported is kept, the
    last console line gives the command to continue, and that command finishes the run grading
    only what was not graded."""
    questions = questions_file(tmp_path, 6)
    out = tmp_path / "r.json"
    with LoopbackServer(default=SLOW_OK) as srv:
        proc = popen(tmp_path, "--questions", str(questions), "--output", str(out), env=judge_env(srv.url))
        head = wait_for_line(proc, "[2/6]")
        proc.send_signal(signal.SIGHUP)
        stderr = head + proc.stderr.read()
        code = proc.wait(timeout=60)
    assert code == 130, stderr[-3000:]
    done = done_questions(stderr, ALL_QUESTIONS[:6])
    assert len(done) >= 2
    kept: dict[str, dict] = {}
    for path in [out, *(tmp_path / "runs").glob("*.json")]:
        if path.exists():
            kept.update({r["question_id"]: r for r in strict_json(path)["results"]})
    for path in (tmp_path / "runs").glob("*.journal.jsonl"):
        kept.update(journal_rows(path))
    assert done <= set(kept)
    command = continue_command(stderr)
    resume_from = Path(command[command.index("--resume") + 1])
    assert resume_from.exists()
    graded = sum(1 for r in kept.values() if r["llm_grade"] is not None)
    with LoopbackServer(default=OK) as srv:
        proc = subprocess.run([sys.executable, str(ROOT / "benchmark.py"), *command], cwd=ROOT,
                              env=judge_env(srv.url), capture_output=True, text=True, timeout=120)
        calls = len(srv.requests)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert calls == 6 - graded
    final = strict_json(out)
    assert final["run"]["status"] == "completed" and len(final["results"]) == 6
    assert all(r["llm_grade"] is not None for r in final["results"])


# A signal's KeyboardInterrupt can come back as another exception: pydantic-core wrapped one raised
# while it built a serializer in a SchemaError (seen in CI, the chaos test with random seed 12, run 2: "internal error:
# SchemaError ... KeyboardInterrupt: SIGTERM", exit 1); a plug-in may wrap it in its own error.
_WRAP_SIGTERM = """
try:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(10)
except KeyboardInterrupt as err:
    raise RuntimeError('WRAPPED-SIGNAL ' + str(err))
"""
WRAPPED_SIGNALS = {
    # name: (plugin(...) code, extra flags, questions graded before the signal)
    "in-retrieve": ({"retrieve": "if self.calls == 2:\n" + _indent(_WRAP_SIGTERM, 4)}, (), 1),
    "in-retrieve-batch": ({"retrieve": "if self.calls == 2:\n" + _indent(_WRAP_SIGTERM, 4)}, ("--judge-batch",), 0),
    "in-index": ({"index": _WRAP_SIGTERM}, (), 0),
}


@pytest.mark.slow  # a signal to the process
@pytest.mark.parametrize("name", list(WRAPPED_SIGNALS))
def test_a_signal_wrapped_in_another_exception_is_the_interrupt(name: str, tmp_path: Path, few_questions: Path):
    """Exit 130 "interrupted", not an internal error (exit 1), not a failed plug-in (exit 2); no
    row holds an error the signal caused (the question in progress runs on --resume); an earlier
    results file is untouched when nothing was graded."""
    code, flags, graded = WRAPPED_SIGNALS[name]
    env = plugin(tmp_path, top="import time", **code)
    out = tmp_path / "r.json"
    out.write_text(EARLIER)
    with LoopbackServer(default=OK) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--strategy", "plug:make",
                  *flags, env=judge_env(srv.url, BENCHMARK_BATCH_POLL_MAX="0.05", **env), process=True)
    assert run.code == 130, run.stderr[-3000:]
    assert "internal error" not in run.stderr and "failed (RuntimeError" not in run.stderr
    assert "WRAPPED-SIGNAL" not in run.stderr  # no console line reports the wrapper as an error
    rows: dict[str, dict] = {}
    for path in (tmp_path / "runs").glob("*.journal.jsonl"):
        rows.update(journal_rows(path))
    if out.read_text() != EARLIER:
        rows.update({r["question_id"]: r for r in strict_json(out)["results"]})
    assert not [r for r in rows.values() if "WRAPPED-SIGNAL" in str(r.get("grade_error"))], rows
    assert sum(1 for r in rows.values() if r.get("llm_grade") is not None) == graded
    if graded == 0:
        assert out.read_text() == EARLIER


@pytest.mark.slow  # the process killed
def test_sigkill_mid_loop_the_journal_holds_every_reported_question_and_resume_finishes(tmp_path: Path):
    questions = questions_file(tmp_path, 6)
    out = tmp_path / "r.json"
    with LoopbackServer(default=SLOW_OK) as srv:
        proc = popen(tmp_path, "--questions", str(questions), "--output", str(out), env=judge_env(srv.url))
        stderr = wait_for_line(proc, "[3/6]")
        proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    journals = list((tmp_path / "runs").glob("*.journal.jsonl"))
    assert len(journals) == 1 and not out.exists()
    rows = journal_rows(journals[0])
    done = done_questions(stderr, ALL_QUESTIONS[:6])
    assert len(done) >= 3 and done <= set(rows)
    with LoopbackServer(default=OK) as srv:
        run = cli(tmp_path, "--questions", str(questions), "--output", str(out), "--resume", str(journals[0]),
                  env=judge_env(srv.url))
        calls = len(srv.requests)
    assert run.code == 0, run.stderr[-3000:]
    assert calls == 6 - len(rows)  # the journal's graded rows got no new judge call
    final = strict_json(out)
    assert final["run"]["resumed_rows"] == len(rows)
    by_id = {r["question_id"]: r for r in final["results"]}
    assert len(by_id) == 6 and all(r["llm_grade"] is not None for r in by_id.values())
    for qid, row in rows.items():  # taken over as they were
        assert by_id[qid]["request_id"] == row["request_id"] and by_id[qid]["llm_grade"] == row["llm_grade"]


# --------------------------------------------------------------------------- bounds on the judge reply


def _endless(piece: bytes):
    return itertools.repeat(piece)


BODIES = {
    # name: (reply, the grade_error kind)
    "trickles-1-byte-per-0.2s": (Reply(trickle=_endless(b" "), trickle_gap=0.2, trickle_for=40), "timeout"),
    "never-ends": (Reply(trickle=_endless(b" " * 65536), trickle_gap=0.005, trickle_for=40), "bad_response"),
}


@pytest.mark.parametrize("name", list(BODIES))
def test_judge_body_that_never_ends_is_bounded(name: str, tmp_path: Path, few_questions: Path):
    reply, kind = BODIES[name]
    out = tmp_path / "r.json"
    with LoopbackServer([OK, OK], reply) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out),
                  env=judge_env(srv.url, BENCHMARK_JUDGE_TIMEOUT="1", BENCHMARK_RETRY_WAIT_MAX="0"), timeout=90)
    assert run.code == 8, run.stderr[-3000:]  # the third grade is missing: status incomplete
    rows = strict_json(out)["results"]
    assert [r["llm_grade"] for r in rows] == [8, 8, None]
    assert rows[2]["grade_error"].startswith(kind + ":"), rows[2]["grade_error"]


# --------------------------------------------------------------------------- secrets

ODD_KEY = 'sk-ant-api03-q"uote\\back\\slash-TAILQ7W3E9R1T5Y2'
ODD_TAIL = "TAILQ7W3E9R1T5Y2"
ECHOES = {
    "reasoning": Reply(text=json.dumps({"grade": 5, "reasoning": f"the key was {ODD_KEY}"})),
    "unparseable-reply": Reply(text=f"cannot grade; auth {ODD_KEY}"),
}


def _assert_no_key(where: str, text: str) -> None:
    for form in (ODD_KEY, json.dumps(ODD_KEY)[1:-1], repr(ODD_KEY)[1:-1], ODD_TAIL):
        assert form not in text, f"the key ({form!r}) leaked into {where}"


@pytest.mark.parametrize("name", list(ECHOES))
def test_key_with_quote_and_backslash_never_appears(name: str, tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer([], ECHOES[name]) as srv:
        env = judge_env(srv.url, BENCHMARK_JUDGE_TIMEOUT="1", BENCHMARK_RETRY_WAIT_MAX="0")
        env["ANTHROPIC_API_KEY"] = ODD_KEY
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--log-level", "TRACE", env=env)
        assert srv.requests and ODD_KEY in " ".join(srv.requests[0].headers.values())  # really sent
    assert run.code in (0, 3, 8), run.stderr[-3000:]
    strict_json(out)
    for where, text in [("stdout", run.stdout), ("stderr", run.stderr), ("log", run.log_text()),
                        ("results", out.read_text()),
                        *((p.name, p.read_text()) for p in listing(tmp_path / "runs"))]:
        _assert_no_key(where, text)


def test_redaction_covers_the_key_raw_and_escaped():
    from utils.redaction import REDACTED, Redactor

    redact = Redactor([ODD_KEY, ""])
    for text in (ODD_KEY, json.dumps(ODD_KEY), repr(ODD_KEY), json.dumps(json.dumps({"r": ODD_KEY})),
                 repr(json.dumps(ODD_KEY)), json.dumps(ODD_KEY, ensure_ascii=False)):
        redacted = redact(f"before {text} after")
        assert ODD_TAIL not in redacted and REDACTED in redacted, redacted
        assert redacted.startswith("before ") and redacted.endswith(" after")
    assert not Redactor([""]) and redact("no key here") == "no key here"


@pytest.mark.slow  # the process killed
def test_key_with_quote_and_backslash_never_appears_in_the_journal(tmp_path: Path, few_questions: Path):
    echo = Reply(text=json.dumps({"grade": 5, "reasoning": f"the key was {ODD_KEY}"}))
    out = tmp_path / "r.json"
    with LoopbackServer([echo, echo], Reply(delay=30)) as srv:
        env = judge_env(srv.url)
        env["ANTHROPIC_API_KEY"] = ODD_KEY
        proc = popen(tmp_path, "--questions", str(few_questions), "--output", str(out), env=env)
        wait_for_line(proc, "[2/3]")
        proc.kill()
        proc.wait(timeout=30)
        proc.stderr.close()
    journals = list((tmp_path / "runs").glob("*.journal.jsonl"))
    assert len(journals) == 1
    assert len(journal_rows(journals[0])) == 2
    _assert_no_key("the journal", journals[0].read_text())


# --------------------------------------------------------------------------- --resume


def test_resume_from_a_results_file_grades_only_the_rest(tmp_path: Path, few_questions: Path):
    """A judge that failed on question 2 (401: exit 3) is fixed; --resume from the results file
    keeps question 1 without a new call and grades 2 and 3."""
    out = tmp_path / "r.json"
    with LoopbackServer([OK, error(401, "authentication_error")], OK) as srv:
        first = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert first.code == 3, first.stderr[-3000:]
    before = strict_json(out)["results"]
    assert [r["llm_grade"] for r in before] == [8, None, None]
    assert "--resume" in first.stderr.strip().splitlines()[-1]
    with LoopbackServer(default=Reply(text='{"grade": 4, "reasoning": "later"}')) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--resume", str(out),
                  env=judge_env(srv.url))
        calls = len(srv.requests)
    assert run.code == 0, run.stderr[-3000:]
    assert calls == 2
    after = strict_json(out)
    assert [r["llm_grade"] for r in after["results"]] == [8, 4, 4]
    assert after["results"][0]["request_id"] == before[0]["request_id"]
    assert after["run"]["resumed_from"] == str(out) and after["run"]["resumed_rows"] == 1


def _corpus(folder: Path, extra: str | None = None) -> Path:
    """The needle pages of the first questions (and a few more) as a Markdown folder."""
    from pydoc_data.topics import topics

    from components.readers.builtin import topic_to_markdown

    folder.mkdir()
    for key in ("for", "while", "try", "with", "if", "function", "class", "import"):
        (folder / f"{key}.md").write_text(topic_to_markdown(topics[key]))
    if extra:
        (folder / "extra.md").write_text(extra)
    return folder


REFUSALS = {
    # name: (arguments changed on --resume, env change, the field the refusal names)
    "k": (["--k", "3"], {}, "k"),
    "strategy": (["--strategy", "plug:make"], {}, "strategy"),
    "questions-file": (["--questions", "{q4}"], {}, "questions_sha256"),
    "corpus": (["--corpus", "{corpus_b}"], {}, "corpus_sha256"),
    "judge-model": ([], {"BENCHMARK_SONNET_MODEL": "claude-opus-5-5"}, "judge_model"),
}


@pytest.mark.parametrize("name", list(REFUSALS))
def test_resume_refuses_a_changed_run(name: str, tmp_path: Path, few_questions: Path):
    changed, env_change, field = REFUSALS[name]
    out = tmp_path / "r.json"
    corpus_a, corpus_b = _corpus(tmp_path / "a"), _corpus(tmp_path / "b", extra="# Extra\n\nOne more page.\n")
    env = plugin(tmp_path)
    with LoopbackServer(default=OK) as srv:
        first = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), "--corpus", str(corpus_a),
                    env=judge_env(srv.url, **env))
        assert first.code == 0, first.stderr[-3000:]
        srv.requests.clear()
        earlier = out.read_bytes()
        runs_before = listing(tmp_path / "runs")
        values = {"q4": str(questions_file(tmp_path, 4, "q4.json")), "corpus_b": str(corpus_b)}
        args = {"--questions": str(few_questions), "--output": str(out), "--corpus": str(corpus_a),
                "--strategy": "baseline"}
        for flag, value in zip(changed[::2], changed[1::2], strict=True):
            args[flag] = value.format(**values)
        run = cli(tmp_path, *itertools.chain.from_iterable(args.items()), "--resume", str(out),
                  env=judge_env(srv.url, **env, **env_change))
        calls = len(srv.requests)
    assert run.code == 2, run.stderr[-3000:]
    assert f"{field} differs" in run.stderr
    assert calls == 0
    assert out.read_bytes() == earlier and listing(tmp_path / "runs") == runs_before


def test_budget_stopped_run_is_finished_by_resume(tmp_path: Path):
    questions = questions_file(tmp_path, 5)
    out = tmp_path / "r.json"
    priced = Reply(text='{"grade": 8, "reasoning": "fine"}', usage={"input_tokens": 1000, "output_tokens": 100})
    # each call costs $0.003 (claude-sonnet-5-5: $2 / $10 per million tokens) and reserves its worst case
    # first (max_tokens 1024 at $10/M, plus its prompt: $0.0142-$0.0157 here): $0.019 allows two
    with LoopbackServer(default=priced) as srv:
        first = cli(tmp_path, "--questions", str(questions), "--output", str(out), "--max-cost", "0.019",
                    env=judge_env(srv.url))
        assert len(srv.requests) == 2
    assert first.code == 4, first.stderr[-3000:]
    data = strict_json(out)
    assert data["run"]["status"] == "budget_exhausted"
    assert [r["llm_grade"] for r in data["results"]] == [8, 8, None, None, None]
    assert all(r["grade_error"].startswith("budget: ") for r in data["results"][2:])
    command = continue_command(first.stderr)
    at = command.index("--max-cost")  # the command repeats the budget; the user lifts it to finish
    command[at:at + 2] = []
    with LoopbackServer(default=priced) as srv:
        done = run_cli(*command, env=judge_env(srv.url))
        calls = len(srv.requests)
    assert done.code == 0, done.stderr[-3000:]
    assert calls == 3
    final = strict_json(out)
    assert final["run"]["status"] == "completed"
    assert [r["llm_grade"] for r in final["results"]] == [8] * 5
    assert [r["request_id"] for r in final["results"][:2]] == [r["request_id"] for r in data["results"][:2]]


# --------------------------------------------------------------------------- a full disk


@pytest.fixture
def small_disk(tmp_path: Path):
    """A folder on its own tmpfs (root only): ``mount(size_bytes)`` mounts it, unmounted after."""
    folder = tmp_path / "disk"
    folder.mkdir()
    mounted = []

    def mount(size: int) -> Path:
        why_not = mount_tmpfs(folder, str(size))
        if why_not is not None:
            pytest.skip(why_not)
        mounted.append(folder)
        return folder

    yield mount
    for folder in mounted:
        unmount(folder)


def test_full_disk_at_the_final_write(tmp_path: Path, few_questions: Path, small_disk):
    """The journal fits but the final write does not: exit 5, one line naming the journal and the
    command to continue, no temp file, the earlier results untouched; the journal resumes."""
    probe = tmp_path / "probe.json"
    with LoopbackServer(default=OK) as srv:
        assert cli(tmp_path, "--questions", str(few_questions), "--output", str(probe),
                   env=judge_env(srv.url)).code == 0
    size = probe.stat().st_size
    disk = small_disk(4096 + int(size * 1.2))
    out = disk / "r.json"
    out.write_text(EARLIER)
    with LoopbackServer(default=OK) as srv:
        run = cli(tmp_path, "--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert run.code == 5, run.stderr[-3000:]
    assert out.read_text() == EARLIER
    assert not temp_files(disk)
    journals = list((disk / "runs").glob("*.journal.jsonl"))
    assert len(journals) == 1
    assert done_questions(run.stderr, ALL_QUESTIONS[:3]) <= set(journal_rows(journals[0]))
    last = run.stderr.strip().splitlines()[-1]
    assert str(journals[0]) in last and "--resume" in last
    roomy = tmp_path / "r.json"
    with LoopbackServer(default=OK) as srv:
        resumed = cli(tmp_path, "--questions", str(few_questions), "--output", str(roomy), "--resume",
                      str(journals[0]), env=judge_env(srv.url))
        assert len(srv.requests) == 3 - len(journal_rows(journals[0]))
    assert resumed.code == 0 and len(strict_json(roomy)["results"]) == 3
