"""The CI gate of ``compare``: fail the build when retrieval got worse.

Three rules, each optional, checked on every comparison of a run with the baseline (the results
files after the first; reference systems and TREC runs are not gated):

- ``--fail-on worse`` (every compared metric) or ``--fail-on worse:mrr,ndcg`` (these): fail when a
  metric's verdict is *worse*: Δ < 0 with its p (Holm-adjusted when several runs are compared)
  below ``--alpha``;
- ``--margin mrr=0.02`` (repeatable, or comma-separated): non-inferiority: fail when the lower
  bound of the 95% CI of Δ is below −margin (the margin is in the metric's unit: points for
  rates). A metric with a margin is judged by it, not by its verdict: a loss smaller than the margin
  passes even when it is significant; a loss the questions cannot rule out fails, however noisy;
- a run judged until decided against this baseline (``--until-decided``: its ``adaptive`` record,
  :mod:`components.analysis.adaptive`) is gated on a metric it gated by its recorded **sequential**
  verdict (rule ``sequential``), when the gate asks the same of it (the same margin, or none): *worse*,
  *inferior* and *not shown non-inferior* fail; its repeated confidence interval is the one shown.
  Compare's own test on the questions it judged does not allow for the looks that chose when to stop;
- ``--fail-on-regressions N``: fail when more than N questions lost their rank-1 hit (chunk
  rank 1 in the baseline, not in the other run);
- ``--require-agreement`` (with the rules above, on panel runs: ``--judges``): fail when a gated
  OUTCOME depends on the judge — for a metric that uses grades, the gate's outcome under one judge of
  the panel alone differs from its outcome under the panel (:mod:`components.analysis.certificate`):
  *worse* or not worse for ``--fail-on``, margin met or not met for ``--margin``. A change of label
  that does not change the outcome (the panel says *better*, a judge *no detectable difference*)
  passes. Checks that cannot be judged follow the rule below: runs that are not panel runs sharing
  two judges fail it (the option was asked for); a metric whose verdict is not comparable under a
  judge fails when it is named (``worse:a,b``, a margin) and reads ``not gated`` when it is one of
  every compared metric. A metric that does not use grades cannot depend on the judge. A judge of
  the panel that is uninformative is left out of the check (a ``note`` line names it), as the
  certificate leaves it out: it does not count.

What the gate cannot judge does not pass it:

- a **failed run** never passes: when the baseline or a gated run has status ``retrieval_failed`` (its
  retriever failed on every question: exit 7), or has no judged row for a gated metric that the other
  run has (its values of it null on every compared question), the gate fails with a ``FAIL`` line
  saying which run and why (rule ``failed_run``);
- a metric that cannot be judged (not comparable: no question has it in both runs, e.g. the grade
  when the judge graded nothing; or no interval) **fails** the gate when it was named — in
  ``--fail-on worse:a,b`` or ``--margin`` — with a ``FAIL`` line saying why; one of the default set
  (``--fail-on worse`` alone) that neither run has is named in a ``not gated`` line and does not fail;
- a grade metric whose grades come from an **uninformative** judge (the run's judge, or a panel's aggregate:
  :mod:`components.analysis.uninformative`) **fails** the gate, named or one of the default set, with a ``FAIL``
  line naming the judge: the grades do not tell right chunks from wrong ones;
- when no check at all could be judged, the gate fails (one ``FAIL`` line);
- every gated run must hold the baseline's question ids (ids counted, not graded pairs): all of
  them by default, at least ``min_overlap`` of them (``--min-overlap 0.9``) when relaxed; a run
  holding fewer fails, its line naming how many are missing (a run holding them all adds no line).

Metric names are the registry's keys (:mod:`utils.metrics`) or the short :data:`ALIASES`.
:func:`check_gate` returns a :class:`GateResult`; the command exits :data:`utils.errors.EXIT_GATE`
when it failed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field

from components.analysis import inference_text as T
from components.analysis.certificate_record import Entry, Verdict, describe
from components.analysis.comparison import Comparison
from components.analysis.paired import NOT_COMPARABLE, WORSE, MetricResult, PairComparison
from components.analysis.uninformative import CANNOT_JUDGE, LEFT_OUT, gate_reason
from components.stats import sequential as Q
from utils import metrics as M
from utils.errors import InputError
from utils.records.sections import AdaptiveMetric

ALIASES = {"ndcg": "ndcg_at_k", "map": "map_at_k", "recall": "recall_at_k", "hit1": "hit_at_1_rate",
           "hit5": "hit_at_5_rate", "grade": "avg_llm_grade", "total": "avg_total_score", "pass7": "pass_rate_7"}
WORSE_RULE = "worse"
NOT_JUDGED = "not comparable (no question has it in both runs)"
AGREEMENT_RULE = "agreement"
SEQUENTIAL_RULE = "sequential"
FAILED_RUN_RULE = "failed_run"
RETRIEVAL_FAILED = "retrieval_failed"  # run.status when the retriever failed on every question
SEQUENTIAL_FAILING = (Q.WORSE, Q.INFERIOR, Q.NOT_SHOWN)  # a recorded sequential verdict that fails the gate
_EXAMPLES = 5  # question ids named in a regressions line


def metric_key(name: str, option: str) -> str:
    """The registry key of ``name`` (a key or an alias); one :class:`InputError` naming ``option`` when unknown."""
    key = ALIASES.get(name.strip().lower(), name.strip())
    if key not in M.METRICS:
        aliases = ", ".join(f"{a}={k}" for a, k in ALIASES.items())
        raise InputError(f"{option}: unknown metric {name.strip()!r}: use a metric key ({', '.join(M.METRICS)}) "
                         f"or an alias ({aliases})")
    return key


def parse_fail_on(text: str) -> list[str] | bool:
    """``--fail-on``: ``worse`` → True (every compared metric), ``worse:a,b`` → those keys."""
    rule, _, names = text.partition(":")
    if rule.strip().lower() != WORSE_RULE:
        raise InputError(f"--fail-on {text!r}: write worse (every compared metric) or worse:METRIC,METRIC "
                         "(e.g. worse:mrr,ndcg)")
    if not _:
        return True
    keys = [metric_key(n, "--fail-on") for n in names.split(",") if n.strip()]
    if not keys:
        raise InputError(f"--fail-on {text!r} names no metric after 'worse:': name one (e.g. worse:mrr)")
    return list(dict.fromkeys(keys))


def parse_margins(items: Sequence[str]) -> dict[str, float]:
    """``--margin mrr=0.02`` (repeatable; ``a=0.02,b=1`` too) → ``{metric key: margin}``."""
    margins: dict[str, float] = {}
    for item in (part for text in items for part in text.split(",") if part.strip()):
        name, sep, value = item.partition("=")
        try:
            margin = float(value) if sep else math.nan
        except ValueError:
            margin = math.nan
        if not math.isfinite(margin) or margin < 0:
            raise InputError(f"--margin {item!r}: write METRIC=MARGIN with a margin of 0 or more in the metric's "
                             "unit (e.g. mrr=0.02, hit1=5 for 5 points)")
        margins[metric_key(name, "--margin")] = margin
    return margins


@dataclass(frozen=True)
class GateCheck:
    """One rule on one comparison: ``failed``, and the line that says why."""

    other: str  # the run compared with the baseline
    baseline: str
    rule: str  # "worse" | "margin" | "sequential" | "regressions" | "overlap" | "nothing_judged" | "agreement"
    #          | "failed_run"
    metric: str | None  # the metric key (None for the other rules)
    failed: bool
    gated: bool  # False: the metric could not be judged (not comparable, no interval)
    line: str


@dataclass(frozen=True)
class GateResult:
    """Every check of the gate; ``passed`` when none failed. ``str()`` is the console block."""

    checks: list[GateCheck] = field(default_factory=list)

    @property
    def failures(self) -> list[GateCheck]:
        return [c for c in self.checks if c.failed]

    @property
    def passed(self) -> bool:
        return not self.failures

    def lines(self) -> list[str]:
        return [c.line for c in self.checks]

    def __str__(self) -> str:
        verdict = "passed" if self.passed else f"FAILED ({len(self.failures)} check{'s' * (len(self.failures) != 1)})"
        return "\n".join([f"Gate: {verdict}", *(f"  {line}" for line in self.lines())]) + "\n"

    def to_json(self) -> dict:
        return {"passed": self.passed, "checks": [asdict(c) for c in self.checks]}


def _fmt(value: float | None, digits: int, sign: bool = True) -> str:
    if value is None:
        return "-"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _figures(spec: M.Metric, r: MetricResult, alpha: float) -> str:
    """``Δ …, 95% CI …, p …, n …`` with the ``borderline`` mark (:mod:`components.analysis.inference_text`)."""
    return f"Δ {_fmt(r.delta, spec.digits)}, 95% CI {T.interval(r, spec.digits)}, {T.p_text(r)}, n {r.n}" \
        + T.borderline(r, alpha)


def _unjudged(pc: PairComparison, rule: str, spec: M.Metric, head: str, why: str, named: bool) -> GateCheck:
    """The check of a metric that cannot be judged: a ``FAIL`` when the gate named it, else ``not gated``."""
    if named:
        return GateCheck(pc.other, pc.baseline, rule, spec.key, True, False,
                         f"FAIL  {head}: cannot be judged: {why}; a metric the gate names must be judged")
    return GateCheck(pc.other, pc.baseline, rule, spec.key, False, False, f"not gated  {head}: {why}")


def _worse(pc: PairComparison, spec: M.Metric, r: MetricResult, alpha: float, k: int, named: bool) -> GateCheck:
    head = f"{spec.key} ({spec.label_at(k)}), {pc.other} vs {pc.baseline}"
    if r.verdict == NOT_COMPARABLE:
        return _unjudged(pc, WORSE_RULE, spec, head, NOT_JUDGED, named)
    failed = r.verdict == WORSE
    what = f"worse (p below α {alpha:g})" if failed else r.verdict
    return GateCheck(pc.other, pc.baseline, WORSE_RULE, spec.key, failed, True,
                     f"{'FAIL' if failed else 'pass'}  {head}: {what}: {_figures(spec, r, alpha)}")


def _margin(pc: PairComparison, spec: M.Metric, r: MetricResult, margin: float, k: int,
            alpha: float) -> GateCheck:
    head = f"{spec.key} ({spec.label_at(k)}), {pc.other} vs {pc.baseline}"
    unit = " points" if spec.unit == "percent" else ""
    if r.ci95 is None:
        return _unjudged(pc, "margin", spec, head, NOT_JUDGED if r.n == 0 else f"no interval with {r.n} question(s)",
                         named=True)
    lower = r.ci95[0]
    failed = lower < -margin
    relation = "below" if failed else "within"
    return GateCheck(pc.other, pc.baseline, "margin", spec.key, failed, True,
                     f"{'FAIL' if failed else 'pass'}  {head}: the CI's lower bound {_fmt(lower, spec.digits)} is "
                     f"{relation} the margin −{margin:g}{unit}: {_figures(spec, r, alpha)}")


def _sequential(pc: PairComparison, spec: M.Metric, entry: AdaptiveMetric, k: int) -> GateCheck:
    """A metric gated by the sequential verdict the run recorded (module docstring)."""
    head = f"{spec.key} ({spec.label_at(k)}), {pc.other} vs {pc.baseline}"
    failed = entry.verdict in SEQUENTIAL_FAILING
    interval = entry.interval or [None, None]
    margin = "" if entry.margin is None else f", margin −{entry.margin:g}"
    where = f"look {entry.look} of {entry.looks} after {entry.judged} questions" if entry.look else "no look"
    return GateCheck(pc.other, pc.baseline, SEQUENTIAL_RULE, spec.key, failed, True,
                     f"{'FAIL' if failed else 'pass'}  {head}: {entry.verdict} by the sequential procedure "
                     f"the run was judged with ({where}{margin}): Δ {_fmt(entry.estimate, spec.digits)}, "
                     f"repeated CI [{_fmt(interval[0], spec.digits)}, {_fmt(interval[1], spec.digits)}]")


def _recorded(comparison: Comparison, pc: PairComparison, key: str, margin: float | None) -> AdaptiveMetric | None:
    """The run's recorded sequential verdict of ``key``, when the gate asks the same (margin) of it."""
    section = comparison.sequential.get(pc.other)
    entry = section.metrics.get(key) if section is not None else None
    if entry is None or entry.verdict in (None, Q.NOT_YET) or entry.margin != margin:
        return None
    return entry


