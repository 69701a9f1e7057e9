"""Adaptive judging: pay the judge until the verdict is known, not for every question.

Two ways to stop early, each a :class:`Adaptive` the loop consults (its hooks: the order of the
questions, ``unjudged(question)`` before each judge call, ``observe(row)`` after each row):

* ``--until-decided BASELINE.json`` (:class:`UntilDecided`): the run's grades are compared, block
  after block, with the baseline's grades of the same questions by the group-sequential procedure of
  :mod:`components.stats.sequential` (Lan-DeMets α spending of O'Brien-Fleming type, α split across
  the gated metrics by Bonferroni, repeated confidence intervals); judging stops once every gated
  metric is decided (its interval excludes 0, or clears the ``--margin`` either way);
* ``--target-ci W`` (:class:`TargetCI`): a single run, no baseline, judged until the anytime-valid
  confidence sequence (betting, Waudby-Smith & Ramdas 2024) of the mean grade (and of each metric
  given a width) has a half-width (half its width) of at most W.

How a run goes:

- every question is retrieved (retrieval and its metrics cost nothing); the judge is called in a
  random order drawn with :data:`SEED` (recorded), in equal blocks (⌈N/10⌉ questions, at least 5);
- after each block (a *look*) the rows finished so far are tested; rows are finished in that order
  even with ``--concurrency``, so a look always sees the first blocks whole;
- once decided, the questions not yet judged keep their retrieval figures and get ``llm_grade: null``,
  ``grade_error: "not judged: decided after N"`` (N: the questions judged at the deciding look). Calls
  already in flight then (``--concurrency``) are made, kept and counted;
- ``--resume`` plays the same order again: the rows it keeps are observed at the same positions, so
  the looks are the same;
- the results' ``adaptive`` block (:meth:`Adaptive.record`) holds the procedure, block size, seed,
  every look, each metric's verdict with the look that decided it and its interval, and the judge
  calls and dollars spent against what grading every question would have cost (the unjudged
  questions priced as ``--estimate`` prices them: :mod:`components.run.estimate`).

The baseline must be fully graded, on the same question ids, with the same k, grading prompt and
judge (or panel): :func:`check_baseline` raises :class:`InputError` naming the difference.
"""

from __future__ import annotations

import math
import os
import random
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from components.analysis.adaptive import UNTIL_DECIDED, grades_fingerprint
from components.analysis.gate import metric_key, parse_fail_on, parse_margins
from components.core import Question
from components.judges.retrieval_grader import PROMPT_SHA256
from components.stats import sequential as Q
from utils import metrics as M
from utils.errors import InputError
from utils.records.sections import AdaptiveSection
from utils.results import QuestionResult, RunResult, load_run

SEED = 0  # the judging order's seed (recorded in the results)
TARGET_CI = "target_ci"
# the units judging can decide, each with the largest |paired difference| of its values (its range's width)
SPANS = {unit: M.UNIT_RANGES[unit][1] - M.UNIT_RANGES[unit][0] for unit in ("grade", "score", "percent")}


PRIMARY = "avg_llm_grade"  # the metric gated alone when --fail-on names none: the mean grade


def default_gated() -> list[str]:
    """The gated metrics when ``--fail-on`` names none: the primary metric, the mean grade, alone.
    Gating the mean total score and the pass rate too made the default spend about 93% of the judge
    calls at a change of 1.5 × the grade's MDE, against under 60% for the grade alone (bench.sequential)."""
    return [PRIMARY]


def _graded_metric(key: str, option: str) -> M.Metric:
    spec = M.METRICS[key]
    if spec.level != "judge" or spec.unit not in SPANS:
        raise InputError(f"{option}: {key} does not use the judge's grades, so judging cannot decide it: name a "
                         "metric that does (grade, total, pass7, pass_rate_8, pass_rate_6_5)")
    return spec


# ---- what the user asked ------------------------------------------------------------------------

