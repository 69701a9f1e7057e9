"""A panel run read back: each judge's view of it, and how far the judges agree (``panel`` in the results).

A panel run's rows keep every judge's grade (``grades_by_judge``); ``llm_grade`` is the panel's
aggregate. :func:`judge_rows` / :func:`judge_view` give the run as one judge alone graded it (that
judge's grade as ``llm_grade``, the total score recomputed from it, its repeats as ``llm_grades``),
which is how ``compare``'s certificate, ``calibrate`` and the per-judge metrics read a panel.

:func:`panel_section` is the results' ``panel`` object:

* ``judges`` (in panel order) and ``aggregate`` (median or mean); ``graded_by``: how many
  questions that many judges graded;
* ``agreement.pairs``: per pair of judges, on the questions both graded, the quadratic-weighted
  κ and the share of pass/fail agreement at each pass mark (:data:`utils.metrics.PASS_THRESHOLDS`,
  7 the headline) on the total score (grade × the row's rank weight);
* ``agreement.alpha_ordinal``: Krippendorff's α (ordinal) over the questions, with a percentile
  bootstrap 95% interval over questions (:data:`ALPHA_RESAMPLES`, seed :data:`ALPHA_SEED`);
* ``per_judge``: each judge's questions graded, unusable reason (if it became unusable), and its
  judge-level metrics (mean grade, mean total, pass rates) with 95% intervals — the run's own
  bootstrap, two-level with ``--judge-repeats`` (the judge-noise intervals), per judge — and its
  signal check (``judge_signal``: :mod:`components.analysis.judge_signal`).

Formulas: :mod:`components.stats.agreement`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

from components.stats.agreement import krippendorff_alpha, krippendorff_alpha_ci, pass_agreement, weighted_kappa
from components.analysis.aggregate import confidence_intervals
from components.analysis.judge_signal import JudgeSignal, member_signals, rows_signal
from components.analysis.panel_grade import MEDIAN, aggregate, round_half_up
from utils import metrics as M
from utils.console import escape_control
from utils.records.sections import AlphaOrdinal, JudgePair, PanelAgreement, PanelJudge, PanelSection
from utils.results import JudgeGrade, JudgeInfo, QuestionResult, RunInfo, RunResult

ALPHA_RESAMPLES = 2_000
ALPHA_SEED = 20251115
PANEL_PROVIDER = "panel"  # run.judge.provider of a panel run


def is_panel(result: RunResult) -> bool:
    return any(r.grades_by_judge is not None for r in result.rows)


def judge_specs(run: RunInfo) -> list[dict]:
    """The panel's judges as ``run.judge`` records them (name, provider, model, ... and each one's
    ``judge`` record); [] for a single judge's run."""
    judges = run.judge.details.get("judges") if run.judge.provider == PANEL_PROVIDER else None
    return [j for j in judges if isinstance(j, Mapping) and isinstance(j.get("name"), str)] if isinstance(
        judges, list) else []


def judge_names(result: RunResult) -> list[str]:
    """The panel's judges in panel order (as recorded; else as the rows name them)."""
    recorded = [j["name"] for j in judge_specs(result.run)]
    return recorded or list(dict.fromkeys(n for r in result.rows for n in (r.grades_by_judge or {})))


def judge_info(run: RunInfo, name: str) -> JudgeInfo:
    """The ``run.judge`` record of one judge of the panel (provider and model when recorded)."""
    for spec in judge_specs(run):
        if spec["name"] == name:
            recorded = spec.get("judge")
            if isinstance(recorded, Mapping):
                return JudgeInfo.from_json(recorded, f"run.judge.judges[{name}].judge")
            return JudgeInfo(provider=str(spec.get("provider") or "?"), model=str(spec.get("model") or name))
    return JudgeInfo(provider="?", model=name)


def _judge_row(row: QuestionResult, name: str) -> QuestionResult:
    grade = (row.grades_by_judge or {}).get(name) or JudgeGrade(error="not_graded: this judge has no grade here")
    return replace(row, llm_grade=grade.grade, llm_reasoning=grade.reasoning,
                   grade_error=grade.error if grade.grade is None else None, llm_raw_reply=grade.raw_reply,
                   total_score=M.total_score(grade.grade, row.rank), llm_grades=grade.grades,
                   grade_spread=None, grade_sd=None, judge_model=grade.model, input_tokens=grade.input_tokens,
                   output_tokens=grade.output_tokens, cost_usd=grade.cost_usd, grades_by_judge=None,
                   panel_grade=None, panel_graded=None)


