"""A panel's aggregate of its judges' grades of one question: their median (two middle grades average) or
mean, and that value rounded half up (7.5 → 8) as ``llm_grade``. The run's loop aggregates with it
(:mod:`components.run.panel.grading`), and ``compare`` aggregates again with it over the judges two panels
share (:func:`components.analysis.panel.on_shared_judges`).
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence

MEDIAN, MEAN = "median", "mean"


def round_half_up(value: float) -> int:
    return int(math.floor(value + 0.5))


def aggregate(grades: Sequence[float], method: str = MEDIAN) -> float:
    """The panel's value of ``grades`` (at least one): their median or mean."""
    return float(statistics.median(grades) if method == MEDIAN else statistics.fmean(grades))
