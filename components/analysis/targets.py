"""Targets: ``--targets hit@1=0.6,recall@5=0.9`` — the values a run should reach, checked after it.

A target names a metric and a floor: it is **met** when the run's value reaches it (≥). The metric
is a registered metric's key (``mrr``, ``ndcg_at_k``), its label (``MRR``, ``nDCG@5``, ``hit@1``:
case does not matter), one of compare's aliases (``ndcg``, ``hit1`` …), or ``hit@N`` /
``recall@N`` for any N from 1 to the run's k (:func:`utils.metrics.hit_at`,
:func:`utils.metrics.recall_at` when N is not a registered cut-off). The value is in the metric's
unit, except that a rate (a percent metric such as hit@1) is written as a share, ``0.6``, or a
percent, ``60%``; a 0-1 metric takes ``90%`` for 0.9.

:func:`check_targets` gives each target's record (results ``targets``): the value with its 95%
interval, whether it is met, and whether the interval settles it (``ci_clear``: the whole
interval on the same side of the target), with the ``line`` the console and the report print::

    ✓ hit@1 ≥ 60.0%: 80.0% [40.0, 100.0] (the 95% CI reaches below the target)

A metric the run does not have a value for (the grade when nothing was graded, the proxy metrics
without chunk relevance) misses its target: it cannot be shown to be reached. ``--fail-on-targets``
makes a missed target exit 6, as compare's gate does.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from components.analysis.aggregate import confidence_intervals
from components.analysis.gate import ALIASES
from utils import metrics as M
from utils.console import format_ci, is_number
from utils.errors import InputError
from utils.records.sections import TargetCheck
from utils.results import RunResult

OPTION = "--targets"
_CUT = re.compile(r"(hit|recall)@(\d+)", re.I)
_EXAMPLE = "hit@1=0.6,recall@5=0.9"


@dataclass(frozen=True)
class Target:
    metric: M.Metric
    value: float  # the floor, in the metric's unit

    def label(self, k: int) -> str:
        return self.metric.label_at(k)


def _metric(name: str, k: int) -> M.Metric:
    """The metric ``name`` names (module docstring); :class:`InputError` when none."""
    cut = _CUT.fullmatch(name)
    if cut:
        kind, n = cut.group(1).lower(), int(cut.group(2))
        if not 1 <= n <= k:
            raise InputError(f"{OPTION}: {name} needs N from 1 to the run's k ({k}): lower N, or raise --k")
        registered = {("hit", k): "hit_at_k_rate", ("recall", k): "recall_at_k", ("hit", 1): "hit_at_1_rate",
                      ("hit", 5): "hit_at_5_rate"}.get((kind, n))
        return M.METRICS[registered] if registered in M.METRICS else (M.hit_at(n) if kind == "hit" else M.recall_at(n))
    low = name.lower()
    for m in M.metrics():
        if name == m.key or low in (m.label.lower(), m.label_at(k).lower()):
            return m
    if ALIASES.get(low) in M.METRICS:
        return M.METRICS[ALIASES[low]]
    raise InputError(f"{OPTION}: unknown metric {name!r}: use a metric key ({', '.join(M.METRICS)}), its label "
                     f"(hit@1, MRR, nDCG@{k} ...), or hit@N / recall@N with N up to k (e.g. {_EXAMPLE})")




def _floor(metric: M.Metric, text: str, item: str) -> float:
    """The target value of ``text`` in ``metric``'s unit (module docstring)."""
    percent = text.endswith("%")
    try:
        value = float(text[:-1] if percent else text)
    except ValueError:
        value = math.nan
    share_units = ("percent", "ratio")
    if not math.isfinite(value) or value < 0 or (percent and metric.unit not in share_units):
        raise InputError(f"{OPTION} {item!r}: write METRIC=VALUE with a number of 0 or more in the metric's unit "
                         f"(e.g. {_EXAMPLE})")
    if metric.unit in share_units:
        share = value / 100 if percent else value
        if share > 1:
            raise InputError(f"{OPTION} {item!r}: {metric.label} is a share: write it from 0 to 1 or as a percent "
                             f"(e.g. 0.6 or 60%)")
        return round(share * 100, 9) if metric.unit == "percent" else share
    top = M.UNIT_RANGES[metric.unit][1]
    if value > top:
        raise InputError(f"{OPTION} {item!r}: {metric.label} is at most {top:g} ({M.UNITS[metric.unit]}): give a "
                         "target it can reach")
    return value


