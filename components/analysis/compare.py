"""``python benchmark.py compare A B [C ...] [--json OUT]``: did it get better, or is it noise?

Each argument is a results file or a run id (``runs/<id>.json`` under the current folder, or the
file there whose ``run.id`` is it). The first run is the baseline; every other run is compared with
it, question by question (paired by question id, on the questions all runs share):

- for each metric of :data:`METRICS`: each run's mean, the delta (other − baseline), its paired 95%
  percentile-bootstrap CI, the two-sided p of a paired sign-flip test, wins / ties / losses; with
  more than one other run, Holm-adjusted p-values across them;
- one verdict per metric: ``better`` / ``worse`` when the (Holm-adjusted) p is below α = .05,
  else ``no detectable difference`` (``not comparable`` when no question has the metric in both
  runs), and the smallest change this many questions could detect (α .05, power .8, from the
  spread of the paired deltas) with the number of questions a 0.05 change would need;
- the questions that got worse and better, largest first (by total score, then by RR);
- when the questions carry ``reference_ranks``, every reference system as a rank-only run.

Metric values per question: ``rr`` = 1/rank (chunk level), ``rr_doc`` = 1/doc_rank (document
level), ``hit_at_1``/``hit_at_5`` 0 or 1, ``ndcg_at_k`` (document level), ``grade`` (llm_grade, graded
questions only), ``total_score`` (graded only) and ``pass_7`` (1 when total score ≥ 7; an ungraded
question does not pass; null for every question of a run that graded none). Shares are 0-1 here
(results files give rates in percent). Files of schema version 1 get the document-level values
derived from ``retrieved`` + ``needle_doc_ids``. Rows with ``llm_grades`` (judge repeats) make the
grade-based intervals two-level (see statistics).

Holm families: the user's runs compared with the baseline form one family per metric, the
reference systems another (so adding reference ranks to a questions file does not change the
verdict between your runs). The command exits 0 whatever the verdict.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from components.analysis import statistics as S
from utils.errors import InputError
from utils.metrics import RetrievalMetrics as M
from utils.console import PASS_MARK, shorten
from utils.results import grade_repeats
from utils.output import check_writable, write_json_atomic

ALPHA = 0.05
POWER = 0.8
TOP_DOCS = 3  # documents shown per question
BETTER, WORSE, SAME, NOT_COMPARABLE = "better", "worse", "no detectable difference", "not comparable"
COMPARE_SCHEMA_VERSION = 1


@dataclass(frozen=True)
class MetricSpec:
    key: str  # JSON key
    label: str  # console name
    level: str  # "chunk" | "document" | "judge"
    effect: float  # the change "you would need about N questions to detect" is about
    digits: int


METRICS = (
    MetricSpec("rr", "MRR", "chunk", 0.05, 3),
    MetricSpec("rr_doc", "MRR_doc", "document", 0.05, 3),
    MetricSpec("hit_at_1", "Hit@1", "chunk", 0.05, 3),
    MetricSpec("hit_at_5", "Hit@5", "chunk", 0.05, 3),
    MetricSpec("ndcg_at_k", "NDCG@k", "document", 0.05, 3),
    MetricSpec("grade", "grade", "judge", 0.5, 2),
    MetricSpec("total_score", "total score", "judge", 0.5, 2),
    MetricSpec("pass_7", "pass@7", "judge", 0.05, 3),
)


@dataclass(frozen=True)
class QuestionView:
    """One question of one run, as compare sees it."""

    question_id: str
    question: str
    rank: int | None
    doc_rank: int | None
    grade: float | None
    total_score: float | None
    top_docs: tuple[str, ...]
    values: dict[str, float | None]  # metric key → the question's value (None: not part of that metric)
    repeats: dict[str, list[float]]  # grade-based metric key → per judge repeat, when the row has llm_grades


@dataclass(frozen=True)
class RunSummary:
    label: str
    kind: str  # "run" | "reference"
    run_id: str | None
    strategy: str | None
    source: str | None  # file path, or "reference_ranks" for a reference system
    k: int | None
    status: str | None
    question_count: int  # questions in its file
    corpus_sha256: str | None
    judge_provider: str | None
    judge_model: str | None
    judge_prompt_sha256: str | None
    means: dict[str, float | None]  # over the common questions that have the metric


@dataclass(frozen=True)
class MetricResult:
    metric: str
    n: int  # paired questions (both runs have the metric)
    mean_baseline: float | None
    mean_other: float | None
    delta: float | None  # mean(other − baseline)
    ci95: tuple[float, float] | None
    p: float | None  # sign-flip, two-sided
    p_holm: float | None  # when the family has more than one comparison
    wins: int  # questions where other > baseline
    ties: int
    losses: int
    verdict: str
    mde: float | None  # smallest detectable |delta| with these n questions
    effect: float
    questions_needed: int | None  # to detect ``effect``


@dataclass(frozen=True)
class QuestionChange:
    question_id: str
    question: str
    rank_before: int | None
    rank_after: int | None
    doc_rank_before: int | None
    doc_rank_after: int | None
    grade_before: float | None
    grade_after: float | None
    total_before: float | None
    total_after: float | None
    delta_total: float | None
    delta_rr: float
    top_docs_before: list[str]
    top_docs_after: list[str]


@dataclass(frozen=True)
class PairComparison:
    baseline: str
    other: str
    kind: str  # "run" | "reference"
    metrics: list[MetricResult]
    worse: list[QuestionChange] = field(default_factory=list)
    better: list[QuestionChange] = field(default_factory=list)


@dataclass(frozen=True)
class Comparison:
    runs: list[RunSummary]
    question_ids: list[str]  # common to all runs, in the baseline's order
    left_out: dict[str, int]  # label → questions of that run not compared
    warnings: list[str]
    comparisons: list[PairComparison]
    k: int
    alpha: float = ALPHA
    power: float = POWER

    def to_json(self) -> dict:
        """Strict-JSON-ready dict (see the README for the schema)."""
        return _finite({
            "schema_version": COMPARE_SCHEMA_VERSION,
            "runs": [asdict(r) for r in self.runs],
            "common_question_count": len(self.question_ids),
            "question_ids": list(self.question_ids),
            "left_out": dict(self.left_out),
            "warnings": list(self.warnings),
            "metrics": [{"key": m.key, "label": _label(m, self.k), "level": m.level, "effect": m.effect}
                        for m in METRICS],
            "comparisons": [asdict(c) for c in self.comparisons],
            "settings": {
                "alpha": self.alpha, "power": self.power,
                "bootstrap": {"resamples": S.RESAMPLES, "seed": S.BOOTSTRAP_SEED, "method": S.METHOD,
                              "level": S.LEVEL},
                "permutation": {"permutations": S.PERMUTATIONS, "seed": S.PERMUTATION_SEED,
                                "test": "paired sign-flip, two-sided"},
            },
        })


def _finite(value: Any) -> Any:
    """Tuples → lists, non-finite floats → None, numpy scalars → Python: strict JSON."""
    if isinstance(value, dict):
        return {k: _finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_finite(v) for v in value]
    if isinstance(value, (float, np.floating)):
        return float(value) if math.isfinite(value) else None
    if isinstance(value, np.integer):
        return int(value)
    return value


def _label(spec: MetricSpec, k: int) -> str:
    return spec.label.replace("@k", f"@{k}")


# ---- reading runs -------------------------------------------------------------------------------

def _needles(row: dict) -> list[str]:
    if row.get("needle_doc_ids"):
        return list(row["needle_doc_ids"])
    return [row["needle_doc_id"]] if row.get("needle_doc_id") else []


def question_view(row: dict, k: int, graded_run: bool = True) -> QuestionView:
    """A results row as compare sees it; values a schema-1 row lacks are derived from ``retrieved`` +
    ``needle_doc_ids`` with RetrievalMetrics. ``graded_run`` False (no question of the run was graded,
    e.g. the offline judge without expected answers): pass@7 is null rather than 0 for every question."""
    retrieved = list(row.get("retrieved") or [])
    needles = _needles(row)
    derived: dict[str, Any] = {}

    def stored(name: str) -> Any:
        if row.get(name) is not None:
            return row[name]
        if not derived:
            derived.update(M.row_metrics(retrieved, needles, k))
        return derived[name]

    rank = row["rank"] if "rank" in row else M.calculate_rank(retrieved[:k], needles)
    grade, total = row.get("llm_grade"), row.get("total_score")
    values: dict[str, float | None] = {
        "rr": float(row["rr"]) if row.get("rr") is not None else M.reciprocal_rank(rank),
        "rr_doc": float(stored("rr_doc")),
        "hit_at_1": 1.0 if rank == 1 else 0.0,
        "hit_at_5": 1.0 if rank is not None and rank <= 5 else 0.0,
        "ndcg_at_k": float(stored("ndcg_at_k")),
        "grade": None if grade is None else float(grade),
        "total_score": None if total is None else float(total),
        "pass_7": (1.0 if total is not None and total >= PASS_MARK else 0.0) if graded_run else None,
    }
    repeats: dict[str, list[float]] = {}
    grades = grade_repeats(row) if grade is not None else None
    if grades:
        totals = [M.calculate_total_score(g, rank) for g in grades]
        repeats = {"grade": grades, "total_score": totals, "pass_7": [1.0 if t >= PASS_MARK else 0.0 for t in totals]}
        if total is None:
            del repeats["total_score"]
    return QuestionView(
        question_id=str(row["question_id"]), question=str(row.get("question") or ""), rank=rank,
        doc_rank=stored("doc_rank"), grade=values["grade"], total_score=values["total_score"],
        top_docs=tuple(M.doc_ranking(retrieved[:k])[:TOP_DOCS]), values=values, repeats=repeats)


def reference_view(question: QuestionView, needles: list[str], rank: int | None, k: int) -> QuestionView:
    """A reference system's rank (document level, 1-5 or null) as a rank-only question: MRR and
    MRR_doc are both 1/rank, NDCG@k is computed for single-needle questions only, grade metrics null."""
    ndcg = None
    if len(needles) == 1:
        placed = [f"\0other{i}" for i in range(1, rank)] + needles if rank is not None else []
        ndcg = M.ndcg_at_k(placed, needles, k)
    rr = M.reciprocal_rank(rank)
    values = {"rr": rr, "rr_doc": rr, "hit_at_1": 1.0 if rank == 1 else 0.0,
              "hit_at_5": 1.0 if rank is not None and rank <= 5 else 0.0, "ndcg_at_k": ndcg,
              "grade": None, "total_score": None, "pass_7": None}
    return QuestionView(question.question_id, question.question, rank, rank, None, None, (), values, {})


def _rows(run: dict, name: str) -> list[dict]:
    rows = run.get("results") if isinstance(run, dict) else None
    if not isinstance(rows, list):
        raise InputError(f"{name}: not a results file (no \"results\" list): pass a results file written by "
                         "benchmark.py")
    seen: set[str] = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or row.get("question_id") in (None, ""):
            raise InputError(f"{name}: result #{i + 1} has no question_id: pass a results file written by "
                             "benchmark.py")
        qid = str(row["question_id"])
        if qid in seen:
            raise InputError(f"{name}: question id {qid!r} appears twice: pass a results file written by "
                             "benchmark.py")
        seen.add(qid)
    return rows


def default_labels(runs: Sequence[dict], names: Sequence[str] | None = None) -> list[str]:
    """Each run's strategy; when two runs share one, their run ids (else the given names, else #i)."""
    def info(run: dict) -> dict:
        return run.get("run") or {}

    candidates = [
        [info(r).get("strategy"), info(r).get("id"), (names[i] if names else None), f"#{i + 1}"]
        for i, r in enumerate(runs)
    ]
    for level in range(4):
        labels = [next((c for c in cands[level:] if c), f"#{i + 1}") for i, cands in enumerate(candidates)]
        if len(set(labels)) == len(labels):
            return [str(x) for x in labels]
    return [f"#{i + 1}" for i in range(len(runs))]


