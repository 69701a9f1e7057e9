"""Which run to pick, after a comparison of several runs (a suite, several strategies, ``compare``
of several results files): three recommendations, each with its figures.

- **best quality**: the highest nDCG@k, ties broken by MRR;
- **fastest**: the lowest median retrieval latency (of the rows' unrounded ``latency_ms``), when it
  is faster than noise (below); otherwise the runs are *equally fast* and the pick among them is the
  best quality, which the recommendation says;
- **best balance**: the highest balance = (quality + speed) / 2, with quality = nDCG@k / the best
  nDCG@k and speed = 1 − (latency − the lowest) / (the highest − the lowest) (1 for every run when
  their latencies are equal; quality 0 for every run when no run has an nDCG above 0). A run whose
  latency does not really differ from the fastest's counts the fastest's latency here (speed 1).

A latency difference is *real* (:func:`really_slower`) when the slower run's median latency is at
least :data:`LATENCY_MIN_GAP` (10 %) above the faster one's **and** the paired sign-flip test on the
per-question latencies (the test compare uses, at α) rejects "equally fast". A gap of a few hundredths
of a millisecond between identical retrievers is timing noise: it picks nothing.

The figures are over the questions the runs share (compare's questions); rank-only reference
systems are not candidates. Where a recommended run's nDCG@k is not significantly different from
another run's (compare's verdict: its paired sign-flip test at α, Holm-adjusted against the
baseline as compare's table says it; the same test for two other runs), the recommendation says
so in a note: the choice among them may rest on the other figures.

:func:`best_columns` says which values of a table row are the best (compare's console table and
the report highlight them).
"""

from __future__ import annotations

import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict, dataclass, field

import numpy as np

from components.stats import statistics as S
from components.analysis.paired import ALPHA, SAME, verdict as verdict_of

QUALITY, TIE_BREAK = "ndcg_at_k", "mrr"
LATENCY_MIN_GAP = 0.10  # a median latency at least 10 % above another's, and a paired test at α: really slower
KINDS = {"best_quality": "best quality", "fastest": "fastest", "best_balance": "best balance"}
_EPS = 1e-12


@dataclass(frozen=True)
class Candidate:
    """One run's figures over the compared questions."""

    label: str
    ndcg: float | None
    mrr: float | None
    median_latency_ms: float | None
    quality: float | None = None  # nDCG / the best nDCG
    speed: float | None = None  # 1 − (latency − min) / (max − min)
    balance: float | None = None  # (quality + speed) / 2


@dataclass(frozen=True)
class Recommendation:
    kind: str  # best_quality | fastest | best_balance
    label: str
    note: str | None = None  # where the nDCG difference with another run is not significant


@dataclass(frozen=True)
class Recommendations:
    k: int
    candidates: list[Candidate]
    picks: list[Recommendation] = field(default_factory=list)

    def candidate(self, label: str) -> Candidate:
        return next(c for c in self.candidates if c.label == label)

    def to_json(self) -> dict:
        return {"k": self.k, "quality_metric": QUALITY, "tie_break": TIE_BREAK,
                "candidates": [asdict(c) for c in self.candidates],
                **{p.kind: {"label": p.label, "note": p.note, **_figures(p.kind, self.candidate(p.label))}
                   for p in self.picks}}

    def lines(self) -> list[str]:
        """The console's lines (``compare`` and a run of several strategies)."""
        out = [f"Recommendations (quality: nDCG@{self.k}, ties by MRR; speed: median retrieval latency):"]
        width = max(len(c.label) for c in self.candidates)
        for p in self.picks:
            out.append(f"  {KINDS[p.kind]:<13} {p.label:<{width}}  {describe(p.kind, self.candidate(p.label), self.k)}")
            if p.note:
                out.append(f"  {'':<13} {'':<{width}}  note: {p.note}")
        return out


def _figures(kind: str, c: Candidate) -> dict:
    """The figures a recommendation of ``kind`` is made on."""
    figures = {"ndcg_at_k": c.ndcg, "mrr": c.mrr, "median_latency_ms": c.median_latency_ms}
    if kind == "best_balance":
        figures.update(quality=c.quality, speed=c.speed, balance=c.balance)
    return figures


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g} ms"


