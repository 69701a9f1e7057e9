"""What the console shows: question lines, the summary table, a progress bar.

Pure functions of their arguments (the caller writes the strings): :func:`question_line` for a
question's log line, :func:`summary_table` for the table a run (or ``report``) prints on stdout,
built from the results JSON dict so that it reads today's schema-1 files and the schema-2 ones
(absent keys are skipped). :func:`escape_control` makes any text from an input file safe to print
on one console line. :class:`Progress` draws a bar with rate and ETA on a terminal, nothing
elsewhere.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from typing import Any, TextIO

PASS_MARK = 7.0  # a total score at or above this passes: the ✓ of a question line, no diagnosis at rank 1
TEXT_WIDTH = 70
NOTHING_GRADED = "n/a (nothing graded)"

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

_LABEL = 18
_PERCENT = {"accuracy", "hit_at_1_rate", "hit_at_5_rate", "hit_at_k_rate", "pass_rate_8", "pass_rate_7",
            "pass_rate_6_5"}
_DOC_METRICS = (("mrr_doc", "MRR (document)"), ("ndcg_at_k", "nDCG@k"), ("recall_at_k", "recall@k"),
                ("map_at_k", "MAP@k"), ("context_precision", "context precision"))
_GROUP_COLUMNS = (("count", "n"), ("hit_at_1_rate", "hit@1"), ("hit_at_5_rate", "hit@5"), ("mrr", "MRR"),
                  ("ndcg_at_k", "nDCG@k"), ("avg_llm_grade", "grade"), ("avg_total_score", "total"),
                  ("pass_rate_7", "pass 7"))


def is_number(x: Any) -> bool:
    """An int or float, not a bool."""
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def format_value(name: str, x: Any) -> str:
    """A metric's value: percents with one decimal and ``%``, MRR-like with three, grades with two."""
    if not is_number(x):
        return "-"
    if name in _PERCENT or name.endswith("_rate"):
        return f"{x:.1f}%"
    if name.startswith("avg_"):
        return f"{x:.2f}"
    return f"{x:.3f}"


def format_ci(name: str, ci: Any) -> str:
    """``[lo, hi]`` in the metric's unit (one decimal for percents, two otherwise); ``""`` when
    ``ci`` is not a pair of numbers."""
    if not (isinstance(ci, (list, tuple)) and len(ci) == 2 and all(is_number(v) for v in ci)):
        return ""
    digits = 1 if (name in _PERCENT or name.endswith("_rate")) else 2
    return f"[{ci[0]:.{digits}f}, {ci[1]:.{digits}f}]"


def _with_ci(name: str, x: Any, ci95: Mapping) -> str:
    ci = format_ci(name, ci95.get(name))
    return format_value(name, x) + (f" {ci}" if ci else "")


def _row(label: str, value: str) -> str:
    return f"{label:<{_LABEL - 1}} {value}"


def _groups(groups: Mapping) -> list[str]:
    lines = []
    for field_name, values in groups.items():
        if not isinstance(values, Mapping) or not values:
            continue
        stats = [v for v in values.values() if isinstance(v, Mapping)]
        cols = [(k, head) for k, head in _GROUP_COLUMNS if any(k in s for s in stats)]
        names = [escape_control(str(v)) for v in values]
        width = max(len(field_name), *(len(n) for n in names))
        head = f"  {escape_control(field_name):<{width}}" + "".join(f"{h:>9}" for _, h in cols)
        lines.append(head)
        for name, stat in zip(names, values.values(), strict=True):
            stat = stat if isinstance(stat, Mapping) else {}
            cells = [(str(stat[k]) if k == "count" and k in stat else format_value(k, stat.get(k))) for k, _ in cols]
            lines.append(f"  {name:<{width}}" + "".join(f"{c:>9}" for c in cells))
    return lines


def _usage(run: Mapping) -> list[str]:
    lines = []
    usage = run.get("usage")
    if isinstance(usage, Mapping):
        for who, u in usage.items():
            if not isinstance(u, Mapping):
                continue
            parts = [f"{u.get('calls', 0)} calls"]
            if u.get("input_tokens") is not None or u.get("output_tokens") is not None:
                parts.append(f"{u.get('input_tokens') or 0:,} in / {u.get('output_tokens') or 0:,} out tokens")
            if is_number(u.get("cost_usd")):
                parts.append(f"${u['cost_usd']:.4f}")
            lines.append(_row(f"{escape_control(str(who))} usage", ", ".join(parts)))
    if "cost_usd" in run:
        lines.append(_row("cost", f"${run['cost_usd']:.4f}" if is_number(run["cost_usd"]) else "unknown"))
    return lines