# ---- comparing ----------------------------------------------------------------------------------

def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _pair_stats(base: list[QuestionView], others: list[list[QuestionView]]) -> list[dict[str, dict]]:
    """Raw per-metric statistics of each ``other − base`` (no Holm, no verdict). Every (comparison,
    metric) over the same questions shares one bootstrap pass and one set of sign patterns: the
    streams restart from the fixed seeds for each question set, so the numbers are those each
    comparison would get alone, at a fraction of the cost."""
    by_mask: dict[tuple[bool, ...], list[tuple[int, MetricSpec]]] = {}
    for i, other in enumerate(others):
        for spec in METRICS:
            mask = tuple(a.values[spec.key] is not None and b.values[spec.key] is not None
                         for a, b in zip(base, other))
            by_mask.setdefault(mask, []).append((i, spec))
    out: list[dict[str, dict]] = [{} for _ in others]
    for mask, members in by_mask.items():
        keep = [q for q, kept in enumerate(mask) if kept]
        points = np.array([[others[i][q].values[s.key] - base[q].values[s.key] for i, s in members] for q in keep],
                          dtype=float).reshape(len(keep), len(members))
        samples = [S.paired_deltas([base[q].repeats.get(s.key, base[q].values[s.key]) for q in keep],
                                   [others[i][q].repeats.get(s.key, others[i][q].values[s.key]) for q in keep])
                   for i, s in members]
        cis = S.bootstrap_cis(samples)
        ps = S.sign_flip_tests(points)
        for j, (i, spec) in enumerate(members):
            d = points[:, j]
            out[i][spec.key] = {
                "n": len(keep),
                "mean_baseline": _mean([base[q].values[spec.key] for q in keep]),
                "mean_other": _mean([others[i][q].values[spec.key] for q in keep]),
                "delta": _mean(d),
                "ci95": cis[j],
                "p": ps[j],
                "wins": int((d > 1e-12).sum()), "ties": int((np.abs(d) <= 1e-12).sum()),
                "losses": int((d < -1e-12).sum()),
                "mde": S.min_detectable_delta(d, ALPHA, POWER),
                "questions_needed": S.questions_needed(d, spec.effect, ALPHA, POWER),
            }
    return out


