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
from dataclasses import replace
from itertools import combinations
from typing import Any

from components.stats.agreement import krippendorff_alpha, krippendorff_alpha_ci, pass_agreement, weighted_kappa
from components.analysis.aggregate import confidence_intervals
from components.analysis.judge_signal import JudgeSignal, member_signals, rows_signal
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


def _identity(spec: Mapping) -> tuple[str | None, str | None]:
    recorded = spec.get("judge") if isinstance(spec.get("judge"), Mapping) else {}
    return recorded.get("provider", spec.get("provider")), recorded.get("model", spec.get("model"))


def reconcile(runs: Sequence[RunResult], labels: Sequence[str]) -> tuple[list[RunResult], list[str]]:
    """Panel runs compared with single-judge runs: when every single-judge run has the same judge
    (provider and model) and every panel has it too, each panel run is read as that judge alone
    graded it (:func:`judge_view`); otherwise the panel runs keep their aggregate. Either way a
    warning says which. All panel runs, or none: the runs as they are. A panel of one judge is read
    as that judge's run first (its grades are that judge's)."""
    runs = [judge_view(r, judge_names(r)[0]) if is_panel(r) and len(judge_names(r)) == 1 else r for r in runs]
    panels = [i for i, r in enumerate(runs) if is_panel(r)]
    out = list(runs)
    if not panels or len(panels) == len(runs):
        return out, []
    singles = [r for i, r in enumerate(runs) if i not in panels]
    judges = {(r.run.judge.provider, r.run.judge.model) for r in singles}
    if len(judges) == 1:
        shared = next(iter(judges))
        names = [next((s["name"] for s in judge_specs(runs[i].run) if _identity(s) == shared), None) for i in panels]
        if all(names):
            for i, name in zip(panels, names, strict=True):
                out[i] = judge_view(runs[i], name)
            return out, [f"{labels[i]} is a panel run: compared on the grades of its judge {name} "
                         f"({' '.join(shared)}), the judge every run has"
                         for i, name in zip(panels, names, strict=True)]
    others = ", ".join(labels[i] for i in range(len(runs)) if i not in panels)
    return out, [f"{labels[i]} is a panel run and {others} had one judge that is not in its panel: its grades are the "
                 f"panel's aggregate ({runs[i].run.judge.details.get('aggregate', 'median')} of "
                 f"{', '.join(judge_names(runs[i]))}), compared with another judge's" for i in panels]