@dataclass(frozen=True)
class Request:
    """``--until-decided`` (``baseline``, ``gated`` {metric key: margin or None}) or ``--target-ci``
    (``targets`` {metric key: half-width}); ``block`` None: ⌈N/10⌉, at least 5."""

    baseline: RunResult | None = None
    baseline_file: str | None = None
    gated: dict[str, float | None] = field(default_factory=dict)
    targets: dict[str, float] = field(default_factory=dict)
    seed: int = SEED
    block: int | None = None
    alpha: float = Q.ALPHA
    gate: bool = False  # --fail-on or --margin given: the run exits 6 on a failing verdict

    @property
    def mode(self) -> str:
        return UNTIL_DECIDED if self.baseline is not None else TARGET_CI

    def identity(self) -> dict:
        """What the journal's header records, for ``--resume`` to ask again (:func:`resume_options`)."""
        if self.baseline is None:
            return {"target_ci": dict(self.targets), "seed": self.seed}
        return {"until_decided": self.baseline_file, "gated": dict(self.gated), "gate": self.gate, "seed": self.seed}

    def journal(self) -> dict:
        """What the journal's header adds to the resume identity."""
        return {"adaptive": self.identity()}

    def plan(self, questions: Sequence[Question], k: int, judges: list | None = None) -> Adaptive:
        """The adaptive state of a run of ``questions``, the baseline checked first (against ``judges``)."""
        check_baseline(self, [q.id for q in questions], k, judges)
        return (UntilDecided if self.baseline is not None else TargetCI)(self, questions, k)


@dataclass(frozen=True)
class JudgeAll:
    """The request of a run that judges every question (no ``--until-decided``, no ``--target-ci``):
    the null request, whose plan is :class:`JudgeEvery`."""

    baseline: None = None

    def identity(self) -> None:
        return None

    def journal(self) -> dict:
        return {}

    def plan(self, questions: Sequence[Question], k: int, judges: list | None = None) -> JudgeEvery:
        return JudgeEvery(questions)


JUDGE_ALL = JudgeAll()


def parse_target_ci(text: str | float | Mapping[str, float]) -> dict[str, float]:
    """``--target-ci``: ``0.3`` (the mean grade's half-width) or ``grade=0.3,pass7=5`` (each metric
    that uses grades, in its unit: points for pass rates) → {metric key: half-width}."""
    if isinstance(text, Mapping):
        items = [f"{k}={v}" for k, v in text.items()]
    elif isinstance(text, (int, float)) and not isinstance(text, bool):
        items = [f"grade={text}"]
    else:
        items = [part.strip() if "=" in part else f"grade={part.strip()}" for part in str(text).split(",")
                 if part.strip()]
    out: dict[str, float] = {}
    for item in items:
        name, _, value = item.partition("=")
        try:
            width = float(value)
        except ValueError:
            width = math.nan
        if not math.isfinite(width) or width <= 0:
            raise InputError(f"--target-ci {item!r}: give a half-width above 0 in the metric's unit, e.g. 0.3 (the "
                             "mean grade) or grade=0.3,pass7=5 (5 points of the pass rate)")
        key = metric_key(name, "--target-ci")
        _graded_metric(key, "--target-ci")
        if key in out:
            raise InputError(f"--target-ci: {key} is named twice ({item!r} and an earlier width): give each metric "
                             "one width")
        out[key] = width
    if not out:
        raise InputError("--target-ci names no width: give e.g. 0.3 (the mean grade's half-width)")
    return out


