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
alike, or a run without the metric) is printed ``τ n/a`` with the reason. Formulas: :mod:`components.stats.agreement`.

``compare --require-agreement`` gates on it (:mod:`components.analysis.gate`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from components.stats.agreement import kendall_tau
from components.analysis.comparison import NOT_COMPARABLE, MetricResult
from components.analysis.panel import is_panel, judge_names, judge_view
from utils import metrics as M
from utils.console import shorten
from utils.results import RunResult

HOLDS, DEPENDS, UNJUDGED = "holds under every judge", "depends on the judge", "cannot be judged"


@dataclass(frozen=True)
class Verdict:
    """One verdict on one metric of one comparison: under the panel, or under one judge alone."""

    verdict: str
    delta: float | None
    ci95: tuple[float, float] | None
    p: float | None  # the p the verdict used (Holm-adjusted when several runs are compared)

    @classmethod
    def of(cls, r: MetricResult) -> Verdict:
        return cls(r.verdict, r.delta, r.ci95, r.p_holm if r.p_holm is not None else r.p)


@dataclass(frozen=True)
class Entry:
    """The certificate of one metric of one comparison (``other`` against ``baseline``)."""

    baseline: str
    other: str
    metric: str
    panel: Verdict
    judges: dict[str, Verdict]

    @property
    def holds(self) -> bool | None:
        """True: every judge's verdict is the panel's; False: one differs; None: cannot be judged."""
        verdicts = [self.panel, *self.judges.values()]
        if any(v.verdict == NOT_COMPARABLE for v in verdicts):
            return None
        return all(v.verdict == self.panel.verdict for v in self.judges.values())

    @property
    def disagreeing(self) -> list[str]:
        return [name for name, v in self.judges.items() if v.verdict != self.panel.verdict]

    @property
    def conclusion(self) -> str:
        return {True: HOLDS, False: DEPENDS, None: UNJUDGED}[self.holds]

    def to_json(self) -> dict:
        return {"baseline": self.baseline, "other": self.other, "metric": self.metric, "panel": asdict(self.panel),
                "judges": {n: asdict(v) for n, v in self.judges.items()}, "holds": self.holds,
                "conclusion": self.conclusion, "disagreeing": self.disagreeing}


@dataclass(frozen=True)
class Ranking:
    """Kendall τ-b between each judge's ranking of the runs by ``metric`` and the panel's."""

    metric: str
    runs: list[str]
    panel: list[float | None]  # each run's mean under the panel
    judges: dict[str, list[float | None]]  # each run's mean under each judge
    tau: dict[str, float | None]
    top: list[str] = field(default_factory=list)  # the panel's top half (with 4 runs or more)
    tau_top: dict[str, float | None] = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Certificate:
    judges: list[str]
    entries: list[Entry]
    rankings: list[Ranking] = field(default_factory=list)
    k: int | None = None

    def entry(self, baseline: str, other: str, metric: str) -> Entry | None:
        return next((e for e in self.entries if (e.baseline, e.other, e.metric) == (baseline, other, metric)), None)

    def to_json(self) -> dict:
        return {"judges": list(self.judges), "entries": [e.to_json() for e in self.entries],
                "rankings": [r.to_json() for r in self.rankings], "k": self.k}

    @classmethod
    def from_json(cls, doc: Mapping) -> Certificate:
        """A certificate from a comparison's JSON (``compare --json``'s ``certificate``), as the report reads it."""
        def verdict(v: Mapping) -> Verdict:
            ci = v.get("ci95")
            return Verdict(str(v.get("verdict")), v.get("delta"), tuple(ci) if ci else None, v.get("p"))
        entries = [Entry(str(e["baseline"]), str(e["other"]), str(e["metric"]), verdict(e["panel"]),
                         {str(n): verdict(v) for n, v in e["judges"].items()}) for e in doc.get("entries") or []]
        rankings = [Ranking(**{k: r[k] for k in ("metric", "runs", "panel", "judges", "tau", "top", "tau_top")})
                    for r in doc.get("rankings") or []]
        return cls([str(n) for n in doc.get("judges") or []], entries, rankings, doc.get("k"))

    def __str__(self) -> str:
        return "".join(line + "\n" for line in certificate_lines(self))


def _num(value: float | None, digits: int, sign: bool = True) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _tau(value: float | None, complete: bool) -> str:
    """``τ 0.67``, or why it is not defined."""
    if value is not None and math.isfinite(value):
        return f"τ {value:.2f}"
    return "τ n/a (ranks tied: it cannot order these runs)" if complete else "τ n/a (a run has no value)"


def describe(v: Verdict, digits: int) -> str:
    """``worse (Δ -2.00, 95% CI [-2.00, -2.00])``."""
    ci = "-" if v.ci95 is None else f"[{_num(v.ci95[0], digits)}, {_num(v.ci95[1], digits)}]"
    return f"{v.verdict} (Δ {_num(v.delta, digits)}, 95% CI {ci})"


def entry_line(e: Entry, k: int | None) -> str:
    """The certificate's one line for an entry (module docstring)."""
    spec = M.METRICS.get(e.metric)
    label, digits = (spec.label_at(k), spec.digits) if spec else (e.metric, 3)
    head = f"{shorten(e.other, 40)} vs {shorten(e.baseline, 40)}, {label}: "
    if e.holds is None:
        return head + f"{UNJUDGED} (not comparable under the panel or a judge)"
    if e.holds:
        return head + f"{HOLDS}: {e.panel.verdict}"
    named = "; ".join(f"{shorten(n, 40)} says {describe(e.judges[n], digits)}" for n in e.disagreeing)
    return head + f"{DEPENDS}: the panel says {describe(e.panel, digits)}; {named}"


def certificate_lines(c: Certificate) -> list[str]:
    """The certificate's console lines (none when no compared metric uses grades)."""
    if not c.entries:
        return []
    lines = [f"Verdict certificate ({len(c.judges)} judges: {', '.join(shorten(n, 40) for n in c.judges)}; the "
             "verdict under the panel, then under each judge alone)"]
    for e in c.entries:
        spec = M.METRICS.get(e.metric)
        digits = spec.digits if spec else 3
        lines.append("  " + entry_line(e, c.k))
        lines.append("      panel " + describe(e.panel, digits) + "; "
                     + "; ".join(f"{shorten(n, 40)} {describe(v, digits)}" for n, v in e.judges.items()))
    for r in c.rankings:
        spec = M.METRICS.get(r.metric)
        label = spec.label_at(c.k) if spec else r.metric
        complete = all(v is not None for v in r.panel)
        taus = ", ".join(f"{shorten(n, 40)} {_tau(t, complete)}" for n, t in r.tau.items())
        lines.append(f"  ranking of the {len(r.runs)} runs by {label}, Kendall τ of each judge's against the "
                     f"panel's: {taus}")
        if r.top:
            top = ", ".join(f"{shorten(n, 40)} {_tau(t, True)}" for n, t in r.tau_top.items())
            lines.append(f"    among the panel's top half ({', '.join(shorten(x, 30) for x in r.top)}): {top}")
    return lines


Rerun = Callable[[list[RunResult], list[str]], "Comparison"]  # compare_runs on other runs, same settings


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


def certify(runs: Sequence[RunResult], labels: Sequence[str], comparison, rerun: Rerun) -> Certificate | None:
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
        def means(comp) -> dict[str, list[float | None]]:
            summaries = [s for s in comp.runs if s.kind == "run"]
            return {key: [s.means.get(key) for s in summaries] for key in metrics}
        rankings = _rankings(run_labels, means(comparison), {n: means(c) for n, c in by_judge.items()}, metrics)
    return Certificate(shared, entries, rankings, comparison.k)