def _verdict(delta: float | None, p: float | None) -> str:
    if p is None or delta is None:
        return NOT_COMPARABLE
    if p < ALPHA:
        return BETTER if delta > 0 else WORSE if delta < 0 else SAME
    return SAME


def _changes(base: list[QuestionView], other: list[QuestionView]) -> tuple[list[QuestionChange],
                                                                            list[QuestionChange]]:
    """Questions whose total score (then, on a tie or when ungraded, RR) went down / up, largest first."""
    keyed = []
    for a, b in zip(base, other):
        d_total = None if a.total_score is None or b.total_score is None else round(b.total_score - a.total_score, 6)
        d_rr = round(b.values["rr"] - a.values["rr"], 6)
        change = QuestionChange(a.question_id, a.question, a.rank, b.rank, a.doc_rank, b.doc_rank, a.grade, b.grade,
                                a.total_score, b.total_score, d_total, d_rr, list(a.top_docs), list(b.top_docs))
        keyed.append(((d_total or 0.0, d_rr), change))
    worse = [c for key, c in sorted(keyed, key=lambda kc: kc[0]) if key < (0.0, 0.0)]
    better = [c for key, c in sorted(keyed, key=lambda kc: kc[0], reverse=True) if key > (0.0, 0.0)]
    return worse, better


