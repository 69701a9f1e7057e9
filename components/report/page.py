"""``python benchmark.py report RUN [RUN ...] -o report.html``: one self-contained HTML file.

The page holds, per run: its metadata (judge, model, hashes, cost when known), the metric table
(with 95% intervals where the run has ``ci95``), four plots — needle rank distribution, grade
histogram, grade against rank (the judge/needle disagreement quadrants of the diagnosis rules),
per-group bars — and a per-question table whose rows expand to the retrieved chunks' text, the
judge's reasoning and the diagnosis, filterable by diagnosis tag (and by a link:
``report.html#tag=chunking_split`` filters, ``#open=q_006`` opens that question's row). With several
runs it begins with their comparison (:func:`render_comparison` of the JSON of
``components.analysis.compare.compare_runs``, whose labels then name the runs on the whole page):
the runs and reference systems, their means (the best value of each metric in bold), the
recommendations (best quality, fastest, best balance: :mod:`components.analysis.recommendations`),
one table per compared pair with its verdicts, the questions that got worse and better, and a
paired-delta plot of the per-question RR and total-score differences.

Inline CSS, inline SVG (drawn by :mod:`components.report.svg`) and a little inline JavaScript (expand,
filter); no network access, no external file: it opens from disk. Every text from the results is
HTML-escaped. Schema-1 files (no chunk text, no diagnosis, no intervals) render with what they
have: a missing field is shown as absent, never guessed.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from loguru import logger

from components.analysis.aggregate import GROUP_FIELDS
from components.analysis.compare import compare_runs, default_labels, question_view
from components.analysis.comparison import BETTER, WORSE
from components.analysis.diagnosis import FIXES, HIGH_GRADE_MIN, LOW_GRADE_MAX, TAGS, count_carrying, count_tags
from components.analysis.recommendations import best_columns
from components.analysis.recommendations import render_html as render_recommendations
from components.report.audit import audit_section
from components.report.adaptive import comparison_html as adaptive_comparison, run_html as adaptive_run
from components.report.panel import certificate_html, run_html
from components.report.svg import CHAR_WIDTH, LEGEND_ROW, Chart, nice_ticks, side_by_side, tick_label
from components.judges.providers import is_proxy_judge
from utils import metrics as M
from utils.console import CLAMPED_NOTE, NOTHING_GRADED, clamped_count, escape_control, format_ci, is_number, shorten
from utils.records.audit_file import read_audit
from utils.records.judge_signal import member_signals, run_judge_name, signal_of
from utils.metrics import PASS_MARK
from utils.files.output import check_output, write_text_atomic
from utils.quality_bands import band_text, quality_bands
from utils.redaction import Redactor
from utils.results import RunResult, load_run, recorded_corpora

MAX_GROUP_VALUES = 12  # a field with more values than this is shown as its largest groups plus "other"
MAX_PLOTTED_RANK = 20  # ranks beyond this share one bar (and one column of the grade-against-rank plot)
DELTA_METRICS = (("mrr", "MRR"), ("avg_total_score", "total score"))  # (metric key, label) of the paired-delta plot
# beside a judge metric's name when the offline judge graded: its grades are the lexical proxy's
PROXY_MARK = (' <span class="muted proxy" title="graded by the offline lexical judge: key-term overlap, not an LLM">'
              "(lexical proxy)</span>")
CARDS = ("hit_at_1_rate", "mrr", "avg_llm_grade", "pass_rate_7")  # the metric keys shown large at the top of a run
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f]")
_COLORS = {"bar": "#3b6ea8", "good": "#2e8b57", "bad": "#c0392b", "warn": "#e67e22", "grey": "#8a8f98"}


def write_report(runs: Sequence[Path], output: Path, *, labels: Path | None = None,
                 secrets: Iterable[str] = (), audit: Path | None = None, env: Mapping[str, str] | None = None) -> Path:
    """``report``'s work: the page of the results files ``runs`` (with their comparison when there
    are several, ``labels``' rows and the judge ``audit``'s section when given) written to ``output``
    (a folder gets report.html) with ``secrets`` redacted, and the keys ``env`` holds in the variables the
    runs' panel judges name (their ``api_key_env``). Returns the file written. Raises :class:`InputError`."""
    from components.judges.panel import recorded_keys

    # on what is read, before anything is escaped (a results file from elsewhere may hold the key)
    redact = Redactor(secrets)
    results = [load_run(path, redact.secrets) for path in runs]
    if keys := [k for k in recorded_keys(results, env or {}) if k not in redact.secrets]:
        redact = Redactor((*redact.secrets, *keys))  # read again, those keys redacted too
        results = [load_run(path, redact.secrets) for path in runs]
    audited = read_audit(audit) if audit is not None else None  # checked before anything is written
    output = check_output(output, option="-o", example="report.html",
                          inputs=[*(("a results file", p) for p in runs),
                                  *((("the labels file", labels),) if labels else ()),
                                  *((("the judge audit", audit),) if audit else ())],
                          recorded_corpora=recorded_corpora(results))
    names = [redact(run_label(r, p)) for r, p in zip(results, runs, strict=True)]
    comparison = None
    if len(results) > 1:  # compare's labels (strategies when distinct) name the runs everywhere on the page
        names = default_labels(results, names)
        comparison = compare_runs(results, names, sources=[str(p) for p in runs]).to_json()
    extra = labels_section(labels, redact.secrets) + (audit_section(audited, results, names) if audited else "")
    page = render_report(results, names, comparison, extra=extra)
    page = redact(page)  # and the page again: its escaped spellings too (utils.redaction)
    write_text_atomic(output, page)
    logger.info("Report written to {} ({} run{}, {} KB)", output, len(results), "s" if len(results) > 1 else "",
                round(len(page.encode()) / 1024))
    return output


# ---- input

def run_label(result: RunResult, path: Path | str) -> str:
    return str(result.run.id or Path(path).stem)


def _rows(report: Mapping) -> list[dict]:
    """The rows, with ``rank`` derived from ``retrieved`` and the needles where a row lacks it."""
    rows = []
    for row in report.get("results", []):
        if not isinstance(row, Mapping):
            continue
        row = dict(row)
        needles = row.get("needle_doc_ids") or ([row["needle_doc_id"]] if row.get("needle_doc_id") else [])
        row["needle_doc_ids"] = list(needles)
        retrieved = [r for r in row.get("retrieved") or [] if isinstance(r, Mapping) and "doc_id" in r]
        row["retrieved"] = retrieved
        if "rank" not in row:
            row["rank"] = M.chunk_rank(retrieved, needles)
        rows.append(row)
    return rows


# ---- HTML helpers

def _h(value: Any) -> str:
    """HTML-escaped text; control characters shown as escapes (newlines and tabs kept)."""
    text = "" if value is None else str(value)
    return html.escape(_CONTROL.sub(lambda m: escape_control(m.group()), text), quote=True)


def _short_hash(value: Any) -> str:
    text = str(value)
    return f'<code title="{_h(text)}">{_h(text[:12])}</code>' if len(text) > 12 else f"<code>{_h(text)}</code>"


def _kv_table(pairs: Iterable[tuple[str, str]], cls: str = "meta") -> str:
    body = "".join(f"<tr><th>{_h(k)}</th><td>{v}</td></tr>" for k, v in pairs)
    return f'<table class="{cls}">{body}</table>'


def _money(x: Any) -> str:
    return f"${x:.4f}" if is_number(x) else "unknown"


# ---- metadata and metrics

def _metadata(report: Mapping, label: str) -> str:
    run_info = report.get("run") if isinstance(report.get("run"), Mapping) else {}
    pairs: list[tuple[str, str]] = [("run", _h(label))]
    for key in ("status", "strategy", "k", "started_at", "finished_at"):
        if key in run_info:
            pairs.append((key, _h(run_info[key])))
    if run_info.get("judge_failure"):
        pairs.append(("judge failure", _h(run_info["judge_failure"])))
    return _kv_table(pairs + _judge_pairs(run_info) + _input_pairs(report, run_info))


