"""``--require-agreement`` compares the gate's outcomes, not the judges' labels: a panel of the offline judge and an
informative judge that reads only the question (its grade a function of the question alone, so it sees no
difference between two retrievals of the same questions). The new run finds every needle, the old one none."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from components import api
from components.core import ScoredChunk
from tests.conftest import ROOT, run_cli
from tests.panel_fixtures import grade_reply, scripted_judges
from utils.errors import EXIT_GATE

QUESTIONS = json.loads((ROOT / "questions.json").read_text())["questions"][:12]
NEEDLES = {q["question"]: q["needle_doc_id"] for q in QUESTIONS}


class Placed:
    """The question's needle document first (``found``), or nowhere."""

    def __init__(self, found: bool) -> None:
        self.found = found

    def index(self, chunks):
        self.chunks = list(chunks)

    def retrieve(self, query, k):
        needle = NEEDLES[query]
        out = [c for c in self.chunks if c.doc_id != needle][:k]
        if self.found:
            out.insert(0, next(c for c in self.chunks if c.doc_id == needle))
        return [ScoredChunk(c, 1.0) for c in out[:k]]


def question_only(prompt: str) -> str:
    """Grades the question, never the chunks: 2 to 9 by the question's length."""
    question = re.search(r"^USER QUESTION: (.*)$", prompt, re.M).group(1)
    return grade_reply(2 + len(question) % 8)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    folder = tmp_path_factory.mktemp("agreement")
    paths = {}
    with scripted_judges(question=question_only):
        for name, found in (("none", False), ("found", True)):
            result = api.evaluate(Placed(found), QUESTIONS, judges=["offline", "question"], name=name)
            assert result.run.status == "completed"
            paths[name] = folder / f"{name}.json"
            result.save(paths[name])
    return paths


def agreement_lines(stdout: str) -> list[str]:
    return [line.strip() for line in stdout.splitlines() if line.split()[1:2] == ["agreement"]]


def test_a_judge_that_sees_no_difference_where_the_panel_sees_better_passes_the_worse_gate(runs):
    """Under the offline judge the new run is better; under the question-only judge nothing changed (the same
    grade for the same question); the panel (their median) says better. None says worse: the --fail-on worse
    outcome is "not worse" under each, so the agreement passes, though the labels differ."""
    run = run_cli("compare", str(runs["none"]), str(runs["found"]), "--fail-on", "worse", "--require-agreement")
    assert run.code == 0, run.stdout[-4000:] + run.stderr[-2000:]
    assert "found vs none, avg grade: depends on the judge" in run.stdout  # the labels do differ
    grade = next(line for line in agreement_lines(run.stdout) if "avg_llm_grade" in line)
    assert grade.startswith("pass  agreement  avg_llm_grade (avg grade), found vs none: the outcome (not worse: "
                            "the panel says better) holds under every judge (offline, question)"), grade


def test_where_a_judge_says_worse_and_another_does_not_the_gate_fails(runs):
    """The other way round: the offline judge (and the panel) say worse, the question-only judge sees no
    difference: the outcome depends on the judge."""
    run = run_cli("compare", str(runs["found"]), str(runs["none"]), "--fail-on", "worse", "--require-agreement")
    assert run.code == EXIT_GATE, run.stdout[-4000:]
    grade = next(line for line in agreement_lines(run.stdout) if "avg_llm_grade" in line)
    assert grade.startswith("FAIL  agreement  avg_llm_grade (avg grade), none vs found: the outcome (worse: the "
                            "panel says worse) depends on the judge: question: no detectable difference (Δ +0.00"), \
        grade
