"""The report's part of adaptive judging (``--until-decided``, ``--target-ci``): in a run's section,
how judging stopped, each metric's verdict with the look that decided it, and the cost to the
verdict; in the comparison, the sequential verdict a run recorded against this baseline (the lines
are :mod:`components.analysis.adaptive`'s, as the console shows them)."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from components.analysis.adaptive import comparison_lines, cost_line, heading, metric_lines
from utils.records.sections import AdaptiveSection
from utils.results import RunResult


def _list(lines: list[str], h: Callable[[Any], str]) -> str:
    return "<ul class=adaptive>" + "".join(f"<li>{h(line.strip())}</li>" for line in lines) + "</ul>"


def run_html(result: RunResult, h: Callable[[Any], str]) -> str:
    """An adaptive run's part of its section ("" for a run that judged every question)."""
    record = result.adaptive
    if record is None:
        return ""
    k = result.run.k
    return (f"<h3>Judged until the verdict was known</h3><p>{h(heading(record))}</p>"
            f"{_list([*metric_lines(record, k), cost_line(record)], h)}"
            "<p class=muted>Questions not judged keep their retrieval figures; their grade is empty (\"not judged: "
            "decided after N\").</p>")


def comparison_html(comparison: Mapping, other: Any, h: Callable[[Any], str]) -> str:
    """The sequential verdict ``other`` recorded against the comparison's baseline ("" when none), from
    the comparison's JSON (read with the typed reader)."""
    recorded = (comparison.get("sequential") or {}).get(str(other))
    if recorded is None:
        return ""
    record = AdaptiveSection.from_json(recorded, f"comparison.sequential.{other}", "pass the comparison compare wrote")
    k = next((s.get("k") for s in comparison.get("runs") or [] if isinstance(s, Mapping)), None)
    head, *rest = comparison_lines(record, k)
    return f"<p><b>{h(head)}</b></p>{_list(rest, h)}"
