"""--order-check: each checked question graded again with its chunks reversed; the rows keep both
grades and the run says how far the order moved the judge."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components.core import Question
from components.run.evaluation import order_check_sample
from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer, Reply
from utils import metrics as M


def alternating(n: int, body: dict) -> Reply:
    """The first call of each question grades 8, its reversed call 5 (a sequential run alternates)."""
    return Reply(text='{"grade": 8, "reasoning": "first"}' if n % 2 == 0 else '{"grade": 5, "reasoning": "second"}')


def test_order_check_keeps_both_grades_and_reports_the_change(tmp_path: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(script=alternating) as srv:
        run = run_cli("--quick", "--order-check", "--output", str(out), env=judge_env(srv.url))
        calls = len([r for r in srv.requests if r.path.endswith("/v1/messages")])
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    rows = data["results"]
    assert calls == 10 and [(r["llm_grade"], r["llm_grade_reversed"]) for r in rows] == [(8, 5)] * 5
    flips = sum(1 for r in rows if (M.total_score(8, r["rank"]) >= 7) != (M.total_score(5, r["rank"]) >= 7))
    check = data["order_check"]
    assert (check["questions"], check["mean_abs_change"], check["mean_change"]) == (5, 3.0, -3.0)
    assert check["flip_rate"] == pytest.approx(100 * flips / 5) and check["mean_change_ci95"] == [-3.0, -3.0]
    assert "chunk order" in run.stdout and "moved by 3.00" in run.stdout
    assert data["run"]["usage"]["judge"]["calls"] == 10


CHUNK_HEADER = re.compile(r"^\[CHUNK \d+/\d+ doc_id=\S+ chunk_id=(\S+)\]$", re.M)


def test_the_second_call_sends_the_same_chunks_reversed_on_a_sample(tmp_path: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(default=Reply(text='{"grade": 8, "reasoning": "same"}')) as srv:
        run = run_cli("--quick", "--order-check", "--order-check-sample", "2", "--output", str(out),
                      env=judge_env(srv.url))
        prompts = srv.prompts()
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    rows = data["results"]
    checked = [r for r in rows if r["llm_grade_reversed"] is not None]
    assert len(prompts) == len(rows) + 2 and len(checked) == 2  # one more call per sampled question only
    assert data["run"]["selection"]["order_check"] == {"sample": 2, "seed": 0}
    ids = [CHUNK_HEADER.findall(p) for p in prompts]
    # a sequential run sends a question's reversed call right after its first one: the same prompt,
    # the same chunks, in reverse order
    pairs = [i for i in range(len(prompts) - 1) if len(ids[i]) > 1 and ids[i + 1] == ids[i][::-1]]
    assert len(pairs) == 2, ids
    for i in pairs:
        assert prompts[i].split("[CHUNK ", 1)[0] == prompts[i + 1].split("[CHUNK ", 1)[0]
        row = next(r for r in checked if [c["chunk_id"] for c in r["retrieved"]] == ids[i])
        assert (row["llm_grade"], row["llm_grade_reversed"]) == (8, 8)
    assert data["order_check"]["questions"] == 2 and data["order_check"]["mean_abs_change"] == 0.0


def test_the_sample_is_fixed_by_its_seed():
    questions = [Question(f"q{i}", "?", None, ("d",)) for i in range(10)]
    first = order_check_sample(questions, 3)
    assert first == order_check_sample(questions, 3) and len(first) == 3
    assert first == sorted(first, key=lambda q: int(q[1:]))  # in the questions' order
    assert order_check_sample(questions, True) == [q.id for q in questions]
    assert order_check_sample(questions, None) == [] and order_check_sample(questions, 50) == [q.id for q in questions]


def test_order_check_with_judge_batch_is_refused(tmp_path: Path):
    with LoopbackServer() as srv:
        run = run_cli("--quick", "--order-check", "--judge-batch", "--output", str(tmp_path / "r.json"),
                      env=judge_env(srv.url))
    assert run.code == 2 and "--order-check is not sent through --judge-batch" in run.stderr