def judge_rows(rows: Sequence[QuestionResult], name: str) -> list[QuestionResult]:
    """The rows as judge ``name`` alone graded them (module docstring)."""
    return [_judge_row(r, name) for r in rows]


def judge_view(result: RunResult, name: str) -> RunResult:
    """The run as judge ``name`` alone graded it: its rows and its ``run.judge``; the aggregates are
    those of the rows given to it (not recomputed: compare, calibrate and the certificate read rows)."""
    return replace(result, rows=judge_rows(result.rows, name),
                   run=replace(result.run, judge=judge_info(result.run, name)), panel=None)


def _pairs(rows: Sequence[QuestionResult], names: Sequence[str]) -> list[JudgePair]:
    out = []
    for a, b in combinations(names, 2):
        both = [(r.grades_by_judge[a].grade, r.grades_by_judge[b].grade, r.rank) for r in rows
                if r.grades_by_judge and a in r.grades_by_judge and b in r.grades_by_judge
                and r.grades_by_judge[a].grade is not None and r.grades_by_judge[b].grade is not None]
        ga, gb, ranks = [x[0] for x in both], [x[1] for x in both], [x[2] for x in both]
        kappa = weighted_kappa(ga, gb)
        out.append(JudgePair([a, b], len(both), None if kappa is None else round(kappa, 6),
                             {f"{mark:g}": None if not both else round(pass_agreement(ga, gb, ranks, mark), 6)
                              for mark in M.PASS_THRESHOLDS},
                             round(sum(y - x for x, y in zip(ga, gb, strict=True)) / len(both), 6) if both else None))
    return out


def _per_judge(rows: Sequence[QuestionResult], names: Sequence[str], k: int,
               failures: Mapping[str, str]) -> dict[str, PanelJudge]:
    chosen = [m for m in M.metrics(level="judge") if m.pooled is None]
    out = {}
    for name in names:
        mine = judge_rows(rows, name)
        ci95, _ = confidence_intervals(mine, k, chosen)
        errors = Counter(r.grade_error.split(":", 1)[0] for r in mine if r.grade_error)
        out[name] = PanelJudge(sum(1 for r in mine if r.llm_grade is not None),
                               {m.key: m.aggregate(mine, k) for m in chosen}, ci95, dict(sorted(errors.items())),
                               failures.get(name), judge_signal=rows_signal(mine, k))
    return out


def panel_section(rows: Sequence[QuestionResult], names: Sequence[str], method: str, k: int,
                  failures: Mapping[str, str] | None = None) -> PanelSection:
    """The results' ``panel`` section (module docstring); ``failures``: judge → why it became unusable."""
    units = [[(r.grades_by_judge or {}).get(n, JudgeGrade()).grade for n in names] for r in rows]
    alpha = krippendorff_alpha(units)
    ci = krippendorff_alpha_ci(units, resamples=ALPHA_RESAMPLES, seed=ALPHA_SEED) if alpha is not None else None
    graded_by = Counter(r.panel_graded or 0 for r in rows)
    alpha_ordinal = AlphaOrdinal(None if alpha is None else round(alpha, 6),
                                 None if ci is None else [round(ci[0], 6), round(ci[1], 6)],
                                 sum(1 for u in units if sum(g is not None for g in u) > 1),
                                 "percentile bootstrap over questions", ALPHA_RESAMPLES, ALPHA_SEED)
    return PanelSection(list(names), method, {str(n): graded_by[n] for n in sorted(graded_by, reverse=True)},
                        PanelAgreement(list(M.PASS_THRESHOLDS), _pairs(rows, names), alpha_ordinal),
                        _per_judge(rows, names, k, failures or {}))


def _num(value: Any, digits: int = 2) -> str:
    return "n/a" if not isinstance(value, (int, float)) or isinstance(value, bool) else f"{value:.{digits}f}"


def _with_ci(mine: PanelJudge, key: str, digits: int, unit: str = "") -> str:
    """A judge's figure with its interval; n/a for a judge that graded nothing (no grade figures, not 0)."""
    if not mine.graded:
        return "n/a"
    interval = mine.ci95.get(key)
    shown = f" [{_num(interval[0], digits)}, {_num(interval[1], digits)}]" if interval else ""
    return _num(mine.metrics.get(key), digits) + shown + unit


