"""``python benchmark.py calibrate RUN --labels labels.jsonl [--json out.json]``: the judge against people.

The rows of the labelling file (:mod:`components.calibration.labels`) that carry a ``human_grade``
are matched to RUN's rows by question id, and the command reports, on those n labelled rows:

* agreement of the grades: quadratic- and linear-weighted Cohen's κ (the quadratic one with its 95%
  percentile bootstrap interval over the labelled rows, and a line when that interval includes 0: the
  judge's grades do not agree with the labels beyond chance), Spearman's ρ, and the grade-by-grade
  table they are computed from (:mod:`components.stats.agreement`);
* pass/fail at the pass mark (total score = grade × the row's rank weight ≥ 7) of the judge
  against the human: the 2 × 2 table, the judge's sensitivity and specificity;
* the mean signed difference judge − human with its 95% paired percentile bootstrap interval
  (:func:`components.stats.statistics.paired_bootstrap_ci`, its fixed seed and resamples);

and, over all N graded rows of the run, the mean grade, mean total score and pass rate three ways,
each with a 95% interval: the judge alone (normal interval over N), the prediction-powered
estimate (PPI: the judge's mean over N corrected by the mean human − judge difference of the
labelled rows; formula in :mod:`components.stats.agreement`), and the human grades of the
labelled rows alone (normal interval over n), for scale. A normal interval can pass the end of
the figure's scale (1-10 for a grade, 0.6-10 for a total score, 0-100% for a pass rate): its bounds
are clipped to it, marked ``*``, and a footnote line names each bound clipped and where it was.

A label whose question is not in RUN, or is not graded there, is bad input (one line, exit 2,
nothing written), as is a grade outside 1-10 or not a whole number (:func:`read_labels`).

A panel run (``--judges``) is calibrated as the panel (its ``llm_grade``, the aggregate) and then as
each judge alone (:func:`components.analysis.panel.judge_view`), each with every figure above
(``judges`` in the JSON); a labelled question a judge did not grade is left out of that judge's.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from components.stats import statistics as S
from components.stats.agreement import (GRADES, LEVEL, Estimate, grade_table, normal_mean, pass_confusion,
                                           passes, ppi_mean, spearman_rho, weighted_kappa, weighted_kappa_ci)
from components.calibration.labels import Labels, read_labels
from components.analysis.panel import is_panel, judge_names, judge_view
from utils.errors import InputError
from utils.metrics import NOT_FOUND_WEIGHT, PASS_MARK, total_score
from utils.files.output import check_output, write_json_atomic
from utils.results import QuestionResult, RunResult, load_run, recorded_corpora

KAPPA_RESAMPLES = 2_000
KAPPA_SEED = 20251116
PPI_FORMULA = ("PPI = mean_N(judge) + mean_n(human - judge); Var = var_N(judge)/N + var_n(human - judge)/n "
               "(ddof 1); 95% interval = PPI +/- 1.959964 * sqrt(Var)")


@dataclass(frozen=True)
class Target:
    """A run-wide figure: its key, label, the row value of a (grade, rank), and its scale (the
    smallest and largest value a row can have: where its intervals are clipped)."""

    key: str
    label: str
    value: Callable[[int, int | None], float]
    digits: int
    scale: tuple[float, float]


TARGETS = (
    Target("mean_grade", "mean grade (1-10)", lambda grade, rank: float(grade), 2, (min(GRADES), max(GRADES))),
    Target("mean_total_score", "mean total score", lambda grade, rank: float(total_score(grade, rank)), 2,
           (min(GRADES) * NOT_FOUND_WEIGHT, max(GRADES))),
    Target("pass_rate", f"pass rate (total ≥ {PASS_MARK:g}), %", lambda grade, rank: 100.0 * passes(grade, rank), 1,
           (0.0, 100.0)),
)
ESTIMATES = (("judge_only", "judge only"), ("ppi", "PPI"), ("human_labelled", "human, labelled rows"))


@dataclass(frozen=True)
class Pairs:
    """The labelled rows (human, judge, rank, question id) and the judge's grades over every graded row."""

    human: list[int]
    judge: list[int]
    ranks: list[int | None]
    ids: list[str]
    all_judge: list[int]
    all_ranks: list[int | None]


