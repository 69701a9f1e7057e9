"""A panel run's judge side (``--judges``): the start-up check of every judge, the loop's panel,
and what the results record of it.

The run's :class:`~components.run.evaluation.Judging` holds one ``Judging`` per judge of the
panel (``members``: its settings, start-up check and grader); chunk relevance and the diagnosis
are the first judge's. This module turns them into the loop's :class:`PanelState` (each judge's
own breaker, failure and usage), ``run.judge`` (provider ``panel``, model the judges' names, and
each judge's own record, usage and failure under ``judges``), the results' ``panel`` section
(:func:`components.analysis.panel.panel_section`) and the lines that say a judge became unusable.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from components.analysis.panel import PANEL_PROVIDER, panel_section
from components.judges.panel import check_panel
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from components.judges.setup import JudgeSetup, check_models
from components.run.benchmark_loop import BenchmarkLoop, Usage
from components.run.panel.grading import Member, PanelState
from utils.records.sections import PanelSection
from utils.results import JudgeGrade, JudgeInfo, QuestionResult


def check_judges(settings, *, rewrites_queries: bool = False) -> list[JudgeSetup]:
    """The start-up check of the run's judge, or of every judge of its panel (first: the one that
    rates chunks and whose provider rewrites queries)."""
    if settings.panel:
        return check_panel(settings, rewrites_queries=rewrites_queries)
    return [check_models(settings, rewrites_queries=rewrites_queries)]


def names(judging) -> list[str]:
    return [m.name for m in judging.settings.panel]


def loop_panel(judging, method: str, kept: Mapping[str, Mapping[str, JudgeGrade]] | None = None) -> PanelState:
    """The loop's panel: one :class:`Member` per judge; ``kept``: the grades ``--resume`` keeps
    (question id → judge → grade)."""
    members = [Member(name, member.judge, usage=Usage())
               for name, member in zip(names(judging), judging.members, strict=True)]
    return PanelState(members, method, {q: dict(g) for q, g in (kept or {}).items()})


def _failure(member: Member) -> str | None:
    if member.failure is not None:
        return f"{member.failure.kind}: {member.failure}"
    return member.rate_limited


def judge_record(judging, loop: BenchmarkLoop, repeats: int, method: str) -> JudgeInfo:
    """``run.judge`` of a panel run (module docstring)."""
    judges = []
    for panel_member, member_judging, member in zip(judging.settings.panel, judging.members, loop.members, strict=True):
        info = member_judging.judge_info("judge", repeats, member.usage.models)
        judges.append({**panel_member.spec.to_json(), "judge": info.to_json(), "usage": member.usage.to_json(),
                       "unusable": _failure(member)})
    listed = ", ".join(names(judging))
    return JudgeInfo(PANEL_PROVIDER, ",".join(names(judging)), PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256,
                     judging.settings.judge_timeout,
                     f"a panel of {len(judges)} judge{'s' * (len(judges) != 1)} ({listed}): llm_grade is their "
                     f"{method}, rounded half up; each judge's grade is in grades_by_judge", repeats=repeats,
                     relevance_prompt_sha256=judging.judge_info("judge", repeats).relevance_prompt_sha256,
                     reply_models=list(loop.judge_usage.models), details={"aggregate": method, "judges": judges})


def price_notes(judging) -> list[str]:
    """What ``run.cost_note`` says of the judges whose model has no price."""
    return [n for m in judging.members if m.setup.judge is not None
            for n in [m.setup.judge_provider.prices.note(m.setup.judge.model)] if n]


def section(judging, loop: BenchmarkLoop, rows: Sequence[QuestionResult], k: int) -> PanelSection:
    """The results' ``panel`` section of this run."""
    failures = {m.name: reason for m in loop.members if (reason := _failure(m)) is not None}
    return panel_section(rows, names(judging), loop.panel.method, k, failures)


def console_lines(settings, setups: Sequence[JudgeSetup], method: str) -> list[str]:
    """The start-up lines that say which judges of ``settings.panel`` grade."""
    lines = [f"Judges: a panel of {len(setups)}, llm_grade is their {method} (chunk relevance and the diagnosis: "
             "the first judge)"]
    for member, setup in zip(settings.panel, setups, strict=True):
        lines.append(f"  {member.name}: " + setup.console_line(member.settings).removeprefix("Judge: "))
    return lines


def unusable_lines(loop: BenchmarkLoop, rows: Sequence[QuestionResult]) -> list[str]:
    """One line per judge that became unusable or rate-limited: how many questions it graded, and
    that the aggregate used the others."""
    out = []
    for member in loop.members:
        reason = _failure(member)
        if reason is None:
            continue
        graded = sum(1 for r in rows if (r.grades_by_judge or {}).get(member.name, JudgeGrade()).grade is not None)
        out.append(f"{member.label().capitalize()} became unusable after grading {graded} of {len(rows)} question(s) "
                   f"({reason[:300]}): its grades are null from there, the aggregate uses the other judges; "
                   "--resume grades them with it later")
    return out


def identity(settings, method: str) -> dict:
    """What a panel run's journal header adds to the resume identity: the judges and the aggregate
    (``judge_model`` is then the judges' names, as ``run.judge.model`` records them)."""
    return {"judge_model": ",".join(m.name for m in settings.panel), "judge_provider": PANEL_PROVIDER,
            "panel": [m.spec.to_json() for m in settings.panel], "aggregate": method}


def kept_grades(rows: Mapping[str, Any], judges: Sequence[str]) -> tuple[dict, dict]:
    """``--resume`` of a panel run: ``(done, kept)`` — the rows every judge graded (taken over as
    they are) and, for the others, the grades of the judges that did graded them (question id →
    judge → grade: those judges are not called again)."""
    done, kept = {}, {}
    for qid, row in rows.items():
        by_judge = row.grades_by_judge or {}
        graded = {n: g for n, g in by_judge.items() if n in judges and g.grade is not None}
        if len(graded) == len(judges):
            done[qid] = row
        elif graded:
            kept[qid] = graded
    return done, kept