def _summary(label: str, kind: str, run: dict | None, source: str | None, count: int,
             views: list[QuestionView]) -> RunSummary:
    info = (run or {}).get("run") or {}
    judge = info.get("judge") or {}
    means = {s.key: _mean([v.values[s.key] for v in views if v.values[s.key] is not None]) for s in METRICS}
    return RunSummary(label=label, kind=kind, run_id=info.get("id"), strategy=info.get("strategy"), source=source,
                      k=info.get("k"), status=info.get("status"), question_count=count,
                      corpus_sha256=(info.get("corpus") or {}).get("sha256"), judge_provider=judge.get("provider"),
                      judge_model=judge.get("model"), judge_prompt_sha256=judge.get("prompt_sha256"), means=means)


def _short_hash(h: str | None) -> str:
    return (h or "?")[:12]


def _meta_warnings(summaries: list[RunSummary]) -> list[str]:
    base = summaries[0]
    out = []
    for s in summaries[1:]:
        pair = f"{base.label} and {s.label}"
        if base.corpus_sha256 and s.corpus_sha256 and base.corpus_sha256 != s.corpus_sha256:
            out.append(f"corpus differs between {pair} (sha256 {_short_hash(base.corpus_sha256)} vs "
                       f"{_short_hash(s.corpus_sha256)}): ranks and grades are not comparable")
        judge_a, judge_b = (base.judge_provider, base.judge_model), (s.judge_provider, s.judge_model)
        if all(judge_a) and all(judge_b) and judge_a != judge_b:
            out.append(f"judge differs between {pair} ({' '.join(judge_a)} vs {' '.join(judge_b)}): "
                       "grades are not comparable across judges")
        elif base.judge_prompt_sha256 and s.judge_prompt_sha256 and base.judge_prompt_sha256 != s.judge_prompt_sha256:
            out.append(f"judge prompt differs between {pair} (sha256 {_short_hash(base.judge_prompt_sha256)} vs "
                       f"{_short_hash(s.judge_prompt_sha256)}): grades are not comparable across judges")
        if base.k and s.k and base.k != s.k:
            out.append(f"k differs between {pair} ({base.k} vs {s.k}): NDCG@k covers different depths")
    for s in summaries:
        if s.status not in (None, "completed"):
            out.append(f"{s.label} did not complete (status {s.status}): compared on the questions it finished")
    return out


