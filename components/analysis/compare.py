"""``python benchmark.py compare A B [C ...] [--json OUT]``: did it get better, or is it noise?

Each argument is a results file or a run id (``runs/<id>.json`` under the current folder, or the
file there whose ``run.id`` is it). The first run is the baseline; every other run is compared with
it, question by question (paired by question id, on the questions all runs share):

- for each compared metric: each run's mean, the delta (other − baseline), its paired 95%
  percentile-bootstrap CI, the two-sided p of a paired sign-flip test, wins / ties / losses; with
  more than one other run, Holm-adjusted p-values across them;
- one verdict per metric: ``better`` / ``worse`` when the (Holm-adjusted) p is below α = .05,
  else ``no detectable difference`` (``not comparable`` when no question has the metric in both
  runs), and the smallest change this many questions could detect (α .05, power .8, from the
  spread of the paired deltas) with the number of questions a 0.05 change would need;
- the questions that got worse and better, largest first (by total score, then by RR);
- when the questions carry ``reference_ranks``, every reference system as a rank-only run;
- every TREC run file or ranx JSON run given among the runs as a rank-only system too: its
  document ranking of each question, cut at k documents, judged by ``--qrels`` (TREC or BEIR
  qrels) or else by the baseline's needles and grades.

The metrics are the registry's compared ones (:mod:`utils.metrics`: MRR, MRR (document), hit@1,
hit@5, nDCG@k, avg grade, avg total, pass ≥ 7 by default), each question's value computed by the
metric's own per-question function, in its unit (percent for rates, so a Δ of hit@1 is in
percentage points). A metric that needs a grade is null for every question of a run that graded
none. Files of schema version 1 get the document-level values derived from ``retrieved`` +
``needle_doc_ids``. Rows with ``llm_grades`` (judge repeats) make the grade-based intervals
two-level (see statistics).

Holm families: the user's runs compared with the baseline form one family per metric, the
reference systems and TREC/ranx runs another (so adding reference ranks to a questions file does
not change the verdict between your runs). The command exits 0 whatever the verdict, unless a gate
is asked for (``--fail-on``, ``--margin``, ``--fail-on-regressions``: :mod:`components.analysis.gate`),
which exits 6 when it fails.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from loguru import logger

from components.stats import paired_inference as PI
from components.stats import statistics as S
from components.analysis.adaptive import comparison_lines, judged_in_part, sequential_verdicts
from components.analysis.certificate import certify
from components.analysis.uninformative import CANNOT_JUDGE, mark_comparisons, uninformative_judges
from components.analysis.comparison import Comparison
from components.analysis.gate import GateResult, check_gate
from components.analysis import inference_text as T
from components.analysis.paired import (ALPHA, NOT_COMPARABLE, POWER, MetricResult, PairComparison, QuestionChange,
                                        QuestionView, RunSummary, verdict)
from components.analysis.panel import on_shared_judges, reconcile
from components.analysis.qrels_scoring import qrels_table, score_runs
from components.analysis.recommendations import best_columns, recommend_runs
from components.analysis.run_files import read_run_or_ranking, resolve_run
from utils import metrics as M
from utils.records import trec
from utils.console import escape_control, shorten
from utils.errors import InputError
from utils.files.output import check_output, write_json_atomic
from utils.results import QuestionResult, RunResult, recorded_corpora

TOP_DOCS = 3  # documents shown per question


class ComparedRuns(Comparison):
    """What :func:`compare_runs` returns: the :class:`~components.analysis.comparison.Comparison`
    record, whose ``str()`` is the console table and :meth:`gate` its CI gate."""

    def gate(self, *, worse: Sequence[str] | bool = False, margins: dict[str, float] | None = None,
             regressions: int | None = None, min_overlap: float = 1.0, require_agreement: bool = False) -> GateResult:
        """The CI gate on this comparison: :func:`components.analysis.gate.check_gate`."""
        return check_gate(self, worse=worse, margins=margins, regressions=regressions, min_overlap=min_overlap,
                          require_agreement=require_agreement)

    def __str__(self) -> str:
        return format_comparison(self)


# ---- reading runs -------------------------------------------------------------------------------

def question_view(row: QuestionResult, k: int, graded_run: bool = True,
                  specs: Sequence[M.Metric] | None = None) -> QuestionView:
    """A results row as compare sees it: each metric's value by the registry's formula; values a
    schema-1 row lacks are derived from ``retrieved`` + ``needle_doc_ids``. ``graded_run`` False (no
    question of the run was graded, e.g. the offline judge without expected answers): the metrics
    that need a grade are null rather than 0 for every question."""
    from components.analysis.aggregate import with_row_metrics

    row = with_row_metrics(row, k)
    specs = list(specs) if specs is not None else M.metrics(compared=True)
    values: dict[str, float | None] = {}
    repeats: dict[str, list[float]] = {}
    for m in specs:
        if m.graded_only and not graded_run:
            values[m.key] = None
            continue
        value = m.value(row, k)
        values[m.key] = None if value is None else float(value)
        if m.repeats is not None and value is not None:
            extra = m.repeats(row, k)
            if extra:
                repeats[m.key] = [float(x) for x in extra]
    grade = None if row.llm_grade is None else float(row.llm_grade)
    return QuestionView(
        question_id=row.question_id, question=row.question, rank=row.rank, doc_rank=row.doc_rank, grade=grade,
        total_score=row.total_score, top_docs=tuple(M.doc_ranking(row.retrieved[:k])[:TOP_DOCS]), values=values,
        repeats=repeats)


def reference_view(question: QuestionView, needles: list[str], rank: int | None, k: int,
                   specs: Sequence[M.Metric]) -> QuestionView:
    """A reference system's rank (document level, 1-5 or null) as a rank-only question: its chunk
    and document ranks are both that rank; nDCG@k, recall and AP are computed for single-needle
    questions only; context precision and the judge's metrics are null."""
    single = len(needles) == 1
    placed = ([f"\0other{i}" for i in range(1, rank)] + needles if rank is not None else []) if single else []
    row = QuestionResult(
        question_id=question.question_id, question=question.question, needle_doc_ids=list(needles), rank=rank,
        doc_rank=rank, hit_at_k=rank is not None and rank <= k, rr=M.reciprocal_rank(rank),
        rr_doc=M.reciprocal_rank(rank), ndcg_at_k=M.ndcg_at_k(placed, needles, k) if single else None,
        recall_at_k=M.recall_at_k(placed, needles, k) if single else None,
        ap_at_k=M.average_precision_at_k(placed, needles, k) if single else None)
    values = {}
    for m in specs:
        value = None if m.graded_only or m.level in ("judge", "proxy") else m.value(row, k)
        values[m.key] = None if value is None else float(value)
    return QuestionView(question.question_id, question.question, rank, rank, None, None, (), values, {})