def request(until_decided: RunResult | str | os.PathLike | Mapping | None = None, *,
            fail_on: str | Sequence[str] | bool | None = None,
            margins: Mapping[str, float] | Sequence[str] | None = None,
            target_ci: str | float | Mapping[str, float] | None = None, strategies: int = 1) -> Request | None:
    """The :class:`Request` of the options (None: judge every question); raises :class:`InputError`
    for options that do not go together or name a metric judging cannot decide."""
    if until_decided is None:
        if fail_on or margins:
            raise InputError("--fail-on and --margin of a run gate it against --until-decided BASELINE.json: add it, "
                             "or compare the runs afterwards (python benchmark.py compare BASELINE NEW --fail-on ...)")
        return Request(targets=parse_target_ci(target_ci)) if target_ci is not None else None
    if target_ci is not None:
        raise InputError("--target-ci judges a single run without a baseline: drop it or --until-decided")
    if strategies != 1:
        raise InputError("--until-decided judges one strategy against the baseline: give one --strategy (run the "
                         "others on their own)")
    named = fail_on if isinstance(fail_on, (bool, list, tuple)) or fail_on is None else parse_fail_on(fail_on)
    keys = [] if isinstance(named, bool) or named is None else [metric_key(k, "--fail-on") for k in named]
    parsed = parse_margins([f"{k}={v}" for k, v in margins.items()] if isinstance(margins, Mapping)
                           else list(margins or []))
    wanted = list(dict.fromkeys([*keys, *parsed]))
    graded = [k for k in wanted if M.METRICS.get(k) is not None and M.METRICS[k].level == "judge"]
    if wanted and not graded:
        raise InputError(f"--until-decided: the gate names no metric that uses grades ({', '.join(wanted)}), so "
                         "there is nothing to judge until: name one (grade, total, pass7) or drop --until-decided")
    for key in graded:
        _graded_metric(key, "--fail-on")
    gated = {k: parsed.get(k) for k in (graded or default_gated())}
    baseline, source = _baseline(until_decided)
    return Request(baseline=baseline, baseline_file=source, gated=gated, gate=bool(fail_on or margins))


def _baseline(value: RunResult | str | os.PathLike | Mapping) -> tuple[RunResult, str | None]:
    if isinstance(value, RunResult):
        return value, value.source
    if isinstance(value, Mapping):
        return RunResult.from_json(value, "--until-decided"), None
    path = Path(value)
    if not path.exists():
        raise InputError(f"--until-decided {path}: no such file: give the baseline's results file")
    try:
        return load_run(path), os.path.abspath(path)
    except InputError as err:  # not a regular file, not JSON, not a results file: its own words
        raise InputError(f"--until-decided: {err}") from None


# ---- the baseline ---------------------------------------------------------------------------------

def _judges_of(info) -> list[tuple[str | None, str, str | None]]:
    """(name, provider, model) of each judge a results file recorded (a panel: its judges)."""
    listed = info.details.get("judges")
    if isinstance(listed, list) and listed:
        return [(j.get("name"), j.get("provider"), j.get("model")) for j in listed if isinstance(j, Mapping)]
    return [(None, info.provider, info.model)]


def _same_judges(recorded: list, now: list) -> bool:
    if len(recorded) != len(now):
        return False
    return all(r[0] == n[0] and r[1] == n[1] and (n[2] is None or r[2] == n[2])
               for r, n in zip(recorded, now, strict=True))


def _shown(judges: list) -> str:
    return ", ".join(("" if name is None else f"{name}=") + provider + (f"/{model}" if model else "")
                     for name, provider, model in judges)