def _uninformative(comparison: Comparison, pc: PairComparison, spec: M.Metric, gated: bool) -> GateCheck | None:
    """A gated grade metric read from an uninformative judge: a ``FAIL`` naming the judge, whether the gate named
    the metric or not (:mod:`components.analysis.uninformative`); None otherwise."""
    reason = gate_reason(comparison.uninformative, pc) if gated and spec.level == "judge" else None
    if reason is None:
        return None
    return GateCheck(pc.other, pc.baseline, WORSE_RULE, spec.key, True, False,
                     f"FAIL  {spec.key} ({spec.label_at(comparison.k)}), {pc.other} vs {pc.baseline}: "
                     f"{CANNOT_JUDGE}: {reason}")


def _left_out(certificate) -> list[GateCheck]:
    """``--require-agreement`` without a certificate: one ``FAIL``; with one, a line per judge of the panel it left
    out (uninformative): not part of the agreement."""
    if certificate is None:
        return [GateCheck("-", "-", AGREEMENT_RULE, None, True, False,
                          "FAIL  agreement: cannot be judged: --require-agreement needs panel runs "
                          "(--judges) that share two judges or more, and these are not")]
    return [GateCheck("-", "-", AGREEMENT_RULE, None, False, False, f"note  agreement: {name}: {LEFT_OUT}")
            for name in certificate.left_out]