def ranking_view(question: QuestionView, docs: Sequence[str], relevance: dict[str, int], k: int,
                 specs: Sequence[M.Metric]) -> QuestionView:
    """A rank-only system's document ranking of a question (a TREC or ranx run) as compare sees it:
    the first k documents, judged by ``relevance`` ({doc id: grade}); its chunk rank is its document
    rank (it has no chunks), context precision and the judge's metrics are null."""
    top = list(docs[:k])
    values = M.row_metrics(top, relevance, k)
    grades = M.relevance_grades(relevance)
    rank = values["doc_rank"]
    row = QuestionResult(
        question_id=question.question_id, question=question.question, needle_doc_ids=list(grades),
        needle_grades=grades if any(g != 1 for g in grades.values()) else None, rank=rank, doc_rank=rank,
        hit_at_k=rank is not None, rr=values["rr_doc"], rr_doc=values["rr_doc"], ndcg_at_k=values["ndcg_at_k"],
        recall_at_k=values["recall_at_k"], ap_at_k=values["ap_at_k"])
    out = {}
    for m in specs:
        value = None if m.graded_only or m.level in ("judge", "proxy") else m.value(row, k)
        out[m.key] = None if value is None else float(value)
    return QuestionView(question.question_id, question.question, rank, rank, None, None,
                        tuple(top[:TOP_DOCS]), out, {})


def _empty_view(view: QuestionView, specs: Sequence[M.Metric]) -> QuestionView:
    return QuestionView(view.question_id, view.question, None, None, None, None, (), {s.key: None for s in specs}, {})


@dataclass(frozen=True)
class RankedSystem:
    """A TREC or ranx run given to compare: ``rankings`` {question id: doc ids, best first}."""

    label: str
    source: str  # the file
    rankings: dict[str, list[str]]


def _system_runs(systems: Sequence[RankedSystem], common: list[str], rows: dict[str, QuestionResult],
                 views: list[QuestionView], k: int, specs: Sequence[M.Metric], qrels: trec.Qrels | None,
                 warnings: list[str]) -> list[tuple[str, list[QuestionView]]]:
    """``(label, views)`` of each rank-only system; a question it does not rank (or that ``qrels``
    does not judge relevant) has no values for it, and a warning counts those."""
    out = []
    for system in systems:
        sys_views, missing, unjudged = [], 0, 0
        for q, view in zip(common, views, strict=True):
            relevance = rows[q].relevance if qrels is None else \
                {d: g for d, g in qrels.get(q, {}).items() if g >= M.RELEVANT_MIN}
            if q not in system.rankings:
                missing += 1
                sys_views.append(_empty_view(view, specs))
            elif not relevance:
                unjudged += 1
                sys_views.append(_empty_view(view, specs))
            else:
                sys_views.append(ranking_view(view, system.rankings[q], relevance, k, specs))
        if missing:
            warnings.append(f"{system.source} ranks no document for {missing} of the {len(common)} compared "
                            f"questions: {system.label} is compared on the others")
        if unjudged:
            warnings.append(f"the qrels judge no document relevant for {unjudged} of the compared questions: "
                            f"{system.label} is compared on the others")
        out.append((system.label, sys_views))
    return out


