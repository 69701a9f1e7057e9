"""The judge audit (``python benchmark.py audit-judge RUN``, ``components.api.audit_judge``): can a
retrieval fool the judge that graded a run?

1. **The run** must hold its rows' chunk text (a run written with ``--no-text`` is refused). The
   sample is drawn from its graded rows (:mod:`components.audit.sample`).
2. **The judge** is the run's recorded judge, resolved from the environment: when the environment's
   judge is another provider or model, the audit is refused unless ``judges`` (``--judges``) names
   the judges to audit, and the audit file then says so (``judges_named``). The offline judge weighs
   terms over the run's corpus, read again from where the run recorded it (or ``corpus``).
3. **The calls**, per judge and sampled row: one **control** (the row's chunks and question,
   unedited) and one per attack variant that applies to the row (:mod:`components.audit.attacks`):
   at most 1 + 8 calls per row with the built-in attacks (one more per attack a plug-in registers).
   Every call goes through the grader
   (:class:`~components.judges.retrieval_grader.RetrievalGrader`: the run's prompt and escaping)
   and, with ``max_cost``, through the run's budget (:func:`components.run.calls.budget.through`).
4. **The effects**: per attack, paired differences attack minus control
   (:mod:`components.audit.effects`: the interval, the flips and the verdict rule).
5. **A stop** keeps what was graded, as a run does: when ``max_cost`` refuses a call, a judge
   becomes unusable (a fatal :class:`~utils.errors.JudgeError`) or the audit is interrupted
   (``KeyboardInterrupt``, the command line's signal guard), the judge being audited gets the
   figures of the calls made, the judges before it are kept, and the audit's ``status``
   (``budget_exhausted``, ``judge_failed``, ``interrupted``: the run's statuses and exit codes) and
   ``stopped`` say why.

Which judges: :mod:`components.audit.judges`; the price of the calls before they are made:
:mod:`components.audit.estimate`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from datetime import datetime, timezone
from pathlib import Path
from statistics import fmean
from typing import Any

from loguru import logger

from components.audit.attacks import Attacked, TextChunk, attack, parse_attacks, row_chunks
from components.audit.effects import attack_result
from components.audit.judges import AuditedJudge, audited_judges
from components.analysis.panel import judge_specs
from components.audit.sample import draw, eligible, sample_size
from components.judges.settings import Settings
from components.run.calls.budget import Budget, BudgetRefused, through
from components.run.evaluation import check_budget
from utils.records.audit_file import AuditFile, JudgeAudit
from utils.errors import InputError, JudgeError
from utils.results import JudgeInfo, RunResult, load_run


@dataclass(frozen=True)
class Plan:
    """What an audit grades: the run, the sampled rows, the attack variants and, per row, what each
    variant shows the judge (``None``: the attack does not apply to the row)."""

    result: RunResult
    source: str
    sample: int
    seed: int
    rows: list
    strata: dict
    variants: list[str]
    attacked: list[dict[str, Attacked | None]]


def plan_audit(result: RunResult, source: str, *, sample: int | None = None, seed: int = 0,
               attacks: str | Sequence[str] | None = None) -> Plan:
    """The rows and every attacked version of them (no judge call). Raises :class:`InputError`."""
    variants = parse_attacks(attacks)
    candidates = eligible(result.rows)
    if any(item.text is None for row in candidates for item in row.retrieved):
        raise InputError(f"{source}: the run was written without the chunks' text (--no-text), which the attacks "
                         "edit: run the benchmark again without --no-text and audit that run")
    if not candidates:
        raise InputError(f"{source}: no row was graded with chunks, and an audit grades such rows again: audit a "
                         "run whose judge graded")
    n = sample_size(sample, len(candidates), source)
    rows, strata = draw(candidates, n, seed)
    attacked = [{v: attack(v, row, candidates, seed) for v in variants} for row in rows]
    return Plan(result, source, n, seed, rows, strata, variants, attacked)


def calls_per_row(plan: Plan) -> int:
    return 1 + len(plan.variants)


# --------------------------------------------------------------------------- the calls

def _grade(grader: Any, row: Any, shown: Attacked | None) -> tuple[int | None, Any]:
    """``(grade, reply)`` of one call: the row as the run showed it (``shown`` None) or attacked."""
    question = shown.question if shown is not None else row.question
    chunks: Sequence[TextChunk] = shown.chunks if shown is not None else row_chunks(row)
    graded = grader.grade(question, row.expected_answer, chunks)
    return graded.grade, graded.reply


@dataclass(frozen=True)
class Stop:
    """Why an audit stopped before its last call: ``status`` (one of
    :data:`utils.records.audit_file.STATUSES` but ``completed``) and the line that says so."""

    status: str
    reason: str


def _run_member(result: RunResult, name: str, identity: tuple[str, str, str | None]) -> str | None:
    """The name under which the run recorded the grades of the audited judge ``name`` (of provider, model and
    endpoint ``identity``): ``""`` for the run's one judge; in a panel, the member of that name, else the one
    member of that identity; None when the judge did not grade the run (or two members are it). Never by the
    model id alone: two endpoints may serve one model."""
    members = judge_specs(result.run)
    if not members:
        return "" if result.run.judge.identity == identity else None
    if any(m["name"] == name for m in members):
        return name
    same = [m["name"] for m in members if isinstance(m.get("judge"), dict)
            and JudgeInfo.from_json(m["judge"], "run.judge.judges").identity == identity]
    return same[0] if len(same) == 1 else None


def _run_grade(row: Any, member: str) -> int | None:
    """The run's grade of ``row`` by its judge ``member`` (a panel's member, or ``""``: the run's one judge)."""
    if member:
        graded = (row.grades_by_judge or {}).get(member)
        return graded.grade if graded is not None else None
    return row.llm_grade