def _judge_pairs(run_info: Mapping) -> list[tuple[str, str]]:
    """The metadata rows of the judge: who, its prompt's hash, each role's usage, the cost."""
    pairs: list[tuple[str, str]] = []
    judge = run_info.get("judge") if isinstance(run_info.get("judge"), Mapping) else {}
    if judge:
        pairs.append(("judge", _h(" ".join(str(judge[k]) for k in ("provider", "model", "mode") if judge.get(k)))))
        if judge.get("prompt_sha256"):
            pairs.append(("judge prompt sha256", _short_hash(judge["prompt_sha256"])))
    usage = run_info.get("usage") if isinstance(run_info.get("usage"), Mapping) else {}
    for who, u in usage.items():
        if isinstance(u, Mapping):
            text = f"{u.get('calls', 0)} calls, {u.get('input_tokens') or 0:,} in / {u.get('output_tokens') or 0:,} out"
            if "cost_usd" in u:
                text += f", {_money(u['cost_usd'])}"
            pairs.append((f"{who} usage", _h(text)))
    if "cost_usd" in run_info:
        pairs.append(("cost", _h(_money(run_info["cost_usd"]))))
    return pairs


def _input_pairs(report: Mapping, run_info: Mapping) -> list[tuple[str, str]]:
    """The metadata rows of what the run read and how: questions, corpus, index, bootstrap, Python."""
    pairs: list[tuple[str, str]] = []
    if run_info.get("questions_file"):
        pairs.append(("questions", _h(run_info["questions_file"])))
    if run_info.get("questions_sha256"):
        pairs.append(("questions sha256", _short_hash(run_info["questions_sha256"])))
    corpus = run_info.get("corpus") if isinstance(run_info.get("corpus"), Mapping) else {}
    if corpus:
        pairs.append(("corpus", _h(f"{corpus.get('source', '?')} ({corpus.get('documents', '?')} documents, "
                                   f"{corpus.get('chunks', '?')} chunks)")))
        if corpus.get("sha256"):
            pairs.append(("corpus sha256", _short_hash(corpus["sha256"])))
    index = run_info.get("index") if isinstance(run_info.get("index"), Mapping) else {}
    if index:
        pairs.append(("index", ", ".join(f"{_h(k)} {_short_hash(v) if k == 'key' else _h(v)}"
                                          for k, v in index.items() if v not in (None, ""))))
    boot = report.get("bootstrap") if isinstance(report.get("bootstrap"), Mapping) else {}
    if boot:
        pairs.append(("bootstrap", _h(", ".join(f"{k} {v}" for k, v in boot.items()))))
    if run_info.get("python"):
        pairs.append(("python", _h(run_info["python"])))
    return pairs


def _metric_rows(result: RunResult) -> str:
    """Each metric of the run (the registry's order) with its 95% interval; a metric that needs a
    grade reads "n/a (nothing graded)" when nothing was graded; its description is the row's tooltip."""
    from utils.console import shown_metrics

    nothing_graded = result.graded_count == 0
    proxy = is_proxy_judge(result.run.judge.provider)
    body = []
    for m in shown_metrics(result):
        if nothing_graded and m.graded_only:
            value, ci, mark = NOTHING_GRADED, "", ""
        else:
            value, ci = m.format(result.metrics.get(m.key)), format_ci(m, result.ci95.get(m.key))
            mark = PROXY_MARK if proxy and m.level == "judge" else ""
        body.append(f"<tr><th title=\"{_h(m.description)}\">{_h(m.label_at(result.run.k))}{mark}</th>"
                    f"<td class=num>{_h(value)}</td><td class=ci>{_h(ci)}</td></tr>")
    body.append(f"<tr><th>questions</th><td colspan=2>{result.question_count} (graded {result.graded_count}, "
                f"ungraded {result.ungraded_count})</td></tr>")
    if result.grade_errors:
        body.append(f"<tr><th>ungraded because</th><td colspan=2>"
                    f"{_h(', '.join(f'{k} ×{v}' for k, v in result.grade_errors.items()))}</td></tr>")
    body += _bands_and_targets(result)
    clamped = clamped_count(result.rows)
    if clamped:
        body.append(f"<tr><th>clamped grades</th><td colspan=2>{clamped}: {_h(CLAMPED_NOTE)}</td></tr>")
    signal = signal_of(result.run.judge)
    if signal is not None:
        body.append(f"<tr><th>judge signal</th><td colspan=2>{_h(signal.line())}</td></tr>")
    if is_number(result.avg_latency_ms):
        body.append(f"<tr><th>retrieval latency</th><td colspan=2>{result.avg_latency_ms:.1f} ms/question</td></tr>")
    if is_number(result.index_time_s):
        body.append(f"<tr><th>index time</th><td colspan=2>{result.index_time_s:.2f} s</td></tr>")
    head = "<tr><th>metric</th><th>value</th><th>95% CI</th></tr>"
    return f'<table class="metrics"><thead>{head}</thead><tbody>{"".join(body)}</tbody></table>'


def _bands_and_targets(result: RunResult) -> list[str]:
    """The quality bands (computed for a file written before they were recorded) and the targets, as rows."""
    bands = result.quality_bands if result.quality_bands is not None else \
        quality_bands(result.metrics, result.run.k, result.ci95)
    rows = [f"<tr><th>{_h(b.label)} band</th><td colspan=2>{_h(band_text(b))}</td></tr>" for b in bands.values()]
    for t in result.targets or []:
        cls = "good" if t.met else "bad"
        rows.append(f"<tr><th>target</th><td colspan=2 class={cls}>{_h(t.line)}</td></tr>")
    return rows


def _signal_warnings(result: RunResult) -> str:
    """The WARNING of an uninformative judge (the run's, then each of a panel's): "" when none is."""
    own = signal_of(result.run.judge)
    warnings = [own.warning(run_judge_name(result.run.judge, result.panel))] if own is not None else []
    warnings += [s.warning(f"the panel's judge {name}") for name, s in member_signals(result.panel).items()]
    return "".join(f"<p class='warnings bad'>{_h(w)}</p>" for w in warnings if w)


def _cards(result: RunResult) -> str:
    nothing_graded = result.graded_count == 0
    proxy = is_proxy_judge(result.run.judge.provider)
    cards = []
    for key in CARDS:
        m = M.METRICS.get(key)
        if m is None or key not in result.metrics:
            continue
        na = nothing_graded and m.graded_only
        shown = "n/a" if na else m.format(result.metrics[key])
        mark = PROXY_MARK if proxy and m.level == "judge" and not na else ""
        cards.append(f'<div class="card" title="{_h(m.description)}"><div class="big">{_h(shown)}</div>'
                     f'<div>{_h(m.label_at(result.run.k))}{mark}</div></div>')
    return f'<div class="cards">{"".join(cards)}</div>'


# ---- plots (components.report.svg)

def _label(text: Any, width: int = 40) -> str:
    """Text for a plot's title or tick: no control characters, at most ``width`` long (the SVG writer escapes it)."""
    return shorten(str(text), width)


def _svg(svg: str, name: str, title: str) -> str:
    """An inline ``<svg>`` element inside ``<figure class="plot">`` with its caption."""
    return f'<figure class="plot" data-plot="{_h(name)}">{svg}<figcaption>{_h(title)}</figcaption></figure>'


def _count_ticks(chart: Chart, top: float) -> None:
    """Whole-number y ticks from 0 to ``top`` (a count axis)."""
    chart.yticks = [(t, tick_label(t)) for t in nice_ticks(0, top, 5, integer=True)]