def default_labels(runs: Sequence[RunResult], names: Sequence[str] | None = None) -> list[str]:
    """Each run's strategy; when two runs share one, their run ids (else the given names, else #i)."""
    candidates = [[r.run.strategy, r.run.id, (names[i] if names else None), f"#{i + 1}"] for i, r in enumerate(runs)]
    for level in range(4):
        labels = [next((c for c in cands[level:] if c), f"#{i + 1}") for i, cands in enumerate(candidates)]
        if len(set(labels)) == len(labels):
            return [str(x) for x in labels]
    return [f"#{i + 1}" for i in range(len(runs))]


# ---- comparing ----------------------------------------------------------------------------------

def _mean(values: Sequence[float]) -> float | None:
    return float(np.mean(values)) if len(values) else None


def _exact(d: np.ndarray, unit: float | None, repeated: bool, alpha: float) -> PI.Inference | None:
    """The exact inference of one metric's deltas ``d`` (:func:`components.stats.paired_inference.paired_inference`:
    McNemar for a binary metric, the exact sign-flip test up to its largest n), or None: the Monte-Carlo test and the
    bootstrap. With judge repeats the interval stays the two-level bootstrap (it carries the judge's noise, which no
    sign pattern does): ``ci95`` None, ``ci_method`` bootstrap-percentile, filled in by the caller."""
    if unit is None and d.size > PI.EXACT_MAX_N:
        if np.ptp(d) > 1e-12:
            return None
        # every question moved by the same c: of the 2^n patterns only the observed one and its mirror reach
        # |c| (none moves a zero), and every shift but c is rejected: the exact test, without its patterns
        c = float(d[0])
        inference = PI.Inference(PI.SIGN_FLIP_EXACT, PI.TEST_INVERSION, 1.0 if abs(c) <= 1e-12 else
                                 min(1.0, 2.0 ** (1 - d.size)), (c, c))
        return replace(inference, ci_method=PI.BOOTSTRAP, ci95=None) if repeated else inference
    inference = PI.paired_inference(d, unit=unit, alpha=alpha)
    return replace(inference, ci_method=PI.BOOTSTRAP, ci95=None) if repeated and d.size else inference


def _pair_stats(base: list[QuestionView], others: list[list[QuestionView]], specs: Sequence[M.Metric], *,
                alpha: float, power: float, bootstrap_seed: int, permutation_seed: int) -> list[dict[str, dict]]:
    """Raw per-metric statistics of each ``other − base`` (no Holm, no verdict), each metric's p and
    interval by :mod:`components.stats.paired_inference` (exact where cheap: :func:`_exact`; else the
    Monte-Carlo sign-flip p and the bootstrap). Every (comparison, metric) over the same questions
    shares one bootstrap pass and one set of sign patterns: the streams restart from the fixed seeds
    for each question set, so the numbers are those each comparison would get alone, at a fraction of
    the cost."""
    by_mask: dict[tuple[bool, ...], list[tuple[int, M.Metric]]] = {}
    for i, other in enumerate(others):
        for spec in specs:
            mask = tuple(a.values[spec.key] is not None and b.values[spec.key] is not None
                         for a, b in zip(base, other, strict=True))
            by_mask.setdefault(mask, []).append((i, spec))
    out: list[dict[str, dict]] = [{} for _ in others]
    for mask, members in by_mask.items():
        keep = [q for q, kept in enumerate(mask) if kept]
        points = np.array([[others[i][q].values[s.key] - base[q].values[s.key] for i, s in members] for q in keep],
                          dtype=float).reshape(len(keep), len(members))
        samples = [S.paired_deltas([base[q].repeats.get(s.key, base[q].values[s.key]) for q in keep],
                                   [others[i][q].repeats.get(s.key, others[i][q].values[s.key]) for q in keep])
                   for i, s in members]
        units = [PI.binary_unit([v for q in keep for v in (base[q].values[s.key], others[i][q].values[s.key])])
                 for i, s in members]
        inferences = [_exact(points[:, j], units[j], samples[j].repeated, alpha) for j in range(len(members))]
        boot = [j for j, inf in enumerate(inferences) if inf is None or inf.ci_method == PI.BOOTSTRAP]
        cis = dict(zip(boot, S.bootstrap_cis([samples[j] for j in boot], seed=bootstrap_seed), strict=True))
        mc = [j for j, inf in enumerate(inferences) if inf is None]
        ps = dict(zip(mc, S.sign_flip_tests(points[:, mc], seed=permutation_seed), strict=True)) if mc else {}
        for j, (i, spec) in enumerate(members):
            d = points[:, j]
            inference = inferences[j] or PI.paired_inference(d, mc_p=ps[j], permutations=S.PERMUTATIONS)
            out[i][spec.key] = {
                "n": len(keep),
                "mean_baseline": _mean([base[q].values[spec.key] for q in keep]),
                "mean_other": _mean([others[i][q].values[spec.key] for q in keep]),
                "delta": _mean(d),
                "ci95": cis[j] if j in cis else inference.ci95,
                "p": inference.p, "test": inference.test, "ci_method": inference.ci_method,
                "p_mc_se": inference.p_mc_se,
                "wins": int((d > 1e-12).sum()), "ties": int((np.abs(d) <= 1e-12).sum()),
                "losses": int((d < -1e-12).sum()),
                "mde": S.min_detectable_delta(d, alpha, power),
                "questions_needed": S.questions_needed(d, spec.effect, alpha, power),
            }
    return out


