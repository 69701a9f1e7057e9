"""The report's charts as SVG text (components.report.svg): scales, ticks, escaping, layout."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

import pytest

from components.report.svg import Chart, nice_ticks, side_by_side


@pytest.mark.parametrize("low, high, integer, ticks", [
    (0, 10, False, [0, 2, 4, 6, 8, 10]),
    (0, 1, False, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
    (-1.08, 1.08, False, [-1.0, -0.5, 0.0, 0.5, 1.0]),
    (0, 13.8, True, [0, 5, 10]),  # 13.8 / 5 = 2.76 → a step of 5
    (1, 3, True, [1, 2, 3]),  # never a step below 1 on a count axis
    (0, 100, False, [0, 20, 40, 60, 80, 100]),
])
def test_nice_ticks_by_hand(low, high, integer, ticks):
    assert nice_ticks(low, high, 5, integer=integer) == pytest.approx(ticks)


def test_scales_map_data_to_pixels_and_a_reversed_range_flips():
    chart = Chart(420, 280, (0, 10), (0, 100), left=40, right=20, top=20, bottom=60)  # plot area 360 × 200
    assert (chart.x(0), chart.x(5), chart.x(10)) == (40, 220, 400)
    assert (chart.y(0), chart.y(50), chart.y(100)) == (220, 120, 20)  # up is smaller y
    flipped = Chart(420, 280, (0, 10), (2.5, -0.5), left=40, right=20, top=20, bottom=60)
    assert flipped.y(-0.5) == 20 and flipped.y(2.5) == 220  # the first category on top
    with_legend = Chart(420, 280, (0, 10), (0, 100), top=20, bottom=60, with_legend=True)
    assert with_legend.plot_height == 200 - 18  # the legend strip's room


def test_a_bar_is_drawn_where_its_value_says():
    chart = Chart(420, 280, (0, 10), (0, 100), left=40, right=20, top=20, bottom=60)
    chart.bar(5, 50, "#123456", width=2)
    rect = ET.fromstring(chart.svg()).find("{http://www.w3.org/2000/svg}rect")
    assert {k: rect.get(k) for k in ("x", "y", "width", "height", "fill")} == \
        {"x": "184", "y": "120", "width": "72", "height": "100", "fill": "#123456"}  # x 4..6, y 0..50


def test_every_text_is_escaped_and_the_svg_is_well_formed():
    evil = '<script>alert(1)</script>"&\x1b[31m'
    chart = Chart(420, 280, (0, 1), (0, 1), title=evil, xlabel=evil, ylabel=evil, with_legend=True)
    chart.rect(0, 1, 0, 1, "#000", 0.5, label=evil, tip=evil)
    chart.text(0.5, 0.5, evil)
    chart.xticks = [(0.5, evil)]
    svg = side_by_side([chart, chart], evil)
    root = ET.fromstring(svg)  # well-formed XML: nothing unescaped, no control character
    assert "<script" not in svg and "\x1b" not in svg and "\\x1b[31m" in svg
    assert root.get("viewBox") == "0 0 840 300" and root.get("role") == "img"
    assert not re.search(r"\b(?:href|src)\s*=", svg)  # nothing outside the page