def _count_bars(labels: Sequence[str], counts: Sequence[int], colors: Sequence[str], title: str,
                xlabel: str) -> Chart:
    """Questions per category: one bar each, its count above it."""
    top = max(max(counts, default=0), 1) * 1.15
    chart = Chart(420, 280, (0.4, len(labels) + 0.6), (0, top), title=title, xlabel=xlabel, ylabel="questions")
    for i, (label, n, color) in enumerate(zip(labels, counts, colors, strict=True), start=1):
        chart.bar(i, n, color, tip=f"{label}: {n}")
        chart.text(i, n, str(n), size=10, dy=-3)
    chart.xticks = [(i, label) for i, label in enumerate(labels, start=1)]
    _count_ticks(chart, top)
    return chart


def _rank_plot(rows: Sequence[Mapping], k: int, name: str) -> str:
    """Questions per needle rank 1..k (ranks beyond :data:`MAX_PLOTTED_RANK` in one bar), then none."""
    ranks = Counter(r.get("rank") for r in rows)
    shown = min(k, MAX_PLOTTED_RANK)
    xs = list(range(1, shown + 1))
    counts = [ranks.get(x, 0) for x in xs]
    labels = [str(x) for x in xs]
    if k > shown:
        counts.append(sum(v for key, v in ranks.items() if key is not None and shown < key <= k))
        labels.append(f"{shown + 1}-{k}")
    counts.append(sum(v for key, v in ranks.items() if key is None or key > k))
    labels.append("none")
    colors = [_COLORS["good"]] + [_COLORS["bar"]] * (len(labels) - 2) + [_COLORS["bad"]]
    chart = _count_bars(labels, counts, colors, "Needle rank", "rank of the first needle chunk")
    return _svg(chart.svg(), name, "Needle rank distribution (none: not in the top k)")


def _grade_plot(rows: Sequence[Mapping], name: str) -> str:
    grades = Counter(r.get("llm_grade") for r in rows)
    xs = list(range(1, 11))
    ungraded = grades.get(None, 0)
    chart = _count_bars([str(x) for x in xs], [grades.get(x, 0) for x in xs],
                        [_COLORS["good"] if x >= PASS_MARK else _COLORS["bar"] for x in xs],
                        "Grades" + (f" ({ungraded} ungraded, not shown)" if ungraded else ""), "judge grade")
    return _svg(chart.svg(), name, "Grade histogram")


def _quadrant_plot(rows: Sequence[Mapping], k: int, name: str) -> str:
    """Grade against rank: one bubble per (rank, grade) cell, sized and labelled by its count;
    shaded: the two disagreement rules (needle in the top k with grade ≤ 4; not in it with ≥ 7)."""
    shown = min(k, MAX_PLOTTED_RANK)  # ranks past it share the column after the last one shown

    def column(rank: Any) -> int:
        if rank is None or rank > k:
            return shown + (2 if k > shown else 1)
        return rank if rank <= shown else shown + 1

    cells = Counter((column(r.get("rank")), r["llm_grade"]) for r in rows if is_number(r.get("llm_grade")))
    ticks = [str(x) for x in range(1, shown + 1)] + ([f"{shown + 1}-{k}"] if k > shown else []) + ["none"]
    k = len(ticks) - 1  # the shaded rule spans every retrieved column
    chart = Chart(420, 310, (0.5, k + 1.5), (0.5, 10.5), title="Grade against rank", xlabel="needle rank",
                  ylabel="judge grade", with_legend=True)
    chart.rect(0.5, k + 0.5, 0.5, LOW_GRADE_MAX + 0.5, _COLORS["bad"], 0.10,
               label=f"needle_hit_low_grade (≤ {LOW_GRADE_MAX})")
    chart.rect(k + 0.5, k + 1.5, HIGH_GRADE_MIN - 0.5, 10.5, _COLORS["warn"], 0.18,
               label=f"grade_without_needle (≥ {HIGH_GRADE_MIN})")
    cell = min(chart.plot_width / (k + 1), chart.plot_height / 10)  # a cell's size in pixels
    for (x, y), n in sorted(cells.items()):
        chart.dot(x, y, min(cell * 0.55, 3.5 + 2.2 * n ** 0.5), _COLORS["bar"], 0.75,
                  tip=f"{n} question(s): rank {ticks[x - 1]}, grade {y}")
        if n > 1:
            chart.text(x, y, str(n), size=9, color="#fff", baseline="central")
    chart.xticks = [(i, t) for i, t in enumerate(ticks, start=1)]
    chart.yticks = [(g, str(g)) for g in range(1, 11)]
    return _svg(chart.svg(), name, "Grade against rank: shaded, where judge and needle disagree")


def _group_stats(report: Mapping, rows: Sequence[Mapping]) -> dict[str, dict[str, dict]]:
    """``groups`` of the run when it has them, else derived from the rows' fields in GROUP_FIELDS
    (2 to MAX_GROUP_VALUES distinct values) with the registry's hit@1, hit@5 and MRR."""
    groups = report.get("groups")
    if isinstance(groups, Mapping) and groups:
        return {str(f): {str(v): dict(s) for v, s in values.items() if isinstance(s, Mapping)}
                for f, values in groups.items() if isinstance(values, Mapping)}
    derived = [M.METRICS[key] for key in ("hit_at_1_rate", "hit_at_5_rate", "mrr") if key in M.METRICS]
    out: dict[str, dict[str, dict]] = {}
    for field_name in GROUP_FIELDS:
        by_value: dict[str, list[Mapping]] = {}
        for row in rows:
            value = row.get(field_name)
            if isinstance(value, (str, int)) and not isinstance(value, bool):
                by_value.setdefault(str(value), []).append(row)
        if 2 <= len(by_value) <= MAX_GROUP_VALUES:
            out[field_name] = {v: {"count": len(rs), **{m.key: m.aggregate(rs, 5) for m in derived}}
                               for v, rs in sorted(by_value.items())}
    return out


def fold_groups(stats: Mapping[str, Mapping], limit: int = MAX_GROUP_VALUES) -> dict[str, Mapping]:
    """The groups of one field as a plot or table shows them: all when there are at most
    ``limit``; else the largest ``limit - 1`` (by count, then name) and one ``other (N values)``
    holding the rest's count (its rates are not recomputed: the run's per-group figures stay exact)."""
    if len(stats) <= limit:
        return dict(stats)
    ranked = sorted(stats.items(), key=lambda kv: (-(kv[1].get("count") or 0), kv[0]))
    kept, rest = ranked[:limit - 1], ranked[limit - 1:]
    other = {"count": sum(v.get("count") or 0 for _, v in rest)}
    return {**dict(kept), f"other ({len(rest)} values)": other}


def _group_plot(field_name: str, stats: Mapping[str, Mapping], name: str) -> str:
    """hit@1, hit@5 and pass ≥ 7 (those the groups have) per value of one field, in percent; a
    field with many values shows its largest groups (:func:`fold_groups`)."""
    stats = fold_groups(stats)
    values = list(stats)
    shown = [("hit_at_1_rate", "hit@1", _COLORS["good"]), ("hit_at_5_rate", "hit@5", _COLORS["bar"]),
             ("pass_rate_7", "pass ≥ 7", _COLORS["warn"])]
    metrics = [m for m in shown if any(is_number(stats[v].get(m[0])) for v in values)]
    names = [_label(v, 24) + f" (n={stats[v].get('count', '?')})" for v in values]
    height = 0.8 / max(len(metrics), 1)
    chart = Chart(420, 76 + 16 * len(values) * max(len(metrics), 1) + (LEGEND_ROW if metrics else 0),
                  (0, 100), (len(values) - 0.5, -0.5), title=_label(f"By {field_name}"),
                  xlabel="% of the group's questions", left=16 + CHAR_WIDTH * 0.9 * max(map(len, names), default=4),
                  with_legend=bool(metrics))
    for j, (key, label, color) in enumerate(metrics):
        for i, v in enumerate(values):
            rate = stats[v][key] if is_number(stats[v].get(key)) else 0
            chart.hbar(i + (j - (len(metrics) - 1) / 2) * height, rate, color, height,
                       label=label if i == 0 else None, tip=f"{v}: {label} {rate:.1f}%")
    chart.xticks = [(t, tick_label(t)) for t in range(0, 101, 20)]
    chart.yticks = [(i, n) for i, n in enumerate(names)]
    return _svg(chart.svg(), name, f"Per-group rates: {field_name}")