def check_baseline(req: Request, question_ids: Sequence[str], k: int, judges: list | None = None) -> None:
    """The baseline of ``--until-decided`` against this run: the same question ids, every one
    graded, the same k, grading prompt and judge or panel (``judges``:
    :meth:`components.run.judges.Judges.judges_now`; None:
    not checked yet). Raises :class:`InputError` naming the difference."""
    base = req.baseline
    if base is None:
        return
    where = f"--until-decided {req.baseline_file or 'baseline'}"
    ids = {r.question_id for r in base.rows}
    wanted = set(question_ids)
    if ids != wanted:
        missing, extra = sorted(wanted - ids), sorted(ids - wanted)
        detail = "; ".join(part for part in (
            f"{len(missing)} of this run's questions are not in it (e.g. {', '.join(missing[:3])})" if missing else "",
            f"it has {len(extra)} questions this run does not (e.g. {', '.join(extra[:3])})" if extra else "") if part)
        raise InputError(f"{where}: the baseline is on other question ids ({detail}): run the same questions "
                         "(--ids/--limit) as the baseline")
    ungraded = [r.question_id for r in base.rows if r.llm_grade is None]
    if len(ungraded) == len(base.rows):
        raise InputError(f"{where}: the baseline has no grades: give a results file whose questions the judge graded")
    if ungraded and any(M.not_judged(r) for r in base.rows):
        raise InputError(f"{where}: the baseline was itself judged only until decided ({len(ungraded)} of "
                         f"{len(base.rows)} questions not judged): grade the baseline whole, running it again without "
                         "--until-decided or --target-ci")
    if ungraded:
        raise InputError(f"{where}: the baseline is not fully graded ({len(ungraded)} of {len(base.rows)} questions "
                         f"without a grade, e.g. {', '.join(ungraded[:3])}): finish it with --resume first")
    if base.run.k != k:
        raise InputError(f"{where}: the baseline retrieved k={base.run.k}, this run k={k}: run with --k {base.run.k}")
    if base.run.judge.prompt_sha256 not in (None, PROMPT_SHA256):
        raise InputError(f"{where}: the baseline was graded with another grading prompt (sha256 "
                         f"{base.run.judge.prompt_sha256[:12]}…, now {PROMPT_SHA256[:12]}…): grade both with the same "
                         "version of the benchmark")
    if judges is not None and not _same_judges(_judges_of(base.run.judge), judges):
        raise InputError(f"{where}: the baseline was graded by another judge ({_shown(_judges_of(base.run.judge))}; "
                         f"this run: {_shown(judges)}): grade with the same judge or panel (--judges)")


# ---- the run --------------------------------------------------------------------------------------

def judging_order(questions: Sequence[Question], seed: int = SEED) -> list[Question]:
    """The order the judge is called in: ``questions`` shuffled with ``seed`` (the same again on ``--resume``)."""
    order = list(questions)
    random.Random(seed).shuffle(order)
    return order


