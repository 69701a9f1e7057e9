"""Quality bands: what a value of nDCG or precision means, in the words of the user's course-retrieval
evaluator (Excellent / Good / Fair / Poor, each with its presentation line).

=========  ===============  ===================================  ============  =================================
band       nDCG@k           line                                 precision     line
=========  ===============  ===================================  ============  =================================
Excellent  ≥ 0.9            Near-perfect ranking                 ≥ 0.8         ≥ 80% of top k are relevant
Good       0.7 to < 0.9     Strong ranking quality               0.6 to < 0.8  Most top results are relevant
Fair       0.5 to < 0.7     Acceptable, room for improvement     0.4 to < 0.6  Mixed relevance in top results
Poor       < 0.5            Needs significant work               < 0.4         Few top results are relevant
=========  ===============  ===================================  ============  =================================

nDCG is the run's document-level ``ndcg_at_k`` (its k); precision is ``context_precision`` (the
share of the top k chunks from a needle document) and, when chunks were rated, the judge's
``proxy_precision_at_k``. :func:`quality_bands` gives each of them present in a run's metrics its
band, line and the bands its 95% interval reaches (``ci95_bands``: ``["Fair", "Good"]`` when the
interval straddles a boundary; the band is then not settled by the questions).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from utils.metrics import METRICS
from utils.records.sections import QualityBand

BANDS = ("Excellent", "Good", "Fair", "Poor")


@dataclass(frozen=True)
class Scale:
    """The lower bounds of Excellent, Good and Fair (below the last: Poor) and each band's line
    (``{k}`` is the run's k)."""

    cuts: tuple[float, float, float]
    lines: tuple[str, str, str, str]

    def band(self, value: float) -> str:
        return next((name for name, cut in zip(BANDS, self.cuts, strict=False) if value >= cut), BANDS[-1])

    def line(self, band: str, k: int) -> str:
        return self.lines[BANDS.index(band)].format(k=k)


NDCG = Scale((0.9, 0.7, 0.5), ("Near-perfect ranking", "Strong ranking quality", "Acceptable, room for improvement",
                               "Needs significant work"))
PRECISION = Scale((0.8, 0.6, 0.4), ("≥ 80% of top {k} are relevant", "Most top results are relevant",
                                    "Mixed relevance in top results", "Few top results are relevant"))
SCALES = {"ndcg_at_k": NDCG, "context_precision": PRECISION, "proxy_precision_at_k": PRECISION}


def _number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def quality_bands(metrics: Mapping[str, Any], k: int, ci95: Mapping[str, Any] | None = None
                  ) -> dict[str, QualityBand]:
    """``{metric key: QualityBand}`` (label, value, band, line, ci95_bands) for each banded metric the
    run has a value for (see the module docstring); ``ci95_bands`` is null without an interval."""
    bands = {}
    for key, scale in SCALES.items():
        value = metrics.get(key)
        if not _number(value):
            continue
        band = scale.band(value)
        ci = (ci95 or {}).get(key)
        spans = [scale.band(ci[0]), scale.band(ci[1])] if isinstance(ci, (list, tuple)) and len(ci) == 2 \
            and all(map(_number, ci)) else None
        label = METRICS[key].label_at(k) if key in METRICS else key
        bands[key] = QualityBand(label, value, band, scale.line(band, k), spans)
    return bands


def band_text(entry: QualityBand) -> str:
    """One band as the console and the report say it: ``Fair: Acceptable, room for improvement``,
    plus ``(95% CI: Poor to Good)`` when the interval reaches other bands."""
    text = f"{entry.band}: {entry.line}"
    spans = entry.ci95_bands
    if spans is not None and len(spans) == 2 and spans[0] != spans[1]:
        text += f" (95% CI: {spans[0]} to {spans[1]})"
    return text