def match(result: RunResult, labels: Labels, run_source: str, skip_ungraded: bool = False) -> Pairs:
    """Pair each human grade with the run's judge grade of the same question; raises :class:`InputError`
    (``skip_ungraded``: a labelled question without a judge grade is left out instead)."""
    rows: dict[str, QuestionResult] = {r.question_id: r for r in result.rows}
    graded = labels.graded
    if not graded:
        raise InputError(f"{labels.path}: no row has a human_grade yet: fill in human_grade (1-10) on the rows you "
                         "graded, then run calibrate again")
    human, judge, ranks, ids = [], [], [], []
    for label in graded:
        row = rows.get(label.question_id)
        where = f"{labels.path} line {label.line}"
        if row is None:
            raise InputError(f"{where}: question {label.question_id!r} is not in {run_source}: calibrate with the run "
                             "the labels were drawn from")
        if row.llm_grade is None and skip_ungraded:
            continue
        if row.llm_grade is None:
            raise InputError(f"{where}: question {label.question_id!r} has no judge grade in {run_source}: calibrate "
                             "with the run the labels were drawn from (its rows are graded)")
        human.append(label.human_grade)
        judge.append(row.llm_grade)
        ranks.append(row.rank)
        ids.append(label.question_id)
    everything = [r for r in result.rows if r.llm_grade is not None]
    return Pairs(human, judge, ranks, ids, [r.llm_grade for r in everything], [r.rank for r in everything])


def calibrate(result: RunResult, labels: Labels, run_source: str) -> dict:
    """Every figure of the command (module docstring), as the ``--json`` document; a panel run's
    has each judge's under ``judges``."""
    doc = _figures(result, labels, run_source)
    if is_panel(result):
        doc["judges"] = {name: {**_figures(judge_view(result, name), labels, run_source, skip_ungraded=True),
                                "judge": name} for name in judge_names(result)}
    return doc


def _figures(result: RunResult, labels: Labels, run_source: str, skip_ungraded: bool = False) -> dict:
    p = match(result, labels, run_source, skip_ungraded)
    if not p.human:
        return {"judge": f"{result.run.judge.provider}/{result.run.judge.model}", "labelled": 0}
    n, big_n = len(p.human), len(p.all_judge)
    differences = [j - h for h, j in zip(p.human, p.judge, strict=True)]
    ci = S.paired_bootstrap_ci(p.human, p.judge)
    confusion = pass_confusion(p.human, p.judge, p.ranks)
    estimates = {}
    for t in TARGETS:
        all_values = [t.value(g, r) for g, r in zip(p.all_judge, p.all_ranks, strict=True)]
        judge_values = [t.value(g, r) for g, r in zip(p.judge, p.ranks, strict=True)]
        human_values = [t.value(g, r) for g, r in zip(p.human, p.ranks, strict=True)]
        estimates[t.key] = {name: _within(e, t.scale) for name, e in (
            ("judge_only", normal_mean(all_values)), ("ppi", ppi_mean(all_values, judge_values, human_values)),
            ("human_labelled", normal_mean(human_values)))}
    judge = result.run.judge
    header = labels.header or {}
    return {
        "run": run_source, "run_id": result.run.id, "labels": labels.path, "judge": f"{judge.provider}/{judge.model}",
        "labels_seed": header.get("seed"), "labelled": n, "graded": big_n,
        "not_yet_labelled": len(labels.rows) - n, "level": LEVEL,
        "kappa_quadratic": weighted_kappa(p.human, p.judge), "kappa_quadratic_ci95": _kappa_ci(p.human, p.judge),
        "kappa_linear": weighted_kappa(p.human, p.judge, weights="linear"),
        "spearman_rho": spearman_rho(p.human, p.judge),
        "grade_table": {"rows": "human grade", "columns": "judge grade", "grades": list(GRADES),
                        "counts": grade_table(p.human, p.judge)},
        "mean_difference": {"value": sum(differences) / n, "ci95": list(ci) if ci else None,
                            "definition": "judge - human, mean over the labelled rows",
                            "method": f"paired {S.METHOD} bootstrap", "resamples": S.RESAMPLES,
                            "seed": S.BOOTSTRAP_SEED},
        "mean_abs_difference": sum(abs(d) for d in differences) / n,
        "pass_fail": {"pass_mark": PASS_MARK, **confusion.to_json()},
        "estimates": estimates, "ppi_formula": PPI_FORMULA,
    }


