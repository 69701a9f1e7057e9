"""--output never destroys anything.

Which paths ``--output`` may name (:func:`utils.files.output.resolve_output`, and the same rows end to
end), and the atomic write (:func:`utils.files.output.write_json_atomic`): its temp file never outlives
a failure or an interrupt, an earlier file survives a full disk, and that failure is a
:class:`utils.errors.ResultsWriteError`.

No row touches a real device: the device rows use a private node made with ``mknod`` in
``tmp_path`` (root only, else skipped), because the code under test — before the fix — replaced
the device with a regular file.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from tests.conftest import run_cli

Q = {"id": "q1", "question": "How do I loop?", "expected_answer": "With for.", "needle_doc_id": "loops"}
EARLIER = '{"earlier": true}'


@pytest.fixture
def case(tmp_path: Path) -> dict[str, Path]:
    """A questions file and a two-page corpus folder, each in its own folder; ``out`` is empty."""
    (tmp_path / "q").mkdir()
    questions = tmp_path / "q" / "questions.json"
    questions.write_text(json.dumps({"questions": [Q]}))
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "loops.md").write_text("# Loops\n\nUse a for loop to repeat a block over a sequence.\n")
    (corpus / "files.md").write_text("# Files\n\nOpen a file with open() and read it.\n")
    (tmp_path / "out").mkdir()
    return {"root": tmp_path, "questions": questions, "corpus": corpus, "out": tmp_path / "out"}


def _device(path: Path) -> Path:
    """A private character device equal to /dev/null (1, 3)."""
    try:
        os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(1, 3))
    except (PermissionError, OSError) as err:
        pytest.skip(f"cannot mknod a device here: {err}")
    return path


def _fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def _symlink(path: Path, target: Path) -> Path:
    path.symlink_to(target)
    return path


def _hardlink(path: Path, target: Path) -> Path:
    os.link(target, path)
    return path


def snapshot(folder: Path) -> dict[str, tuple[int, bytes | None]]:
    """Every entry under ``folder``: its file type and (for regular files) its bytes."""
    out = {}
    for p in sorted(folder.rglob("*")):
        st = p.lstat()
        out[str(p.relative_to(folder))] = (stat.S_IFMT(st.st_mode),
                                           p.read_bytes() if stat.S_ISREG(st.st_mode) else None)
    return out


# (name, the --output argument built from the case, words the one error line must hold)
REFUSED = [
    ("questions-file", lambda c: str(c["questions"]), "is the questions file"),
    ("questions-file-relative-spelling", lambda c: str(c["out"] / ".." / "q" / "questions.json"),
     "is the questions file"),
    ("hard-link-to-questions", lambda c: str(_hardlink(c["out"] / "r.json", c["questions"])), "is the questions file"),
    ("symlink-to-questions", lambda c: str(_symlink(c["out"] / "r.json", c["questions"])), "is the questions file"),
    ("new-file-inside-corpus", lambda c: str(c["corpus"] / "results.json"), "inside the corpus folder"),
    ("corpus-page", lambda c: str(c["corpus"] / "loops.md"), "inside the corpus folder"),
    ("corpus-folder-trailing-slash", lambda c: str(c["corpus"]) + "/", "inside the corpus folder"),
    ("device", lambda c: str(_device(c["out"] / "null")), "not a regular file"),
    ("fifo", lambda c: str(_fifo(c["out"] / "fifo")), "not a regular file"),
    ("symlink-to-device", lambda c: str(_symlink(c["out"] / "r.json", _device(c["out"] / "null"))),
     "not a regular file"),
    ("symlink-to-fifo", lambda c: str(_symlink(c["out"] / "r.json", _fifo(c["out"] / "fifo"))), "not a regular file"),
    ("folder-under-a-file", lambda c: str(c["questions"] / "r.json"), "is a file, not a folder"),
    ("folder-not-writable", lambda c: "/proc/r.json", "not writable"),
]


@pytest.mark.parametrize("make,message", [r[1:] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_refused_output_exits_2_and_touches_nothing(case, make, message):
    output = make(case)
    before = snapshot(case["root"])
    run = run_cli("--questions", str(case["questions"]), "--corpus", str(case["corpus"]), "--output", output)
    assert run.code == 2, run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and message in errors[0], run.stderr
    assert "Traceback" not in run.stderr
    assert snapshot(case["root"]) == before  # nothing replaced, nothing added (no temp file)


@pytest.mark.parametrize("name,message", [r[::2] for r in REFUSED], ids=[r[0] for r in REFUSED])
def test_resolve_output_refuses(case, name, message):
    from utils.errors import InputError
    from utils.files.output import resolve_output

    make = dict((r[0], r[1]) for r in REFUSED)[name]
    with pytest.raises(InputError, match=message) as err:
        resolve_output(make(case), questions_path=case["questions"], corpus_dir=case["corpus"])
    assert "\n" not in str(err.value) and "--output" in str(err.value)


@pytest.mark.parametrize("path", ["/dev/null", "/dev/zero", "/dev/urandom"])
def test_resolve_output_refuses_real_devices(path):
    """Safe to run against real devices: resolve_output only looks at the path."""
    from utils.errors import InputError
    from utils.files.output import resolve_output

    with pytest.raises(InputError, match="not a regular file"):
        resolve_output(path, questions_path=None, corpus_dir=None)


def test_trailing_slash_means_a_folder(case):
    folder = str(case["out"]) + "/"
    run = run_cli("--quick", "--output", folder)
    assert run.code == 0, run.stderr
    assert json.loads((case["out"] / "benchmark_results.json").read_text())["run"]["status"] == "completed"


def test_an_existing_folder_gets_the_default_name(case):
    run = run_cli("--quick", "--output", str(case["out"]))
    assert run.code == 0, run.stderr
    assert (case["out"] / "benchmark_results.json").is_file()


def test_a_symlink_to_a_results_file_is_written_through(case):
    """The link stays a link (an ordinary write would follow it); the file it names gets the results."""
    target = case["out"] / "run1.json"
    target.write_text(EARLIER)
    link = _symlink(case["root"] / "latest.json", target)
    run = run_cli("--quick", "--output", str(link))
    assert run.code == 0, run.stderr
    assert link.is_symlink() and os.readlink(link) == str(target)
    assert json.loads(target.read_text())["run"]["status"] == "completed"


@pytest.mark.parametrize("output,expected", [
    ("r.json", "r.json"),
    ("sub/", "sub/benchmark_results.json"),
    ("sub", "sub/benchmark_results.json"),
    ("sub/r.json", "sub/r.json"),
    ("new/deeper/r.json", "new/deeper/r.json"),  # missing folders are created by the write
    ("new/", "new/benchmark_results.json"),
])
def test_resolve_output_accepts(tmp_path: Path, monkeypatch, output, expected):
    from utils.files.output import resolve_output, write_json_atomic

    (tmp_path / "sub").mkdir()
    monkeypatch.chdir(tmp_path)
    assert resolve_output(output, questions_path=None, corpus_dir=None) == Path(expected)
    assert not (tmp_path / "new").exists()  # checked, not made: a run failing before its write leaves no folder
    write_json_atomic(Path(expected), {"ok": True})
    assert json.loads(Path(expected).read_text()) == {"ok": True}


# --------------------------------------------------------------------------- the atomic write

class _Explodes:
    """Serialises to str() — until it raises ``exc`` part-way through the payload."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc

    def __str__(self) -> str:
        raise self.exc