def _reference_runs(common: list[str], rows: dict[str, dict], views: list[QuestionView], k: int
                    ) -> list[tuple[str, list[QuestionView]]]:
    """``(ref:<system>, views)`` for every system named in the baseline rows' ``reference_ranks``
    (a question property); a question without that system's entry has no values for it."""
    systems = list(dict.fromkeys(name for q in common for name in (rows[q].get("reference_ranks") or {})))
    out = []
    for name in systems:
        ref_views = []
        for q, view in zip(common, views):
            ranks = rows[q].get("reference_ranks") or {}
            rank = ranks.get(name)
            if name not in ranks:
                ref_views.append(QuestionView(q, view.question, None, None, None, None, (),
                                              {s.key: None for s in METRICS}, {}))
                continue
            if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 1):
                raise InputError(f"question {q!r}: reference_ranks[{name!r}] is {rank!r}: a reference rank is a "
                                 "positive integer or null (fix the questions file the run used)")
            ref_views.append(reference_view(view, _needles(rows[q]), rank, k))
        out.append((f"ref:{name}", ref_views))
    return out


def compare_runs(runs: list[dict], labels: list[str] | None = None, *, sources: list[str] | None = None
                 ) -> Comparison:
    """Compare results dicts (as written to results files); the first is the baseline. Pure: no I/O."""
    if len(runs) < 2:
        raise InputError("compare needs at least two runs: python benchmark.py compare BASELINE OTHER [...]")
    names = sources or [f"run #{i + 1}" for i in range(len(runs))]
    labels = list(labels) if labels else default_labels(runs, sources)
    if len(labels) != len(runs) or len(set(labels)) != len(labels):
        raise InputError(f"compare: labels {labels} must be distinct, one per run")
    rows = [{str(r["question_id"]): r for r in _rows(run, name)} for run, name in zip(runs, names)]
    common = [q for q in rows[0] if all(q in other for other in rows[1:])]
    if not common:
        raise InputError("the runs have no question id in common: compare runs of the same questions file")
    k = int(((runs[0].get("run") or {}).get("k")) or 5)
    ks = [int(((run.get("run") or {}).get("k")) or 5) for run in runs]
    graded = [any(row.get("llm_grade") is not None for row in r.values()) for r in rows]
    views = [[question_view(r[q], kk, g) for q in common] for r, kk, g in zip(rows, ks, graded)]
    summaries = [_summary(label, "run", run, src, len(r), v)
                 for label, run, src, r, v in zip(labels, runs, sources or [None] * len(runs), rows, views)]
    warnings = _meta_warnings(summaries)
    left_out = {label: len(r) - len(common) for label, r in zip(labels, rows)}
    if any(left_out.values()):
        detail = ", ".join(f"{n} of {label}" for label, n in left_out.items())
        warnings.insert(0, f"the runs have different question sets: compared on the {len(common)} questions they "
                           f"share; left out {detail}")
    texts = [sum(1 for a, b in zip(views[0], v) if a.question != b.question) for v in views[1:]]
    for label, n in zip(labels[1:], texts):
        if n:
            warnings.append(f"{n} shared question ids have a different question text in {labels[0]} and {label}: "
                            "check that both runs used the same questions file")

    references = _reference_runs(common, rows[0], views[0], k)
    summaries += [_summary(label, "reference", None, "reference_ranks", len(common), v) for label, v in references]

    # raw statistics, then Holm within each family (the user's runs; the reference systems), then verdicts
    pairs = [(labels[i], "run", views[i]) for i in range(1, len(runs))] + [(lab, "reference", v)
                                                                          for lab, v in references]
    raw = _pair_stats(views[0], [v for _, _, v in pairs])
    holm: list[dict[str, float | None]] = [{} for _ in pairs]
    for kind in ("run", "reference"):
        members = [i for i, (_, kd, _) in enumerate(pairs) if kd == kind]
        if len(members) < 2:
            continue
        for spec in METRICS:
            adjusted = S.holm([raw[i][spec.key]["p"] for i in members])
            for i, p in zip(members, adjusted):
                holm[i][spec.key] = p
    comparisons = []
    for i, (label, kind, v) in enumerate(pairs):
        results = []
        for spec in METRICS:
            r = raw[i][spec.key]
            p_holm = holm[i].get(spec.key)
            p_used = p_holm if p_holm is not None else r["p"]
            results.append(MetricResult(
                metric=spec.key, n=r["n"], mean_baseline=r["mean_baseline"], mean_other=r["mean_other"],
                delta=r["delta"], ci95=r["ci95"], p=r["p"], p_holm=p_holm, wins=r["wins"], ties=r["ties"],
                losses=r["losses"], verdict=_verdict(r["delta"], p_used), mde=r["mde"], effect=spec.effect,
                questions_needed=r["questions_needed"]))
        worse, better = _changes(views[0], v) if kind == "run" else ([], [])
        comparisons.append(PairComparison(labels[0], label, kind, results, worse, better))
    return Comparison(summaries, common, left_out, warnings, comparisons, k)