def summary_table(report: Mapping) -> str:
    """The run's summary from its results JSON dict (schema 1 or 2; an absent key's line is left
    out). Pass rates read ``n/a (nothing graded)`` when nothing was graded (the JSON keeps its
    numbers); a CI from ``ci95`` follows its value as ``[lo, hi]``."""
    run = report.get("run") if isinstance(report.get("run"), Mapping) else {}
    ci95 = report.get("ci95") if isinstance(report.get("ci95"), Mapping) else {}
    lines = []
    if "status" in run:
        lines.append(_row("status", escape_control(str(run["status"]))))
    judge = run.get("judge")
    if isinstance(judge, Mapping):
        lines.append(_row("judge", escape_control(f"{judge.get('provider', '?')} {judge.get('model', '?')}")))
    if "question_count" in report:
        lines.append(_row("questions", f"{report['question_count']}  (graded {report.get('graded_count', 0)}, "
                                       f"ungraded {report.get('ungraded_count', 0)})"))
    hits = [("hit_at_1_rate", "@1"), ("hit_at_5_rate", "@5")]
    k = run.get("k")
    if "hit_at_k_rate" in report and k != 5:
        hits.append(("hit_at_k_rate", f"@{k if k is not None else 'k'}"))
    hits = [(name, at) for name, at in hits if name in report]
    if hits:
        lines.append(_row("hit" + " / ".join(at for _, at in hits),
                          " / ".join(_with_ci(name, report[name], ci95) for name, _ in hits)))
    if "mrr" in report:
        lines.append(_row("MRR", _with_ci("mrr", report["mrr"], ci95)))
    for name, label in _DOC_METRICS:
        if name in report:
            lines.append(_row(label, _with_ci(name, report[name], ci95)))
    nothing_graded = report.get("graded_count") == 0
    if "avg_llm_grade" in report or "avg_total_score" in report:
        lines.append(_row("avg grade / total", NOTHING_GRADED if nothing_graded else
                          f"{_with_ci('avg_llm_grade', report.get('avg_llm_grade'), ci95)} / "
                          f"{_with_ci('avg_total_score', report.get('avg_total_score'), ci95)}"))
    passes = [name for name in ("pass_rate_8", "pass_rate_7", "pass_rate_6_5") if name in report]
    if passes:
        label = "pass " + " / ".join(n.removeprefix("pass_rate_").replace("_", ".") for n in passes)
        if nothing_graded:
            lines.append(_row(label, NOTHING_GRADED))
        else:
            lines.append(_row(label, " / ".join(_with_ci(n, report[n], ci95) for n in passes)))
    errors = report.get("grade_errors")
    if isinstance(errors, Mapping) and errors:
        lines.append(_row("ungraded because", ", ".join(f"{escape_control(str(kind))} x{n}"
                                                        for kind, n in errors.items())))
    for name in sorted(n for n in report if "proxy" in n and n != "ci95"):
        value = report[name]
        if is_number(value) or value is None:
            lines.append(_row(name.replace("_", " "), _with_ci(name, value, ci95)))
        elif isinstance(value, Mapping):
            lines.append(_row(name.replace("_", " "), ", ".join(
                f"{escape_control(str(key))} {format_value(str(key), v)}" for key, v in value.items() if is_number(v))))
    if is_number(report.get("avg_latency_ms")) or is_number(report.get("index_time_s")):
        parts = []
        if is_number(report.get("avg_latency_ms")):
            parts.append(f"{report['avg_latency_ms']:.1f} ms/question")
        if is_number(report.get("index_time_s")):
            parts.append(f"index {report['index_time_s']:.2f} s")
        lines.append(_row("retrieval", ", ".join(parts)))
    lines.extend(_usage(run))
    counts = report.get("diagnosis_counts")
    if isinstance(counts, Mapping):
        fired = [(tag, n) for tag, n in counts.items() if is_number(n) and n]
        lines.append(_row("diagnosis", ", ".join(f"{escape_control(str(t))} {n}" for t, n in fired) or "none"))
    groups = report.get("groups")
    if isinstance(groups, Mapping) and groups:
        group_lines = _groups(groups)
        if group_lines:
            lines.append("groups")
            lines.extend(group_lines)
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