def _raise(exc: BaseException):
    def boom(*_args, **_kwargs):
        raise exc
    return boom


# (name, a function of monkeypatch that makes the write fail, the exception expected)
FAILING_WRITES = [
    ("keyboard-interrupt-in-serialisation", None, KeyboardInterrupt),
    ("system-exit-in-serialisation", None, SystemExit),
    ("keyboard-interrupt-at-fsync", lambda mp: mp.setattr(os, "fsync", _raise(KeyboardInterrupt())),
     KeyboardInterrupt),
    ("system-exit-at-replace", lambda mp: mp.setattr(os, "replace", _raise(SystemExit(1))), SystemExit),
    ("enospc-at-fsync", lambda mp: mp.setattr(os, "fsync", _raise(OSError(28, "No space left on device"))),
     "ResultsWriteError"),
]


@pytest.mark.parametrize("patch,expected", [r[1:] for r in FAILING_WRITES], ids=[r[0] for r in FAILING_WRITES])
def test_a_failed_write_leaves_no_temp_file_and_the_earlier_file(tmp_path: Path, monkeypatch, patch, expected):
    from utils.files import output as results

    out = tmp_path / "r.json"
    out.write_text(EARLIER)
    payload: dict = {"rows": [{"text": "x" * 10_000, "n": i} for i in range(50)]}
    if patch is None:  # the serialiser itself is interrupted, half-way through the rows
        payload["rows"].insert(25, {"bad": _Explodes(expected())})
    else:
        patch(monkeypatch)
    exc_type = getattr(results, expected) if isinstance(expected, str) else expected
    with pytest.raises(exc_type):
        results.write_json_atomic(out, payload)
    monkeypatch.undo()
    assert out.read_text() == EARLIER
    assert [p.name for p in tmp_path.iterdir()] == ["r.json"]


def test_a_full_disk_keeps_the_earlier_file(tiny_tmpfs: Path):
    from utils.errors import BenchmarkError
    from utils.files.output import ResultsWriteError, write_json_atomic

    out = tiny_tmpfs / "r.json"
    out.write_text(EARLIER)
    with pytest.raises(ResultsWriteError) as err:
        write_json_atomic(out, {"rows": ["y" * 1000] * 200})  # ~200 kB on a 64 kB disk
    assert isinstance(err.value, BenchmarkError) and err.value.exit_code == 5
    assert str(out) in str(err.value) and "No space left on device" in str(err.value)
    assert "\n" not in str(err.value)
    assert out.read_text() == EARLIER
    assert [p.name for p in tiny_tmpfs.iterdir()] == ["r.json"]