class Adaptive:
    """The state of one adaptive run: the judging order, the rows seen, when judging stopped."""

    procedure = ""

    def __init__(self, req: Request, questions: Sequence[Question], k: int) -> None:
        self.req, self.k = req, k
        self.order = judging_order(questions, req.seed)
        self.n = len(self.order)
        self.counts = Q.look_counts(self.n, req.block) if self.n else ()
        self.block = Q.block_size(self.n, req.block) if self.n else 0
        self.rows: dict[str, QuestionResult] = {}  # in judging order
        self.looks: list[dict] = []
        self.decided_after: int | None = None  # the questions judged at the look that decided

    # the loop's hooks
    def unjudged(self, q: Question) -> str | None:
        """``grade_error`` of a question judging no longer needs (None: judge it)."""
        return None if self.decided_after is None else f"{M.NOT_JUDGED}: decided after {self.decided_after}"

    def observe(self, row: QuestionResult) -> None:
        """A finished row, in judging order; after each block, a look."""
        if row.question_id in self.rows:  # the retry pass finished it again: the looks are made
            self.rows[row.question_id] = row
            return
        self.rows[row.question_id] = row
        if self.decided_after is None and len(self.rows) in self.counts:
            self._look(self.counts.index(len(self.rows)) + 1)

    def on_row(self, then: Callable | None) -> Callable[[QuestionResult, int, int], None]:
        """The loop's ``on_row``: observe, then ``then`` (e.g. the console line)."""
        def on_row(row: QuestionResult, i: int, n: int) -> None:
            self.observe(row)
            if then is not None:
                then(row, i, n)
        return on_row

    def in_question_order(self, rows: Sequence[QuestionResult], questions: Sequence[Question]) -> list[QuestionResult]:
        position = {q.id: i for i, q in enumerate(questions)}
        return sorted(rows, key=lambda r: position.get(r.question_id, len(position)))

    def judged(self) -> list[QuestionResult]:
        """The rows graded so far, in judging order."""
        return [r for r in self.rows.values() if r.llm_grade is not None]

    def _look(self, planned: int) -> None:
        raise NotImplementedError

    def _stop(self, questions: int) -> None:
        self.decided_after = questions
        left = self.n - questions
        if left:
            logger.info("Decided after {} of {} questions: the other {} are retrieved but not judged", questions,
                        self.n, left)

    def record(self, rows: Sequence[QuestionResult], spent: Mapping[str, Any], saved: Mapping[str, Any],
               other: Mapping[str, Any], *, status: str = "completed", resumed: int = 0) -> AdaptiveSection:
        """The results' ``adaptive`` block. ``spent`` {calls, cost_usd}: this session's judge calls;
        ``saved``: the questions left unjudged on purpose, and ``other``: every other question this
        session did not pay for (one it could not grade, or one a resumed run kept), both priced as
        ``--estimate`` prices them, so ``full`` is what grading every question would have cost.
        ``status``: the run's; a run that did not complete decides nothing it had not decided."""
        unjudged = sum(1 for r in rows if M.not_judged(r))
        graded = sum(1 for r in rows if r.llm_grade is not None)
        full_calls = spent["calls"] + saved["calls"] + other["calls"]
        costs = (spent["cost_usd"], saved["cost_usd"], other["cost_usd"])
        full_usd = None if any(c is None for c in costs) else sum(costs)
        return AdaptiveSection.built({
            "mode": self.req.mode, "procedure": self.procedure, "request": self.req.identity(), "seed": self.req.seed,
            "block": self.block,
            "questions": self.n, "judged": graded, "not_judged": unjudged, "ungraded": len(rows) - graded - unjudged,
            "resumed_rows": resumed,
            "decided": self.decided_after is not None, "decided_after": self.decided_after,
            **self._verdicts(completed=status == "completed"),
            "looks": self.looks,
            "calls": {"spent": spent["calls"], "saved": saved["calls"], "full": full_calls},
            "cost_usd": {"spent": spent["cost_usd"], "saved": saved["cost_usd"], "full": full_usd},
            "cost_note": "spent: this session's judge calls" + (f" (the {resumed} questions a resumed run kept were "
                                                                 "paid before)" if resumed else "")
                         + "; saved: the questions not judged, and full: every question, priced as --estimate "
                           "prices them (their requests built, output tokens assumed)",
        })

    def section(self, rows: Sequence[QuestionResult], spent: Mapping[str, Any], price: Callable[[set[str]], dict], *,
                selected: Sequence[Question], kept: Collection[str], status: str) -> dict:
        """The results' ``adaptive`` block of a run whose rows are ``rows``: :meth:`record` with the
        questions left unjudged and those this session did not pay for priced by ``price`` (ids →
        {calls, cost_usd}); ``kept``: the ids of the rows ``--resume`` took over."""
        skipped = {r.question_id for r in rows if M.not_judged(r)}
        paid = {r.question_id for r in rows if r.llm_grade is not None and r.question_id not in kept}
        unpaid = {q.id for q in selected} - paid - skipped  # kept by --resume, not graded, or never reached
        return self.record(rows, spent, price(skipped), price(unpaid), status=status, resumed=len(kept))

    def _verdicts(self, completed: bool) -> dict:
        raise NotImplementedError