def _changes(base: list[QuestionView], other: list[QuestionView]) -> tuple[list[QuestionChange],
                                                                            list[QuestionChange]]:
    """Questions whose total score (then, on a tie or when ungraded, RR) went down / up, largest first."""
    keyed = []
    for a, b in zip(base, other, strict=True):
        d_total = None if a.total_score is None or b.total_score is None else round(b.total_score - a.total_score, 6)
        d_rr = round(M.reciprocal_rank(b.rank) - M.reciprocal_rank(a.rank), 6)
        change = QuestionChange(a.question_id, a.question, a.rank, b.rank, a.doc_rank, b.doc_rank, a.grade, b.grade,
                                a.total_score, b.total_score, d_total, d_rr, list(a.top_docs), list(b.top_docs))
        keyed.append(((d_total or 0.0, d_rr), change))
    worse = [c for key, c in sorted(keyed, key=lambda kc: kc[0]) if key < (0.0, 0.0)]
    better = [c for key, c in sorted(keyed, key=lambda kc: kc[0], reverse=True) if key > (0.0, 0.0)]
    return worse, better


def _summary(label: str, kind: str, run: RunResult | None, source: str | None, count: int,
             views: list[QuestionView], specs: Sequence[M.Metric]) -> RunSummary:
    info = run.run if run is not None else None
    means = {s.key: _mean([v.values[s.key] for v in views if v.values[s.key] is not None]) for s in specs}
    return RunSummary(label=label, kind=kind, run_id=info.id if info else None,
                      strategy=info.strategy if info else None, source=source, k=info.k if info else None,
                      status=info.status if info else None, question_count=count,
                      corpus_sha256=info.corpus.sha256 if info else None,
                      judge_provider=info.judge.provider if info else None,
                      judge_model=info.judge.model if info else None,
                      judge_prompt_sha256=info.judge.prompt_sha256 if info else None, means=means,
                      judge_endpoint=info.judge.identity[2] if info else None)


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
        if all(judge_a) and all(judge_b) and (*judge_a, base.judge_endpoint) != (*judge_b, s.judge_endpoint):
            ends = [f" at {x.judge_endpoint or 'its public API'}" if judge_a == judge_b else "" for x in (base, s)]
            out.append(f"judge differs between {pair} ({' '.join(judge_a)}{ends[0]} vs {' '.join(judge_b)}{ends[1]}): "
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


def _reference_runs(common: list[str], rows: dict[str, QuestionResult], views: list[QuestionView], k: int,
                    specs: Sequence[M.Metric]) -> list[tuple[str, list[QuestionView]]]:
    """``(ref:<system>, views)`` for every system named in the baseline rows' ``reference_ranks``
    (a question property); a question without that system's entry has no values for it."""
    def ranks_of(q: str) -> dict:
        ranks = rows[q].extra.get("reference_ranks")
        return ranks if isinstance(ranks, dict) else {}

    systems = list(dict.fromkeys(name for q in common for name in ranks_of(q)))
    out = []
    for name in systems:
        ref_views = []
        for q, view in zip(common, views, strict=True):
            ranks = ranks_of(q)
            rank = ranks.get(name)
            if name not in ranks:
                ref_views.append(QuestionView(q, view.question, None, None, None, None, (),
                                              {s.key: None for s in specs}, {}))
                continue
            if rank is not None and (not isinstance(rank, int) or isinstance(rank, bool) or rank < 1):
                raise InputError(f"question {q!r}: reference_ranks[{name!r}] is {rank!r}: a reference rank is a "
                                 "positive integer or null (fix the questions file the run used)")
            ref_views.append(reference_view(view, list(rows[q].needle_doc_ids), rank, k, specs))
        out.append((f"ref:{name}", ref_views))
    return out


def _chosen_metrics(metrics: Sequence[str] | None) -> list[M.Metric]:
    """The metrics to compare: the registry's ``compared`` ones, or those ``metrics`` names."""
    if metrics is None:
        return M.metrics(compared=True)
    unknown = [key for key in metrics if key not in M.METRICS]
    if unknown:
        raise InputError(f"compare: unknown metric {unknown[0]!r}: choose among {', '.join(M.METRICS)}")
    return [M.METRICS[key] for key in metrics]


def _run_warnings(labels: Sequence[str], runs: Sequence[RunResult], rows: Sequence[dict[str, QuestionResult]],
                  common: Sequence[str], views: Sequence[list[QuestionView]],
                  decided: Mapping[str, Any], earlier: Sequence[str]) -> tuple[dict[str, int], list[str]]:
    """The questions each run leaves out of the comparison, and the warnings: ``earlier`` with those
    about the runs' questions (first: the question sets differ; then: a run was judged in part, a
    shared id has another question text)."""
    warnings = list(earlier)
    left_out = {label: len(r) - len(common) for label, r in zip(labels, rows, strict=True)}
    if any(left_out.values()):
        detail = ", ".join(f"{n} of {label}" for label, n in left_out.items())
        warnings.insert(0, f"the runs have different question sets: compared on the {len(common)} questions they "
                        f"share; left out {detail}")
    warnings += [note for label, run in zip(labels, runs, strict=True) if label not in decided
                 if (note := judged_in_part(label, run.adaptive))]
    texts = [sum(1 for a, b in zip(views[0], v, strict=True) if a.question != b.question) for v in views[1:]]
    for label, n in zip(labels[1:], texts, strict=True):
        if n:
            warnings.append(f"{n} shared question ids have a different question text in {labels[0]} and {label}: "
                            "check that both runs used the same questions file")
    return left_out, warnings


def _verdicts(pairs: Sequence[tuple[str, str, list[QuestionView]]], base: list[QuestionView],
              specs: Sequence[M.Metric], baseline: str, alpha: float, power: float, bootstrap_seed: int,
              permutation_seed: int) -> list[PairComparison]:
    """Each pair's comparison with the baseline: the raw statistics, then Holm within each family
    (the user's runs; the reference systems), then the verdicts."""
    raw = _pair_stats(base, [v for _, _, v in pairs], specs, alpha=alpha, power=power,
                      bootstrap_seed=bootstrap_seed, permutation_seed=permutation_seed)
    holm: list[dict[str, float | None]] = [{} for _ in pairs]
    for kind in ("run", "reference"):
        members = [i for i, (_, kd, _) in enumerate(pairs) if kd == kind]
        if len(members) < 2:
            continue
        for spec in specs:
            for i, p in zip(members, S.holm([raw[i][spec.key]["p"] for i in members]), strict=True):
                holm[i][spec.key] = p
    comparisons = []
    for i, (label, kind, v) in enumerate(pairs):
        results = []
        for spec in specs:
            r = raw[i][spec.key]
            p_holm = holm[i].get(spec.key)
            p_used = p_holm if p_holm is not None else r["p"]
            results.append(MetricResult(
                metric=spec.key, n=r["n"], mean_baseline=r["mean_baseline"], mean_other=r["mean_other"],
                delta=r["delta"], ci95=r["ci95"], p=r["p"], p_holm=p_holm, wins=r["wins"], ties=r["ties"],
                losses=r["losses"], verdict=verdict(r["delta"], p_used, alpha), mde=r["mde"], effect=spec.effect,
                questions_needed=r["questions_needed"], test=r["test"], ci_method=r["ci_method"],
                p_mc_se=r["p_mc_se"], borderline=PI.disagrees(r["ci95"], p_used, alpha)))
        worse, better = _changes(base, v) if kind == "run" else ([], [])
        comparisons.append(PairComparison(baseline, label, kind, results, worse, better))
    return comparisons


def _references(labels: Sequence[str], common: list[str], base_rows: dict[str, QuestionResult],
                base_views: list[QuestionView], k: int, specs: Sequence[M.Metric], systems: Sequence[RankedSystem],
                qrels: trec.Qrels | None, warnings: list[str]) -> tuple[list[tuple[str, list[QuestionView]]],
                                                                        list[RunSummary]]:
    """The rank-only systems compared with the baseline (the questions' reference ranks, then the TREC
    and ranx runs ``systems``), with their summaries; a system whose label is taken is refused."""
    references = _reference_runs(common, base_rows, base_views, k, specs)
    summaries = [_summary(label, "reference", None, "reference_ranks", len(common), v, specs)
                 for label, v in references]
    taken = set(labels) | {label for label, _ in references}
    for system in systems:
        if system.label in taken:
            raise InputError(f"compare: the label {system.label!r} of {system.source} is taken: rename the file")
        taken.add(system.label)
    ranked = _system_runs(systems, common, base_rows, base_views, k, specs, qrels, warnings)
    summaries += [_summary(label, "reference", None, system.source, len(system.rankings), v, specs)
                  for (label, v), system in zip(ranked, systems, strict=True)]
    return references + ranked, summaries


def compare_runs(runs: Sequence[RunResult | dict], labels: Sequence[str] | None = None, *,
                 sources: Sequence[str] | None = None, alpha: float = ALPHA, power: float = POWER,
                 seed: int | None = None, metrics: Sequence[str] | None = None,
                 systems: Sequence[RankedSystem] = (), qrels: trec.Qrels | None = None) -> ComparedRuns:
    """Compare runs (:class:`RunResult`, or results dicts, read with :meth:`RunResult.from_json`);
    the first is the baseline. ``metrics``: the registry keys to compare (default: those marked
    ``compared``); ``seed``: the bootstrap's seed (the sign-flip test's is ``seed + 1``; default
    the fixed ones recorded in the output). ``systems``: rank-only TREC/ranx runs, judged by
    ``qrels`` ({question id: {doc id: grade}}) or else by the baseline's needles. Pure: no I/O."""
    if len(runs) + len(systems) < 2 or not runs:
        raise InputError("compare needs at least two runs: python benchmark.py compare BASELINE OTHER [...]")
    names = list(sources) if sources else [f"run #{i + 1}" for i in range(len(runs))]
    runs = [r if isinstance(r, RunResult) else RunResult.from_json(r, name)
            for r, name in zip(runs, names, strict=True)]
    labels = list(labels) if labels else default_labels(runs, sources)
    if len(labels) != len(runs) or len(set(labels)) != len(labels):
        raise InputError(f"compare: labels {labels} must be distinct, one per run")
    panels = on_shared_judges(runs, labels)  # panels that differ: compared on the judges they share
    runs, judge_warnings = reconcile(panels.runs, labels)  # panel runs beside single-judge runs
    judge_warnings = panels.warnings + judge_warnings
    specs = _chosen_metrics(metrics)
    bootstrap_seed = S.BOOTSTRAP_SEED if seed is None else seed
    permutation_seed = S.PERMUTATION_SEED if seed is None else seed + 1
    rows = [{r.question_id: r for r in run.rows} for run in runs]
    common = [q for q in rows[0] if all(q in other for other in rows[1:])]
    if not common:
        raise InputError("the runs have no question id in common: compare runs of the same questions file")
    k = runs[0].run.k
    graded = [any(row.llm_grade is not None for row in r.values()) for r in rows]
    views = [[question_view(r[q], run.run.k, g, specs) for q in common]
             for r, run, g in zip(rows, runs, graded, strict=True)]
    summaries = [_summary(label, "run", run, src, len(r), v, specs)
                 for label, run, src, r, v in zip(labels, runs, list(sources or [None] * len(runs)), rows, views,
                                                  strict=True)]
    decided = sequential_verdicts(runs, labels)
    left_out, warnings = _run_warnings(labels, runs, rows, common, views, decided,
                                       _meta_warnings(summaries) + judge_warnings)
    references, reference_summaries = _references(labels, common, rows[0], views[0], k, specs, systems, qrels,
                                                   warnings)
    pairs = [(labels[i], "run", views[i]) for i in range(1, len(runs))] + [(lab, "reference", v)
                                                                          for lab, v in references]
    comparisons = _verdicts(pairs, views[0], specs, labels[0], alpha, power, bootstrap_seed, permutation_seed)
    uninformative = uninformative_judges(runs, labels)  # their grade metrics cannot be judged
    comparisons, notes = mark_comparisons(comparisons, uninformative)
    warnings += notes
    shared = {label: sum(1 for q in rows[0] if q in r) for label, r in zip(labels[1:], rows[1:], strict=True)}
    comparison = ComparedRuns(summaries + reference_summaries, common, left_out, warnings, comparisons, k,
                              [s.key for s in specs], alpha, power, bootstrap_seed, permutation_seed, shared,
                              recommend_runs(labels, rows, common, k, comparisons, alpha), sequential=decided,
                              uninformative=uninformative)
    certificate = certify(runs, labels, comparison, lambda judged, keys: compare_runs(
        judged, labels, alpha=alpha, power=power, seed=seed, metrics=keys))
    if certificate is not None and panels.not_shared:
        certificate = replace(certificate, not_shared=panels.not_shared)
    return comparison if certificate is None else replace(comparison, certificate=certificate)


# ---- the table ----------------------------------------------------------------------------------

def _num(value: float | None, digits: int, sign: bool = False) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _rank(r: int | None) -> str:
    return "-" if r is None else str(r)


def _grade(g: float | None) -> str:
    return "-" if g is None else f"{g:g}"


def _verdict_line(spec: M.Metric, r: MetricResult, k: int, alpha: float = ALPHA) -> str:
    label = spec.label_at(k)
    if r.verdict == NOT_COMPARABLE:
        return f"  {label}: not comparable (no question has it in both runs)"
    if r.verdict == CANNOT_JUDGE:
        return f"  {label}: {CANNOT_JUDGE}: the grades come from an uninformative judge (see the warning above)."
    line = (f"  {label}: {r.verdict} (Δ {_num(r.delta, spec.digits, True)}, 95% CI {T.interval(r, spec.digits)}, "
            f"{T.p_text(r)}){T.borderline(r, alpha)}")
    unit = " points" if spec.unit == "percent" else ""
    if r.questions_needed is not None:
        line += (f"; {r.n} questions detect a change of about {_num(r.mde, spec.digits)}{unit}; you would need about "
                 f"{r.questions_needed} questions to detect a {spec.effect:g}{unit} {label} change")
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
        lines.append(f"  {shorten(c.question_id, 40)}  rank {_rank(c.rank_before)} → {_rank(c.rank_after)}{grade}"
                     f"{total}  {shorten(c.question, 60)}")
        lines.append(f"      top docs: {shorten(', '.join(c.top_docs_before) or '-', 100)} → "
                     f"{shorten(', '.join(c.top_docs_after) or '-', 100)}")
    if len(changes) > top:
        lines.append(f"  ... and {len(changes) - top} more (see --json)")
    return lines


def format_comparison(c: Comparison, top: int = 10, *, bold: bool = False) -> str:
    """The console report of a comparison (also usable in other reports): runs, warnings, means
    (the best value of each metric in bold with ``bold``, else marked ``*``), one table and one
    verdict line per metric for each comparison, the questions that changed, the recommendations."""
    specs = c.specs()
    out = ["Runs (the first is the baseline):"]
    for s in c.runs:
        label = shorten(s.label, 60)
        if s.kind == "reference" and s.source == "reference_ranks":
            out.append(f"  {label}  reference system: ranks from the questions' reference_ranks (rank only)")
        elif s.kind == "reference":
            out.append(f"  {label}  rank-only system: the document ranking of {shorten(s.source or '?', 120)}, "
                       "cut at k")
        else:
            judge = f", judge {shorten(f'{s.judge_provider} {s.judge_model}', 80)}" if s.judge_model else ""
            out.append(f"  {label}  {s.question_count} questions, {shorten(s.source or s.run_id or 'in memory', 120)}"
                       f"{judge}")
    out.append(f"Compared on {len(c.question_ids)} questions (paired by question id).")
    out += [f"warning: {shorten(w, 400)}" for w in c.warnings]

    labels = [shorten(s.label, 30) for s in c.runs]
    width = max(8, *(len(label) for label in labels)) + 2
    name_width = max([14, *(len(m.label_at(c.k)) + 1 for m in specs)])
    out += ["", "Means over the compared questions (percent for rates; grade 1-10; total 0-10; the rest 0-1)",
            (f"{'metric':<{name_width}}"
             + "".join(f"{label:>{width}}" + ("" if bold else " ") for label in labels)).rstrip()]
    marked = False
    for spec in specs:
        best = best_columns([s.means.get(spec.key) for s in c.runs], spec.lower_is_better)
        marked = marked or bool(best)
        cells = "".join(_cell(_num(s.means.get(spec.key), spec.digits), width, i in best, bold)
                        for i, s in enumerate(c.runs))
        out.append((f"{spec.label_at(c.k):<{name_width}}" + cells).rstrip())
    if marked:
        out.append("(best value of each metric in bold)" if bold else "(* best value of each metric)")
    by_key = {s.key: s for s in specs}
    for pc in c.comparisons:
        baseline, other = shorten(pc.baseline, 30), shorten(pc.other, 30)
        holm = any(r.p_holm is not None for r in pc.metrics)
        w = max(9, len(baseline), len(other)) + 2
        header = (f"{'metric':<{name_width}}{'n':>5}{baseline:>{w}}{other:>{w}}{'Δ':>9}  {'95% CI':<20}{'p':>7}"
                  + (f"{'Holm':>8}" if holm else "") + f"{'W/T/L':>10}")
        out += ["", f"{other} vs {baseline} (Δ = {other} − {baseline}, paired over questions)", header]
        estimates = False
        for r in pc.metrics:
            spec = by_key[r.metric]
            if r.n == 0:
                continue
            ci = "unbounded" if T.interval(r, spec.digits) == T.UNBOUNDED else T.interval(r, spec.digits)
            line = (f"{spec.label_at(c.k):<{name_width}}{r.n:>5}{_num(r.mean_baseline, spec.digits):>{w}}"
                    f"{_num(r.mean_other, spec.digits):>{w}}{_num(r.delta, spec.digits, True):>9}  {ci:<20}"
                    f"{T.p_cell(r.p, r):>7}" + (f"{T.p_cell(r.p_holm, r):>8}" if holm else "")
                    + f"{f'{r.wins}/{r.ties}/{r.losses}':>10}")
            line += "" if pc.kind == "run" else f"  {r.verdict}"
            out.append(line + ("  borderline" if r.borderline else ""))
            estimates = estimates or (T.estimated(r) and r.n > 0)
        if estimates:
            out.append(f"(≈: a Monte-Carlo estimate of the sign-flip p over {S.PERMUTATIONS:,} random sign patterns; "
                       "the others are exact)")
        if pc.kind != "run":
            continue
        out.append(f"Verdicts (α {c.alpha:g}" + (", Holm-adjusted" if holm else "")
                   + f"; detectable change at power {c.power:g}):")
        out += [_verdict_line(by_key[r.metric], r, c.k, c.alpha) for r in pc.metrics]
        out += comparison_lines(c.sequential.get(pc.other), c.k)
        out += _change_lines(f"Worse in {other}", pc.worse, top)
        out += _change_lines(f"Better in {other}", pc.better, top)
    if c.recommendations is not None:
        out += ["", *(escape_control(line) for line in c.recommendations.lines())]
    if c.certificate is not None and (c.certificate.entries or c.certificate.left_out):
        out += ["", str(c.certificate).rstrip("\n")]
    return "\n".join(out) + "\n"


def _cell(text: str, width: int, best: bool, bold: bool) -> str:
    """A value of the means table, right-aligned in ``width``: the best in bold (ANSI) or marked ``*``."""
    if bold:
        return f"\x1b[1m{text:>{width}}\x1b[0m" if best else f"{text:>{width}}"
    return f"{text + ('*' if best else ' '):>{width + 1}}"


# ---- the command's work (its arguments: components/cli/compare.py) ------------------------------

def compare_files(runs: Sequence[str], *, qrels: Path | None = None, json_path: Path | None = None, top: int = 10,
                  alpha: float = ALPHA, metrics: Sequence[str] | None = None, worse: Sequence[str] | bool = False,
                  margins: Mapping[str, float] | None = None, regressions: int | None = None,
                  min_overlap: float = 1.0, require_agreement: bool = False, secrets: Iterable[str] = (),
                  state_dir: Path | None = None):
    """``compare``'s work: read ``runs`` (results files or run ids, the first the baseline; TREC or
    ranx run files beside them as rank-only systems judged by ``qrels``), compare ``metrics`` (keys;
    default: the registry's compared ones), print the comparison and the gate's lines when one is
    asked for (``worse``, ``margins``, ``regressions``, ``min_overlap``, ``require_agreement``:
    :meth:`Comparison.gate`), write ``json_path`` with ``secrets`` redacted; run ids are also looked up
    in the index of ``state_dir``. Returns the gate's :class:`components.analysis.gate.GateResult`, or
    ``None`` without a gate. Raises :class:`InputError`."""
    margins = dict(margins or {})
    gating = bool(worse) or bool(margins) or regressions is not None
    paths = [resolve_run(arg, Path.cwd(), runs, state_dir) for arg in runs]
    results, labels, sources, systems = _read_compared(runs, paths, secrets)
    if json_path is not None:
        json_path = check_output(json_path, option="--json", example="comparison.json",
                                 inputs=[*(("a run", p) for p in paths), *((("the qrels", qrels),) if qrels else ())],
                                 recorded_corpora=recorded_corpora(results))
    if gating and len(results) < 2:
        raise InputError("the gate (--fail-on, --margin, --fail-on-regressions) judges results files against the "
                         "baseline: give at least two results files")
    judgments = trec.read_qrels(qrels) if qrels is not None else None
    comparison = compare_runs(results, default_labels(results, labels), sources=sources, alpha=alpha,
                              metrics=metrics, systems=systems, qrels=judgments)
    for warning in comparison.warnings:
        logger.debug("compare warning: {}", warning)
    sys.stdout.write(format_comparison(comparison, top=top, bold=sys.stdout.isatty()))
    against = score_runs(results, default_labels(results, labels), systems, judgments) if judgments else None
    if against is not None:  # every run rescored against the qrels: components/analysis/qrels_scoring.py
        sys.stdout.write("\n" + qrels_table(against, str(qrels)))
    result = comparison.gate(worse=worse, margins=margins, regressions=regressions, min_overlap=min_overlap,
                             require_agreement=require_agreement) if gating else None
    if result is not None:
        sys.stdout.write("\n" + str(result))
    sys.stdout.flush()
    if json_path is not None:
        data = comparison.to_json()
        if result is not None:
            data["gate"] = result.to_json()
        if against is not None:
            data["against_qrels"] = {"qrels": str(qrels), "runs": [score.to_json() for score in against]}
        # strict JSON, the environment's secrets redacted, written whole or not at all
        write_json_atomic(json_path, data, secrets)
        logger.info("Comparison written to {}", json_path)
    return result


def _read_compared(args: Sequence[str], paths: Sequence[Path],
                   secrets: Iterable[str] = ()) -> tuple[list[RunResult], list[str], list[str], list[RankedSystem]]:
    """The results files among ``paths`` (with the argument and path of each) and the TREC/ranx
    runs as rank-only systems; the baseline must be a results file."""
    runs: list[RunResult] = []
    run_args: list[str] = []
    run_paths: list[str] = []
    systems: list[RankedSystem] = []
    for arg, path in zip(args, paths, strict=True):
        loaded = read_run_or_ranking(path, secrets)
        if isinstance(loaded, RunResult):
            runs.append(loaded)
            run_args.append(arg)
            run_paths.append(str(path))
        elif not runs:
            raise InputError(f"compare: the baseline {arg} is a TREC or ranx run: give a results file first (the "
                             "questions and their needles come from it)")
        else:
            systems.append(RankedSystem(path.stem, str(path), loaded))
    return runs, run_args, run_paths, systems
