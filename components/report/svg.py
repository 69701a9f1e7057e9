"""Charts drawn as inline SVG text, without a plotting library: the report's plots.

A plotting library costs the report most of its time (importing it, then laying out and drawing
every figure twice); the report's charts are bars, bands, lines, dots and text on linear axes, which
this module writes directly, in milliseconds (``python -m bench.report``).

:class:`Chart` is one plotting area of ``width`` × ``height`` SVG pixels with linear x and y scales
(``xlim``, ``ylim``; a reversed range flips the axis), the left and bottom axis lines, ticks, axis
labels, a title, and (``with_legend``) a legend strip under the x label. Marks are added in data coordinates
(:meth:`Chart.bar`, :meth:`Chart.hbar`, :meth:`Chart.band`, :meth:`Chart.hline`, :meth:`Chart.dot`,
:meth:`Chart.text`) and drawn in that order; :meth:`Chart.svg` gives the ``<svg>`` element, and
:func:`side_by_side` several charts in one. Every text is XML-escaped here; the element has a
``viewBox`` and scales with its container (the report's CSS sets ``width:100%``). Text widths are
estimated (:data:`CHAR_WIDTH`), which is all the layout needs: the margins are fixed, and long
labels are shortened by the caller.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from utils.console import escape_control

FONT = "font-family:system-ui,-apple-system,'Segoe UI',Roboto,sans-serif"
CHAR_WIDTH = 6.2  # the mean width of a character at 11 px, for placing the legend and sizing margins
TICK = 4  # the length of a tick mark
LEGEND_ROW = 18  # the legend strip's height
AXIS_COLOR = "#333"


def _e(text: object) -> str:
    """``text`` as SVG text: control characters shown as escapes (XML cannot hold them), then XML-escaped."""
    return html.escape(escape_control(str(text)), quote=True)


def _n(value: float) -> str:
    """A coordinate as short SVG text (two decimals at most)."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def nice_ticks(low: float, high: float, count: int = 5, integer: bool = False) -> list[float]:
    """About ``count`` round tick values (1, 2 or 5 × 10ⁿ apart) from ``low`` to ``high``; whole
    numbers only with ``integer``."""
    if not (math.isfinite(low) and math.isfinite(high)) or high <= low:
        return [low] if math.isfinite(low) else []
    raw = (high - low) / max(count, 1)
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 5, 10) if m * power >= raw)
    if integer:
        step = max(1.0, round(step))
    first = math.ceil(low / step - 1e-9) * step
    ticks, value = [], first
    while value <= high + 1e-9 * step:
        ticks.append(round(value, 10) + 0.0)
        value += step
    return ticks


def tick_label(value: float) -> str:
    return f"{value:g}"


