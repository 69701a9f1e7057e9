"""benchmark.py end to end: offline judge, loopback judge, and input validation (exit 2)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.conftest import clean_env, judge_env, run_cli
from tests.loopback import MODELS, LoopbackServer, Reply

JQ = [
    ".results[0] | {llm_grade, llm_reasoning, rank, hit_at_1, hit_at_5, total_score}",
    "{accuracy, hit_at_1_rate, hit_at_5_rate, mrr, avg_llm_grade, avg_total_score, pass_rate_8, pass_rate_7, "
    "pass_rate_6_5}",
    "[.results[].llm_grade] | map(select(. != null)) | all(. >= 1 and . <= 10)",
]


def test_offline_quick_run(tmp_path: Path):
    out = tmp_path / "results.json"
    run = run_cli("--strategy", "modular-no-llm", "--quick", "--output", str(out))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["schema_version"] == 2
    assert data["run"]["status"] == "completed" and data["run"]["quick"] is True
    assert data["run"]["judge"]["provider"] == "offline"
    assert "lexical proxy" in data["run"]["judge"]["note"]
    assert data["run"]["corpus"]["source"] == "builtin:pydoc_data.topics"
    assert len(data["run"]["questions_sha256"]) == 64 and len(data["run"]["corpus"]["sha256"]) == 64
    rows = data["results"]
    assert [r["question_id"] for r in rows] == ["py_001", "py_002", "py_003", "py_004", "py_005"]
    for r in rows:
        assert 1 <= r["llm_grade"] <= 10 and r["grade_error"] is None
        assert len(r["retrieved"]) == 5 and [x["rank"] for x in r["retrieved"]] == [1, 2, 3, 4, 5]
        assert r["hit_at_5"] == (r["rank"] is not None)
        assert r["category"]  # unknown question fields are kept
    assert data["graded_count"] == 5
    # the console says which judge graded, once
    assert run.stderr.count("offline lexical judge") == 1 and "not Sonnet" in run.stderr
    assert "[1/5] " in run.stderr and "METRIC mrr=" in run.stderr
    assert run.log_file and "[lexical-judge] Grading question" in run.log_text()


def test_jq_recipes(tmp_path: Path):
    jq = pytest.importorskip("shutil").which("jq")
    if not jq:
        pytest.skip("jq is not installed")
    out = tmp_path / "r.json"
    assert run_cli("--quick", "--output", str(out)).code == 0
    first = json.loads(subprocess.run([jq, JQ[0], str(out)], capture_output=True, text=True, check=True).stdout)
    assert set(first) == {"llm_grade", "llm_reasoning", "rank", "hit_at_1", "hit_at_5", "total_score"}
    top = json.loads(subprocess.run([jq, JQ[1], str(out)], capture_output=True, text=True, check=True).stdout)
    assert all(v is not None for v in top.values())
    assert subprocess.run([jq, JQ[2], str(out)], capture_output=True, text=True, check=True).stdout.strip() == "true"


def test_loopback_judge_run(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    grades = iter([9, 6, 3])
    with LoopbackServer(lambda n, body: Reply(text=json.dumps({"grade": next(grades), "reasoning": f"r{n}"}))) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
        assert run.code == 0, run.stderr
        assert len(srv.requests) == 3
    data = json.loads(out.read_text())
    assert data["run"]["judge"]["provider"] == "anthropic"
    assert data["run"]["judge"]["model"] == "claude-sonnet-5-5"
    assert [r["llm_grade"] for r in data["results"]] == [9, 6, 3]
    for r in data["results"]:
        assert r["total_score"] == pytest.approx(r["llm_grade"] * {1: 1.0, 2: .95, 3: .95, 4: .85, 5: .85}.get(
            r["rank"], 0.6))
        assert r["prompt_variant"] == "reference" and r["llm_raw_reply"].startswith('{"grade"')
    assert data["avg_llm_grade"] == 6.0
    assert "Judge: Claude via the Anthropic API, model claude-sonnet-5-5" in run.stderr
    log = run.log_text()
    assert "SUCCESS in " in log and "grade=9" in log and "total = grade × weight" in log


def test_model_override_from_env(tmp_path: Path, few_questions: Path):
    with LoopbackServer(models={**MODELS, "claude-sonnet-test-9": MODELS["claude-sonnet-4-6"]}) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                      env=judge_env(srv.url, BENCHMARK_SONNET_MODEL="claude-sonnet-test-9"))
        assert run.code == 0
        assert {r.body["model"] for r in srv.requests} == {"claude-sonnet-test-9"}
        assert {r.body["thinking"]["type"] for r in srv.requests} == {"disabled"}  # what that model takes


# --------------------------------------------------------------------------- validation

def write(path: Path, content: str | bytes) -> Path:
    path.write_bytes(content if isinstance(content, bytes) else content.encode())
    return path


Q_OK = {"id": "q1", "question": "How?", "expected_answer": "Like so.", "needle_doc_id": "for"}

BAD_QUESTIONS = [
    ("missing", None, "does not exist"),
    ("not-json", "{not json", "not valid JSON (line 1"),
    ("top-level", "42", "the top level is a int"),
    ("empty", "[]", "the questions list is empty"),
    ("no-id", json.dumps([{**Q_OK, "id": None}]), "question #1 has no id"),
    ("dup-id", json.dumps([Q_OK, Q_OK]), "question #2 repeats id 'q1'"),
    ("empty-text", json.dumps([{**Q_OK, "question": "  "}]), "has no question text"),
    ("non-string", json.dumps([{**Q_OK, "expected_answer": 42}]), "\"expected_answer\" is a int, not a string"),
    ("no-needle", json.dumps([{"id": "q1", "question": "How?"}]), "has no needle"),
    ("unknown-needle", json.dumps([{**Q_OK, "needle_doc_id": "fro"}]), "needle 'fro' is not a document"),
    ("bad-utf8", b'[{"id": "q1", "question": "caf\xe9"}]', "not valid UTF-8"),
]


@pytest.fixture
def earlier_results(tmp_path: Path) -> Path:
    out = tmp_path / "results.json"
    out.write_text('{"earlier": true}')
    return out


def assert_rejected(run, earlier: Path, *needles: str) -> None:
    assert run.code == 2, run.stderr
    error_lines = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(error_lines) == 1, run.stderr
    for needle in needles:
        assert needle in error_lines[0], error_lines[0]
    assert "Traceback" not in run.stderr
    assert earlier.read_text() == '{"earlier": true}'  # not clobbered
    assert "Traceback" in run.log_text()  # the traceback went to the log file


@pytest.mark.parametrize("name,content,message", BAD_QUESTIONS, ids=[b[0] for b in BAD_QUESTIONS])
def test_bad_questions_file(tmp_path: Path, earlier_results: Path, name, content, message):
    qfile = tmp_path / f"{name}.json"
    if content is not None:
        write(qfile, content)
    run = run_cli("--questions", str(qfile), "--output", str(earlier_results))
    assert_rejected(run, earlier_results, str(qfile), message)


def test_unknown_needle_names_close_ids(tmp_path: Path, earlier_results: Path):
    qfile = write(tmp_path / "q.json", json.dumps([{**Q_OK, "needle_doc_id": "typesmaping"}]))
    run = run_cli("--questions", str(qfile), "--output", str(earlier_results))
    assert_rejected(run, earlier_results, "did you mean 'typesmapping'")


def corpus_dir(p: Path, *files: tuple[str, str]) -> Path:
    folder = p / "c"
    folder.mkdir()
    for name, text in files:
        write(folder / name, text)
    return folder


@pytest.mark.parametrize("make,message", [
    (lambda p: p / "nope", "does not exist"),
    (lambda p: corpus_dir(p), "is empty"),
    (lambda p: corpus_dir(p, ("x.txt", "t")), "has no .md files"),
    (lambda p: corpus_dir(p, ("for.md", "a"), ("for.MD", "b")), "same doc id 'for'"),
], ids=["missing", "empty", "no-md", "duplicate-id"])
def test_bad_corpus(tmp_path: Path, earlier_results: Path, make, message):
    qfile = write(tmp_path / "q.json", json.dumps([Q_OK]))
    run = run_cli("--questions", str(qfile), "--corpus", str(make(tmp_path)), "--output", str(earlier_results))
    assert_rejected(run, earlier_results, message)


def test_unknown_strategy(earlier_results: Path):
    run = run_cli("--strategy", "bm99", "--output", str(earlier_results))
    assert_rejected(run, earlier_results, "unknown strategy 'bm99'", "baseline", "modular-no-llm", "modular")


def test_strategy_module_that_fails_to_import(earlier_results: Path):
    run = run_cli("--strategy", "no_such_pkg.mod:factory", "--output", str(earlier_results))
    assert_rejected(run, earlier_results, "cannot import 'no_such_pkg.mod'")


@pytest.mark.parametrize("output,message", [
    ("/proc/version/r.json", "is a file, not a folder"),
    ("/proc/r.json", "is not writable"),
])
def test_bad_output_path(output, message, earlier_results: Path):
    run = run_cli("--output", output)
    assert run.code == 2 and message in run.stderr and "Traceback" not in run.stderr


@pytest.mark.parametrize("env,message", [
    ({"BENCHMARK_JUDGE": "gpt"}, "BENCHMARK_JUDGE='gpt' is not a judge"),
    ({"BENCHMARK_JUDGE": "anthropic"}, "needs ANTHROPIC_API_KEY"),
    ({"BENCHMARK_JUDGE_TIMEOUT": "soon"}, "BENCHMARK_JUDGE_TIMEOUT='soon'"),
])
def test_bad_environment(earlier_results: Path, env, message):
    run = run_cli("--output", str(earlier_results), env=clean_env(**env))
    assert_rejected(run, earlier_results, message)


def test_bad_usage_exits_2():
    assert run_cli("--no-such-flag").code == 2


def test_user_retriever_plugs_in(tmp_path: Path):
    (tmp_path / "first_doc.py").write_text(
        "from poc.retriever import ScoredChunk\n"
        "class R:\n"
        "    def index(self, chunks): self.c = [c for c in chunks if c.doc_id == 'for']\n"
        "    def retrieve(self, query, k): return [ScoredChunk(c, 1.0) for c in self.c[:k]]\n"
        "def make(): return R()\n")
    out = tmp_path / "r.json"
    env = clean_env(PYTHONPATH=str(tmp_path))
    run = run_cli("--strategy", "first_doc:make", "--quick", "--output", str(out), env=env)
    assert run.code == 0, run.stderr
    rows = json.loads(out.read_text())["results"]
    assert rows[0]["rank"] == 1 and rows[2]["rank"] is None  # py_003's needle is "while"
