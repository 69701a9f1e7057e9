"""What the console shows: question lines, the summary table, a progress bar.

Pure functions of their arguments (the caller writes the strings): :func:`question_line` for a
question's log line, :func:`summary_table` for the table a run prints on stdout, built from its
:class:`utils.results.RunResult` (a metric a file lacks is skipped). :func:`escape_control` makes
any text from an input file safe to print on one console line. :class:`Progress` draws a bar with
rate and ETA on a terminal, nothing elsewhere.
"""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

from utils.metrics import PASS_MARK
from utils.quality_bands import band_text
from utils.records.judge_signal import run_judge_name, signal_of
from utils.records.known_answers import FIELD, known_answers_lines

TEXT_WIDTH = 70

_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}
# bidirectional overrides/isolates and marks: they can make a line read as another one
_BIDI = {0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}


def _unsafe(cp: int) -> bool:
    return cp < 0x20 or 0x7F <= cp <= 0x9F or cp in (0x2028, 0x2029) or cp in _BIDI


def escape_control(text: str) -> str:
    """``text`` with every control character escaped (C0, DEL, C1, line/paragraph separators,
    bidi controls): ``\\n``, ``\\r``, ``\\t`` by name, others as ``\\xHH`` or ``\\uHHHH``. No input
    can then start a new console line, move the cursor, or colour the terminal."""
    out = []
    for ch in text:
        cp = ord(ch)
        if not _unsafe(cp):
            out.append(ch)
        elif ch in _NAMED:
            out.append(_NAMED[ch])
        else:
            out.append(f"\\x{cp:02x}" if cp < 0x100 else f"\\u{cp:04x}")
    return "".join(out)


def shorten(text: str, width: int = TEXT_WIDTH) -> str:
    """Whitespace runs collapsed, control characters escaped, cut to ``width`` with ``...``."""
    text = escape_control(" ".join(text.split()))
    return text if len(text) <= width else text[: width - 3] + "..."


def question_line(i: int, n: int, rank: int | None, grade: int | None, total: float | None,
                  latency_ms: float, text: str) -> str:
    """One question's console line, retrieval and grade marked separately::

        [1/20] R1 ✓ | G8 T8.0 ✓ | 1ms | My pod keeps getting rejected...
        [6/20] R3 ~ | G1 T0.9 ✗ | 0ms | Which k8s version made topology...
        [9/20] R- ✗ | G9 T5.4 ✗ | 2ms | ...
        [3/20] R1 ✓ | G- (not graded) | 1ms | ...

    Retrieval: ``✓`` needle chunk first, ``~`` retrieved lower, ``✗`` not retrieved. Grade side:
    ``✓`` when the total score passes (≥ 7.0), ``✗`` when it does not; no mark when ungraded, so
    a missing grade never shows as a failed retrieval."""
    r_mark = "✓" if rank == 1 else ("~" if rank is not None else "✗")
    if grade is None or total is None:
        g_part = f"G{grade if grade is not None else '-'} (not graded)"
    else:
        g_part = f"G{grade} T{total:.1f} {'✓' if total >= PASS_MARK else '✗'}"
    return f"[{i}/{n}] R{rank if rank is not None else '-'} {r_mark} | {g_part} | {latency_ms:.0f}ms | {shorten(text)}"


# ---- the summary table

NOTHING_GRADED = "n/a (nothing graded)"
_GROUP_COLUMNS = ("hit_at_1_rate", "hit_at_5_rate", "mrr", "ndcg_at_k", "avg_llm_grade", "avg_total_score",
                  "pass_rate_7")  # metric keys of the per-group table, those a group has


