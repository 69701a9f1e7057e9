"""An uninformative judge in compare, its gate and the verdict certificate (components/analysis/uninformative.py):
a grade metric read from it cannot be judged and fails the gate, naming the judge; a panel's uninformative judge
is left out of the certificate and of --require-agreement, and fails nothing."""

from __future__ import annotations

from components.analysis.compare import compare_runs
from components.analysis.uninformative import CANNOT_JUDGE
from tests.panel_fixtures import panel_row
from utils.metrics import total_score
from utils.results import JudgeInfo, QuestionResult, RunInfo, RunResult


def _row(qid: str, grade: int, rank: int | None) -> QuestionResult:
    return QuestionResult(qid, f"q {qid}", needle_doc_id="d", needle_doc_ids=["d"], rank=rank,
                          needle_found=rank is not None, hit_at_1=rank == 1, llm_grade=grade,
                          total_score=total_score(grade, rank))


def single(label: str, grade_found: int, grade_missed: int, found: int = 10) -> RunResult:
    """20 questions, the first ``found`` with their needle at rank 1, graded ``grade_found``; the rest missed."""
    rows = [_row(f"q{i}", grade_found if i < found else grade_missed, 1 if i < found else None) for i in range(20)]
    return RunResult(RunInfo(strategy=label, k=5, status="completed", judge=JudgeInfo("openai", "qwen")), rows)


def test_two_runs_of_a_judge_answering_8_cannot_be_judged_and_fail_the_gate():
    comparison = compare_runs([single("a", 8, 8), single("b", 8, 8, found=6)], ["a", "b"])
    verdicts = {r.metric: r.verdict for r in comparison.comparisons[0].metrics}
    assert verdicts["avg_llm_grade"] == verdicts["pass_rate_7"] == CANNOT_JUDGE
    assert verdicts["mrr"] == "no detectable difference"  # the retrieval metrics need no judge (4 questions lost)
    assert comparison.uninformative == {"a": "openai/qwen", "b": "openai/qwen"}
    text = str(comparison)
    assert "warning: the judge of a (openai/qwen) is uninformative" in text
    assert "avg grade: cannot be judged: the grades come from an uninformative judge" in text
    gate = comparison.gate(worse=True)
    failed = {c.metric: c.line for c in gate.failures}
    assert not gate.passed and "avg_llm_grade" in failed and "mrr" not in failed
    assert "cannot be judged: the judge of both runs, openai/qwen, is uninformative (its grades do not follow the " \
        "needle): a gate cannot pass on such grades" in failed["avg_llm_grade"]
    mixed = compare_runs([single("a", 9, 2), single("b", 8, 8)], ["a", "b"]).gate(worse=True)
    assert "cannot be judged: the judge of b, openai/qwen is uninformative" in \
        next(c.line for c in mixed.failures if c.metric == "avg_llm_grade")
    assert comparison.to_json()["uninformative"] == {"a": "openai/qwen", "b": "openai/qwen"}


def test_one_uninformative_run_is_enough_and_an_informative_judge_is_judged():
    comparison = compare_runs([single("a", 9, 2), single("b", 8, 8)], ["a", "b"])
    assert comparison.uninformative == {"b": "openai/qwen"}
    gate = comparison.gate(worse=["mrr"])  # a gate on a retrieval metric alone reads no grade
    assert gate.passed
    informative = compare_runs([single("a", 9, 2), single("b", 9, 2, found=8)], ["a", "b"])
    assert informative.uninformative == {} and CANNOT_JUDGE not in str(informative)
    verdicts = {r.metric: r.verdict for r in informative.comparisons[0].metrics}
    assert verdicts["avg_llm_grade"] != CANNOT_JUDGE


def panel(label: str, found: int) -> RunResult:
    """A panel of offline (9 where the needle was found, 2 where not) and qj (8 everywhere)."""
    rows = [panel_row(f"q{i}", {"offline": 9, "qj": 8}, rank=1) if i < found else
            panel_row(f"q{i}", {"offline": 2, "qj": 8}, rank=None) for i in range(20)]
    info = JudgeInfo("panel", "offline,qj", details={"aggregate": "median", "judges": [
        {"name": n, "provider": "scripted", "model": n, "judge": {"provider": "scripted", "model": n}}
        for n in ("offline", "qj")]})
    return RunResult(RunInfo(strategy=label, k=5, status="completed", judge=info), rows)


def test_a_panel_with_one_uninformative_judge_is_certified_on_the_other():
    comparison = compare_runs([panel("a", 10), panel("b", 10)], ["a", "b"])
    assert comparison.uninformative == {}  # the aggregate follows the needle: offline's gap halved
    cert = comparison.certificate
    assert cert.judges == ["offline"] and cert.left_out == ["qj"]
    assert all(set(e.judges) == {"offline"} for e in cert.entries)
    text = str(comparison)
    assert "Verdict certificate (1 judge: offline;" in text and "\n  qj: left out, uninformative\n" in text
    gate = comparison.gate(worse=True, require_agreement=True)
    assert gate.passed, str(gate)
    assert "note  agreement: qj: left out, uninformative" in gate.lines()
    assert [c.line for c in gate.checks if c.rule == "agreement" and c.metric] and \
        all("holds under every judge (offline)" in c.line for c in gate.checks if c.rule == "agreement" and c.metric)
    assert comparison.to_json()["certificate"]["left_out"] == ["qj"]