def _kappa_ci(human: list[int], judge: list[int]) -> list[float] | None:
    """The quadratic κ's 95% percentile bootstrap interval over the labelled rows (:data:`KAPPA_RESAMPLES`,
    seed :data:`KAPPA_SEED`)."""
    ci = weighted_kappa_ci(human, judge, resamples=KAPPA_RESAMPLES, seed=KAPPA_SEED)
    return None if ci is None else [round(ci[0], 6) + 0.0, round(ci[1], 6) + 0.0]  # + 0.0: never -0.0


def kappa_lines(doc: dict) -> list[str]:
    """The quadratic κ's line with its interval, and a line when the interval includes 0."""
    ci = doc.get("kappa_quadratic_ci95")
    shown = f"  [95% CI {ci[0]:+.3f}, {ci[1]:+.3f}]" if ci else ""
    lines = [f"  quadratic-weighted Cohen's kappa  {_num(doc['kappa_quadratic'])}{shown}"]
    if ci and ci[0] <= 0.0 <= ci[1]:
        lines.append("    the interval includes 0: the judge's grades do not agree with the labels beyond chance")
    return lines


def _within(e: Estimate | None, scale: tuple[float, float]) -> dict | None:
    return None if e is None else e.within(*scale).to_json()


# --------------------------------------------------------------------------- the console table

def _num(value: float | None, digits: int = 3, sign: bool = False) -> str:
    if value is None:
        return "n/a"
    return f"{value:+.{digits}f}" if sign else f"{value:.{digits}f}"


def _pct(value: float | None) -> str:
    return "n/a" if value is None else f"{100 * value:.1f}%"


def _est(e: dict | None, digits: int) -> str:
    """``value [low, high]``, a bound clipped to the scale marked ``*``."""
    if e is None:
        return "n/a"
    lo, hi = (f"{bound:.{digits}f}" + ("*" if side in e["clipped"] else "")
              for bound, side in zip(e["ci95"], ("low", "high"), strict=True))
    return f"{e['value']:.{digits}f} [{lo}, {hi}]"


def _clipped_note(doc: dict) -> str | None:
    """The footnote line naming every bound clipped to its scale (None when none was)."""
    notes = []
    for t in TARGETS:
        for key, name in ESTIMATES:
            e = doc["estimates"][t.key][key]
            for side in (e or {}).get("clipped", ()):
                i = 0 if side == "low" else 1
                notes.append(f"{t.label.split(' (')[0]}, {name}: {side} {e['ci95_unclipped'][i]:.{t.digits}f} "
                             f"-> {e['ci95'][i]:.{t.digits}f}")
    if not notes:
        return None
    return "  * clipped to the scale (the normal interval passes its end): " + "; ".join(notes)


def _grade_table_lines(table: dict) -> list[str]:
    """The grade-by-grade table: a row per human grade, a column per judge grade (blank: no row)."""
    grades = table["grades"]
    lines = ["Grade by grade (rows: human grade, columns: judge grade; counts of labelled rows)",
             "  human \\ judge" + "".join(f"{g:>4}" for g in grades) + "   all"]
    for g, counts in zip(grades, table["counts"], strict=True):
        cells = "".join(f"{c:>4}" if c else f"{'.':>4}" for c in counts)
        lines.append(f"  {g:>13}{cells}{sum(counts):>6}")
    columns = [sum(col) for col in zip(*table["counts"], strict=True)]
    lines.append(f"  {'all':>13}" + "".join(f"{c:>4}" for c in columns) + f"{sum(columns):>6}")
    return lines


