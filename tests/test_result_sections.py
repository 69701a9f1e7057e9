"""The sections of a results file beside its rows (utils/records/sections.py) are typed records: a
file with each of them goes through the typed reader and is written back byte for byte (an old
file too: a key it lacks stays absent, one this version does not know is kept, 1 stays 1); a
malformed section is refused with one line naming the field."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path

import pytest

from components.analysis.aggregate import build_report
from components.analysis.panel import panel_section
from components.analysis.targets import check_targets, parse_targets
from tests.panel_fixtures import panel_row
from utils.errors import InputError
from utils.records.sections import (AdaptiveSection, Bootstrap, JudgeConsistency, OrderCheck, PanelSection, QualityBand,
                                    TargetCheck)
from utils.results import QuestionResult, RetrievedItem, RunInfo, RunResult, load_run

# until_decided's verdict entries come in two key orders (a decision; a metric never looked at), as
# the run writes them; target_ci's looks have other keys than until_decided's
UNTIL_DECIDED = {
    "mode": "until_decided", "procedure": "group sequential", "request": {"until_decided": "base.json", "gated": {
        "avg_llm_grade": None}, "gate": False, "seed": 0}, "seed": 0, "block": 5, "questions": 10, "judged": 5,
    "not_judged": 5, "ungraded": 0, "resumed_rows": 0, "decided": True, "decided_after": 5,
    "alpha": 0.05, "alpha_per_metric": 0.025, "baseline": {"file": "base.json", "run_id": None, "strategy": "baseline",
                                                           "grades_sha256": "0123456789abcdef"},
    "metrics": {"avg_llm_grade": {"verdict": "better", "decided": True, "look": 1, "looks": 2, "judged": 5, "paired": 5,
                                  "estimate": 2, "interval": [1.0, 3.0], "margin": None, "rule": "obf",
                                  "alpha_spent": 0.001, "summary": "better"},
                "pass_rate_7": {"estimate": None, "interval": None, "look": None, "paired": 0, "margin": 1.0,
                                "verdict": "not yet", "decided": False}},
    "looks": [{"look": None, "judged": 5, "paired": 0, "note": "no new grades: no look"},
              {"look": 1, "judged": 5, "paired": 5, "boundary": 4.5,
               "metrics": {"avg_llm_grade": {"estimate": 2.0, "interval": [1.0, 3.0], "verdict": "better"}}}],
    "calls": {"spent": 5, "saved": 5, "full": 10}, "cost_usd": {"spent": 0.0, "saved": 0.0, "full": 0.0},
    "cost_note": "spent: this session's judge calls"}
TARGET_CI = {
    "mode": "target_ci", "procedure": "confidence sequence",
    "request": {"target_ci": {"avg_llm_grade": 0.5}, "seed": 0}, "seed": 0, "block": 5, "questions": 10,
    "judged": 10, "not_judged": 0, "decided": False, "decided_after": None,
    "alpha": 0.05, "metrics": {"avg_llm_grade": {"n": 10, "estimate": 6.5, "interval": [5.0, 8.0], "half_width": 1.5,
                                                 "target": 0.5, "verdict": "not reached", "look": None}},
    "looks": [{"look": 1, "judged": 5, "paired": 5, "metrics": {"avg_llm_grade": {
        "n": 5, "estimate": 6, "interval": [4.0, 8.0], "half_width": 2.0, "target": 0.5}}}],
    "calls": {"spent": 10, "saved": 0, "full": 10}, "cost_usd": {"spent": None, "saved": None, "full": None},
    "a_later_field": {"kept": [1, 2]}}  # a file of a later version: kept; "ungraded", "resumed_rows" absent: stay so


def _row(qid: str, rank: int | None, grades: list[int] | None = None, reversed_grade: int | None = None
         ) -> QuestionResult:
    docs = ["x", "y", "z"]
    if rank is not None:
        docs[rank - 1] = "d"
    grade = grades[0] if grades else 6
    retrieved = [RetrievedItem(i + 1, doc, f"{doc}#{i}") for i, doc in enumerate(docs)]
    return QuestionResult(qid, f"question {qid}", needle_doc_id="d", needle_doc_ids=["d"], rank=rank,
                          needle_found=rank is not None, hit_at_1=rank == 1, retrieved=retrieved,
                          llm_grade=grade, llm_grades=grades, grade_sd=0.5 if grades else None,
                          grade_spread=max(grades) - min(grades) if grades else None,
                          llm_grade_reversed=reversed_grade)


def _run_with_every_section() -> RunResult:
    rows = [_row("q1", 1, [6, 8], 8), _row("q2", 2, [7, 7], 7), _row("q3", None, [5, 6], 2), _row("q4", 3)]
    result = build_report(RunInfo(k=3), rows)
    result.targets = check_targets(result, parse_targets("hit@1=0.25,mrr=0.9", 3))
    result.panel = panel_section([panel_row("q1", {"a": 6, "b": 8}), panel_row("q2", {"a": 7, "b": None})],
                                 ["a", "b"], "median", 3, {"b": "auth: judge b: bad key"})
    result.adaptive = AdaptiveSection.from_json(UNTIL_DECIDED)
    return result


def test_a_run_with_every_section_has_them_as_records():
    result = _run_with_every_section()
    assert isinstance(result.judge_consistency, JudgeConsistency) and isinstance(result.order_check, OrderCheck)
    assert result.bootstrap == Bootstrap(10_000, result.bootstrap.seed, "percentile-two-level")  # repeats: two-level
    assert all(isinstance(b, QualityBand) for b in result.quality_bands.values())
    assert all(isinstance(t, TargetCheck) for t in result.targets) and isinstance(result.panel, PanelSection)
    # hand figures: q1 moved by 2, q2 by 0, q3 by 1 → 1 of 3 moved by 2 or more; reversing moved 6→8, 7→7, 5→2
    assert (result.judge_consistency.questions, result.judge_consistency.moved_2_or_more_rate) == (3, 33.3333)
    assert (result.order_check.questions, result.order_check.mean_abs_change) == (3, pytest.approx(5 / 3, abs=1e-4))
    assert [t.met for t in result.targets] == [True, False]  # hit@1 1/4 = 25%; MRR (1 + 1/2 + 0 + 1/3) / 4 = 0.458
    assert result.panel.per_judge["b"].unusable == "auth: judge b: bad key" and result.panel.graded_by == {"2": 1,
                                                                                                            "1": 1}


@pytest.mark.parametrize("adaptive", [UNTIL_DECIDED, TARGET_CI], ids=["until_decided", "target_ci"])
def test_every_section_goes_through_the_typed_reader_and_back_byte_for_byte(tmp_path: Path, adaptive):
    result = _run_with_every_section()
    result.adaptive = AdaptiveSection.from_json(copy.deepcopy(adaptive))
    first = result.save(tmp_path / "first.json")
    read = load_run(first)
    second = read.save(tmp_path / "second.json")
    assert second.read_bytes() == first.read_bytes()
    written = json.loads(first.read_text(encoding="utf-8"))
    for name in ("bootstrap", "judge_consistency", "order_check", "quality_bands", "targets", "panel", "adaptive"):
        assert name in written, name
    assert written["adaptive"] == adaptive and list(written["adaptive"]) == list(adaptive)  # keys, order, values
    for key, entry in adaptive["metrics"].items():
        assert list(written["adaptive"]["metrics"][key]) == list(entry)
    assert read.adaptive == result.adaptive and read.panel == result.panel and read.targets == result.targets


def test_a_file_without_intervals_keeps_an_empty_bootstrap():
    doc = {"schema_version": 2, "run": {}, "bootstrap": {}, "results": [{"question_id": "q1"}]}
    assert RunResult.from_json(doc).to_json()["bootstrap"] == {}
    assert RunResult(RunInfo(), []).to_json()["bootstrap"] == {}


def test_an_old_file_is_written_back_as_it_was(tmp_path: Path):
    """A section a file of another version wrote: a number written 1 stays 1 (not 1.0), a key this
    version does not know is kept in its place, a key the file lacks stays absent."""
    doc = _run_with_every_section().to_json()
    doc["order_check"] = {"questions": 3, "flip_rate": 0, "mean_abs_change": 1, "mean_change": -1,
                          "mean_change_ci95": None, "a_new_figure": 7, "errors": 0}
    doc["judge_consistency"] = {"questions": 2, "moved_2_or_more_rate": 50, "mean_sd": 1}
    doc["adaptive"] = copy.deepcopy(TARGET_CI)
    text = json.dumps(doc, indent=2, ensure_ascii=False)
    (tmp_path / "old.json").write_text(text, encoding="utf-8")
    read = load_run(tmp_path / "old.json")
    assert read.order_check.extra == {"a_new_figure": 7} and read.adaptive.ungraded is None
    assert read.judge_consistency.repeat_where is None
    assert json.dumps(read.to_json(), indent=2, ensure_ascii=False) == text


# each: where the section is broken, and the words that name the field in the one-line refusal
MALFORMED = [
    ("bootstrap", lambda d: d["bootstrap"].update(resamples="many"),
     "bootstrap.resamples is a string, not a whole number"),
    ("judge_consistency", lambda d: d["judge_consistency"].update(mean_sd="low"),
     "judge_consistency.mean_sd is a string, not a whole number or a number"),
    ("order_check", lambda d: d["order_check"].pop("questions"), "order_check has no questions"),
    ("quality_bands", lambda d: d["quality_bands"]["ndcg_at_k"].update(band=3),
     "quality_bands.ndcg_at_k.band is a number, not a string"),
    ("targets", lambda d: d["targets"][1].update(met="yes"), "targets[1].met is a string, not true or false"),
    ("targets-not-a-list", lambda d: d.update(targets={"hit@1": 0.25}), "targets is an object, not a list"),
    ("panel", lambda d: d["panel"]["agreement"]["alpha_ordinal"].update(questions=[2]),
     "panel.agreement.alpha_ordinal.questions is a list, not a whole number"),
    ("panel-judge", lambda d: d["panel"]["per_judge"]["a"].update(graded=None),
     "panel.per_judge.a.graded is null, not a whole number"),
    ("adaptive-look", lambda d: d["adaptive"]["looks"][1].update(paired="five"),
     "adaptive.looks[1].paired is a string, not a whole number"),
    ("adaptive-mode", lambda d: d["adaptive"].update(mode="sometimes"),
     "adaptive.mode 'sometimes' is not one of until_decided, target_ci"),
    ("adaptive-interval", lambda d: d["adaptive"]["metrics"]["avg_llm_grade"].update(interval=[1.0]),
     "adaptive.metrics.avg_llm_grade.interval has 1 bounds, not 2"),
]


@pytest.mark.parametrize("change,words", [m[1:] for m in MALFORMED], ids=[m[0] for m in MALFORMED])
def test_a_malformed_section_is_refused_naming_the_field(tmp_path: Path, change, words):
    doc = json.loads(json.dumps(_run_with_every_section().to_json()))
    change(doc)
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    with pytest.raises(InputError, match=re.escape(words)) as err:
        load_run(tmp_path / "bad.json")
    message = str(err.value)
    assert "\n" not in message and message.startswith(str(tmp_path / "bad.json") + ": ")
    assert message.endswith("pass a results file written by benchmark.py (or correct that field)") or \
        message.endswith("pass a results file written by benchmark.py")
