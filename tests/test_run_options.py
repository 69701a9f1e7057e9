"""What a run writes and selects, end to end: --k, --limit, --ids, the runs/ history, several
strategies in one command, the retrieved text (--no-text), the TRACE prompt, the summary on stdout,
judge repeats and per-chunk relevance over the loopback judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer, Reply


def rows(path: Path) -> list[dict]:
    return json.loads(path.read_text())["results"]


def test_k_limit_and_ids(tmp_path: Path):
    out = tmp_path / "r.json"
    run = run_cli("--k", "10", "--limit", "2", "--strategy", "baseline", "--output", str(out))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["k"] == 10 and [r["question_id"] for r in data["results"]] == ["py_001", "py_002"]
    for r in data["results"]:
        assert len(r["retrieved"]) == 10
        assert r["hit_at_k"] == (r["rank"] is not None) and r["hit_at_5"] == (r["rank"] is not None and r["rank"] <= 5)
        if r["rank"] is not None and r["rank"] > 5:  # beyond 5 weighs as not found
            assert r["total_score"] == pytest.approx(r["llm_grade"] * 0.6)
    assert "hit_at_k_rate" in data
    run = run_cli("--ids", "py_003,py_001", "--strategy", "baseline", "--output", str(out))
    assert run.code == 0 and [r["question_id"] for r in rows(out)] == ["py_001", "py_003"]  # file order
    bad = run_cli("--ids", "py_001,nope", "--strategy", "baseline", "--output", str(out))
    assert bad.code == 2 and "'nope' not in" in bad.stderr


def test_every_run_is_kept_under_runs(tmp_path: Path):
    out = tmp_path / "r.json"
    written = []
    for _ in range(2):
        run = run_cli("--limit", "1", "--strategy", "baseline", "--output", str(out))
        assert run.code == 0
        written.append(Path(re.search(r"\(and (\S+\.json)\)", run.stderr).group(1)))
    files = sorted((tmp_path / "runs").glob("*.json"))
    assert sorted(written) == files and not list((tmp_path / "runs").glob("*.journal.jsonl"))  # journals removed
    ids = [json.loads(f.read_text())["run"]["id"] for f in written]
    assert ids == [f.stem for f in written] and len(set(ids)) == 2
    assert json.loads(out.read_text())["run"]["id"] == ids[-1]  # the output file is the latest


def test_several_strategies_in_one_command(tmp_path: Path):
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline,modular-no-llm", "--limit", "4", "--output", str(out))
    assert run.code == 0, run.stderr
    assert run.stderr.count("Corpus builtin") == 2 and run.stderr.count("loaded+chunked") == 2
    runs = (sorted((tmp_path / "runs").glob("*_baseline.json"))
            + sorted((tmp_path / "runs").glob("*_modular-no-llm.json")))
    assert len(runs) == 2
    comparison = list((tmp_path / "runs").glob("*_comparison.json"))
    assert len(comparison) == 1
    data = json.loads(comparison[0].read_text())
    assert [r["label"] for r in data["runs"]][:2] == ["baseline", "modular-no-llm"]
    assert data["common_question_count"] == 4
    assert "baseline" in run.stdout and "modular-no-llm" in run.stdout  # the comparison is printed


def test_retrieved_text_and_no_text(tmp_path: Path):
    out = tmp_path / "r.json"
    assert run_cli("--limit", "1", "--strategy", "baseline", "--output", str(out)).code == 0
    item = rows(out)[0]["retrieved"][0]
    assert item["text"].startswith(item["title"]) and isinstance(item["heading_path"], list)
    assert run_cli("--limit", "1", "--strategy", "baseline", "--no-text", "--output", str(out)).code == 0
    assert all(x["text"] is None for x in rows(out)[0]["retrieved"])


def test_summary_on_stdout_logs_on_stderr(tmp_path: Path):
    run = run_cli("--limit", "2", "--strategy", "baseline", "--output", str(tmp_path / "r.json"))
    assert "MRR" in run.stdout and "[1/2]" not in run.stdout
    assert "[1/2]" in run.stderr and "MRR " not in run.stderr.replace("METRIC mrr", "")


def test_trace_log_holds_the_prompt_and_raw_reply(tmp_path: Path, few_questions: Path):
    with LoopbackServer(default=Reply(text='{"grade": 6, "reasoning": "SENTINEL-REASON"}')) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"), env=judge_env(srv.url))
    assert run.code == 0, run.stderr
    log = run.log_text()
    assert "prompt sent to claude-sonnet-5-5" in log and "You are an impartial judge" in log
    assert "SENTINEL-REASON" in log and "raw reply (stop_reason=end_turn)" in log


def test_judge_repeats(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    grades = iter([8, 6, 7] * 3)
    with LoopbackServer(lambda n, body: Reply(text=json.dumps({"grade": next(grades)}))) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--judge-repeats", "3",
                      env=judge_env(srv.url))
        assert len(srv.requests) == 9
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    for r in data["results"]:
        assert r["llm_grades"] == [8, 6, 7] and r["llm_grade"] == 7  # the median
        assert r["grade_spread"] == 2 and r["grade_sd"] == pytest.approx(0.8165, abs=1e-4)
    assert data["run"]["judge"]["repeats"] == 3
    assert data["bootstrap"]["method"] == "percentile-two-level"


def test_judge_repeats_say_how_much_the_grades_moved_over_the_run(tmp_path: Path, few_questions: Path):
    """Beside each row's spread, the run says how many questions' grade moved by 2 or more between
    repeats and the mean standard deviation: in the results file and in the summary."""
    out = tmp_path / "r.json"
    grades = iter([8, 6, 7, 7, 7, 8, 5, 9, 5])  # spreads 2, 1, 4
    with LoopbackServer(lambda n, body: Reply(text=json.dumps({"grade": next(grades)}))) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--judge-repeats", "3",
                      env=judge_env(srv.url))
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert [r["grade_spread"] for r in data["results"]] == [2, 1, 4]
    consistency = data["judge_consistency"]
    assert consistency["questions"] == 3 and consistency["moved_2_or_more_rate"] == pytest.approx(200 / 3, abs=1e-3)
    assert consistency["mean_sd"] == pytest.approx((0.8165 + 0.4714 + 1.8856) / 3, abs=1e-3)
    line = next(ln for ln in run.stdout.splitlines() if ln.startswith("judge repeats"))
    assert "grade moved by 2 or more in 66.7% of 3 questions, mean SD 1.06" in line


def test_chunk_relevance_over_the_llm_judge(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"

    def script(n: int, body: dict) -> Reply:
        prompt = body["messages"][0]["content"]
        if "relevance of each retrieved chunk" in prompt:
            return Reply(text="[3, 0, 2, 1, 0]")
        return Reply(text='{"grade": 8, "reasoning": "ok"}')

    with LoopbackServer(script) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--chunk-relevance",
                      env=judge_env(srv.url))
        assert len(srv.requests) == 6  # one grade and one relevance call per question
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert [r["chunk_relevance"] for r in data["results"]] == [[3, 0, 2, 1, 0]] * 3
    # DCG = 3 + 0 + 2/2 + 1/log2(5) + 0; IDCG = 3 + 2/log2(3) + 1/2
    assert data["proxy_ndcg_at_k"] == pytest.approx((3 + 1 + 1 / 2.321928) / (3 + 2 / 1.5849625 + 0.5), abs=1e-6)
    assert data["proxy_precision_at_k"] == pytest.approx(0.4)
    assert data["run"]["usage"]["judge"]["calls"] == 6
    assert "proxy" in run.stdout


def test_offline_run_has_relevance_and_diagnosis_by_default(tmp_path: Path):
    out = tmp_path / "r.json"
    assert run_cli("--limit", "5", "--output", str(out)).code == 0
    data = json.loads(out.read_text())
    assert all(isinstance(r["chunk_relevance"], list) for r in data["results"])
    missed = [r for r in data["results"] if r["rank"] != 1 or (r["total_score"] or 0) < 7]
    assert missed and all(r["diagnosis"] and r["diagnosis"]["tags"] for r in missed)
    assert sum(data["diagnosis_counts"].values()) >= len(missed)
    assert all(r["needle_best_chunk"]["chunk_id"].split("#")[0] in r["needle_doc_ids"] for r in data["results"])