def _overlap(pc: PairComparison, total: int, shared: int, min_overlap: float) -> GateCheck | None:
    """Whether ``pc.other`` holds enough of the baseline's ``total`` question ids (it holds ``shared``);
    None when it holds them all."""
    if shared >= total:
        return None
    need = math.ceil(min_overlap * total - 1e-9)
    failed = shared < need
    return GateCheck(pc.other, pc.baseline, "overlap", None, failed, True,
                     f"{'FAIL' if failed else 'pass'}  questions, {pc.other} vs {pc.baseline}: "
                     f"{pc.other} holds {shared} "
                     f"of the baseline's {total} question ids, {total - shared} missing (--min-overlap "
                     f"{min_overlap:g} needs {need})")


def _failed_runs(comparison: Comparison, pc: PairComparison, gated: Sequence[str]) -> list[GateCheck]:
    """A failed run never passes (module docstring): a ``FAIL`` for the baseline or ``pc.other`` when its
    retriever failed on every question (status ``retrieval_failed``), else for each gated metric one of the
    two has on no compared question while the other has it."""
    summaries = {s.label: s for s in comparison.runs}
    pair = [summaries[label] for label in (pc.baseline, pc.other) if label in summaries]
    head = f"{pc.other} vs {pc.baseline}"
    failed = [s for s in pair if s.status == RETRIEVAL_FAILED]
    if failed:
        return [GateCheck(pc.other, pc.baseline, FAILED_RUN_RULE, None, True, True,
                          f"FAIL  failed run, {head}: {s.label}'s retriever failed on every question (status "
                          f"{RETRIEVAL_FAILED}): a failed run does not pass the gate; fix it and run again")
                for s in failed]
    checks = []
    for key in gated:
        spec = M.METRICS[key]
        have = [s for s in pair if s.means.get(key) is not None]
        if len(have) == 1:
            lacking = next(s for s in pair if s is not have[0])
            checks.append(GateCheck(pc.other, pc.baseline, FAILED_RUN_RULE, key, True, True,
                                    f"FAIL  {key} ({spec.label_at(comparison.k)}), {head}: {lacking.label} has no "
                                    f"judged row for it ({have[0].label} has): a run without one does not pass "
                                    "the gate"))
    return checks


