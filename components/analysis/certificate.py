"""The verdict certificate of ``compare`` on panel runs: would the decision change with the judge?

When every run compared is a panel run (``--judges``) and they share at least two judges,
``compare`` also compares the runs as each shared judge alone graded them
(:func:`components.analysis.panel.judge_view`: the same questions, the same statistics, that
judge's grade in place of the panel's), for every compared metric that uses grades (the judge
level of the metric registry). For each run compared with the baseline and each such metric:

* the verdict under the panel (the comparison itself) and under each judge alone, each with its
  Δ and 95% CI;
* one line: **holds under every judge** when every judge's verdict is the panel's, else **depends
  on the judge**, naming the judges whose verdict differs, with their Δ and CI. When the panel's
  or a judge's verdict is *not comparable* (no question has the metric in both runs), the
  agreement cannot be judged (``holds`` null).

With three or more runs, the runs are ranked by each metric's mean under each judge and under the
panel, and Kendall's τ-b between each judge's ranking and the panel's says how far the order of
the runs depends on the judge; with four or more runs, τ among the runs the panel ranks in its top
half (the ⌈n/2⌉ best, at least 3: τ over two runs is only ±1) is given apart: that is where a choice is
made, and where published judges agree least. A τ that is not defined (a judge that ranks every run
alike, or a run without the metric) is printed ``τ n/a`` with the reason. Formulas:
:mod:`components.stats.agreement`.

A judge of the panel that is uninformative in any compared run (its grades do not follow the needle:
:mod:`components.analysis.uninformative`) is left out of the certificate, one line naming it
(``qj: left out, uninformative``); the others are certified, one judge alone if one is left.

``compare --require-agreement`` gates on it (:mod:`components.analysis.gate`). The certificate's
records and lines: :mod:`components.analysis.certificate_record`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

from components.stats.agreement import kendall_tau
from components.analysis.certificate_record import Certificate, Entry, Ranking, Verdict
from components.analysis.comparison import Comparison
from components.analysis.panel import is_panel, judge_names, judge_view
from components.analysis.uninformative import left_out
from utils import metrics as M
from utils.results import RunResult

Rerun = Callable[[list[RunResult], list[str]], Comparison]  # compare_runs on other runs, same settings


TOP_HALF_MIN = 3  # the top half's τ covers at least 3 runs (over 2 it is only ±1)


def _rankings(labels: Sequence[str], panel_means: dict[str, list[float | None]],
              judge_means: dict[str, dict[str, list[float | None]]], metrics: Sequence[str]) -> list[Ranking]:
    out = []
    n = len(labels)
    for key in metrics:
        panel = panel_means[key]
        judges = {name: means[key] for name, means in judge_means.items()}
        complete = all(v is not None for v in panel) and all(v is not None for m in judges.values() for v in m)
        tau = {name: kendall_tau(m, panel) if complete else None for name, m in judges.items()}
        top: list[str] = []
        tau_top: dict[str, float | None] = {}
        if n >= 4 and complete:
            order = sorted(range(n), key=lambda i: -panel[i])[:max(TOP_HALF_MIN, math.ceil(n / 2))]
            top = [labels[i] for i in sorted(order)]
            tau_top = {name: kendall_tau([m[i] for i in sorted(order)], [panel[i] for i in sorted(order)])
                       for name, m in judges.items()}
        out.append(Ranking(key, list(labels), panel, judges, tau, top, tau_top))
    return out


def certify(runs: Sequence[RunResult], labels: Sequence[str], comparison: Comparison,
            rerun: Rerun) -> Certificate | None:
    """The certificate of ``comparison`` (of ``runs``, named ``labels``), or None when the runs are
    not all panel runs sharing two judges or more. ``rerun(runs, metrics)`` compares other runs with
    the comparison's settings (``compare_runs``, passed in: that module imports this one)."""
    if len(runs) < 2 or not all(is_panel(r) for r in runs):
        return None
    shared = [n for n in judge_names(runs[0]) if all(n in judge_names(r) for r in runs[1:])]
    metrics = [key for key in comparison.metrics if key in M.METRICS and M.METRICS[key].level == "judge"]
    if len(shared) < 2:
        return None
    if not metrics:  # no compared metric uses grades: no verdict can depend on the judge
        return Certificate(shared, [], [], comparison.k)
    dropped = left_out(runs, shared, judge_view)  # uninformative in a run: its verdict says nothing
    shared = [n for n in shared if n not in dropped]
    if not shared:
        return Certificate([], [], [], comparison.k, dropped)
    by_judge = {name: rerun([judge_view(r, name) for r in runs], metrics) for name in shared}
    entries = []
    for pc in comparison.comparisons:
        if pc.kind != "run":
            continue
        panel = {r.metric: r for r in pc.metrics}
        for key in metrics:
            judges = {}
            for name, comp in by_judge.items():
                pair = next(p for p in comp.comparisons if p.other == pc.other and p.kind == "run")
                judges[name] = Verdict.of(next(r for r in pair.metrics if r.metric == key))
            entries.append(Entry(pc.baseline, pc.other, key, Verdict.of(panel[key]), judges))
    rankings = []
    run_labels = [s.label for s in comparison.runs if s.kind == "run"]
    if len(run_labels) >= 3:
        def means(comp: Comparison) -> dict[str, list[float | None]]:
            summaries = [s for s in comp.runs if s.kind == "run"]
            return {key: [s.means.get(key) for s in summaries] for key in metrics}
        rankings = _rankings(run_labels, means(comparison), {n: means(c) for n, c in by_judge.items()}, metrics)
    return Certificate(shared, entries, rankings, comparison.k, dropped)