def parse_targets(text: str, k: int) -> list[Target]:
    """``--targets`` (``METRIC=VALUE,...``) for a run of ``k`` chunks per question; raises
    :class:`InputError` naming the item and the fix; a metric named twice is refused."""
    targets: dict[str, Target] = {}
    for item in (part.strip() for part in text.split(",") if part.strip()):
        name, sep, value = item.partition("=")
        if not sep or not name.strip() or not value.strip():
            raise InputError(f"{OPTION} {item!r}: write METRIC=VALUE (e.g. {_EXAMPLE})")
        metric = _metric(name.strip(), k)
        if metric.key in targets:
            raise InputError(f"{OPTION}: {metric.label_at(k)} is named twice ({item!r} and an earlier value): give "
                             "each metric one target")
        targets[metric.key] = Target(metric, _floor(metric, value.strip(), item))
    if not targets:
        raise InputError(f"{OPTION} names no target: give METRIC=VALUE[,...] (e.g. {_EXAMPLE})")
    return list(targets.values())


def _value_and_ci(result: RunResult, metric: M.Metric) -> tuple[float | None, list[float] | None]:
    """The run's value of ``metric`` and its interval: recorded for a metric of the run, else computed
    from the rows (a cut-off of ``--targets``)."""
    if metric.key in result.metrics or M.METRICS.get(metric.key) is metric:
        nothing_graded = metric.graded_only and result.graded_count == 0
        value = None if nothing_graded else result.metrics.get(metric.key)
        return value, result.ci95.get(metric.key) if value is not None else None
    value = metric.aggregate(result.rows, result.k)
    ci = confidence_intervals(result.rows, result.k, [metric])[0].get(metric.key)
    return value, ci


def check(result: RunResult, target: Target) -> TargetCheck:
    """One target's record: ``metric``, ``label``, ``target``, ``value``, ``ci95``, ``met``,
    ``ci_clear`` and the printed ``line``."""
    metric, label = target.metric, target.label(result.k)
    value, ci = _value_and_ci(result, metric)
    measured = is_number(value) and math.isfinite(value)
    met = measured and value >= target.value - 1e-12
    clear = None
    if measured and isinstance(ci, (list, tuple)) and len(ci) == 2:
        clear = ci[0] >= target.value - 1e-12 if met else ci[1] < target.value - 1e-12
    shown = metric.format(value) if measured else "not measured in this run"
    line = f"{'✓' if met else '✗'} {label} ≥ {metric.format(target.value)}: {shown}"
    interval = format_ci(metric, ci) if measured else ""
    line += f" {interval}" if interval else ""
    if clear is False:
        line += " (the 95% CI reaches below the target)" if met else " (the 95% CI reaches the target)"
    return TargetCheck(metric.key, label, target.value, value if measured else None,
                       list(ci) if measured and ci else None, met, clear, line)


def check_targets(result: RunResult, targets: Sequence[Target]) -> list[TargetCheck]:
    """Every target's record for ``result`` (:func:`check`), in the order given."""
    return [check(result, t) for t in targets]


def missed(results: Sequence[RunResult]) -> list[str]:
    """``label (run strategy)`` of every missed target of ``results``, for the exit line."""
    return [f"{t.label} ({r.run.strategy})" for r in results for t in r.targets or [] if not t.met]