def _regressions(pc: PairComparison, allowed: int) -> GateCheck:
    lost = sorted({c.question_id for c in [*pc.worse, *pc.better] if c.rank_before == 1 and c.rank_after != 1})
    failed = len(lost) > allowed
    named = ", ".join(lost[:_EXAMPLES]) + (", …" if len(lost) > _EXAMPLES else "")
    return GateCheck(pc.other, pc.baseline, "regressions", None, failed, True,
                     f"{'FAIL' if failed else 'pass'}  regressions, {pc.other} vs {pc.baseline}: {len(lost)} "
                     f"question(s) lost their rank-1 hit (at most {allowed} allowed)" + (f": {named}" if lost else ""))


def _margin_fails(verdict: Verdict, margin: float) -> bool | None:
    """Whether a verdict's CI fails the margin; None without an interval."""
    return None if verdict.ci95 is None else verdict.ci95[0] < -margin


def _fails(verdict: Verdict, margin: float | None) -> bool | None:
    """The gated outcome under one verdict: whether it fails the gate (worse; the margin not met)."""
    return verdict.verdict == WORSE if margin is None else _margin_fails(verdict, margin)


def _agreement(pc: PairComparison, spec: M.Metric, entry: Entry | None, margin: float | None, named: bool,
               k: int) -> GateCheck:
    """``--require-agreement`` on one gated metric of one comparison (module docstring): it compares the gate's
    OUTCOMES, not the labels: worse or not worse (``--fail-on``), margin met or not (``--margin``) under the
    panel and under each judge of the certificate (a judge it left out does not count)."""
    head = f"agreement  {spec.key} ({spec.label_at(k)}), {pc.other} vs {pc.baseline}"
    if entry is None or entry.holds is None:
        why = "not comparable under the panel or under a judge alone"
        return GateCheck(pc.other, pc.baseline, AGREEMENT_RULE, spec.key, named, False,
                         f"{'FAIL' if named else 'not gated'}  {head}: cannot be judged ({why})")
    panel = _fails(entry.panel, margin)
    differ = [n for n, v in entry.judges.items() if _fails(v, margin) != panel]
    if margin is None:
        what = f"the outcome ({'worse' if panel else 'not worse'}: the panel says {entry.panel.verdict})"
    else:
        what = f"the margin check ({'fails' if panel else 'passes'} under the panel)"
    if not differ:
        return GateCheck(pc.other, pc.baseline, AGREEMENT_RULE, spec.key, False, True,
                         f"pass  {head}: {what} holds under every judge ({', '.join(entry.judges)})")
    detail = "; ".join(f"{n}: {describe(entry.judges[n], spec.digits)}" for n in differ)
    return GateCheck(pc.other, pc.baseline, AGREEMENT_RULE, spec.key, True, True,
                     f"FAIL  {head}: {what} depends on the judge: {detail}")