def summary_lines(panel: PanelSection | None) -> list[str]:
    """The panel's lines of the run's summary: the aggregate, each judge's mean grade and pass rate
    with their intervals and its signal check, each pair's κ and pass/fail agreement, α; each unusable
    judge; a WARNING line per uninformative judge."""
    if panel is None:
        return []
    names = panel.judges
    lines = [f"panel            {len(names)} judge{'s' * (len(names) != 1)}, llm_grade = their {panel.aggregate} "
             "(rounded half up); " + ", ".join(f"{n} graded by {k}" for k, n in panel.graded_by.items())]
    width = max([10, *(len(escape_control(n)) for n in names)])
    for name in names:
        mine = panel.per_judge.get(name) or PanelJudge(0, {}, {}, {}, None)

        line = (f"  {escape_control(name):<{width}} graded {mine.graded}, grade {_with_ci(mine, 'avg_llm_grade', 2)}, "
                f"pass ≥ 7 {_with_ci(mine, 'pass_rate_7', 1, '%')}")
        if mine.unusable:
            line += f"; UNUSABLE: {escape_control(mine.unusable)[:200]}"
        lines.append(line + _signal_text(mine.judge_signal))
    for pair in panel.agreement.pairs:
        a, b = (escape_control(x) for x in pair.judges)
        lines.append(f"  {a} ~ {b}: κ {_num(pair.kappa_quadratic, 3)}, pass/fail agree "
                     + ", ".join(f"{_num(100 * v if v is not None else None, 1)}% at {mark}"
                                 for mark, v in pair.pass_agreement.items())
                     + f" (n {pair.n})")
    alpha = panel.agreement.alpha_ordinal
    interval = alpha.ci95
    lines.append(f"  Krippendorff's α (ordinal) {_num(alpha.value, 3)}"
                 + (f" [{_num(interval[0], 3)}, {_num(interval[1], 3)}]" if interval else "")
                 + f" over {alpha.questions} questions")
    return lines + [escape_control(w) for name, signal in member_signals(panel).items()
                    if (w := signal.warning(f"the panel's judge {name}"))]


def _signal_text(signal: JudgeSignal | None) -> str:
    """``, signal informative (grade gap +6.10 [+5.20, +7.00])`` of a judge's line (its check, when it has one)."""
    if signal is None:
        return ""
    gap = "" if signal.gap is None else f" (grade gap {signal.gap:+.2f}" + (
        f" [{signal.ci95[0]:+.2f}, {signal.ci95[1]:+.2f}])" if signal.ci95 else ")")
    return f", signal {signal.verdict}{gap}"


def _identity(spec: Mapping) -> tuple[str | None, str | None, str | None]:
    """A panel member's judge: provider, model and endpoint (the host its record names; None: the provider's
    public API). Never the model alone: two endpoints may serve one model id."""
    recorded = spec.get("judge") if isinstance(spec.get("judge"), Mapping) else {}
    return (recorded.get("provider", spec.get("provider")), recorded.get("model", spec.get("model")),
            recorded.get("base_url_host"))


def _single_identity(run: RunResult) -> tuple[str | None, str | None, str | None]:
    judge = run.run.judge
    return judge.provider, judge.model, judge.details.get("base_url_host")


def _member(run: RunResult, judge: tuple[str | None, str | None, str | None]) -> str | None:
    """The name of the one judge of ``run``'s panel that is ``judge``; None when none is, or several are."""
    names = [s["name"] for s in judge_specs(run.run) if _identity(s) == judge]
    return names[0] if len(names) == 1 else None


def reconcile(runs: Sequence[RunResult], labels: Sequence[str]) -> tuple[list[RunResult], list[str]]:
    """Panel runs compared with single-judge runs: when every single-judge run has the same judge
    (provider, model and endpoint) and every panel has exactly one judge that is it, each panel run is
    read as that judge alone graded it (:func:`judge_view`); otherwise the panel runs keep their
    aggregate. Either way a warning says which. All panel runs, or none: the runs as they are. A panel
    of one judge is read as that judge's run first (its grades are that judge's)."""
    runs = [judge_view(r, judge_names(r)[0]) if is_panel(r) and len(judge_names(r)) == 1 else r for r in runs]
    panels = [i for i, r in enumerate(runs) if is_panel(r)]
    out = list(runs)
    if not panels or len(panels) == len(runs):
        return out, []
    judges = {_single_identity(r) for i, r in enumerate(runs) if i not in panels}
    if len(judges) == 1:
        shared = next(iter(judges))
        names = [_member(runs[i], shared) for i in panels]
        if all(names):
            for i, name in zip(panels, names, strict=True):
                out[i] = judge_view(runs[i], name)
            return out, [f"{labels[i]} is a panel run: compared on the grades of its judge {name} "
                         f"({' '.join(str(x) for x in shared[:2])}), the judge every run has"
                         for i, name in zip(panels, names, strict=True)]
    others = ", ".join(labels[i] for i in range(len(runs)) if i not in panels)
    return out, [f"{labels[i]} is a panel run and {others} had one judge that is not in its panel: its grades are the "
                 f"panel's aggregate ({runs[i].run.judge.details.get('aggregate', 'median')} of "
                 f"{', '.join(judge_names(runs[i]))}), compared with another judge's" for i in panels]


