"""Reading an adaptive run's record (the results' ``adaptive`` block, written by
:mod:`components.run.adaptive`): the lines the summary, ``compare`` and the report show, the
sequential verdicts ``compare`` and its gate reuse, and what the run's own gate fails on.

An adaptive run compared with the baseline it was decided against (known by the fingerprint of the
baseline's grades it recorded, :func:`grades_fingerprint`) carries its verdict from the
group-sequential procedure: that verdict, and its repeated confidence interval, are the valid ones
for the grade-based metrics it gated (compare's own tests on the questions judged do not allow for
the looks that chose when to stop). The gate's ``sequential`` checks
(:mod:`components.analysis.gate`) use it.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from typing import Any

from components.analysis.gate import SEQUENTIAL_FAILING
from utils import metrics as M
from utils.records.sections import AdaptiveBaseline, AdaptiveCalls, AdaptiveCost, AdaptiveMetric, AdaptiveSection
from utils.results import RunResult

UNTIL_DECIDED = "until_decided"


def grades_fingerprint(rows: Sequence[Any]) -> str:
    """A short hash of a run's grades and ranks by question: how compare knows the baseline a run
    was decided against."""
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r.question_id):
        digest.update(f"{row.question_id}\0{row.llm_grade}\0{row.rank}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def decided_against(baseline: RunResult, other: RunResult) -> AdaptiveSection | None:
    """``other``'s ``adaptive`` section when it was judged until decided against ``baseline``, else None."""
    record = other.adaptive
    if record is None or record.mode != UNTIL_DECIDED:
        return None
    recorded = record.baseline.grades_sha256 if record.baseline is not None else None
    if not recorded or recorded != grades_fingerprint(baseline.rows):
        return None
    return record


def sequential_verdicts(runs: Sequence[RunResult], labels: Sequence[str]) -> dict[str, AdaptiveSection]:
    """label → the adaptive section of each run (after the first) decided against the first."""
    return {label: record for run, label in zip(runs[1:], labels[1:], strict=True)
            if (record := decided_against(runs[0], run)) is not None}


def _money(value: float | None) -> str:
    return "cost unknown" if value is None else f"${value:.4f}"


def cost_line(record: AdaptiveSection) -> str:
    """Cost to the verdict: the judge calls and dollars spent, and what grading every question would have cost."""
    calls, cost = record.calls or AdaptiveCalls(), record.cost_usd or AdaptiveCost()
    if not calls.full:
        return (f"cost to the verdict: {record.judged} of {record.questions} questions judged (the judge "
                "calls no model: nothing to pay)")
    ungraded = f", {record.ungraded} not graded (a judge failure, the budget, a stop)" if record.ungraded else ""
    session = f" in this session (it resumed a run that had kept {record.resumed_rows})" if record.resumed_rows else ""
    known = cost.full is not None and cost.spent is not None  # else "saved" is no figure
    saved = (f"{calls.saved} calls, {_money(cost.saved)} saved" if known
             else f"{calls.saved} calls saved, their cost unknown")
    return (f"cost to the verdict: {record.judged} of {record.questions} questions judged{ungraded}, "
            f"{calls.spent} judge calls{session}, {_money(cost.spent)}; grading every question: about "
            f"{calls.full} calls, {_money(cost.full)} ({saved}; the questions not judged priced as --estimate "
            "prices them)")


def _decided_line(label: str, entry: AdaptiveMetric, digits: int, shown: str, indent: str) -> str:
    where = (f"at look {entry.look} of {entry.looks} after {entry.judged} questions" if entry.look else "at no look")
    margin = f" (margin {entry.margin:g})" if entry.margin is not None else ""
    how = "decided" if entry.decided else "not decided"
    delta = "" if entry.estimate is None else f", Δ {entry.estimate:+.{digits}f}"
    return f"{indent}{label}: {entry.verdict}{margin} ({how} {where}{delta}, interval {shown})"