class UntilDecided(Adaptive):
    """``--until-decided``: the group-sequential comparison with the baseline (module docstring)."""

    procedure = Q.PROCEDURE

    def __init__(self, req: Request, questions: Sequence[Question], k: int) -> None:
        super().__init__(req, questions, k)
        base = {r.question_id: r for r in req.baseline.rows}
        self.specs = {key: M.METRICS[key] for key in req.gated}
        self.base = {qid: {key: spec.value(row, k) for key, spec in self.specs.items()} for qid, row in base.items()}
        self.looked: list[int] = []  # paired questions at each look made
        self.decisions: dict[str, dict] = {}  # metric key → the look that decided it
        self.last: dict[str, Q.Look] = {}

    def differences(self) -> dict[str, list[float]]:
        out: dict[str, list[float]] = {key: [] for key in self.specs}
        for row in self.judged():
            for key, spec in self.specs.items():
                new, old = spec.value(row, self.k), self.base[row.question_id][key]
                out[key].append(float(new) - float(old) if new is not None and old is not None else math.nan)
        return out

    def _look(self, planned: int) -> None:
        diffs = self.differences()
        paired = len(self.judged())
        position = self.counts[planned - 1]
        if paired == 0 or (self.looked and paired <= self.looked[-1]):
            self.looks.append({"look": None, "judged": position, "paired": paired, "note": "no new grades: no look"})
            return
        later = [c for c in self.counts[planned:] if c > paired]
        design = Q.plan(self.n, alpha=self.req.alpha, metrics=len(self.specs), counts=[*self.looked, paired, *later])
        self.looked.append(paired)
        index = len(self.looked)
        entry: dict[str, Any] = {"look": index, "judged": position, "paired": paired,
                                 "boundary": design.bounds[index - 1], "metrics": {}}
        for key in self.specs:
            if key in self.decisions:
                continue
            values = [d for d in diffs[key] if math.isfinite(d)]
            if len(values) != paired:  # a metric some graded row has no value of (cannot happen for grades)
                continue
            result = Q.look(values, design, index, span=SPANS[self.specs[key].unit], margin=self.req.gated[key])
            self.last[key] = result
            entry["metrics"][key] = {"estimate": result.estimate, "interval": [result.low, result.high],
                                     "verdict": result.verdict}
            if result.decided:
                self.decisions[key] = self._decision(result, position)
        self.looks.append(entry)
        if len(self.decisions) == len(self.specs) and position < self.n:
            self._stop(position)
        elif len(self.decisions) == len(self.specs):
            self.decided_after = position

    @staticmethod
    def _decision(result: Q.Look, position: int) -> dict:
        return {"verdict": result.verdict, "decided": result.decided, "look": result.look, "looks": result.looks,
                "judged": position, "paired": result.n, "estimate": result.estimate,
                "interval": [result.low, result.high], "margin": result.margin, "rule": result.rule,
                "alpha_spent": result.alpha_spent, "summary": result.summary()}

    def _verdicts(self, completed: bool) -> dict:
        base = self.req.baseline
        metrics = {}
        for key, margin in self.req.gated.items():
            if key in self.decisions:
                metrics[key] = self.decisions[key]
                continue
            last = self.last.get(key)
            # every question done in a run that completed, the metric not decided
            finished = completed and len(self.rows) >= self.n
            verdict = (Q.NOT_SHOWN if margin is not None else Q.SAME) if finished else Q.NOT_YET
            metrics[key] = {**(self._decision(last, last.n) if last is not None else
                               {"estimate": None, "interval": None, "look": None, "paired": 0, "margin": margin}),
                            "verdict": verdict, "decided": False}
        return {"alpha": self.req.alpha, "alpha_per_metric": self.req.alpha / len(self.specs),
                "baseline": {"file": self.req.baseline_file, "run_id": base.run.id, "strategy": base.run.strategy,
                             "grades_sha256": grades_fingerprint(base.rows)},
                "metrics": metrics}


class TargetCI(Adaptive):
    """``--target-ci``: judge until each target metric's confidence sequence is narrow enough."""

    procedure = Q.CS_PROCEDURE

    def __init__(self, req: Request, questions: Sequence[Question], k: int) -> None:
        super().__init__(req, questions, k)
        self.specs = {key: M.METRICS[key] for key in req.targets}
        self.reached: dict[str, dict] = {}
        self.last: dict[str, dict] = {}

    def _interval(self, key: str) -> dict:
        spec = self.specs[key]
        values = [float(v) for v in (spec.value(r, self.k) for r in self.judged()) if v is not None]
        cs = Q.confidence_sequence(values, scale=M.UNIT_RANGES[spec.unit], alpha=self.req.alpha)
        return {"n": cs.n, "estimate": cs.estimate, "interval": [cs.low, cs.high], "half_width": cs.half_width,
                "target": self.req.targets[key]}

    def _look(self, planned: int) -> None:
        position = self.counts[planned - 1]
        entry: dict[str, Any] = {"look": planned, "judged": position, "paired": len(self.judged()), "metrics": {}}
        for key in self.specs:
            if key in self.reached:
                continue
            now = self._interval(key)
            self.last[key] = now
            entry["metrics"][key] = now
            if now["n"] and now["half_width"] <= self.req.targets[key]:
                self.reached[key] = {**now, "look": planned, "judged": position, "verdict": "reached"}
        self.looks.append(entry)
        if len(self.reached) == len(self.specs):
            if position < self.n:
                self._stop(position)
            else:
                self.decided_after = position

    def _verdicts(self, completed: bool) -> dict:
        metrics = {key: self.reached.get(key) or {**self.last.get(key, {"target": self.req.targets[key]}),
                                                  "verdict": "not reached", "look": None}
                   for key in self.specs}
        return {"alpha": self.req.alpha, "metrics": metrics}


