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
from collections.abc import Mapping, Sequence
from typing import Any

from components.analysis.gate import SEQUENTIAL_FAILING
from utils import metrics as M

UNTIL_DECIDED = "until_decided"


def grades_fingerprint(rows: Sequence[Any]) -> str:
    """A short hash of a run's grades and ranks by question: how compare knows the baseline a run
    was decided against."""
    digest = hashlib.sha256()
    for row in sorted(rows, key=lambda r: r.question_id):
        digest.update(f"{row.question_id}\0{row.llm_grade}\0{row.rank}\n".encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:16]


def decided_against(baseline: Any, other: Any) -> dict | None:
    """``other``'s ``adaptive`` block when it was judged until decided against ``baseline`` (a
    :class:`~utils.results.RunResult`), else None."""
    record = getattr(other, "adaptive", None)
    if not isinstance(record, Mapping) or record.get("mode") != UNTIL_DECIDED:
        return None
    recorded = (record.get("baseline") or {}).get("grades_sha256")
    if not recorded or recorded != grades_fingerprint(baseline.rows):
        return None
    return dict(record)


def sequential_verdicts(runs: Sequence[Any], labels: Sequence[str]) -> dict[str, dict]:
    """label → the adaptive record of each run (after the first) decided against the first."""
    return {label: record for run, label in zip(runs[1:], labels[1:])
            if (record := decided_against(runs[0], run)) is not None}


def _money(value: float | None) -> str:
    return "cost unknown" if value is None else f"${value:.4f}"


def cost_line(record: Mapping) -> str:
    """Cost to the verdict: the judge calls and dollars spent, and what grading every question would have cost."""
    calls, cost = record.get("calls") or {}, record.get("cost_usd") or {}
    if not calls.get("full"):
        return (f"cost to the verdict: {record.get('judged')} of {record.get('questions')} questions judged (the judge "
                "calls no model: nothing to pay)")
    ungraded = f", {record['ungraded']} not graded (a judge failure, the budget, a stop)" if record.get("ungraded") else ""
    session = f" in this session (it resumed a run that had kept {record['resumed_rows']})" \
        if record.get("resumed_rows") else ""
    known = cost.get("full") is not None and cost.get("spent") is not None  # else "saved" is no figure
    saved = (f"{calls.get('saved')} calls, {_money(cost.get('saved'))} saved" if known
             else f"{calls.get('saved')} calls saved, their cost unknown")
    return (f"cost to the verdict: {record.get('judged')} of {record.get('questions')} questions judged{ungraded}, "
            f"{calls.get('spent')} judge calls{session}, {_money(cost.get('spent'))}; grading every question: about "
            f"{calls.get('full')} calls, {_money(cost.get('full'))} ({saved}; the questions not judged priced as "
            "--estimate prices them)")


def metric_lines(record: Mapping, k: int | None, indent: str = "  ") -> list[str]:
    """One line per gated (or targeted) metric: its verdict, the look that decided it, its interval."""
    out = []
    for key, entry in (record.get("metrics") or {}).items():
        spec = M.METRICS.get(key)
        label = spec.label_at(k) if spec is not None else key
        digits = spec.digits if spec is not None else 2
        interval = entry.get("interval")
        sign = "+" if record.get("mode") == UNTIL_DECIDED else ""  # a difference, or a mean
        shown = "-" if not interval else f"[{interval[0]:{sign}.{digits}f}, {interval[1]:{sign}.{digits}f}]"
        if record.get("mode") == UNTIL_DECIDED:
            where = (f"at look {entry.get('look')} of {entry.get('looks')} after {entry.get('judged')} questions"
                     if entry.get("look") else "at no look")
            margin = f" (margin {entry['margin']:g})" if entry.get("margin") is not None else ""
            how = "decided" if entry.get("decided") else "not decided"
            estimate = entry.get("estimate")
            delta = "" if estimate is None else f", Δ {estimate:+.{digits}f}"
            out.append(f"{indent}{label}: {entry.get('verdict')}{margin} ({how} {where}{delta}, interval {shown})")
        else:
            width = entry.get("half_width")
            target = entry.get("target")
            out.append(f"{indent}{label}: target ±{'?' if target is None else format(target, 'g')} {entry.get('verdict')}"
                       + (f" at look {entry['look']} after {entry.get('judged')} questions" if entry.get("look") else "")
                       + (f" (mean {entry['estimate']:.{digits}f}, interval {shown}, ±{width:.{digits}f})"
                          if entry.get("estimate") is not None and width is not None else ""))
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


def heading(record: Mapping) -> str:
    if record.get("mode") == UNTIL_DECIDED:
        base = record.get("baseline") or {}
        against = _shown_path(base.get("file")) or base.get("run_id") or base.get("strategy") or "the baseline"
        state = (f"decided after {record.get('decided_after')} of {record.get('questions')} questions"
                 if record.get("decided") else f"not decided ({record.get('judged')} of {record.get('questions')} "
                                               "questions judged)")
        alpha = record.get("alpha")
        return (f"Judged until decided against {against}: {state} (group-sequential procedure, α "
                f"{'?' if alpha is None else format(alpha, 'g')} split over {len(record.get('metrics') or {})} metric(s) by Bonferroni; "
                f"blocks of {record.get('block')}, order seed {record.get('seed')})")
    state = (f"every target reached after {record.get('decided_after')} of {record.get('questions')} questions"
             if record.get("decided") else f"targets not all reached ({record.get('judged')} of "
                                           f"{record.get('questions')} questions judged)")
    return (f"Judged until the interval is narrow enough: {state} (anytime-valid 95% confidence sequence; blocks "
            f"of {record.get('block')}, order seed {record.get('seed')})")


def lines(result: Any) -> list[str]:
    """The summary's lines of an adaptive run (none for a run that judged every question)."""
    record = getattr(result, "adaptive", None)
    if not isinstance(record, Mapping):
        return []
    return [heading(record), *metric_lines(record, getattr(result.run, "k", None)), "  " + cost_line(record)]


def comparison_lines(record: Mapping | None, k: int | None) -> list[str]:
    """What compare adds under the verdicts of a run decided against its baseline."""
    if record is None:
        return []
    return ["Sequential verdicts, recorded by the run (they hold whatever made judging stop; the table's tests on "
            "the questions judged do not):", *metric_lines(record, k), "  " + cost_line(record)]


def judged_in_part(label: str, record: Mapping | None) -> str | None:
    """compare's warning for a run judged adaptively whose recorded verdict it does not show (a
    ``--target-ci`` run, or one decided against another baseline): which questions have grades, and
    the cost to its verdict. None for a run that judged every question."""
    if not isinstance(record, Mapping) or not record.get("not_judged"):
        return None
    why = ("judged until decided against another baseline" if record.get("mode") == UNTIL_DECIDED
           else "judged until its interval was narrow enough (--target-ci)")
    return (f"{label} was {why}: {record.get('not_judged')} of its {record.get('questions')} questions have no grade, "
            f"so its grade metrics cover the {record.get('judged')} judged ones ({cost_line(record)})")


def failed(record: Mapping | None) -> list[str]:
    """The gated metrics an adaptive run's own gate fails on (decided worse, inferior, or not shown non-inferior)."""
    if not isinstance(record, Mapping) or record.get("mode") != UNTIL_DECIDED:
        return []
    return [key for key, entry in (record.get("metrics") or {}).items() if entry.get("verdict") in SEQUENTIAL_FAILING]