# ---- the questions table

def _needle_grades(row: Mapping) -> dict[str, object]:
    """The row's graded needles ``{doc id: grade}`` (graded relevance, e.g. BEIR qrels), else {}."""
    grades = row.get("needle_grades")
    return {str(d): g for d, g in grades.items() if is_number(g)} if isinstance(grades, Mapping) else {}


def _chunk_html(item: Mapping, needles: set[str], best_chunk_id: str | None,
                grades: Mapping[str, object] | None = None) -> str:
    classes = ["chunk"]
    if item.get("doc_id") in needles:
        classes.append("needle")
    if best_chunk_id and item.get("chunk_id") == best_chunk_id:
        classes.append("best")
    heading = item.get("heading_path")
    heading = " > ".join(str(h) for h in heading) if isinstance(heading, list) else ""
    score = item.get("score")
    head = (f"<b>#{_h(item.get('rank', '?'))}</b> <code>{_h(item.get('chunk_id') or item.get('doc_id'))}</code>"
            + (f" score {score:.3f}" if is_number(score) else "")
            + (" <span class=badge>needle"
               + (f" (grade {_h(grades[item.get('doc_id')])})" if grades and item.get("doc_id") in grades else "")
               + "</span>" if "needle" in classes else "")
            + (" <span class='badge best'>best needle chunk</span>" if "best" in classes else ""))
    title = " > ".join(x for x in (str(item.get("title") or ""), heading) if x)
    text = item.get("text")
    if isinstance(text, str) and title and text.startswith(str(item.get("title"))):
        title = ""  # the indexed text begins with its title and heading path already
    body = (f"<pre>{_h(text)}</pre>" if isinstance(text, str)
            else "<p class=muted>no chunk text in this results file (schema 1, or run with --no-text)</p>")
    return (f'<div class="{" ".join(classes)}"><div class="chead">{head}</div>'
            + (f"<div class=ctitle>{_h(title)}</div>" if title else "") + body + "</div>")


def _question_html(row: Mapping, k: int) -> str:
    diagnosis = row.get("diagnosis") if isinstance(row.get("diagnosis"), Mapping) else None
    tags = [str(t) for t in (diagnosis or {}).get("tags") or []]
    rank, grade, total = row.get("rank"), row.get("llm_grade"), row.get("total_score")
    r_cls = "good" if rank == 1 else ("bad" if rank is None else "mid")
    g_cls = "muted" if not is_number(total) else ("good" if total >= PASS_MARK else "bad")
    needles = set(row.get("needle_doc_ids") or [])
    best = row.get("needle_best_chunk") if isinstance(row.get("needle_best_chunk"), Mapping) else None
    data_tags = " ".join(tags) + (" _diagnosed" if diagnosis is not None else " _clean")
    summary = (f'<summary><span class=qid>{_h(row.get("question_id"))}</span>'
               f'<span class="r {r_cls}">R{_h(rank if rank is not None else "-")}</span>'
               f'<span class="g {g_cls}">G{_h(grade if grade is not None else "-")}</span>'
               f'<span class="g {g_cls}">T{_h(f"{total:.1f}" if is_number(total) else "-")}</span>'
               f'<span class=qtext>{_h(row.get("question"))}</span>'
               f'<span class=tags>{"".join(f"<span class=tag>{_h(t)}</span>" for t in tags)}</span></summary>')
    parts = [f"<p><b>Question</b> {_h(row.get('question'))}</p>"]
    if row.get("expected_answer"):
        parts.append(f"<p><b>Expected answer</b> {_h(row['expected_answer'])}</p>")
    grades = _needle_grades(row)
    named = (", ".join(f"{d} (grade {grades[d]})" if d in grades else d
                       for d in sorted(needles, key=lambda d: (-float(grades.get(d, 0)), d))) or "-")
    parts.append(f"<p><b>Needle</b> {_h(named)}"
                 + (f" — best chunk <code>{_h(best.get('chunk_id'))}</code> "
                    f"({_h(' > '.join(map(str, best.get('heading_path') or [])) or 'no heading')}, overlap "
                    f"{_h(format(best['overlap'], '.0%') if is_number(best.get('overlap')) else '?')})"
                    if best else "") + "</p>")
    if diagnosis is not None:
        parts.append(f"<p class=diag><b>Diagnosis</b> {_h(diagnosis.get('sentence'))}</p>")
        fixes = _fixes(diagnosis)
        if fixes:
            parts.append("<p class=diag><b>Fix</b> " + "; ".join(f"{_h(t)}: {_h(f)}" for t, f in fixes.items())
                         + "</p>")
    if is_number(row.get("grade_clamped_from")):
        parts.append(f"<p class=bad><b>Clamped</b> the judge's grade {row['grade_clamped_from']:g} is outside 1-10: "
                     f"clamped to {_h(grade)}</p>")
    if row.get("llm_reasoning"):
        parts.append(f"<p><b>Judge</b> {_h(row['llm_reasoning'])}</p>")
    if row.get("grade_error"):
        parts.append(f"<p class=bad><b>Not graded</b> {_h(row['grade_error'])}</p>")
    extra = [(key, row[key]) for key in GROUP_FIELDS if isinstance(row.get(key), (str, int))]
    if extra:
        parts.append("<p class=muted>" + _h(" · ".join(f"{k2} {v}" for k2, v in extra)) + "</p>")
    chunks = "".join(_chunk_html(item, needles, best.get("chunk_id") if best else None, grades)
                     for item in row.get("retrieved") or [])
    parts.append(f"<div class=chunks>{chunks or '<p class=muted>nothing retrieved</p>'}</div>")
    search = f"{row.get('question_id')} {row.get('question')}"
    return (f'<details class="q" data-qid="{_h(row.get("question_id"))}" data-tags="{_h(data_tags)}" '
            f'data-search="{_h(search)}">'
            f'{summary}<div class="detail">{"".join(parts)}</div></details>')


def _fixes(diagnosis: Mapping) -> dict[str, str]:
    """The diagnosis's ``fixes`` (tag → remedy); a file written before they were recorded: the rules' own."""
    fixes = diagnosis.get("fixes")
    if isinstance(fixes, Mapping):
        return {str(t): str(f) for t, f in fixes.items()}
    return {str(t): FIXES[t] for t in diagnosis.get("tags") or [] if t in FIXES}


def _tally(rows: Sequence[Mapping], counts: Mapping[str, int]) -> str:
    """The diagnosis tally: each primary type, its questions and its fix."""
    fixes: dict[str, str] = {}
    for r in rows:
        if isinstance(r.get("diagnosis"), Mapping):
            fixes = {**_fixes(r["diagnosis"]), **fixes}
    body = "".join(f"<tr><th>{_h(t)}</th><td class=num>{_h(n)}</td><td>{_h(fixes.get(t, '-'))}</td></tr>"
                   for t, n in counts.items() if n)
    return (f'<table class="metrics tally"><thead><tr><th>primary type</th><th>questions</th><th>fix</th></tr></thead>'
            f"<tbody>{body}</tbody></table>") if body else ""


