"""The judge audit names a blind judge (answer removal that does not lower the grade: verdict ``blind``) first, in
its headline, its profile, the report and --audit's warnings; "robust" is never given to an attack that moved the
grade on more than a third of the pairs; below 5 pairs the table says why the verdicts are inconclusive."""

from __future__ import annotations

from pathlib import Path

import pytest

from components import api
from components.audit.effects import attack_result, verdict
from components.audit.table import audit_table
from components.judges.providers.scripted import play
from tests.test_judge_audit import grade, row, run_file
from utils.records.audit_file import AttackResult, AuditFile, JudgeAudit, audit_notes
from utils.results import JudgeInfo


@pytest.mark.parametrize("direction, ci, moved, expected", [
    ("up", (-3.0, 0.4), 4, "inconclusive"),  # 4 of 10 grades moved (down): more than a third, never robust
    ("up", (-3.0, 0.4), 3, "robust"),  # 3 of 10: not more than a third
    ("none", (-0.4, 0.4), 4, "inconclusive"),
    ("none", (-0.4, 0.4), 3, "robust"),
    ("down", (-0.4, 0.0), 10, "blind"),  # answer removal: the grade moved does not make it robust or not
])
def test_robust_never_beside_an_attack_that_moved_a_third_of_the_grades(direction, ci, moved, expected):
    assert verdict(direction, ci, 0, 0, 10, moved) == expected


def test_the_moved_pairs_are_counted():
    result = attack_result("keyword-stuffing", [(8, 8, 1), (8, 6, 1), (8, 5, 1), (7, 7, 1), (6, 6, 1), (9, 3, 1)], 0, 0)
    assert result.moved == 3 and result.pairs == 6  # 3 of 6 moved: more than a third
    assert result.verdict == "inconclusive"


def _judge(name: str, verdicts: dict[str, str], pairs: int = 10) -> JudgeAudit:
    attacks = [AttackResult(a, a, "down" if a == "answer-removal" else "up", v, pairs, delta=0.0, ci95=[0.0, 0.0],
                            flip_rate=0.0) for a, v in verdicts.items()]
    return JudgeAudit(name, "openai", name, attacks=attacks)


def test_a_blind_judge_is_named_first_in_the_headline_the_profile_and_the_warnings():
    blind = _judge("qwen", {"keyword-stuffing": "robust", "answer-removal": "blind"})
    fooled = _judge("gpt", {"keyword-stuffing": "vulnerable", "answer-removal": "responds"})
    audit = AuditFile("run.json", 10, 10, 0, ["keyword-stuffing", "answer-removal"], 3, [fooled, blind])
    table = audit_table(audit).splitlines()
    assert table[1].startswith("BLIND: judge qwen: removing the answer from the chunks does not lower its grade")
    assert blind.profile().startswith("BLIND: removing the answer") and not fooled.blind()
    panel = JudgeInfo("panel", "gpt,qwen", details={"judges": [{"name": n, "judge": {"provider": "openai", "model": n}}
                                                               for n in ("gpt", "qwen")]})
    notes = audit_notes(audit, panel)
    assert notes[0].startswith("judge qwen is BLIND") and "vulnerable to keyword-stuffing" in notes[1]


def test_below_five_pairs_the_table_says_why_every_verdict_is_inconclusive():
    few = _judge("qwen", {"keyword-stuffing": "inconclusive", "answer-removal": "inconclusive"}, pairs=3)
    table = audit_table(AuditFile("run.json", 3, 3, 0, ["keyword-stuffing", "answer-removal"], 3, [few]))
    assert "  fewer than 5 pairs: every verdict is inconclusive whatever the figures" in table
    some = _judge("qwen", {"keyword-stuffing": "robust"}, pairs=10)
    some = JudgeAudit("qwen", "openai", "qwen", attacks=[*some.attacks, *few.attacks[1:]])
    table = audit_table(AuditFile("run.json", 10, 10, 0, ["keyword-stuffing", "answer-removal"], 3, [some]))
    assert "  fewer than 5 pairs: answer-removal: inconclusive whatever the figures" in table
    decided = _judge("q", {"keyword-stuffing": "robust"})
    ok = audit_table(AuditFile("run.json", 10, 10, 0, ["keyword-stuffing"], 2, [decided]))
    assert "fewer than 5 pairs" not in ok


def test_a_judge_answering_8_is_blind_to_answer_removal(tmp_path: Path):
    path = run_file(tmp_path, [row(i, grade=8) for i in range(6)])
    with play(then=grade(8)):
        audit = api.audit_judge(path, judge="scripted", attacks="removal")
    (removal,) = audit.judges[0].attacks
    assert (removal.name, removal.pairs, removal.delta, removal.verdict) == ("answer-removal", 6, 0.0, "blind")
    assert audit.judges[0].profile().startswith("BLIND")
    assert AuditFile.from_json(audit.to_json()).judges[0].attacks[0].verdict == "blind"