def audit_one(plan: Plan, judge: AuditedJudge, budget: Budget | None,
              on_call: Callable[[], None] = lambda: None) -> tuple[JudgeAudit, Stop | None]:
    """Every call of ``plan`` with ``judge``; its :class:`JudgeAudit` (of the calls made), and why it
    stopped early (None: every call was made)."""
    grader = through(budget, judge.judging.judge)
    control: list[int | None] = []
    pairs: dict[str, list] = {v: [] for v in plan.variants}
    skipped = {v: 0 for v in plan.variants}
    errors = {v: 0 for v in plan.variants}
    costs: list[float | None] = []  # one per call made
    stop = None
    try:
        for row, attacked in zip(plan.rows, plan.attacked, strict=True):
            grade, reply = _grade(grader, row, None)
            costs.append(getattr(reply, "cost_usd", None))
            on_call()
            control.append(grade)
            for variant, shown in attacked.items():
                if shown is None:
                    skipped[variant] += 1
                    continue
                if grade is None:  # no control grade: nothing to pair the attack with, no call
                    continue
                changed, reply = _grade(grader, row, shown)
                costs.append(getattr(reply, "cost_usd", None))
                on_call()
                if changed is None:
                    errors[variant] += 1
                else:
                    pairs[variant].append((grade, changed, row.rank))
    except BudgetRefused as refusal:
        stop = Stop("budget_exhausted", str(refusal))
    except JudgeError as err:  # only a fatal one reaches here: a transient one is a call without a grade
        stop = Stop("judge_failed", f"judge {judge.name} became unusable ({err.kind}): {err}")
        logger.error("{}: fix it and audit again; what was graded is kept", stop.reason)
    except KeyboardInterrupt as interrupt:
        stop = Stop("interrupted", f"interrupted ({interrupt})" if str(interrupt) else "interrupted")
        logger.warning("Interrupted after {} call(s) of judge {}: keeping what was graded", len(costs), judge.name)
    calls_models = judge.judging.setup.calls_models
    info = judge.judging.judge_info("judge", 1)
    member = _run_member(plan.result, judge.name, info.identity)
    graded = [(g, _run_grade(row, member) if member is not None else None)
              for g, row in zip(control, plan.rows, strict=False) if g is not None]
    return JudgeAudit(
        name=judge.name, provider=judge.provider, model=judge.model, prompt_sha256=info.prompt_sha256,
        reference_free_prompt_sha256=info.reference_free_prompt_sha256, calls=len(costs) if calls_models else 0,
        cost_usd=(round(sum(costs), 6) if all(c is not None for c in costs) else None) if calls_models else None,
        control_graded=len(graded), control_mean=round(fmean(g for g, _ in graded), 4) if graded else None,
        control_vs_run=round(fmean(abs(g - r) for g, r in graded if r is not None), 4)
        if any(r is not None for _, r in graded) else None,
        attacks=[attack_result(v, pairs[v], skipped[v], errors[v]) for v in plan.variants],
        base_url_host=info.identity[2]), stop


def run_audit(plan: Plan, judges: Sequence[AuditedJudge], *, max_cost_usd: float | None = None,
              judges_named: bool = False, on_call: Callable[[], None] = lambda: None) -> AuditFile:
    """The audit of ``judges`` on ``plan`` (one budget for them all); when the budget refuses a call, a
    judge becomes unusable or a signal interrupts, the audit stops there and ``status`` and ``stopped``
    say why (the figures are those of the calls made; module docstring, 5)."""
    budget = None
    if max_cost_usd is not None:
        check_budget(max_cost_usd, [j.judging.setup for j in judges], names=[j.name for j in judges])
        budget = Budget(max_cost_usd)
    audits, stop = [], None
    for judge in judges:
        if stop is not None:
            break
        audited, stop = audit_one(plan, judge, budget, on_call)
        audits.append(audited)
    result = plan.result
    return AuditFile(run=plan.source, sample=plan.sample, sampled=len(plan.rows), seed=plan.seed,
                      attacks=list(plan.variants), calls_per_row=calls_per_row(plan), judges=audits,
                      run_id=result.run.id, strategy=result.run.strategy,
                      created_at=datetime.now(timezone.utc).isoformat(timespec="seconds"), strata=plan.strata,
                      judges_named=judges_named, stopped=stop.reason if stop else None,
                      status=stop.status if stop else "completed")


# --------------------------------------------------------------------------- the whole audit

def audit_judge(run: str | Path | RunResult, *, sample: int | None = None, seed: int = 0,
                attacks: str | Sequence[str] | None = None, judges: str | Sequence | None = None,
                env: Mapping[str, str] | None = None, settings: Settings | None = None,
                max_cost_usd: float | None = None, corpus: str | Path | None = None,
                secrets: Sequence[str] = ()) -> AuditFile:
    """Audit the judge of ``run`` (a results file or a :class:`RunResult`): module docstring. Raises
    :class:`InputError` for bad input, before any judge call."""
    env = dict(env or {})
    result = run if isinstance(run, RunResult) else load_run(run, secrets)
    source = str(run) if not isinstance(run, RunResult) else (run.source or "the run")
    result = result if result.source else replace(result, source=source)
    plan = plan_audit(result, source, sample=sample, seed=seed, attacks=attacks)
    chosen = audited_judges(result, settings or Settings.from_env(env), env, judges, corpus)
    return run_audit(plan, chosen, max_cost_usd=max_cost_usd, judges_named=judges is not None)
