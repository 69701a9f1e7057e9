"""What ``compare``, its gate and its verdict certificate do with a judge whose grades carry no information.

A judge is *uninformative* when its signal check (:mod:`components.analysis.judge_signal`) says so: its grades
are not higher where the needle was retrieved than where it was not. The grade metrics (avg grade, avg total,
the pass rates: the judge level of the metric registry) read that judge's grades, so:

* ``compare`` gives such a metric the verdict **cannot be judged** (:data:`CANNOT_JUDGE`) in a comparison where
  either run's grades come from an uninformative judge — the run's single judge, or a panel's aggregate (not one
  member: a panel's grade is its aggregate) — and a warning names the judge (:func:`mark_comparisons`);
* the gate fails such a metric (``--fail-on``, ``--margin``), naming the judge (:func:`gate_check`): a gate
  cannot pass on grades that do not tell right from wrong. The retrieval metrics are gated as always;
* the verdict certificate leaves out a panel's judge that is uninformative in any compared run
  (:func:`left_out`), and says so in one line (``qj: left out, uninformative``); ``--require-agreement`` reads the
  certificate, so the judge is left out of its check too. One uninformative judge of an informative panel
  therefore fails nothing.

The check is computed again from each run's rows (the same figures as the run recorded), so a panel's judge read
alone (:func:`components.analysis.panel.judge_view`) and a file written before the check are judged the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace

from components.analysis.paired import MetricResult, PairComparison
from components.analysis.certificate_record import LEFT_OUT, left_out_lines
from components.analysis.judge_signal import UNINFORMATIVE, rows_signal
from utils import metrics as M
from utils.results import RunResult

CANNOT_JUDGE = "cannot be judged"  # the verdict of a grade metric read from an uninformative judge


def judge_name(result: RunResult) -> str:
    """How the gate and the warnings name the judge whose grades ``result``'s ``llm_grade`` holds."""
    judge = result.run.judge
    if any(r.grades_by_judge is not None for r in result.rows):
        return f"the panel's aggregate ({judge.model})"
    return f"{judge.provider}/{judge.model}"


def uninformative_judges(runs: Sequence[RunResult], labels: Sequence[str]) -> dict[str, str]:
    """``{label: the judge's name}`` of the runs whose grades come from an uninformative judge."""
    return {label: judge_name(run) for run, label in zip(runs, labels, strict=True)
            if rows_signal(run.rows, run.run.k).verdict == UNINFORMATIVE}


def _cannot_judge(r: MetricResult) -> MetricResult:
    return replace(r, verdict=CANNOT_JUDGE)


def mark_comparisons(comparisons: Sequence[PairComparison], uninformative: Mapping[str, str]
                     ) -> tuple[list[PairComparison], list[str]]:
    """The comparisons with every grade metric of a pair that involves an uninformative judge's run marked
    :data:`CANNOT_JUDGE` (its figures kept), and the warnings that say why."""
    out, warnings = [], []
    for pc in comparisons:
        involved = [label for label in (pc.baseline, pc.other) if label in uninformative] if pc.kind == "run" else []
        if not involved:
            out.append(pc)
            continue
        metrics = [_cannot_judge(r) if M.METRICS.get(r.metric) and M.METRICS[r.metric].level == "judge" else r
                   for r in pc.metrics]
        out.append(replace(pc, metrics=metrics))
    for label, name in uninformative.items():
        warnings.append(f"the judge of {label} ({name}) is uninformative: its grades are not higher where the needle "
                        f"was retrieved than where it was not, so the grade metrics of {label}'s comparisons cannot be "
                        "judged (docs/judges.md)")
    return out, warnings


def gate_reason(uninformative: Mapping[str, str], pc: PairComparison) -> str | None:
    """Why a grade metric of ``pc`` cannot be judged (the uninformative judges named), or None."""
    labels = [label for label in (pc.baseline, pc.other) if label in uninformative]
    if not labels:
        return None
    names = {uninformative[label] for label in labels}
    if len(labels) == 2 and len(names) == 1:
        who = f"the judge of both runs, {names.pop()}, is"
    else:
        who = " and ".join(f"the judge of {label}, {uninformative[label]}," for label in labels)[:-1] + \
            (" is" if len(labels) == 1 else " are")
    return f"{who} uninformative (its grades do not follow the needle): a gate cannot pass on such grades"


def left_out(runs: Sequence[RunResult], names: Sequence[str], view) -> list[str]:
    """The panel judges of ``names`` that are uninformative in any of ``runs``; ``view(run, name)`` is the run as
    that judge alone graded it (:func:`components.analysis.panel.judge_view`, passed in: that module is below)."""
    return [name for name in names
            if any(rows_signal(view(run, name).rows, run.run.k).verdict == UNINFORMATIVE for run in runs)]


__all__ = ["CANNOT_JUDGE", "LEFT_OUT", "gate_reason", "judge_name", "left_out", "left_out_lines",
           "mark_comparisons", "uninformative_judges"]
