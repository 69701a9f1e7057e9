"""A judge's grade outside 1-10 in the run: clamped into the row with what the judge said
(``grade_clamped_from``), counted by the summary and the report, combined across repeats."""

from __future__ import annotations

import json
import re
from pathlib import Path

from components.judges.retrieval_grader import GradeResult
from components.run.benchmark_loop import combine_grades
from tests.conftest import judge_env, run_cli
from tests.loopback import LoopbackServer, Reply

REPLIES = [Reply(text='{"grade": 11, "reasoning": "said eleven"}'), Reply(text='{"grade": 8, "reasoning": "fine"}'),
           Reply(text='{"grade": "8/100", "reasoning": "other scale"}')]


def test_a_run_clamps_the_grade_records_what_the_judge_said_and_counts_the_row(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(REPLIES) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert run.code == 8, run.stderr  # the third grade is missing (unparseable): status incomplete
    rows = json.loads(out.read_text())["results"]
    assert [(r["llm_grade"], r["grade_clamped_from"]) for r in rows] == [(10, 11.0), (8, None), (None, None)]
    assert rows[0]["llm_reasoning"] == "said eleven" and rows[0]["grade_error"] is None
    assert rows[2]["grade_error"] == "unparseable: the grade '8/100' is not a number from 1 to 10"
    assert re.search(r"^clamped grades +1: the judge's grade was outside 1-10 and was clamped", run.stdout, re.M)
    assert "outside 1-10: clamped to 10" in run.stderr  # the warning when it happens

    page = tmp_path / "report.html"
    assert run_cli("report", str(out), "-o", str(page)).code == 0
    html = page.read_text()
    assert "<tr><th>clamped grades</th><td colspan=2>1: " in html
    assert "<b>Clamped</b> the judge's grade 11 is outside 1-10: clamped to 10" in html


def test_a_run_without_clamping_says_nothing_of_it(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with LoopbackServer(default=REPLIES[1]) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), env=judge_env(srv.url))
    assert run.code == 0 and "clamped" not in run.stdout
    assert all(r["grade_clamped_from"] is None for r in json.loads(out.read_text())["results"])


def test_repeats_keep_the_clamped_value_only_when_the_median_is_that_grade():
    eleven = GradeResult(10, "r", 1.0, clamped_from=11.0)
    assert combine_grades([eleven, GradeResult(9, "s", 1.0)]).clamped_from == 11.0  # median 9.5 -> 10
    zero = GradeResult(1, "r", 1.0, clamped_from=0.0)
    combined = combine_grades([zero, GradeResult(3, "s", 1.0)])  # median 2: not the clamped grade
    assert (combined.grade, combined.clamped_from) == (2, None)
    assert combine_grades([eleven]).clamped_from == 11.0
