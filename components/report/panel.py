"""The report's parts of a panel of judges: per run, each judge's figures, a judge × judge table
of agreement and one plot of the grades by judge; in the comparison, the verdict certificate.

Called by :mod:`components.report.page` with its HTML helpers (escaping, and the figure around
an inline SVG), which this module does not import: that module imports this one.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from typing import Any

from components.analysis.certificate_record import DEPENDS, HOLDS, Certificate, certificate_lines
from components.report.svg import Chart, nice_ticks, tick_label
from utils.metrics import PASS_MARK
from utils.records.sections import JudgePair, PanelJudge, PanelSection
from utils.records.judge_signal import INFORMATIVE, UNINFORMATIVE, JudgeSignal
from utils.results import RunResult

Helpers = tuple[Callable[[Any], str], Callable[[str, str, str], str]]  # (escape, the figure around an SVG)
GRADES_CAPTION = "Grades by judge: how many questions each judge of the panel gave each grade"
COLORS = ("#3b6ea8", "#e67e22", "#2e8b57", "#8e44ad", "#c0392b", "#16a085", "#7f8c8d", "#d4ac0d")


def _num(value: Any, digits: int) -> str:
    return "-" if not isinstance(value, (int, float)) or isinstance(value, bool) else f"{value:.{digits}f}"


def _with_ci(figures: PanelJudge | None, key: str, digits: int) -> str:
    if figures is None:
        return "-"
    if not figures.graded:  # a judge that graded nothing has no grade figures, not 0
        return "n/a"
    ci = figures.ci95.get(key)
    shown = _num(figures.metrics.get(key), digits)
    return shown + (f" [{_num(ci[0], digits)}, {_num(ci[1], digits)}]" if ci else "")


def _signal_cell(signal: JudgeSignal | None, h: Callable[[Any], str]) -> str:
    if signal is None:
        return "<td>-</td>"
    cls = {UNINFORMATIVE: " class=bad", INFORMATIVE: " class=good"}.get(signal.verdict, "")
    return f"<td{cls} title='{h(signal.figures())}'>{h(signal.verdict)}</td>"


def _judges_table(panel: PanelSection, h: Callable[[Any], str]) -> str:
    per = panel.per_judge
    body = "".join(
        f"<tr><th>{h(name)}</th><td class=num>{h(per[name].graded if name in per else '-')}</td>"
        f"<td class=num>{h(_with_ci(per.get(name), 'avg_llm_grade', 2))}</td>"
        f"<td class=num>{h(_with_ci(per.get(name), 'avg_total_score', 2))}</td>"
        f"<td class=num>{h(_with_ci(per.get(name), 'pass_rate_7', 1))}</td>"
        f"{_signal_cell(per[name].judge_signal if name in per else None, h)}"
        f"<td>{h((per[name].unusable if name in per else None) or '')}</td></tr>" for name in panel.judges)
    head = ("<tr><th>judge</th><th>graded</th><th>mean grade [95% CI]</th><th>mean total</th>"
            f"<th>pass ≥ {PASS_MARK:g} (%)</th><th>signal (grade gap, needle found − not)</th>"
            "<th>became unusable</th></tr>")
    return f"<table class='metrics panel'><thead>{head}</thead><tbody>{body}</tbody></table>"


def _agreement_cell(pair: JudgePair | None, above: bool, h: Callable[[Any], str]) -> str:
    """One cell of the agreement table: κ above the diagonal, pass/fail agreement at the pass mark below."""
    if above:
        return (f"<td class=num title='quadratic-weighted kappa, n {h(pair.n if pair else None)}'>κ "
                f"{h(_num(pair.kappa_quadratic if pair else None, 3))}</td>")
    share = pair.pass_agreement.get(f"{PASS_MARK:g}") if pair else None
    return (f"<td class=num title='pass/fail agreement at {PASS_MARK:g}'>"
            f"{h(_num(None if share is None else 100 * share, 1))}%</td>")


def _agreement_table(panel: PanelSection, h: Callable[[Any], str]) -> str:
    """Judge × judge: quadratic-weighted κ above the diagonal, pass/fail agreement at the pass mark below."""
    names = panel.judges
    pairs = {tuple(p.judges): p for p in panel.agreement.pairs}
    rows = []
    for i, a in enumerate(names):
        cells = ["<td class=num>—</td>" if i == j else _agreement_cell(pairs.get((a, b)) or pairs.get((b, a)), i < j, h)
                 for j, b in enumerate(names)]
        rows.append(f"<tr><th>{h(a)}</th>{''.join(cells)}</tr>")
    head = "<tr><th></th>" + "".join(f"<th>{h(n)}</th>" for n in names) + "</tr>"
    alpha = panel.agreement.alpha_ordinal
    ci = alpha.ci95
    note = (f"Above the diagonal: quadratic-weighted κ; below: the share of questions both judges put on the same "
            f"side of pass ≥ {PASS_MARK:g}. Krippendorff's α (ordinal) over the panel: {_num(alpha.value, 3)}"
            + (f" [95% CI {_num(ci[0], 3)}, {_num(ci[1], 3)}]" if ci else "")
            + f" over {alpha.questions} questions.")
    return (f"<table class='metrics panel'><thead>{head}</thead><tbody>{''.join(rows)}</tbody></table>"
            f"<p class=muted>{h(note)}</p>")


def _grades_plot(result: RunResult, names: list[str]) -> Chart:
    """One plot: how many questions each judge gave each grade, side by side."""
    counts = {n: Counter((r.grades_by_judge or {})[n].grade for r in result.rows if n in (r.grades_by_judge or {}))
              for n in names}
    top = max([c for n in names for c in counts[n].values()] or [1]) * 1.15
    chart = Chart(420, 300, (0.4, 10.6), (0, top), title="Grades by judge", xlabel="grade", ylabel="questions",
                  with_legend=True)
    width = 0.8 / max(1, len(names))
    for i, judge in enumerate(names):
        for g in range(1, 11):
            n = counts[judge].get(g, 0)
            chart.bar(g + (i - (len(names) - 1) / 2) * width, n, COLORS[i % len(COLORS)], width,
                      label=judge[:30] if g == 1 else None, tip=f"{judge}: {n} question(s) graded {g}")
    chart.xticks = [(g, str(g)) for g in range(1, 11)]
    chart.yticks = [(t, tick_label(t)) for t in nice_ticks(0, top, 5, integer=True)]
    return chart


def run_html(result: RunResult, index: int, helpers: Helpers) -> str:
    """A panel run's part of its section ("" for a single judge's run)."""
    panel = result.panel
    if panel is None:
        return ""
    h, svg = helpers
    names = panel.judges
    return (f"<h3>Judges of the panel</h3><p class=muted>llm_grade is the {h(panel.aggregate)} of the judges "
            f"that graded, rounded half up; each row keeps every judge's grade.</p>{_judges_table(panel, h)}"
            f"<div class=twocol><div>{_agreement_table(panel, h)}</div>"
            f"<div>{svg(_grades_plot(result, names).svg(), f'r{index}-panel-grades', GRADES_CAPTION)}</div></div>")


def certificate_html(comparison: Mapping, h: Callable[[Any], str]) -> str:
    """The comparison's verdict certificate ("" without one): its lines, the conclusions marked."""
    doc = comparison.get("certificate")
    if not isinstance(doc, Mapping) or not doc.get("entries"):
        return ""
    lines = certificate_lines(Certificate.from_json(doc))

    def item(line: str) -> str:
        cls = " class=bad" if DEPENDS in line else " class=good" if HOLDS in line else ""
        return f"<li{cls}>{h(line.strip())}</li>"
    return f"<h3>Verdict certificate</h3><p>{h(lines[0])}</p><ul class=certificate>{''.join(map(item, lines[1:]))}</ul>"