def resume_options(recorded: Mapping | None, given: set[str] | frozenset[str]) -> dict[str, Any]:
    """``--resume`` of an adaptive run: each of its options not on the command line (``given``) as it
    recorded them (its journal header, or its results' ``adaptive.request``), so that it continues
    the same sequence. An option given with another value is refused later, with the others that
    must match (``RESUME_FIELDS`` of :mod:`components.run.benchmark_run`): the sequence's guarantee
    holds only for the looks and the gated metrics fixed before the first one."""
    if not isinstance(recorded, Mapping):
        return {}
    out: dict[str, Any] = {}
    if isinstance(recorded.get("until_decided"), str):
        if "--until-decided" not in given:
            out["until_decided"] = Path(recorded["until_decided"])
        gated = recorded.get("gated") if isinstance(recorded.get("gated"), Mapping) and recorded.get("gate") else {}
        if gated and not given & {"--fail-on", "--margin"}:  # the metrics gated, when they were named
            out["fail_on"] = "worse:" + ",".join(gated)
            out["margin"] = [f"{k}={v:g}" for k, v in gated.items() if isinstance(v, (int, float))]
    elif isinstance(recorded.get("target_ci"), Mapping) and recorded["target_ci"] and "--target-ci" not in given:
        out["target_ci"] = ",".join(f"{k}={v:g}" for k, v in recorded["target_ci"].items())
    return out


class JudgeEvery:
    """The plan of a run that judges every question (no ``--until-decided``, no ``--target-ci``): the
    null plan, with the hooks of :class:`Adaptive` doing nothing — the questions in their own order,
    every one judged, no ``adaptive`` section."""

    counts: tuple[int, ...] = ()  # one block: the whole run

    def __init__(self, questions: Sequence[Question]) -> None:
        self.order = list(questions)

    def unjudged(self, q: Question) -> str | None:
        return None

    def on_row(self, then: Callable | None) -> Callable | None:
        return then

    def in_question_order(self, rows: Sequence[QuestionResult], questions: Sequence[Question]) -> list[QuestionResult]:
        return list(rows)  # judged in question order already

    def section(self, rows: Sequence[QuestionResult], spent: Mapping[str, Any], price: Callable[[set[str]], dict], *,
                selected: Sequence[Question], kept: Collection[str], status: str) -> None:
        return None


Plan = Adaptive | JudgeEvery


def start(req: Request | JudgeAll | None, questions: Sequence[Question], k: int, judges: list | None = None) -> Plan:
    """The plan of a run of ``questions``: :class:`JudgeEvery` without a request (None: :data:`JUDGE_ALL`);
    else the adaptive state, the baseline checked first (against ``judges``,
    :meth:`components.run.judges.Judges.judges_now`, when given)."""
    return (req or JUDGE_ALL).plan(questions, k, judges)


def priced(ids: set[str], questions: Sequence[Question], retriever, k: int, judging, repeats: int,
           batch: bool = False) -> dict:
    """{calls, cost_usd} that judging the questions ``ids`` would cost, priced as ``--estimate``
    prices them (their requests built again: retrieval runs, nothing is sent; at the batch price with
    ``batch``)."""
    todo = [q for q in questions if q.id in ids]
    if not todo:
        return {"calls": 0, "cost_usd": 0.0}
    est = judging.kind.estimate(retriever, todo, k, judging, repeats=repeats, relevance=judging.relevance is not None)
    return {"calls": sum(r.calls for r in est.roles), "cost_usd": est.usd_batch if batch else est.usd}