def _target_line(label: str, entry: AdaptiveMetric, digits: int, shown: str, indent: str) -> str:
    width, target = entry.half_width, entry.target
    return (f"{indent}{label}: target ±{'?' if target is None else format(target, 'g')} {entry.verdict}"
            + (f" at look {entry.look} after {entry.judged} questions" if entry.look else "")
            + (f" (mean {entry.estimate:.{digits}f}, interval {shown}, ±{width:.{digits}f})"
               if entry.estimate is not None and width is not None else ""))


def metric_lines(record: AdaptiveSection, k: int | None, indent: str = "  ") -> list[str]:
    """One line per gated (or targeted) metric: its verdict, the look that decided it, its interval."""
    out = []
    decided = record.mode == UNTIL_DECIDED
    for key, entry in record.metrics.items():
        spec = M.METRICS.get(key)
        label = spec.label_at(k) if spec is not None else key
        digits = spec.digits if spec is not None else 2
        interval = entry.interval
        sign = "+" if decided else ""  # a difference, or a mean
        shown = "-" if not interval else f"[{interval[0]:{sign}.{digits}f}, {interval[1]:{sign}.{digits}f}]"
        out.append((_decided_line if decided else _target_line)(label, entry, digits, shown, indent))
    return out


def _shown_path(path: str | None) -> str | None:
    """A recorded (absolute) path as the user would write it: relative to the current folder when below it."""
    if not path:
        return None
    try:
        relative = os.path.relpath(path)
    except ValueError:  # another drive
        return path
    return path if relative.startswith("..") else relative


def heading(record: AdaptiveSection) -> str:
    if record.mode == UNTIL_DECIDED:
        base = record.baseline or AdaptiveBaseline()
        against = _shown_path(base.file) or base.run_id or base.strategy or "the baseline"
        state = (f"decided after {record.decided_after} of {record.questions} questions"
                 if record.decided else f"not decided ({record.judged} of {record.questions} questions judged)")
        alpha = record.alpha
        return (f"Judged until decided against {against}: {state} (group-sequential procedure, α "
                f"{'?' if alpha is None else format(alpha, 'g')} split over {len(record.metrics)} metric(s) by "
                f"Bonferroni; blocks of {record.block}, order seed {record.seed})")
    state = (f"every target reached after {record.decided_after} of {record.questions} questions"
             if record.decided else f"targets not all reached ({record.judged} of {record.questions} questions judged)")
    return (f"Judged until the interval is narrow enough: {state} (anytime-valid 95% confidence sequence; blocks "
            f"of {record.block}, order seed {record.seed})")


def lines(result: RunResult) -> list[str]:
    """The summary's lines of an adaptive run (none for a run that judged every question)."""
    record = result.adaptive
    if record is None:
        return []
    return [heading(record), *metric_lines(record, result.run.k), "  " + cost_line(record)]


def comparison_lines(record: AdaptiveSection | None, k: int | None) -> list[str]:
    """What compare adds under the verdicts of a run decided against its baseline."""
    if record is None:
        return []
    return ["Sequential verdicts, recorded by the run (they hold whatever made judging stop; the table's tests on "
            "the questions judged do not):", *metric_lines(record, k), "  " + cost_line(record)]


def judged_in_part(label: str, record: AdaptiveSection | None) -> str | None:
    """compare's warning for a run judged adaptively whose recorded verdict it does not show (a
    ``--target-ci`` run, or one decided against another baseline): which questions have grades, and
    the cost to its verdict. None for a run that judged every question."""
    if record is None or not record.not_judged:
        return None
    why = ("judged until decided against another baseline" if record.mode == UNTIL_DECIDED
           else "judged until its interval was narrow enough (--target-ci)")
    return (f"{label} was {why}: {record.not_judged} of its {record.questions} questions have no grade, "
            f"so its grade metrics cover the {record.judged} judged ones ({cost_line(record)})")


def failed(record: AdaptiveSection | None) -> list[str]:
    """The gated metrics an adaptive run's own gate fails on (decided worse, inferior, or not shown non-inferior)."""
    if record is None or record.mode != UNTIL_DECIDED:
        return []
    return [key for key, entry in record.metrics.items() if entry.verdict in SEQUENTIAL_FAILING]