def test_remove_temp_files_cleans_a_write_in_flight(tmp_path: Path, monkeypatch):
    """What the edge calls before ``os._exit`` (a second signal during the final write)."""
    from utils.files import output as results

    seen = []

    def stop(fd):  # the moment of the hard exit: the temp file exists, os.replace has not run
        seen.extend(p.name for p in tmp_path.iterdir())
        results.remove_temp_files()
        raise SystemExit(130)

    monkeypatch.setattr(os, "fsync", stop)
    with pytest.raises(SystemExit):
        results.write_json_atomic(tmp_path / "r.json", {"a": 1})
    assert len(seen) == 1 and seen[0].startswith(".r.json.") and seen[0].endswith(".tmp")
    assert list(tmp_path.iterdir()) == []


def test_a_full_disk_at_the_final_write_exits_5(tiny_tmpfs: Path):
    """Three questions' journal (~35 kB) fits on the 64 kB disk, their results file does not: exit 5,
    one error line naming the file and the cause, the earlier file and the journal kept, no temp file."""
    out = tiny_tmpfs / "r.json"
    out.write_text(EARLIER)
    run = run_cli("--limit", "3", "--output", str(out))
    assert run.code == 5, run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and "No space left on device" in errors[0] and "could not write" in errors[0], run.stderr
    assert "Traceback" not in run.stderr
    assert out.read_text() == EARLIER
    files = [p.name for p in tiny_tmpfs.rglob("*") if p.is_file()]
    assert not [f for f in files if f.endswith(".tmp")], files
    journals = [f for f in files if f.endswith(".journal.jsonl")]
    assert len(journals) == 1 and journals[0] in run.stderr


# ---- the commands that read a run never write into the corpus folder it records

def recorded_run(path: Path, corpus: str) -> Path:
    """A graded two-question run whose results record ``corpus`` as the corpus folder it read."""
    from components.analysis.aggregate import build_report
    from utils.results import CorpusInfo, QuestionResult, RetrievedItem, RunInfo

    rows = [QuestionResult(question_id=f"q{i}", question=f"question {i}?", needle_doc_id="loops",
                           needle_doc_ids=["loops"], rank=1, llm_grade=8,
                           retrieved=[RetrievedItem(rank=1, doc_id="loops", chunk_id="loops#0",
                                                    text="Use a for loop.")])
            for i in range(2)]
    build_report(RunInfo(id=f"run-{path.stem}", strategy=path.stem, corpus=CorpusInfo(source=corpus)), rows).save(path)
    return path


OUTPUT_OPTIONS = {  # command: its arguments with the run A (and B, the labels L) and the output OUT
    "report -o": lambda a, b, labels, out: ["report", a, "-o", out],
    "label -o": lambda a, b, labels, out: ["label", a, "-o", out],
    "compare --json": lambda a, b, labels, out: ["compare", a, b, "--json", out],
    "export-run -o": lambda a, b, labels, out: ["export-run", a, "-o", out],
    "export-run --qrels": lambda a, b, labels, out: ["export-run", a, "-o", str(Path(a).parent / "run.trec"),
                                                     "--qrels", out],
    "calibrate --json": lambda a, b, labels, out: ["calibrate", a, "--labels", labels, "--json", out],
}


@pytest.mark.parametrize("spelling", ["absolute", "relative"])
@pytest.mark.parametrize("where", ["a-new-file", "the-folder-itself", "a-new-subfolder"])
@pytest.mark.parametrize("command", OUTPUT_OPTIONS)
def test_every_output_option_refuses_the_corpus_folder_the_run_records(case, command, where, spelling):
    """As the run refuses --output inside --corpus, so does every command reading the run: its
    output option inside the recorded corpus folder is exit 2, one line, nothing written."""
    root, corpus = case["root"], case["corpus"]
    recorded = str(corpus) if spelling == "absolute" else "corpus"  # relative: from the folder the commands run in
    a = recorded_run(case["out"] / "a.json", recorded)
    b = recorded_run(case["out"] / "b.json", recorded)
    labels = case["out"] / "labels.jsonl"
    labels.write_text('{"question_id": "q0", "human_grade": 7}\n{"question_id": "q1", "human_grade": 9}\n')
    out = {"a-new-file": str(corpus / "x.out"), "the-folder-itself": str(corpus),
           "a-new-subfolder": str(corpus / "sub" / "x.out")}[where]
    before = snapshot(root)
    run = run_cli(*OUTPUT_OPTIONS[command](str(a), str(b), str(labels), out), cwd=root)
    assert run.code == 2, run.stderr[-2000:]
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and "is inside the corpus folder" in errors[0] and "which the run records" in errors[0]
    assert snapshot(root) == before  # nothing written, no folder made


def test_an_output_beside_the_recorded_corpus_is_written(case):
    a = recorded_run(case["out"] / "a.json", str(case["corpus"]))
    page = case["root"] / "corpus-report.html"  # the corpus folder's name as a prefix is not inside it
    assert run_cli("report", str(a), "-o", str(page)).code == 0 and page.is_file()