def _agreement_checks(comparison: Comparison, pc: PairComparison, names: Sequence[str], margins: Mapping[str, float],
                      named: set[str]) -> list[GateCheck]:
    certificate = comparison.certificate
    gated = [key for key in comparison.metrics if key in margins or key in names]
    graded = [key for key in gated if M.METRICS[key].level == "judge"]
    if not graded:
        return []
    specs = {s.key: s for s in comparison.specs()}
    return [_agreement(pc, specs[key], certificate.entry(pc.baseline, pc.other, key), margins.get(key),
                       key in named, comparison.k) for key in graded]


def gated_metrics(worse: Sequence[str] | bool, margins: Mapping[str, float]) -> list[str]:
    """The metric keys the gate needs compared (beyond the default ones when ``worse`` is True)."""
    named = list(worse) if not isinstance(worse, bool) else []
    return list(dict.fromkeys([*named, *margins]))


def check_min_overlap(value: float) -> float:
    """``--min-overlap``: the share of the baseline's question ids a gated run must hold, from 0 to 1."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 1:
        raise InputError(f"--min-overlap {value!r}: give the share of the baseline's question ids a run must hold, "
                         "from 0 to 1 (e.g. 0.9; default 1: all of them)")
    return float(value)


def check_gate(comparison: Comparison, *, worse: Sequence[str] | bool = False,
               margins: Mapping[str, float] | None = None, regressions: int | None = None,
               min_overlap: float = 1.0, require_agreement: bool = False) -> GateResult:
    """The gate on ``comparison`` (see the module docstring): ``worse`` True (every compared metric)
    or metric keys (or :data:`ALIASES`); ``margins`` {metric key: margin}; ``regressions`` the most questions allowed to
    lose their rank-1 hit (None: not checked); ``min_overlap`` the share of the baseline's question
    ids each gated run must hold (default 1: all); ``require_agreement``: a gated metric that uses
    grades must hold under every judge of the panel runs (the verdict certificate). A metric with a
    margin is judged by the margin only.
    Raises :class:`InputError` for a metric the comparison did not compare, or a ``min_overlap``
    outside 0-1."""
    min_overlap = check_min_overlap(min_overlap)
    margins = {ALIASES.get(key, key): value for key, value in (margins or {}).items()}
    names = list(comparison.metrics) if worse is True else [ALIASES.get(n, n) for n in worse or []]
    for key in [*names, *margins]:
        if key not in comparison.metrics:
            raise InputError(f"the gate's metric {key!r} was not compared: add it to the compared metrics "
                             f"(compared: {', '.join(comparison.metrics)})")
    specs = {s.key: s for s in comparison.specs()}
    checks: list[GateCheck] = []
    if require_agreement:
        checks += _left_out(comparison.certificate)
    named = set(margins) | (set() if worse is True else set(names))
    for pc in comparison.comparisons:
        if pc.kind != "run":
            continue
        overlap = _overlap(pc, comparison.runs[0].question_count, comparison.shared_ids.get(pc.other, 0), min_overlap)
        if overlap is not None:
            checks.append(overlap)
        failed = _failed_runs(comparison, pc, [key for key in comparison.metrics if key in margins or key in names])
        checks += failed
        by_key = {r.metric: r for r in pc.metrics}
        for key in [key for key in comparison.metrics if key not in {c.metric for c in failed}]:
            unjudged = _uninformative(comparison, pc, specs[key], key in margins or key in names)
            if unjudged is not None:
                checks.append(unjudged)
                continue
            recorded = _recorded(comparison, pc, key, margins.get(key)) if key in margins or key in names else None
            if recorded is not None:
                checks.append(_sequential(pc, specs[key], recorded, comparison.k))
            elif key in margins:
                checks.append(_margin(pc, specs[key], by_key[key], margins[key], comparison.k, comparison.alpha))
            elif key in names:
                checks.append(_worse(pc, specs[key], by_key[key], comparison.alpha, comparison.k, worse is not True))
        if regressions is not None:
            checks.append(_regressions(pc, regressions))
        if require_agreement and comparison.certificate is not None:
            checks += _agreement_checks(comparison, pc, names, margins, named)
    judged = [c for c in checks if c.gated and c.rule != "overlap"]
    if checks and not judged and not any(c.failed for c in checks):
        checks.append(GateCheck(checks[0].other, checks[0].baseline, "nothing_judged", None, True, False,
                                "FAIL  nothing judged: none of the gate's checks could be judged (every one is "
                                "not gated above): the gate does not pass on nothing"))
    return GateResult(checks)