def is_number(x: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def format_ci(metric: Any, ci: Any) -> str:
    """``[lo, hi]`` of ``metric`` (a :class:`utils.metrics.Metric`) with one decimal for percents and
    two otherwise; ``""`` when ``ci`` is not a pair of numbers."""
    if not (isinstance(ci, (list, tuple)) and len(ci) == 2 and all(is_number(v) for v in ci)):
        return ""
    digits = 1 if metric.unit == "percent" else 2
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def shown_metrics(result: Any) -> list:
    """The metrics a summary shows for ``result``: the run's metrics marked ``summary`` in the
    registry, in its order; hit@k only when k is not 5 (then it is not hit@5 again)."""
    from utils.metrics import METRICS

    return [m for key, m in METRICS.items() if m.summary and key in result.metrics
            and not (key == "hit_at_k_rate" and result.run.k == 5)]


def _groups(groups: Mapping, k: int | None) -> list[str]:
    from utils.metrics import METRICS

    lines = []
    for field_name, values in groups.items():
        if not isinstance(values, Mapping) or not values:
            continue
        stats = [v for v in values.values() if isinstance(v, Mapping)]
        cols = [METRICS[key] for key in _GROUP_COLUMNS if key in METRICS and any(key in s for s in stats)]
        names = [escape_control(str(v)) for v in values]
        width = max(len(field_name), *(len(n) for n in names))
        heads = [m.label_at(k) for m in cols]
        lines.append(f"  {escape_control(field_name):<{width}}{'n':>5}" + "".join(f"{h:>10}" for h in heads))
        for name, stat in zip(names, values.values(), strict=True):
            stat = stat if isinstance(stat, Mapping) else {}
            count = str(stat["count"]) if "count" in stat else "-"
            lines.append(f"  {name:<{width}}{count:>5}" + "".join(f"{m.format(stat.get(m.key)):>10}" for m in cols))
    return lines


def _usage(run: Any, row: Callable[[str, str], str]) -> list[str]:
    lines = []
    for who, u in (run.usage or {}).items():
        if not isinstance(u, Mapping):
            continue
        parts = [f"{u.get('calls', 0)} calls"]
        if u.get("input_tokens") is not None or u.get("output_tokens") is not None:
            parts.append(_tokens(u))
        if is_number(u.get("cost_usd")):
            parts.append(f"${u['cost_usd']:.4f}")
        lines.append(row(f"{escape_control(str(who))} usage", ", ".join(parts)))
    if run.usage:
        lines.append(row("cost", f"${run.cost_usd:.4f}" if is_number(run.cost_usd) else "unknown"))
    return lines


def _tokens(u: Mapping) -> str:
    """``N in / M out tokens``; with a prompt cache, ``N in, C of them from cache / M out tokens``
    (N counts every prompt token: those sent, those written to the cache and those read from it)."""
    cached = u.get("cache_read_input_tokens") or 0
    total = (u.get("input_tokens") or 0) + (u.get("cache_creation_input_tokens") or 0) + cached
    from_cache = f", {cached:,} of them from cache" if cached else ""
    return f"{total:,} in{from_cache} / {u.get('output_tokens') or 0:,} out tokens"


def diagnosis_fixes(rows: Any) -> dict[str, str]:
    """``{tag: fix}`` of the rows' diagnoses (each diagnosis names the fix of each of its tags)."""
    fixes: dict[str, str] = {}
    for r in rows:
        diagnosis = getattr(r, "diagnosis", None)
        found = diagnosis.get("fixes") if isinstance(diagnosis, Mapping) else None
        if isinstance(found, Mapping):
            fixes.update({str(t): str(f) for t, f in found.items() if t not in fixes})
    return fixes


def clamped_count(rows: Any) -> int:
    """The rows whose grade was clamped into 1-10 (``grade_clamped_from`` set)."""
    return sum(1 for r in rows if getattr(r, "grade_clamped_from", None) is not None)


CLAMPED_NOTE = "the judge's grade was outside 1-10 and was clamped (grade_clamped_from keeps it)"


Row = Callable[[str, str], str]  # a summary line: its label, its value


def shown_path(path: str) -> str:
    """``path`` relative to the current folder when it lies inside it, else as it is."""
    try:
        relative = os.path.relpath(path)
    except (OSError, ValueError):  # no current folder; another drive
        return path
    return relative if not relative.startswith(os.pardir) else path


def _signal_lines(result: Any, row: Row) -> list[str]:
    """The judge's signal check (``run.judge.judge_signal``): its line, and a WARNING line when uninformative; then
    the known-answers check (``run.known_answers``), when the run made one."""
    signal = signal_of(result.run.judge)
    lines = []
    if signal is not None:
        warning = signal.warning(run_judge_name(result.run.judge, getattr(result, "panel", None)))
        lines += [row("judge signal", escape_control(signal.line()))] + ([escape_control(warning)] if warning else [])
    return lines + [row("known answers", escape_control(line))
                    for line in known_answers_lines(result.run.extra.get(FIELD))]


def _what_ran(result: Any, row: Row, proxy: bool) -> list[str]:
    """The summary's first lines: where the results went, then strategy, corpus, questions, k, judge, status."""
    run = result.run
    lines = []
    if run.output:  # first: where the results went
        lines.append(row("results", escape_control(shown_path(run.output))))
    if run.strategy:
        lines.append(row("strategy", escape_control(run.strategy)))
    corpus = run.corpus
    if corpus.source:
        lines.append(row("corpus", escape_control(f"{corpus.source} ({corpus.documents} documents, "
                                                  f"{corpus.chunks} chunks)")))
    questions = f"{result.question_count}  (graded {result.graded_count}, ungraded {result.ungraded_count})"
    lines.append(row("questions",
                     (escape_control(run.questions_file) + ": " if run.questions_file else "") + questions))
    lines.append(row("k", str(run.k)))
    lines.append(row("judge", escape_control(f"{run.judge.provider} {run.judge.model}")
                     + (" (grades are a lexical proxy, not an LLM's)" if proxy else "")))
    if run.status:
        lines.append(row("status", escape_control(run.status)))
    lines.extend(_signal_lines(result, row))
    return lines


def _metric_lines(result: Any, metrics: list, labels: Mapping[str, str], row: Row, proxy: bool) -> list[str]:
    """Each metric with its interval (``n/a (nothing graded)`` for the grade metrics when nothing was
    graded), the quality bands and the targets."""
    lines = []
    nothing_graded = result.graded_count == 0
    judged = [m for m in metrics if m.graded_only]
    for m in metrics:
        if m.graded_only and nothing_graded:
            if m is judged[0]:
                lines.append(row(", ".join(labels[j.key] for j in judged[:2]) + ", ...", NOTHING_GRADED))
            continue
        value = m.format(result.metrics.get(m.key))
        ci = format_ci(m, result.ci95.get(m.key))
        marks = (f" {ci}" if ci else "") + (" (lexical proxy)" if proxy and m.level == "judge" else "")
        lines.append(row(labels[m.key], value + marks))
    for i, entry in enumerate((result.quality_bands or {}).values()):
        lines.append(row("quality" if i == 0 else "", escape_control(f"{entry.label} {band_text(entry)}")))
    targets = result.targets or []
    if targets:
        met = sum(1 for t in targets if t.met)
        lines.append(row("targets", f"{met} of {len(targets)} met"))
        lines.extend(row("", escape_control(t.line)) for t in targets)
    return lines


def _failure_lines(result: Any, row: Row) -> list[str]:
    """Why questions were not graded, the clamped grades, the retrieval that failed."""
    lines = []
    if result.grade_errors:
        lines.append(row("ungraded because", ", ".join(f"{escape_control(str(kind))} x{n}"
                                                        for kind, n in result.grade_errors.items())))
    clamped = clamped_count(result.rows)
    if clamped:
        lines.append(row("clamped grades", f"{clamped}: {CLAMPED_NOTE}"))
    failed = [r.grade_error for r in result.rows if r.retrieval_failed]
    if failed:  # the first error once, however many questions it failed
        lines.append(row("retrieval failed", f"{len(failed)} of {result.question_count} questions (first: "
                                             f"{escape_control(failed[0].split(': ', 1)[-1][:200])})"))
    return lines


def _judge_check_lines(result: Any, row: Row) -> list[str]:
    """How much the grades moved between repeats, and when the chunks were reversed."""
    lines = []
    consistency = result.judge_consistency
    if consistency:
        chosen = (f" (--repeat-where uncertain: {consistency.questions} of {consistency.graded} graded questions "
                  "repeated, near a pass mark or disputed; not the whole set's noise)"
                  if consistency.repeat_where else "")
        lines.append(row("judge repeats", f"grade moved by 2 or more in {consistency.moved_2_or_more_rate:.1f}% of "
                                          f"{consistency.questions} questions, mean SD {consistency.mean_sd:.2f}"
                                          + chosen))
    checked = result.order_check
    if checked:
        ci = checked.mean_change_ci95
        lines.append(row("chunk order", f"reversed, the grade moved by {checked.mean_abs_change:.2f} on average "
                                        f"over {checked.questions} questions (mean {checked.mean_change:+.2f}"
                                        + (f" [{ci[0]:+.2f}, {ci[1]:+.2f}]" if ci else "")
                                        + f"); pass/fail flipped for {checked.flip_rate:.1f}%"))
    return lines


def _closing_lines(result: Any, row: Row) -> list[str]:
    """Retrieval time, the LLM calls' usage, the diagnosis and the groups."""
    run = result.run
    lines = []
    if is_number(result.avg_latency_ms) or is_number(result.index_time_s):
        parts = []
        if is_number(result.avg_latency_ms):
            parts.append(f"{result.avg_latency_ms:.1f} ms/question")
        if is_number(result.index_time_s):
            parts.append(f"index {result.index_time_s:.2f} s")
        lines.append(row("retrieval", ", ".join(parts)))
    lines.extend(_usage(run, row))
    counts = result.diagnosis_counts
    if isinstance(counts, Mapping):
        fired = [(tag, n) for tag, n in counts.items() if is_number(n) and n]
        lines.append(row("diagnosis", ", ".join(f"{escape_control(str(t))} {n}" for t, n in fired) + " (primary types)"
                         if fired else "none"))
        fixes = diagnosis_fixes(result.rows)
        lines.extend(row("", escape_control(f"{t} → {fixes[t]}")) for t, _ in fired if t in fixes)
    if result.groups:
        group_lines = _groups(result.groups, run.k)
        if group_lines:
            lines.append("groups")
            lines.extend(group_lines)
    return lines


def summary_table(result: Any, *, proxy: bool) -> str:
    """The run's summary from its :class:`utils.results.RunResult`: first where the results went
    (``run.output``, relative to the current folder when inside it), then what was run (strategy,
    corpus, questions, k, judge), then each metric of the run with its 95% interval, the counts,
    cost, diagnosis and groups. A metric that needs a grade reads ``n/a (nothing graded)`` when
    nothing was graded (the results file keeps its numbers); with ``proxy`` (a judge that calls no
    model: :func:`components.judges.providers.is_proxy_judge`), the grades are marked as the lexical
    proxy they are."""
    metrics = shown_metrics(result)
    labels = {m.key: m.label_at(result.run.k) for m in metrics}
    width = max([17, *(len(label) + 1 for label in labels.values() if len(label) < 24)])

    def row(label: str, value: str) -> str:
        return f"{label:<{width}} {value}"

    lines = [*_what_ran(result, row, proxy), *_metric_lines(result, metrics, labels, row, proxy),
             *_failure_lines(result, row), *_judge_check_lines(result, row), *_closing_lines(result, row)]
    return "\n".join(lines) + "\n"


# ---- progress bar

def _clock_text(seconds: float) -> str:
    seconds = max(0, int(round(seconds)))
    h, rest = divmod(seconds, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"


class Progress:
    """A one-line progress bar on ``stream``, drawn only when ``stream.isatty()``; elsewhere it
    writes nothing (logs and redirected output stay clean).

    ``total`` known: ``label [#####-----] 12/20 60% 3.4 q/s ETA 0:02``; unknown (an opaque step
    such as indexing): ``label 3 s``. Nothing is drawn before ``delay`` seconds have passed, so a
    step that ends sooner leaves no trace. Redraws at most every ``min_interval`` seconds.
    :meth:`write` prints a log line above the bar (clear, write, redraw): route the console log
    sink through it while a bar is shown. :meth:`heartbeat` redraws from a thread while a
    blocking call runs. :meth:`close` clears the bar."""

    def __init__(self, label: str, total: int | None = None, stream: TextIO | None = None, *, unit: str = "it",
                 delay: float = 0.0, min_interval: float = 0.1, width: int = 24,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.label, self.total, self.unit = label, total, unit
        self.stream = stream if stream is not None else sys.stderr
        self.delay, self.min_interval, self.width, self.clock = delay, min_interval, width, clock
        self.done = 0
        self.start = clock()
        self._last_draw: float | None = None
        self._shown = False
        self._lock = threading.Lock()
        try:
            self.enabled = bool(self.stream.isatty())
        except (AttributeError, ValueError):
            self.enabled = False

    def render(self) -> str:
        """The bar's text now (no escape codes)."""
        elapsed = max(self.clock() - self.start, 0.0)
        if self.total is None:
            return f"{self.label} {elapsed:.0f} s" + (f" ({self.done} {self.unit})" if self.done else "")
        total = max(self.total, 0)
        share = min(self.done / total, 1.0) if total else 1.0
        filled = int(share * self.width)
        bar = "#" * filled + "-" * (self.width - filled)
        text = f"{self.label} [{bar}] {self.done}/{total} {share:.0%}"
        rate = self.done / elapsed if elapsed > 0 else 0.0
        if rate > 0:
            text += f" {rate:.1f} {self.unit}/s ETA {_clock_text((total - self.done) / rate)}"
        return text

    def _draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = self.clock()
        if now - self.start < self.delay:
            return
        if not force and self._last_draw is not None and now - self._last_draw < self.min_interval:
            return
        self.stream.write("\r" + escape_control(self.render()) + "\x1b[K")
        self.stream.flush()
        self._last_draw, self._shown = now, True

    def advance(self, n: int = 1) -> None:
        """``n`` more items done; redraw (the last item always redraws)."""
        with self._lock:
            self.done += n
            self._draw(force=self.total is not None and self.done >= self.total)

    def write(self, text: str) -> None:
        """``text`` (a finished log line) above the bar: cleared, written, bar redrawn."""
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[K")
            self.stream.write(text)
            if self._shown:
                self._draw(force=True)
            self.stream.flush()

    def close(self) -> None:
        """Clear the bar's line, if one was drawn."""
        with self._lock:
            if self._shown:
                self.stream.write("\r\x1b[K")
                self.stream.flush()
                self._shown = False

    @contextmanager
    def heartbeat(self, interval: float = 0.25) -> Iterator[Progress]:
        """Redraw every ``interval`` seconds from a daemon thread while the body blocks (a long
        ``retriever.index()``); no thread at all when the stream is not a terminal."""
        if not self.enabled:
            yield self
            return
        stop = threading.Event()

        def beat() -> None:
            while not stop.wait(interval):
                with self._lock:
                    self._draw()

        thread = threading.Thread(target=beat, name="progress", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()

    def __enter__(self) -> Progress:
        """While entered (and drawing on a terminal), the console log sink writes through
        :meth:`write` (see :func:`active_progress`), so log lines never collide with the bar."""
        global _ACTIVE
        if self.enabled:
            _ACTIVE = self
        return self

    def __exit__(self, *exc: object) -> None:
        global _ACTIVE
        if _ACTIVE is self:
            _ACTIVE = None
        self.close()


_ACTIVE: Progress | None = None


def active_progress(stream: TextIO) -> Progress | None:
    """The progress bar drawn on ``stream`` right now, if any: the console sink writes through it."""
    return _ACTIVE if _ACTIVE is not None and _ACTIVE.stream is stream else None