def _questions(rows: Sequence[Mapping], k: int, has_diagnosis: bool) -> str:
    counts = {tag: n for tag, n in count_tags(rows).items() if n or tag not in TAGS}  # primary types
    carrying = count_carrying(rows)  # the filter buttons: every question carrying the type
    diagnosed = sum(1 for r in rows if isinstance(r.get("diagnosis"), Mapping))
    buttons = [f'<button type=button data-tag="" class="on">all ({len(rows)})</button>']
    if has_diagnosis:
        buttons.append(f'<button type=button data-tag="_diagnosed">diagnosed ({diagnosed})</button>')
        buttons += [f'<button type=button data-tag="{_h(t)}">{_h(t)} ({n})</button>' for t, n in carrying.items()]
    note = "" if has_diagnosis else "<span class=muted>no diagnoses in this results file</span>"
    bar = (f'<div class="filters">{"".join(buttons)}{note}<input type=search placeholder="filter by id or text">'
           f'<button type=button class=expand>expand all</button><span class=shown></span></div>')
    tally = _tally(rows, counts) if has_diagnosis else ""
    return tally + bar + f'<div class="questions">{"".join(_question_html(r, k) for r in rows)}</div>'


# ---- the comparison

def _fmt(x: Any, digits: int = 3, sign: bool = False) -> str:
    if not is_number(x):
        return "-"
    return f"{x:+.{digits}f}" if sign else f"{x:.{digits}f}"


def _p(p: Any) -> str:
    if not is_number(p):
        return "-"
    return "<0.001" if p < 0.001 else f"{p:.3f}"


def _grade(g: Any) -> str:
    return f"{g:g}" if is_number(g) else "-"


def _arrow(before: Any, after: Any, fmt: Any = str) -> str:
    return f"{'-' if before is None else fmt(before)} → {'-' if after is None else fmt(after)}"


def _sign_class(delta: Any) -> str:
    """good above 0, bad below, muted at 0 or absent (a Δ of 0 is no loss)."""
    if not is_number(delta) or abs(delta) <= 1e-12:
        return "muted"
    return "good" if delta > 0 else "bad"


def _verdict_class(verdict: Any) -> str:
    return {BETTER: "good", WORSE: "bad"}.get(str(verdict), "muted")


def paired_deltas(baseline: RunResult | Mapping, other: RunResult | Mapping, question_ids: Sequence[str]
                  ) -> dict[str, list[tuple[str, float]]]:
    """Per question ``other − baseline`` of each metric in :data:`DELTA_METRICS` (MRR, total score),
    paired by question id over ``question_ids`` (the comparison's common questions), with each row's
    values as compare reads them (:func:`components.analysis.compare.question_view`, so schema-1 rows
    work too). A question that lacks the value in either run (e.g. ungraded) is left out of that
    metric; empty lists when nothing pairs. Differences only, for plotting: means, intervals and
    p-values are compare's."""
    specs = [M.METRICS[key] for key, _ in DELTA_METRICS]
    views = []
    for run in (baseline, other):
        result = run if isinstance(run, RunResult) else RunResult.from_json(run)
        rows = {r.question_id: r for r in result.rows}
        views.append({q: question_view(rows[q], result.run.k, specs=specs).values for q in question_ids if q in rows})
    before, after = views
    return {key: [(q, after[q][key] - before[q][key]) for q in question_ids
                  if q in before and q in after and before[q][key] is not None and after[q][key] is not None]
            for key, _ in DELTA_METRICS}


def _delta_plot(deltas: Mapping[str, Sequence[tuple[str, float]]], stats: Mapping[str, Mapping], baseline: str,
                other: str, name: str) -> str:
    """One panel per metric of :data:`DELTA_METRICS`: the per-question deltas (``other − baseline``)
    as bars sorted from worst to best, zero marked, and compare's mean delta with its 95% CI as a
    dashed line in a band. Empty string when no metric has a paired question."""
    if not any(deltas.get(key) for key, _ in DELTA_METRICS):
        return ""
    panels, captions = [], []
    for key, label in DELTA_METRICS:
        values = sorted(d for _, d in deltas.get(key) or [])
        m = stats.get(key) or {}
        ci = m.get("ci95") if isinstance(m.get("ci95"), (list, tuple)) and len(m["ci95"]) == 2 \
            and all(is_number(v) for v in m["ci95"]) else None
        extent = [0.0, *values, *(ci or ()), *((m["delta"],) if is_number(m.get("delta")) else ())]
        low, high = min(extent), max(extent)
        pad = (high - low) * 0.08 or 1.0
        chart = Chart(390, 290, (0.4, len(values) + 0.6), (low - pad, high + pad),
                      title=_label(f"Δ {label} per question"), xlabel="questions, sorted by Δ", left=52,
                      with_legend=True)
        panels.append(chart)
        if not values:
            chart.note("no question has it in both runs")
            continue
        if ci is not None:
            chart.band(ci[0], ci[1], _COLORS["bar"], 0.15, label="95% CI of the mean Δ")
        for i, d in enumerate(values, start=1):
            color = _COLORS["good"] if d > 1e-12 else _COLORS["bad"] if d < -1e-12 else _COLORS["grey"]
            chart.bar(i, d, color, width=0.8 if len(values) < 60 else 1.0)
        chart.hline(0, "#000", 0.8)
        if is_number(m.get("delta")):
            chart.hline(m["delta"], _COLORS["bar"], 1.2, dashed=True, label=f"mean Δ {m['delta']:+.3f}")
        chart.xticks = [(t, tick_label(t)) for t in nice_ticks(1, len(values), 5, integer=True)]
        chart.yticks = [(t, tick_label(t)) for t in nice_ticks(low - pad, high + pad, 5)]
        captions.append(f"{label}: {len(values)} questions, mean Δ {_fmt(m.get('delta'), 3, True)}")
    svg = side_by_side(panels, _label(f"{other} − {baseline}", 80))
    return _svg(svg, name, f"Paired deltas, {other} − {baseline} (green: better, red: worse); "
                           + "; ".join(captions))


def _runs_table(summaries: Sequence[Mapping]) -> str:
    head = ("<tr><th>run</th><th>kind</th><th>strategy</th><th>run id</th><th>judge</th><th>questions</th>"
            "<th>source</th></tr>")
    body = []
    for i, s in enumerate(summaries):
        reference = s.get("kind") == "reference"
        kind = ("<span class='badge ref'>reference system</span>" if reference
                else "baseline" if i == 0 else "run")
        judge = " ".join(str(s[key]) for key in ("judge_provider", "judge_model") if s.get(key))
        if reference:
            judge = "rank only (the questions' reference_ranks)"
        body.append(f"<tr{' class=ref' if reference else ''}><td><b>{_h(s.get('label'))}</b></td><td>{kind}</td>"
                    f"<td>{_h(s.get('strategy') or '-')}</td><td>{_h(s.get('run_id') or '-')}</td>"
                    f"<td>{_h(judge or '-')}</td><td class=num>{_h(s.get('question_count', '-'))}</td>"
                    f"<td>{_h(s.get('source') or '-')}</td></tr>")
    return f"<table class='meta runs'><thead>{head}</thead><tbody>{''.join(body)}</tbody></table>"


def _means_table(summaries: Sequence[Mapping], metrics: Sequence[Mapping], count: Any) -> str:
    head = "<tr><th>metric</th>" + "".join(
        f"<th{' class=ref' if s.get('kind') == 'reference' else ''}>{_h(s.get('label'))}</th>" for s in summaries
    ) + "</tr>"
    body = []
    for m in metrics:
        key, digits = m.get("key"), _digits(m)
        values = [(s.get("means") or {}).get(key) for s in summaries]
        spec = M.METRICS.get(str(key))
        best = best_columns([v if is_number(v) else None for v in values], bool(spec and spec.lower_is_better))
        cells = "".join(f"<td class='num best'><b>{_h(_fmt(v, digits))}</b></td>" if i in best
                        else f"<td class=num>{_h(_fmt(v, digits))}</td>" for i, v in enumerate(values))
        body.append(f"<tr><th>{_h(m.get('label') or key)}</th>{cells}</tr>")
    return (f"<h3>Means over the {_h(count)} compared questions</h3><p class=muted>rates in percent, grade 1-10, "
            f"total score 0-10, the others 0-1; the best value of each metric in bold</p>"
            f"<table class='metrics compare'><thead>{head}</thead><tbody>{''.join(body)}"
            f"</tbody></table>")