def _n(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def describe(kind: str, c: Candidate, k: int) -> str:
    """A recommendation's figures as one phrase."""
    if kind == "best_quality":
        return f"nDCG@{k} {_n(c.ndcg)}, MRR {_n(c.mrr)} (median latency {_ms(c.median_latency_ms)})"
    if kind == "fastest":
        return f"median latency {_ms(c.median_latency_ms)} (nDCG@{k} {_n(c.ndcg)})"
    return (f"balance {_n(c.balance, 2)} = (quality {_n(c.quality, 2)} + speed {_n(c.speed, 2)}) / 2 "
            f"(nDCG@{k} {_n(c.ndcg)}, median latency {_ms(c.median_latency_ms)})")


def _median(values: Sequence[float]) -> float | None:
    """The median latency; None when no row has a latency above 0 (a file without timings)."""
    return float(statistics.median(values)) if values and any(v > 0 for v in values) else None


def _mean(values: Sequence[float | None]) -> float | None:
    present = [v for v in values if v is not None]
    return float(np.mean(present)) if present else None


def really_slower(slow: Sequence[float], fast: Sequence[float], *, alpha: float = ALPHA,
                  seed: int = S.PERMUTATION_SEED) -> bool:
    """Whether per-question latencies ``slow`` are really above ``fast`` (the same questions, in the same
    order): the median at least :data:`LATENCY_MIN_GAP` higher and the paired sign-flip test's p below
    ``alpha`` (module docstring). Raises ValueError when the two are not paired (different lengths)."""
    if len(slow) != len(fast):
        raise ValueError(f"latencies of {len(slow)} and {len(fast)} questions: pass the same questions' latencies")
    low, high = _median(fast), _median(slow)
    if low is None or high is None or high < low * (1 + LATENCY_MIN_GAP) or high - low <= _EPS:
        return False
    (p,) = S.sign_flip_tests(np.asarray(slow, dtype=float) - np.asarray(fast, dtype=float), seed=seed)
    return p is not None and p < alpha


def _equally_fast(medians: Sequence[float | None], latencies: Sequence[Sequence[float]], alpha: float,
                  seed: int) -> set[int]:
    """The runs whose latency does not really differ from the fastest run's (the fastest among them)."""
    timed = [i for i, m in enumerate(medians) if m is not None]
    if not timed:
        return set()
    fastest = min(timed, key=lambda i: medians[i])
    return {i for i in timed
            if i == fastest or not really_slower(latencies[i], latencies[fastest], alpha=alpha, seed=seed)}


def candidates(labels: Sequence[str], ndcg: Sequence[Sequence[float | None]], mrr: Sequence[Sequence[float | None]],
               medians: Sequence[float | None], same: set[int]) -> list[Candidate]:
    """Each run's means, median latency and normalised quality, speed and balance (a run of ``same``, equally
    fast as the fastest, counts the fastest's latency in its speed)."""
    means = [_mean(v) for v in ndcg]
    best = max((m for m in means if m is not None), default=None)
    timed = [m for m in medians if m is not None]
    low = min(timed) if timed else None
    effective = [low if i in same else m for i, m in enumerate(medians)]
    high = max((m for m in effective if m is not None), default=None)
    out = []
    for label, q, r, lat, eff in zip(labels, means, mrr, medians, effective, strict=True):
        quality = None if q is None or best is None else (q / best if best > 0 else 0.0)
        speed = None if lat is None else (1.0 if high - low <= _EPS else 1.0 - (eff - low) / (high - low))
        balance = None if quality is None or speed is None else (quality + speed) / 2
        out.append(Candidate(label, q, _mean(r), lat, quality, speed, balance))
    return out


def _first(cands: Sequence[Candidate], key: Callable[[Candidate], tuple | float | None]) -> Candidate | None:
    """The candidate with the highest ``key`` (None: not a candidate); the earliest on a tie."""
    best = None
    for c in cands:
        value = key(c)
        if value is not None and (best is None or value > key(best)):
            best = c
    return best


def recommend(labels: Sequence[str], ndcg: Sequence[Sequence[float | None]], mrr: Sequence[Sequence[float | None]],
              latencies: Sequence[Sequence[float]], k: int, *, alpha: float = ALPHA,
              verdicts: Mapping[frozenset[str], str] | None = None,
              seed: int = S.PERMUTATION_SEED) -> Recommendations | None:
    """The recommendations among ``labels`` (two or more runs), from each run's per-question nDCG@k
    and MRR over the same questions (in the same order) and its rows' latencies; ``verdicts``:
    compare's nDCG@k verdict of a pair of labels where it made one (module docstring). None with
    fewer than two runs."""
    if len(labels) < 2:
        return None
    medians = [_median(v) for v in latencies]
    same = _equally_fast(medians, latencies, alpha, seed)  # the paired latency tests, once
    cands = candidates(labels, ndcg, mrr, medians, same)
    same_speed = [cands[i] for i in sorted(same)]
    result = Recommendations(k, cands)
    index = {label: i for i, label in enumerate(labels)}

    def same_quality(a: str, b: str) -> str | None:
        """compare's verdict on the nDCG@k of a and b, when it is "no detectable difference"."""
        given = (verdicts or {}).get(frozenset((a, b)))
        if given is not None:
            return given if given == SAME else None
        pairs = [(x, y) for x, y in zip(ndcg[index[a]], ndcg[index[b]], strict=True) if x is not None and y is not None]
        if not pairs:
            return None
        deltas = np.array([y - x for x, y in pairs], dtype=float)
        (p,) = S.sign_flip_tests(deltas, seed=seed)
        found = verdict_of(float(deltas.mean()), p, alpha)
        return found if found == SAME else None

    quality = _first(cands, lambda c: None if c.ndcg is None else (c.ndcg, c.mrr if c.mrr is not None else -1.0))
    fastest = _first(cands, lambda c: None if c.median_latency_ms is None else -c.median_latency_ms)
    if len(same_speed) > 1:  # no run faster beyond noise: the best quality among the equally fast
        fastest = _first(same_speed, lambda c: (c.ndcg if c.ndcg is not None else -1.0,
                                                c.mrr if c.mrr is not None else -1.0))
    balance = _first(cands, lambda c: c.balance)
    if quality is not None:
        alike = [c.label for c in cands if c is not quality and same_quality(quality.label, c.label)]
        note = (f"its nDCG@{k} is not significantly higher than that of {', '.join(alike)} (compare: {SAME}): the "
                "choice among them may rest on speed" if alike else None)
        result.picks.append(Recommendation("best_quality", quality.label, note))
    for kind, pick in (("fastest", fastest), ("best_balance", balance)):
        if pick is None:
            continue
        note = None
        if kind == "fastest" and len(same_speed) > 1:
            others = ", ".join(c.label for c in same_speed if c is not pick)
            result.picks.append(Recommendation(kind, pick.label, _equally_fast_note(others, len(same_speed) == len(
                [c for c in cands if c.median_latency_ms is not None]), k)))
            continue
        if quality is not None and pick is not quality and same_quality(quality.label, pick.label):
            note = (f"its nDCG@{k} is not significantly lower than that of {quality.label}, the best quality "
                    f"(compare: {SAME})")
        result.picks.append(Recommendation(kind, pick.label, note))
    return result


def _equally_fast_note(others: str, every_run: bool, k: int) -> str:
    who = "the runs are equally fast" if every_run else f"equally fast as {others}"
    return (f"{who}: their latency differences are within noise (under {LATENCY_MIN_GAP:.0%} or not significant "
            f"by the paired test), so the pick among them is the best nDCG@{k}")


def best_columns(values: Sequence[float | None], lower_is_better: bool = False) -> set[int]:
    """The positions of the best of ``values`` (the highest, or the lowest): every one tied for it;
    none when fewer than two values are present or all of them are equal."""
    present = [(i, v) for i, v in enumerate(values) if v is not None]
    if len(present) < 2:
        return set()
    sign = -1.0 if lower_is_better else 1.0
    best = max(sign * v for _, v in present)
    top = {i for i, v in present if sign * v >= best - _EPS}
    return set() if len(top) == len(present) else top


def recommend_runs(labels: Sequence[str], rows: Sequence[Mapping[str, object]], question_ids: Sequence[str], k: int,
                   comparisons: Sequence[object] = (), alpha: float = ALPHA) -> Recommendations | None:
    """:func:`recommend` for compared runs: ``rows`` {question id: row} of each run (labels in the
    same order, the first the baseline), over ``question_ids``; ``comparisons``, compare's pairs
    (their nDCG@k verdicts are kept)."""
    from components.analysis.aggregate import with_row_metrics
    from utils.metrics import METRICS

    specs = [METRICS[QUALITY], METRICS[TIE_BREAK]]
    values = [[[spec.value(with_row_metrics(r[q], k), k) for q in question_ids] for spec in specs] for r in rows]
    verdicts = {frozenset((pc.baseline, pc.other)): m.verdict for pc in comparisons if pc.kind == "run"
                for m in pc.metrics if m.metric == QUALITY}
    return recommend(labels, [v[0] for v in values], [v[1] for v in values],
                     [[float(r[q].latency_ms or 0.0) for q in question_ids] for r in rows], k, alpha=alpha,
                     verdicts=verdicts)


def render_html(data: Mapping | None, h: Callable[[object], str]) -> str:
    """The report's recommendations section from :meth:`Recommendations.to_json` (``h`` escapes a
    text for HTML); "" without recommendations."""
    if not isinstance(data, Mapping):
        return ""
    k = data.get("k")
    rows = []
    for kind, title in KINDS.items():
        pick = data.get(kind)
        if not isinstance(pick, Mapping):
            continue
        figures = Candidate(str(pick.get("label")), pick.get("ndcg_at_k"), pick.get("mrr"),
                            pick.get("median_latency_ms"), pick.get("quality"), pick.get("speed"), pick.get("balance"))
        note = f"<div class=muted>note: {h(pick['note'])}</div>" if pick.get("note") else ""
        rows.append(f"<tr><th>{h(title)}</th><td><b>{h(pick.get('label'))}</b></td>"
                    f"<td>{h(describe(kind, figures, k if isinstance(k, int) else 0))}{note}</td></tr>")
    if not rows:
        return ""
    return (f"<h3>Recommendations</h3><p class=muted>quality: nDCG@{h(k)}, ties broken by MRR; speed: median "
            "retrieval latency; balance: (nDCG / the best nDCG + 1 − (latency − the lowest) / (the highest − the "
            f"lowest)) / 2</p><table class='meta recommendations'><tbody>{''.join(rows)}</tbody></table>")