@dataclass(frozen=True)
class SharedPanels:
    """Panel runs read on the judges they all have (:func:`on_shared_judges`): the runs, the warning that
    their panels differ (none when they do not), and the judges left out (not in every run's panel)."""

    runs: list[RunResult]
    warnings: list[str]
    not_shared: list[str]


def _shared_row(row: QuestionResult, names: Sequence[str], method: str) -> QuestionResult:
    """A panel row aggregated again over ``names`` only (as the loop aggregates: the judges of them that
    graded; none graded: no grade, the first one's error)."""
    if row.grades_by_judge is None:
        return row
    kept = {n: g for n, g in row.grades_by_judge.items() if n in names}
    grades = [g.grade for g in kept.values() if g.grade is not None]
    if not grades:
        error = next((g.error for g in kept.values() if g.error), None) or row.grade_error
        return replace(row, llm_grade=None, grade_error=error, total_score=None, grades_by_judge=kept,
                       panel_grade=None, panel_graded=0)
    value = aggregate(grades, method)
    grade = round_half_up(value)
    return replace(row, llm_grade=grade, grade_error=None, total_score=M.total_score(grade, row.rank),
                   grades_by_judge=kept, panel_grade=round(value, 4), panel_graded=len(grades))


def _shared_run(result: RunResult, names: Sequence[str]) -> RunResult:
    """``result`` as the panel of ``names`` alone graded it, aggregated with the run's own method; one judge:
    that judge's run (:func:`judge_view`)."""
    if len(names) == 1:
        return judge_view(result, names[0])
    method = str(result.run.judge.details.get("aggregate") or MEDIAN)
    specs = [j for j in judge_specs(result.run) if j["name"] in names]
    details = {**result.run.judge.details, "judges": specs} if specs else result.run.judge.details
    judge = replace(result.run.judge, model=",".join(names), details=details)
    return replace(result, rows=[_shared_row(r, names, method) for r in result.rows],
                   run=replace(result.run, judge=judge), panel=None)


def on_shared_judges(runs: Sequence[RunResult], labels: Sequence[str]) -> SharedPanels:
    """Panel runs whose panels differ, compared on what they share: each run's grades aggregated again over
    the judges every run has (its own method: median or mean), and one warning naming the judges each run
    alone has: ``the runs' panels differ: harsh only in <run>``. Runs that are not all panel runs, or whose
    panels are the same, are returned as they are."""
    if len(runs) < 2 or not all(is_panel(r) for r in runs):
        return SharedPanels(list(runs), [], [])
    members = [judge_names(r) for r in runs]
    shared = [n for n in members[0] if all(n in m for m in members[1:])]
    every = list(dict.fromkeys(n for m in members for n in m))
    not_shared = [n for n in every if n not in shared]
    if not not_shared:
        return SharedPanels(list(runs), [], [])
    where = "; ".join(f"{escape_control(n)} only in "
                      + ", ".join(label for label, m in zip(labels, members, strict=True) if n in m)
                      for n in not_shared)
    if not shared:
        return SharedPanels(list(runs), [f"the runs' panels differ: {where}; they share no judge, so their grades "
                                         "are not comparable"], not_shared)
    method = ", ".join(dict.fromkeys(str(r.run.judge.details.get("aggregate") or MEDIAN) for r in runs))
    return SharedPanels([_shared_run(r, shared) for r in runs],
                        [f"the runs' panels differ: {where}; the panel's grades and verdicts are the {method} of the "
                         f"judges every run has ({', '.join(escape_control(n) for n in shared)})"], not_shared)