def _digits(metric: Mapping) -> int:
    """The decimals of a metric of the comparison's JSON (its ``digits``; 3 when absent)."""
    digits = metric.get("digits")
    return digits if isinstance(digits, int) and not isinstance(digits, bool) and 0 <= digits <= 6 else 3


def _pair_table(comp: Mapping, labels: Mapping[str, str], digits_of: Mapping[str, int]
                ) -> tuple[str, list[str], list[str]]:
    """The metric table of one comparison, its "you would need about N questions" sentences and
    the labels of the metrics no question has in both runs."""
    rows, power, absent = [], [], []
    for m in comp.get("metrics") or []:
        if not isinstance(m, Mapping):
            continue
        key = str(m.get("metric"))
        label, digits = labels.get(key, key), digits_of.get(key, 3)
        if not m.get("n"):
            absent.append(label)
            continue
        ci = m.get("ci95")
        ci_text = (f"[{_fmt(ci[0], digits, True)}, {_fmt(ci[1], digits, True)}]"
                   if isinstance(ci, (list, tuple)) and len(ci) == 2 else
                   "unbounded" if m.get("ci_method") == "test-inversion" else "-")
        wtl = "/".join(_h(m.get(k, "-")) for k in ("wins", "ties", "losses"))
        verdict = m.get("verdict") or "-"
        estimate = "≈" if m.get("test") == "sign-flip-mc" else ""  # a Monte-Carlo p: an estimate
        marked = verdict + (" †" if m.get("borderline") is True else "")
        if m.get("borderline") is True:
            power.append(f"{label} †: borderline: its 95% CI and its p disagree (one excludes 0, the other does not "
                         "reach α): treat it as undecided.")
        rows.append(f"<tr><th>{_h(label)}</th><td class=num>{_h(m.get('n'))}</td>"
                    f"<td class=num>{_fmt(m.get('mean_baseline'), digits)}</td>"
                    f"<td class=num>{_fmt(m.get('mean_other'), digits)}</td>"
                    f"<td class=num>{_fmt(m.get('delta'), digits, True)}</td><td class=ci>{_h(ci_text)}</td>"
                    f"<td class=num>{_h(estimate + _p(m.get('p')))}</td>"
                    f"<td class=num>{_h((estimate if is_number(m.get('p_holm')) else '') + _p(m.get('p_holm')))}</td>"
                    f"<td class=num>{wtl}</td><td class='verdict {_verdict_class(verdict)}'>{_h(marked)}</td></tr>")
        if is_number(m.get("questions_needed")):
            power.append(f"{label}: {m['n']} questions detect a change of about {_fmt(m.get('mde'), digits)}; "
                         f"you would need about {m['questions_needed']} questions to detect a "
                         f"{_grade(m.get('effect'))} {label} change.")
        elif is_number(m.get("n")) and m["n"] >= 2:
            power.append(f"{label}: every question moved by the same amount, so there is no spread to size a "
                         "detectable change.")
    head = (f"<tr><th>metric</th><th>n</th><th>{_h(comp.get('baseline'))}</th><th>{_h(comp.get('other'))}</th>"
            "<th>Δ</th><th>95% CI of Δ</th><th>p</th><th>p (Holm)</th><th>W/T/L</th><th>verdict</th></tr>")
    table = (f"<div class=scroll><table class='metrics compare'><thead>{head}</thead><tbody>{''.join(rows)}</tbody>"
             "</table></div>")
    return table, power, absent


def _changes_table(title: str, changes: Sequence[Any], cls: str) -> str:
    """The questions that got worse (or better), largest first, as compare lists them."""
    changes = [c for c in changes if isinstance(c, Mapping)]
    if not changes:
        return f"<p class=muted>{_h(title)}: none</p>"
    head = ("<tr><th>question</th><th>rank</th><th>doc rank</th><th>grade</th><th>total</th><th>Δ total</th>"
            "<th>Δ RR</th><th>top documents before</th><th>top documents after</th></tr>")
    body = []
    for c in changes:
        docs = [", ".join(str(d) for d in c.get(key) or []) or "-" for key in ("top_docs_before", "top_docs_after")]
        body.append(
            f"<tr><td><span class=qid>{_h(c.get('question_id'))}</span> "
            f"<span title=\"{_h(c.get('question'))}\">{_h(shorten(str(c.get('question') or ''), 70))}</span></td>"
            f"<td class=num>{_h(_arrow(c.get('rank_before'), c.get('rank_after')))}</td>"
            f"<td class=num>{_h(_arrow(c.get('doc_rank_before'), c.get('doc_rank_after')))}</td>"
            f"<td class=num>{_h(_arrow(c.get('grade_before'), c.get('grade_after'), _grade))}</td>"
            f"<td class=num>{_h(_arrow(c.get('total_before'), c.get('total_after'), lambda x: _fmt(x, 2)))}</td>"
            f"<td class='num {_sign_class(c.get('delta_total'))}'>{_fmt(c.get('delta_total'), 2, True)}</td>"
            f"<td class='num {_sign_class(c.get('delta_rr'))}'>{_fmt(c.get('delta_rr'), 3, True)}</td>"
            f"<td><code>{_h(docs[0])}</code></td><td><code>{_h(docs[1])}</code></td></tr>")
    return (f"<details class=changes open><summary class={cls}><b>{_h(title)}</b> ({len(changes)}, largest first)"
            f"</summary><div class=scroll><table class=changes><thead>{head}</thead><tbody>{''.join(body)}</tbody>"
            "</table>"
            f"</div></details>")