def format_report(doc: dict) -> str:
    n, big_n = doc["labelled"], doc["graded"]
    md = doc["mean_difference"]
    ci = md["ci95"]
    pf = doc["pass_fail"]
    lines = [f"Calibration of the judge {doc['judge']} against {n} human grade(s) (run {doc['run']}, labels "
             f"{doc['labels']})", "",
             f"Agreement on the {n} labelled row(s)",
             *kappa_lines(doc),
             f"  linear-weighted Cohen's kappa     {_num(doc['kappa_linear'])}",
             f"  Spearman's rho                    {_num(doc['spearman_rho'])}",
             f"  mean difference judge - human     {_num(md['value'], 2, sign=True)}"
             + (f"  [95% CI {ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "  [95% CI n/a: fewer than 2 rows]")
             + f"  (paired bootstrap, {md['resamples']:,} resamples, seed {md['seed']})",
             f"  mean absolute difference          {doc['mean_abs_difference']:.2f}", "",
             *_grade_table_lines(doc["grade_table"]), "",
             f"Pass/fail at total score >= {pf['pass_mark']:g} (grade x rank weight)   human pass   human fail",
             f"  judge pass{'':45}{pf['both_pass']:>10}   {pf['judge_only_pass']:>10}",
             f"  judge fail{'':45}{pf['human_only_pass']:>10}   {pf['both_fail']:>10}",
             f"  sensitivity {_pct(pf['sensitivity'])} · specificity {_pct(pf['specificity'])} · agreement "
             f"{_pct(pf['agreement'])}", "",
             f"The whole run: {big_n} graded row(s), 95% intervals",
             f"  {'':<28}{'judge only (N=' + str(big_n) + ')':<26}{'PPI (judge + human correction)':<32}"
             f"{'human, labelled rows (n=' + str(n) + ')'}"]
    for t in TARGETS:
        e = doc["estimates"][t.key]
        lines.append(f"  {t.label:<28}{_est(e['judge_only'], t.digits):<26}{_est(e['ppi'], t.digits):<32}"
                     f"{_est(e['human_labelled'], t.digits)}")
    note = _clipped_note(doc)
    lines += [note] if note else []
    lines += [f"  {doc['ppi_formula']}"]
    if doc["not_yet_labelled"]:
        lines.append(f"  ({doc['not_yet_labelled']} row(s) of the labelling file have no human_grade yet: left out)")
    return "\n".join(lines) + "\n"


def calibrate_files(run: Path, labels: Path, *, json_path: Path | None = None, secrets: Iterable[str] = ()) -> dict:
    """``calibrate``'s work: the judge of the results file ``run`` against the human grades of the
    labelling file ``labels``: the report printed, and written to ``json_path`` (``secrets``
    redacted) when given. Returns the figures (:func:`calibrate`). Raises :class:`InputError`."""
    result = load_run(run, secrets)
    if json_path is not None:
        json_path = check_output(json_path, option="--json", example="calibration.json",
                                 inputs=[("the run", run), ("the labels file", labels)],
                                 recorded_corpora=recorded_corpora([result]))
    graded = read_labels(labels, secrets)
    header_run = (graded.header or {}).get("run_id")
    if header_run and result.run.id and header_run != result.run.id:
        logger.warning("{} was drawn from run {}, and {} is run {}: the questions are matched by id all the same",
                       labels, header_run, run, result.run.id)
    doc = calibrate(result, graded, str(run))
    sys.stdout.write(format_report(doc))
    for judge in (doc.get("judges") or {}).values():  # a panel run: each judge alone, after the panel
        sys.stdout.write("\n" + (format_report(judge) if judge.get("labelled") else
                                 f"Calibration of the judge {judge['judge']}: it graded none of the labelled rows\n"))
    sys.stdout.flush()
    if json_path is not None:
        write_json_atomic(json_path, doc, secrets=secrets)
        logger.info("Calibration written to {}", json_path)
    return doc