@dataclass
class Chart:
    """One plotting area with its axes, marks, title and legend (module docstring)."""

    width: float
    height: float
    xlim: tuple[float, float]
    ylim: tuple[float, float]
    title: str = ""
    xlabel: str = ""
    ylabel: str = ""
    left: float = 48  # margins, in pixels: room for the tick labels and the axis labels
    right: float = 12
    top: float = 26
    bottom: float = 40
    with_legend: bool = False  # keep a legend strip under the x label (the marks' ``label``s go there)
    xticks: list[tuple[float, str]] = field(default_factory=list)
    yticks: list[tuple[float, str]] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)
    legend: list[tuple[str, str, float, str]] = field(default_factory=list)  # label, color, opacity, kind

    # -- scales

    @property
    def plot_width(self) -> float:
        return self.width - self.left - self.right

    @property
    def plot_height(self) -> float:
        return self.height - self.top - self.bottom - (LEGEND_ROW if self.with_legend else 0)

    def x(self, value: float) -> float:
        low, high = self.xlim
        return self.left + (value - low) / (high - low) * self.plot_width

    def y(self, value: float) -> float:
        low, high = self.ylim
        return self.top + (high - value) / (high - low) * self.plot_height

    # -- marks, in data coordinates

    def _legend(self, label: str | None, color: str, opacity: float, kind: str) -> None:
        if label is not None:
            self.legend.append((label, color, opacity, kind))

    def rect(self, x0: float, x1: float, y0: float, y1: float, color: str, opacity: float = 1.0,
             label: str | None = None, tip: str | None = None) -> None:
        """A rectangle from (x0, y0) to (x1, y1); ``label`` adds it to the legend, ``tip`` is its tooltip."""
        left, right = sorted((self.x(x0), self.x(x1)))
        top, bottom = sorted((self.y(y0), self.y(y1)))
        title = f"<title>{_e(tip)}</title>" if tip else ""
        self.marks.append(f'<rect x="{_n(left)}" y="{_n(top)}" width="{_n(right - left)}" height="{_n(bottom - top)}" '
                          f'fill="{color}"' + (f' fill-opacity="{opacity:g}"' if opacity < 1 else "")
                          + f">{title}</rect>")
        self._legend(label, color, opacity, "box")

    def bar(self, x: float, value: float, color: str, width: float = 0.8, label: str | None = None,
            tip: str | None = None) -> None:
        """A vertical bar centred on ``x`` from 0 to ``value``."""
        self.rect(x - width / 2, x + width / 2, 0, value, color, label=label, tip=tip)

    def hbar(self, y: float, value: float, color: str, height: float = 0.8, label: str | None = None,
             tip: str | None = None) -> None:
        """A horizontal bar centred on ``y`` from 0 to ``value``."""
        self.rect(0, value, y - height / 2, y + height / 2, color, label=label, tip=tip)

    def band(self, y0: float, y1: float, color: str, opacity: float, label: str | None = None) -> None:
        """A horizontal band across the whole x range."""
        self.rect(self.xlim[0], self.xlim[1], y0, y1, color, opacity, label=label)

    def hline(self, y: float, color: str, width: float = 1.0, dashed: bool = False, label: str | None = None) -> None:
        dash = ' stroke-dasharray="5 3"' if dashed else ""
        self.marks.append(f'<line x1="{_n(self.left)}" x2="{_n(self.left + self.plot_width)}" y1="{_n(self.y(y))}" '
                          f'y2="{_n(self.y(y))}" stroke="{color}" stroke-width="{width:g}"{dash}/>')
        self._legend(label, color, 1.0, "dash" if dashed else "line")

    def dot(self, x: float, y: float, radius: float, color: str, opacity: float = 1.0, tip: str | None = None) -> None:
        """A circle of ``radius`` pixels at (x, y)."""
        title = f"<title>{_e(tip)}</title>" if tip else ""
        self.marks.append(f'<circle cx="{_n(self.x(x))}" cy="{_n(self.y(y))}" r="{_n(radius)}" fill="{color}" '
                          f'fill-opacity="{opacity:g}" stroke="#fff" stroke-width="1">{title}</circle>')

    def text(self, x: float, y: float, text: str, *, size: float = 10, color: str = "#222", anchor: str = "middle",
             dy: float = 0, baseline: str = "auto") -> None:
        """``text`` at (x, y), moved ``dy`` pixels down (negative: up)."""
        self.marks.append(f'<text x="{_n(self.x(x))}" y="{_n(self.y(y) + dy)}" font-size="{size:g}" fill="{color}" '
                          f'text-anchor="{anchor}" dominant-baseline="{baseline}">{_e(text)}</text>')

    def note(self, text: str) -> None:
        """``text`` in the middle of an empty plotting area (no axes drawn)."""
        self.xticks, self.yticks = [], []
        self.marks.append(f'<text x="{_n(self.left + self.plot_width / 2)}" y="{_n(self.top + self.plot_height / 2)}" '
                          f'font-size="11" fill="#8a8f98" text-anchor="middle">{_e(text)}</text>')

    # -- the whole chart

    def _axes(self) -> list[str]:
        x0, y0 = self.left, self.top + self.plot_height
        out = []
        if self.xticks or self.yticks:
            out.append(f'<path d="M{_n(x0)} {_n(self.top)}V{_n(y0)}H{_n(x0 + self.plot_width)}" fill="none" '
                       f'stroke="{AXIS_COLOR}" stroke-width="1"/>')
        for value, label in self.xticks:
            x = self.x(value)
            out.append(f'<line x1="{_n(x)}" x2="{_n(x)}" y1="{_n(y0)}" y2="{_n(y0 + TICK)}" stroke="{AXIS_COLOR}"/>'
                       f'<text x="{_n(x)}" y="{_n(y0 + TICK + 11)}" font-size="10" text-anchor="middle">'
                       f'{_e(label)}</text>')
        for value, label in self.yticks:
            y = self.y(value)
            out.append(f'<line x1="{_n(x0 - TICK)}" x2="{_n(x0)}" y1="{_n(y)}" y2="{_n(y)}" stroke="{AXIS_COLOR}"/>'
                       f'<text x="{_n(x0 - TICK - 3)}" y="{_n(y)}" font-size="10" text-anchor="end" '
                       f'dominant-baseline="middle">{_e(label)}</text>')
        if self.xlabel:
            out.append(f'<text x="{_n(self.left + self.plot_width / 2)}" y="{_n(y0 + TICK + 27)}" font-size="11" '
                       f'text-anchor="middle">{_e(self.xlabel)}</text>')
        if self.ylabel:
            cy = self.top + self.plot_height / 2
            out.append(f'<text transform="translate(12 {_n(cy)}) rotate(-90)" font-size="11" '
                       f'text-anchor="middle">{_e(self.ylabel)}</text>')
        return out

    def _legend_strip(self) -> list[str]:
        if not self.legend:
            return []
        widths = [24 + CHAR_WIDTH * 0.9 * len(label) + 14 for label, *_ in self.legend]
        x = max(4.0, (self.width - sum(widths)) / 2)
        y = self.height - LEGEND_ROW / 2 - 2
        out = []
        for (label, color, opacity, kind), w in zip(self.legend, widths, strict=True):
            if kind == "box":
                out.append(f'<rect x="{_n(x)}" y="{_n(y - 5)}" width="16" height="10" fill="{color}"'
                           + (f' fill-opacity="{opacity:g}"' if opacity < 1 else "") + "/>")
            else:
                dash = ' stroke-dasharray="5 3"' if kind == "dash" else ""
                out.append(f'<line x1="{_n(x)}" x2="{_n(x + 16)}" y1="{_n(y)}" y2="{_n(y)}" stroke="{color}" '
                           f'stroke-width="1.5"{dash}/>')
            out.append(f'<text x="{_n(x + 20)}" y="{_n(y)}" font-size="9.5" dominant-baseline="middle">'
                       f'{_e(label)}</text>')
            x += w
        return out

    def body(self) -> str:
        """The chart's elements (no ``<svg>`` around them)."""
        title = (f'<text x="{_n(self.left)}" y="16" font-size="12" font-weight="600">{_e(self.title)}</text>'
                 if self.title else "")
        return title + "".join(self.marks) + "".join(self._axes()) + "".join(self._legend_strip())

    def svg(self) -> str:
        return svg_element(self.width, self.height, self.body(), self.title)


def svg_element(width: float, height: float, body: str, label: str = "") -> str:
    return (f'<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {_n(width)} {_n(height)}" width="{_n(width)}" '
            f'height="{_n(height)}" role="img" aria-label="{_e(label)}" style="{FONT}" fill="#222">{body}</svg>')


def side_by_side(charts: Sequence[Chart], title: str = "") -> str:
    """Several charts in one ``<svg>``, left to right, under one ``title``."""
    top = 20 if title else 0
    width, height = sum(c.width for c in charts), max(c.height for c in charts) + top
    parts = [f'<text x="6" y="14" font-size="12" font-weight="600">{_e(title)}</text>' if title else ""]
    x = 0.0
    for chart in charts:
        parts.append(f'<g transform="translate({_n(x)} {top})">{chart.body()}</g>')
        x += chart.width
    return svg_element(width, height, "".join(parts), title)