# ---- the table ----------------------------------------------------------------------------------

def _num(value: float | None, digits: int, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _ci(ci: tuple[float, float] | None, digits: int) -> str:
    return "-" if ci is None else f"[{_num(ci[0], digits, True)}, {_num(ci[1], digits, True)}]"


def _p(p: float | None) -> str:
    if p is None:
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def _grade(g: float | None) -> str:
    return "-" if g is None else f"{g:g}"


def _verdict_line(spec: MetricSpec, r: MetricResult, k: int) -> str:
    label = _label(spec, k)
    if r.verdict == NOT_COMPARABLE:
        return f"  {label}: not comparable (no question has it in both runs)"
    ci = _ci(r.ci95, spec.digits)
    p = f"p {_p(r.p)}" + (f", Holm {_p(r.p_holm)}" if r.p_holm is not None else "")
    line = f"  {label}: {r.verdict} (Δ {_num(r.delta, spec.digits, True)}, 95% CI {ci}, {p})"
    if r.questions_needed is not None:
        line += (f"; {r.n} questions detect a change of about {_num(r.mde, spec.digits)}; you would need about "
                 f"{r.questions_needed} questions to detect a {spec.effect:g} {label} change")
    elif r.n >= 2:
        line += "; every question moved by the same amount, so there is no spread to size a detectable change"
    return line + "."


def _change_lines(title: str, changes: list[QuestionChange], top: int) -> list[str]:
    if not changes:
        return [f"{title}: none"]
    lines = [f"{title} ({len(changes)}), largest first:"]
    for c in changes[:top]:
        grade = "" if c.grade_before is None and c.grade_after is None else \
            f", grade {_grade(c.grade_before)} → {_grade(c.grade_after)}"
        total = "" if c.delta_total is None else f", total {_num(c.total_before, 2)} → {_num(c.total_after, 2)}"
        lines.append(f"  {c.question_id}  rank {_rank(c.rank_before)} → {_rank(c.rank_after)}{grade}{total}  "
                     f"{shorten(c.question, 60)}")
        lines.append(f"      top docs: {', '.join(c.top_docs_before) or '-'} → {', '.join(c.top_docs_after) or '-'}")
    if len(changes) > top:
        lines.append(f"  ... and {len(changes) - top} more (see --json)")
    return lines


def format_comparison(c: Comparison, top: int = 10) -> str:
    """The console report of a comparison (also usable in other reports): runs, warnings, means,
    one table and one verdict line per metric for each comparison, the questions that changed."""
    out = ["Runs (the first is the baseline):"]
    for s in c.runs:
        if s.kind == "reference":
            out.append(f"  {s.label}  reference system: ranks from the questions' reference_ranks (rank only)")
        else:
            judge = f", judge {s.judge_provider} {s.judge_model}" if s.judge_model else ""
            out.append(f"  {s.label}  {s.question_count} questions, {s.source or s.run_id or 'in memory'}{judge}")
    out.append(f"Compared on {len(c.question_ids)} questions (paired by question id).")
    out += [f"warning: {w}" for w in c.warnings]

    width = max(len(s.label) for s in c.runs) + 2
    out += ["", "Means over the compared questions (grade and total score 1-10, the rest 0-1)",
            f"{'metric':<14}" + "".join(f"{s.label:>{width}}" for s in c.runs)]
    for spec in METRICS:
        out.append(f"{_label(spec, c.k):<14}" + "".join(f"{_num(s.means[spec.key], spec.digits):>{width}}"
                                                         for s in c.runs))
    by_key = {s.key: s for s in METRICS}
    for pc in c.comparisons:
        holm = any(r.p_holm is not None for r in pc.metrics)
        w = max(9, len(pc.baseline), len(pc.other)) + 2
        header = (f"{'metric':<14}{'n':>5}{pc.baseline:>{w}}{pc.other:>{w}}{'Δ':>9}  {'95% CI':<20}{'p':>7}"
                  + (f"{'Holm':>8}" if holm else "") + f"{'W/T/L':>10}")
        out += ["", f"{pc.other} vs {pc.baseline} (Δ = {pc.other} − {pc.baseline}, paired over questions)", header]
        for r in pc.metrics:
            spec = by_key[r.metric]
            if r.n == 0:
                continue
            ci = _ci(r.ci95, spec.digits)
            line = (f"{_label(spec, c.k):<14}{r.n:>5}{_num(r.mean_baseline, spec.digits):>{w}}"
                    f"{_num(r.mean_other, spec.digits):>{w}}{_num(r.delta, spec.digits, True):>9}  {ci:<20}"
                    f"{_p(r.p):>7}" + (f"{_p(r.p_holm):>8}" if holm else "") + f"{f'{r.wins}/{r.ties}/{r.losses}':>10}")
            out.append(line + ("" if pc.kind == "run" else f"  {r.verdict}"))
        if pc.kind != "run":
            continue
        out.append("Verdicts (α 0.05" + (", Holm-adjusted" if holm else "") + "; detectable change at power 0.8):")
        out += [_verdict_line(by_key[r.metric], r, c.k) for r in pc.metrics]
        out += _change_lines(f"Worse in {pc.other}", pc.worse, top)
        out += _change_lines(f"Better in {pc.other}", pc.better, top)
    return "\n".join(out) + "\n"


# ---- the command --------------------------------------------------------------------------------

def resolve_run(arg: str, cwd: Path) -> Path:
    """A results file path, or a run id: ``runs/<id>.json`` under ``cwd``, or the file in ``runs/``
    whose ``run.id`` is ``arg``."""
    path = Path(arg)
    if path.is_file():
        return path
    runs_dir = cwd / "runs"
    candidate = runs_dir / f"{arg}.json"
    if candidate.is_file():
        return candidate
    if runs_dir.is_dir():
        for file in sorted(runs_dir.glob("*.json")):
            try:
                text = file.read_text(encoding="utf-8")
                if arg in text and (json.loads(text).get("run") or {}).get("id") == arg:
                    return file
            except (OSError, ValueError, AttributeError):
                continue
    if path.is_dir():
        raise InputError(f"compare: {arg} is a folder: pass a results JSON file or a run id")
    raise InputError(f"compare: {arg} is neither a results file nor a run id in {runs_dir}: pass a results JSON "
                     "path or a run id (the names in runs/ without .json)")


def load_run(path: Path) -> dict:
    try:
        text = path.read_text(encoding="utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not valid UTF-8 (byte {err.start}): pass a results file written by "
                         "benchmark.py") from None
    except OSError as err:
        raise InputError(f"{path}: cannot be read ({err.strerror}): check the path and its permissions") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as err:
        raise InputError(f"{path}: not valid JSON (line {err.lineno}, column {err.colno}: {err.msg}): pass a "
                         "results file written by benchmark.py") from None
    _rows(data, str(path))
    return data


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="results file or run id (runs/<id>.json); the first is the baseline")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the comparison as JSON")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="questions listed per direction in the table (default 10; --json has all)")


def run(args: argparse.Namespace, settings: object) -> int:
    if len(args.runs) < 2:
        raise InputError("compare needs at least two runs: python benchmark.py compare BASELINE OTHER [...]")
    if args.top < 0:
        raise InputError(f"--top {args.top} is negative: give 0 or more")
    if args.json is not None:
        check_writable(args.json, "--json", "comparison.json")
    paths = [resolve_run(arg, Path.cwd()) for arg in args.runs]
    runs = [load_run(p) for p in paths]
    comparison = compare_runs(runs, default_labels(runs, args.runs), sources=[str(p) for p in paths])
    for warning in comparison.warnings:
        logger.debug("compare warning: {}", warning)
    sys.stdout.write(format_comparison(comparison, top=args.top))
    if args.json is not None:
        write_json_atomic(args.json, comparison.to_json())  # strict JSON, written whole or not at all
        logger.info("Comparison written to {}", args.json)
    return 0