def render_comparison(comparison: Mapping, runs: Sequence[RunResult | Mapping] = ()) -> str:
    """The comparison section (HTML) from ``compare_runs(...).to_json()``: the runs (reference systems
    marked), the questions compared and left out, the warnings, their means, then per comparison a
    table (means, Δ, 95% CI, p, Holm-adjusted p, wins/ties/losses, verdict), the "you would need
    about N questions" sentences, the questions that got worse and better, and the paired-delta plot.
    ``runs`` are the runs (or results dicts) in the order given to compare_runs: the per-question deltas of
    the plot come from their rows (the comparison JSON holds only the changed questions); without
    them there is no plot. Absent values show as ``-``."""
    summaries = [s for s in comparison.get("runs") or [] if isinstance(s, Mapping)]
    metrics = [m for m in comparison.get("metrics") or [] if isinstance(m, Mapping)]
    labels = {str(m.get("key")): str(m.get("label") or m.get("key")) for m in metrics}
    digits_of = {str(m.get("key")): _digits(m) for m in metrics}
    user_runs = [s for s in summaries if s.get("kind") != "reference"]
    results_of = ({str(s.get("label")): r for s, r in zip(user_runs, runs, strict=True)}
                  if len(runs) == len(user_runs) else {})
    parts = ["<section class=comparison><h2>Comparison</h2>"]
    if summaries:
        parts.append(_runs_table(summaries))
    count = comparison.get("common_question_count")
    facts = [f"Compared on {_h(count if count is not None else '-')} questions, paired by question id; "
             "every run is compared with the baseline (Δ = run − baseline)."]
    left_out = comparison.get("left_out")
    if isinstance(left_out, Mapping) and any(left_out.values()):
        facts.append("Left out (not in every run): "
                     + _h(", ".join(f"{n} of {label}" for label, n in left_out.items())) + ".")
    parts.append(f"<p>{' '.join(facts)}</p>")
    warnings = comparison.get("warnings") or []
    if warnings:
        parts.append("<ul class=warnings>" + "".join(f"<li>warning: {_h(w)}</li>" for w in warnings) + "</ul>")
    if summaries and metrics:
        parts.append(_means_table(summaries, metrics, count if count is not None else "-"))
    parts.append(render_recommendations(comparison.get("recommendations"), _h))
    question_ids = [str(q) for q in comparison.get("question_ids") or []]
    for i, comp in enumerate(c for c in comparison.get("comparisons") or [] if isinstance(c, Mapping)):
        baseline, other = comp.get("baseline"), comp.get("other")
        reference = comp.get("kind") == "reference"
        table, power, absent = _pair_table(comp, labels, digits_of)
        badge = " <span class='badge ref'>reference system</span>" if reference else ""
        parts.append(f"<div class='pair{' ref' if reference else ''}'><h3>{_h(other)}{badge} against "
                     f"{_h(baseline)}</h3>")
        if reference:
            parts.append("<p class=muted>Rank only, from the questions' reference_ranks (document level): "
                         "its own Holm family, apart from your runs.</p>")
        parts.append(table)
        parts.append(adaptive_comparison(comparison, other, _h))  # a run judged until decided
        if absent:
            parts.append(f"<p class=muted>Not comparable (no question has it in both): {_h(', '.join(absent))}</p>")
        if power:
            parts.append("<ul class=power>" + "".join(f"<li>{_h(line)}</li>" for line in power) + "</ul>")
        if not reference:
            parts.append(_changes_table(f"Worse in {other}", comp.get("worse") or [], "bad"))
            parts.append(_changes_table(f"Better in {other}", comp.get("better") or [], "good"))
            base_run, other_run = results_of.get(str(baseline)), results_of.get(str(other))
            if base_run is not None and other_run is not None:
                stats = {str(m.get("metric")): m for m in comp.get("metrics") or [] if isinstance(m, Mapping)}
                parts.append(_delta_plot(paired_deltas(base_run, other_run, question_ids), stats, str(baseline),
                                         str(other), f"paired-delta-{i}"))
        parts.append("</div>")
    parts.append(certificate_html(comparison, _h))  # panel runs: would the verdict change with the judge?
    parts.append("</section>")
    return "".join(parts)


# ---- the page

CSS = """
:root{--fg:#1d2330;--muted:#6b7280;--line:#e3e6ec;--bg:#f6f7f9;--good:#1f7a4a;--bad:#b42318;--mid:#9a6700}
*{box-sizing:border-box}body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;color:var(--fg);
background:var(--bg);margin:0}main{max-width:1180px;margin:0 auto;padding:18px 22px 60px}
h1{font-size:22px;margin:6px 0 2px}h2{font-size:18px;margin:26px 0 10px;border-bottom:2px solid var(--line);
padding-bottom:4px}h3{font-size:15px;margin:18px 0 8px}code{font:12px ui-monospace,Menlo,Consolas,monospace}
.muted{color:var(--muted)}.good{color:var(--good)}.bad{color:var(--bad)}.mid{color:var(--mid)}
section.run,section.comparison{background:#fff;border:1px solid var(--line);border-radius:10px;padding:6px 18px 16px;
margin:16px 0}.cards{display:flex;gap:12px;margin:10px 0}.card{flex:1;border:1px solid var(--line);border-radius:8px;
padding:8px 12px;background:#fbfcfd}.card .big{font-size:24px;font-weight:600}
.twocol{display:grid;grid-template-columns:1fr 1fr;gap:18px;align-items:start}
table{border-collapse:collapse;width:100%}th,td{text-align:left;padding:3px 8px;border-bottom:1px solid var(--line);
overflow-wrap:anywhere;
vertical-align:top}table.meta:not(.runs) th{width:38%;color:var(--muted);font-weight:500}td.num{text-align:right;
font-variant-numeric:tabular-nums}td.ci{color:var(--muted);font-variant-numeric:tabular-nums}
.plots{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px;margin:14px 0}
figure.plot{margin:0;border:1px solid var(--line);border-radius:8px;padding:6px;background:#fff}
figure.plot svg{width:100%;height:auto}
figcaption{font-size:12px;color:var(--muted);text-align:center}
.filters{display:flex;flex-wrap:wrap;gap:6px;align-items:center;margin:8px 0}
.filters button{border:1px solid var(--line);background:#fff;border-radius:14px;padding:2px 10px;cursor:pointer;
font-size:12px}.filters button.on{background:var(--fg);color:#fff}.filters input{margin-left:auto;padding:3px 8px;
border:1px solid var(--line);border-radius:6px}.shown{color:var(--muted);font-size:12px}
details.q{border-bottom:1px solid var(--line)}details.q>summary{display:grid;
grid-template-columns:70px 44px 40px 52px 1fr auto;gap:8px;padding:5px 4px;cursor:pointer;list-style:none;
align-items:baseline}details.q>summary::-webkit-details-marker{display:none}details.q[open]>summary{background:#eef2f8}
details.q>summary:hover{background:#f1f4f9}.qid{font:12px ui-monospace,Menlo,monospace;color:var(--muted)}
.r,.g{font-weight:600;font-variant-numeric:tabular-nums}.tag{display:inline-block;background:#fdecea;color:var(--bad);
border-radius:10px;padding:0 7px;margin-left:4px;font-size:11px}.detail{padding:6px 12px 12px 18px;background:#fafbfc}
.detail p{margin:4px 0}.diag{background:#fff7e6;border-left:3px solid #e67e22;padding:4px 8px}
.chunks{display:grid;gap:8px;margin-top:8px}.chunk{border:1px solid var(--line);border-radius:6px;background:#fff}
.chunk.needle{border-color:#7fb48f}.chunk.best{box-shadow:0 0 0 2px #e6b422}.chead{padding:3px 8px;
background:#f3f4f6;font-size:12px}.ctitle{padding:2px 8px;color:var(--muted);font-size:12px}
.chunk pre{margin:0;padding:6px 8px;max-height:220px;overflow:auto;white-space:pre-wrap;font-size:12px}
.badge{background:#e3f1e7;color:var(--good);border-radius:8px;padding:0 6px;font-size:11px}
.badge.best{background:#fbf0c9;color:#7a5b00}td.best{background:#eef7ee}.warnings{color:var(--mid)}
.badge.ref{background:#e8e4f3;color:#4b3b8a}tr.ref td,th.ref{color:#4b3b8a}.pair{margin:18px 0 8px}
.pair.ref{border-left:3px solid #b9afd9;padding-left:12px}td.verdict{font-weight:600}td.verdict.muted{font-weight:400}
.power{color:var(--muted);font-size:12px;margin:6px 0}details.changes{margin:8px 0}
details.changes>summary{cursor:pointer}section.comparison figure.plot{max-width:780px;margin:10px 0}
table.changes td,table.changes th{font-size:12px}table.compare td.num{white-space:nowrap}
table.changes td.num,table.changes th,table.runs th,table.runs td.num{white-space:nowrap}
table.changes td:first-child{min-width:16em}
.scroll{overflow-x:auto;max-width:100%}details.glossary{background:#fff;border:1px solid var(--line);border-radius:10px;
padding:6px 18px;margin:12px 0}details.glossary summary{cursor:pointer;font-weight:600}
dl.glossary{display:grid;grid-template-columns:200px 1fr;gap:4px 14px;margin:8px 0}dl.glossary dt{font-weight:600}
dl.glossary dd{margin:0;color:var(--muted)}th[title],.card[title]{cursor:help;text-decoration:underline dotted #b8bdc6}
"""

