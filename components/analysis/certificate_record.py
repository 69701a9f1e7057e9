"""The verdict certificate's records and lines: for each run compared with the baseline and each
metric that uses grades, the verdict under the panel and under each judge alone, whether it holds
under every judge, and the Kendall τ of the rankings (how the certificate is made, and why:
:mod:`components.analysis.certificate`). A comparison's record
(:class:`components.analysis.comparison.Comparison`) holds one; the report and the gate read it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field

from components.analysis.paired import NOT_COMPARABLE, MetricResult
from utils import metrics as M
from utils.console import shorten

HOLDS, DEPENDS, UNJUDGED = "holds under every judge", "depends on the judge", "cannot be judged"
LEFT_OUT = "left out, uninformative"  # the line of a panel's judge the certificate leaves out (analysis.uninformative)


def left_out_lines(names: list[str]) -> list[str]:
    """One line per judge the certificate leaves out: ``  qj: left out, uninformative``."""
    return [f"  {name}: {LEFT_OUT}" for name in names]


@dataclass(frozen=True)
class Verdict:
    """One verdict on one metric of one comparison: under the panel, or under one judge alone."""

    verdict: str
    delta: float | None
    ci95: tuple[float, float] | None
    p: float | None  # the p the verdict used (Holm-adjusted when several runs are compared)
    borderline: bool = False  # the interval and that p read differently (components.analysis.inference_text)

    @classmethod
    def of(cls, r: MetricResult) -> Verdict:
        return cls(r.verdict, r.delta, r.ci95, r.p_holm if r.p_holm is not None else r.p, r.borderline)


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
    left_out: list[str] = field(default_factory=list)  # shared judges left out: uninformative in a compared run
    # judges of some runs' panels but not of every one's: the panel's verdict covers the others (analysis.panel)
    not_shared: list[str] = field(default_factory=list)

    def entry(self, baseline: str, other: str, metric: str) -> Entry | None:
        return next((e for e in self.entries if (e.baseline, e.other, e.metric) == (baseline, other, metric)), None)

    def to_json(self) -> dict:
        return {"judges": list(self.judges), "entries": [e.to_json() for e in self.entries],
                "rankings": [r.to_json() for r in self.rankings], "k": self.k, "left_out": list(self.left_out),
                "not_shared": list(self.not_shared)}

    @classmethod
    def from_json(cls, doc: Mapping) -> Certificate:
        """A certificate from a comparison's JSON (``compare --json``'s ``certificate``), as the report reads it."""
        def verdict(v: Mapping) -> Verdict:
            ci = v.get("ci95")
            return Verdict(str(v.get("verdict")), v.get("delta"), tuple(ci) if ci else None, v.get("p"),
                           v.get("borderline") is True)
        entries = [Entry(str(e["baseline"]), str(e["other"]), str(e["metric"]), verdict(e["panel"]),
                         {str(n): verdict(v) for n, v in e["judges"].items()}) for e in doc.get("entries") or []]
        rankings = [Ranking(**{k: r[k] for k in ("metric", "runs", "panel", "judges", "tau", "top", "tau_top")})
                    for r in doc.get("rankings") or []]
        return cls([str(n) for n in doc.get("judges") or []], entries, rankings, doc.get("k"),
                   [str(n) for n in doc.get("left_out") or []], [str(n) for n in doc.get("not_shared") or []])

    def __str__(self) -> str:
        return "".join(line + "\n" for line in certificate_lines(self))


def _tau(value: float | None, complete: bool) -> str:
    """``τ 0.67``, or why it is not defined."""
    if value is not None and math.isfinite(value):
        return f"τ {value:.2f}"
    return "τ n/a (ranks tied: it cannot order these runs)" if complete else "τ n/a (a run has no value)"


def _num(value: float | None, digits: int, sign: bool = True) -> str:
    if value is None or not math.isfinite(value):
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def describe(v: Verdict, digits: int) -> str:
    """``worse (Δ -2.00, 95% CI [-2.00, -2.00])``; ``…, borderline)`` when the interval and the p disagree."""
    ci = "-" if v.ci95 is None else f"[{_num(v.ci95[0], digits)}, {_num(v.ci95[1], digits)}]"
    return f"{v.verdict} (Δ {_num(v.delta, digits)}, 95% CI {ci}{', borderline' if v.borderline else ''})"


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
    """The certificate's console lines (none when no compared metric uses grades): a line per judge it left out."""
    if not c.entries:
        none = ["Verdict certificate: none, every judge left out"]
        return [*none, *left_out_lines(c.left_out)] if c.left_out else []
    judges = ", ".join(shorten(n, 40) for n in c.judges)
    lines = [f"Verdict certificate ({len(c.judges)} judge{'s' * (len(c.judges) != 1)}: {judges}; the verdict under "
             "the panel, then under each judge alone)",
             *left_out_lines([shorten(n, 40) for n in c.left_out])]
    if c.not_shared:
        lines.append(f"  the panel is the judges every run has: {', '.join(shorten(n, 40) for n in c.not_shared)} "
                     "left out (not in every run's panel); its verdicts are over the judges above")
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