JS = """
(function(){
  function apply(sec){
    var on=sec.querySelector('.filters button.on'), tag=on?on.getAttribute('data-tag'):'';
    var q=(sec.querySelector('.filters input').value||'').toLowerCase(), n=0, rows=sec.querySelectorAll('details.q');
    rows.forEach(function(d){
      var ok=(!tag||(' '+d.getAttribute('data-tags')+' ').indexOf(' '+tag+' ')>=0)&&
             (!q||d.getAttribute('data-search').toLowerCase().indexOf(q)>=0);
      d.hidden=!ok; if(ok){n++;}
    });
    sec.querySelector('.shown').textContent=n+' of '+rows.length+' shown';
    sec.setAttribute('data-shown', String(n));
  }
  function select(sec, tag){
    var found=false;
    sec.querySelectorAll('.filters button[data-tag]').forEach(function(b){
      var hit=b.getAttribute('data-tag')===tag; b.classList.toggle('on',hit); found=found||hit;});
    if(!found){var all=sec.querySelector('.filters button[data-tag=""]'); if(all){all.classList.add('on');}}
    apply(sec);
  }
  function param(name){
    var m=new RegExp('(?:^|[#&])'+name+'=([^&]*)').exec(location.hash); return m?decodeURIComponent(m[1]):'';}
  var wanted=param('tag'), opened=param('open');
  document.querySelectorAll('section.run').forEach(function(sec){
    sec.querySelectorAll('.filters button[data-tag]').forEach(function(b){
      b.addEventListener('click',function(){select(sec,b.getAttribute('data-tag'));});});
    sec.querySelector('.filters input').addEventListener('input',function(){apply(sec);});
    var ex=sec.querySelector('.filters button.expand');
    ex.addEventListener('click',function(){
      var open=ex.textContent==='expand all';
      sec.querySelectorAll('details.q').forEach(function(d){if(!d.hidden){d.open=open;}});
      ex.textContent=open?'collapse all':'expand all';});
    select(sec, wanted);
    if(opened){sec.querySelectorAll('details.q').forEach(function(d){
      if(d.getAttribute('data-qid')===opened){d.open=true;}});}
  });
  document.documentElement.setAttribute('data-ready','1');
})();
"""

ERROR_HOOK = ("window.addEventListener('error',function(e){var d=document.documentElement;"
              "d.setAttribute('data-errors',(d.getAttribute('data-errors')||'')+(e.message||'error')+';');});")


def _run_section(result: RunResult, label: str, index: int) -> str:
    report = result.to_json()
    rows = _rows(report)
    k = result.run.k if result.run.k >= 1 else max([len(r["retrieved"]) for r in rows] + [1])
    plots = [_rank_plot(rows, k, f"r{index}-rank"), _grade_plot(rows, f"r{index}-grade"),
             _quadrant_plot(rows, k, f"r{index}-quadrant")]
    groups = _group_stats(report, rows)
    plots += [_group_plot(f, stats, f"r{index}-group-{j}") for j, (f, stats) in enumerate(groups.items()) if stats]
    schema = report.get("schema_version", "?")
    return (f'<section class="run" id="run-{index}"><h2>Run {_h(label)} <span class=muted>(schema {_h(schema)})'
            f'</span></h2>{_signal_warnings(result)}{_cards(result)}'
            f'<div class="twocol"><div><h3>Run</h3>{_metadata(report, label)}</div>'
            f'<div><h3>Metrics</h3>{_metric_rows(result)}</div></div>{run_html(result, index, (_h, _svg))}'
            f'{adaptive_run(result, _h)}<div class="plots">{"".join(plots)}</div><h3>Questions</h3>'
            f'{_questions(rows, k, result.diagnosis_counts is not None)}</section>')


GLOSSARY = (  # terms of the page that are not metrics of the registry (those come with their own description)
    ("needle", "the document that answers a question (a question may have several)"),
    ("R3 / rank", "the position of the first retrieved chunk from a needle document (chunk level); doc rank: "
                  "its position among the distinct documents retrieved (document level)"),
    ("grade", "the judge's 1-10 grade of how well the retrieved chunks answer the question"),
    ("total score", "grade × rank weight: 1.0 at rank 1, 0.95 at 2-3, 0.85 at 4-5, 0.6 when no needle chunk "
                    "was retrieved"),
    ("pass ≥ 7", "a question passes when its total score is at least 7 (✓ on the question line)"),
    ("lexical proxy", "the offline judge grades by key-term overlap with the expected answer (IDF-weighted), "
                      "not by reading: a proxy to compare pipelines without an API key"),
    ("proxy metrics", "computed from the judge's own 0-3 rating of each retrieved chunk: they see only what was "
                      "retrieved, so there is no true recall"),
    ("95% CI", "percentile bootstrap interval over questions (fixed seed, recorded in the results)"),
    ("Δ, p, Holm", "paired difference between runs over the same questions, its sign-flip test p-value, "
                   "Holm-adjusted when several runs are compared with one baseline"),
)


def glossary() -> str:
    """One collapsible section: the page's terms and every metric of the registry, as its tooltips say."""
    items = [(term, text) for term, text in GLOSSARY]
    items += [(m.label, f"{m.description} ({M.UNITS[m.unit]}; {m.level} level)") for m in M.metrics()
              if m.description]
    body = "".join(f"<dt>{_h(term)}</dt><dd>{_h(text)}</dd>" for term, text in items)
    return f"<details class=glossary><summary>Glossary</summary><dl class=glossary>{body}</dl></details>"


def labels_section(path: Path | None, secrets: Iterable[str] = ()) -> str:
    """``--labels FILE``: the labelling sample's rows as one section (components.calibration.labels),
    ``secrets`` redacted; "" without."""
    if path is None:
        return ""
    from components.calibration.labels import render_labels

    return render_labels(path, secrets)


def _contents(count: int, extra: str) -> str:
    """Links to the page's sections: each run, and the sections a caller adds (the judge audit) that sit
    below every question of every run."""
    links = [f'<a href="#run-{i}">run {i + 1}</a>' for i in range(count)] if count > 1 else []
    if "<section id=judge-audit>" in extra:
        links.append('<a href="#judge-audit">judge audit</a>')
    return f"<nav class=muted>on this page: {' · '.join(links)}</nav>" if links else ""


def render_report(runs: Sequence[RunResult | Mapping], labels: Sequence[str], comparison: Mapping | None = None,
                  extra: str = "") -> str:
    """The whole page for ``runs`` (:class:`RunResult`, or results dicts: read with
    :meth:`RunResult.from_json`) named by ``labels``; ``comparison`` is
    ``compare_runs(runs, labels).to_json()`` when there are several (same runs, same order)."""
    runs = [r if isinstance(r, RunResult) else RunResult.from_json(r, label)
            for r, label in zip(runs, labels, strict=True)]
    title = "Retrieval benchmark report — " + ", ".join(labels)
    generated = datetime.now(timezone.utc).isoformat(timespec="seconds")
    body = [f"<h1>Retrieval benchmark report</h1><p class=muted>{len(runs)} run{'s' if len(runs) != 1 else ''}: "
            f"{_h(', '.join(labels))} · generated {_h(generated)}</p>", _contents(len(runs), extra), glossary()]
    if comparison is not None:
        body.append(render_comparison(comparison, runs))
    body += [_run_section(r, label, i) for i, (r, label) in enumerate(zip(runs, labels, strict=True))]
    body.append(extra)  # a section a caller adds (report --labels)
    return (f"<!DOCTYPE html><html lang=en><head><meta charset=utf-8>"
            f"<meta name=viewport content='width=device-width,initial-scale=1'>"
            f"<meta http-equiv=Content-Security-Policy content=\"default-src 'none'; style-src 'unsafe-inline'; "
            f"script-src 'unsafe-inline'; img-src data:\">"
            f"<title>{_h(title)}</title><script>{ERROR_HOOK}</script><style>{CSS}</style></head>"
            f"<body><main>{''.join(body)}</main><script>{JS}</script></body></html>\n")
