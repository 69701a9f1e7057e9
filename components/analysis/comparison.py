"""The record of a comparison of runs with their baseline (``compare``): the runs, the questions
compared, each run's paired results (:mod:`components.analysis.paired`), the recommendations, the
verdict certificate of panel runs and the sequential verdicts runs recorded against the baseline.

:func:`components.analysis.compare.compare_runs` makes it; the CI gate
(:mod:`components.analysis.gate`) and the verdict certificate (:mod:`components.analysis.certificate`)
read it; :meth:`Comparison.to_json` is ``compare --json``'s file.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import asdict, dataclass, field
from typing import Any

from components.analysis.certificate_record import Certificate
from components.analysis.paired import (ALPHA, BETTER, NOT_COMPARABLE, POWER, SAME, WORSE, MetricResult,
                                        PairComparison, QuestionChange, QuestionView, RunSummary, verdict)
from components.analysis.recommendations import Recommendations
from components.stats import statistics as S
from utils import metrics as M
from utils.records.sections import AdaptiveSection

COMPARE_SCHEMA_VERSION = 2

__all__ = ["ALPHA", "BETTER", "COMPARE_SCHEMA_VERSION", "NOT_COMPARABLE", "POWER", "SAME", "WORSE", "Comparison",
           "MetricResult", "PairComparison", "QuestionChange", "QuestionView", "RunSummary", "verdict"]


@dataclass(frozen=True)
class Comparison:
    """The comparison of runs with their baseline (the first); :meth:`to_json` is the ``--json`` file."""

    runs: list[RunSummary]
    question_ids: list[str]  # common to all runs, in the baseline's order
    left_out: dict[str, int]  # label → questions of that run not compared
    warnings: list[str]
    comparisons: list[PairComparison]
    k: int
    metrics: list[str] = field(default_factory=list)  # the compared metrics' keys, in order
    alpha: float = ALPHA
    power: float = POWER
    bootstrap_seed: int = S.BOOTSTRAP_SEED
    permutation_seed: int = S.PERMUTATION_SEED
    shared_ids: dict[str, int] = field(default_factory=dict)  # label → how many of the baseline's question ids it holds
    recommendations: Recommendations | None = None  # with two runs or more (components/analysis/recommendations.py)
    certificate: Certificate | None = None  # panel runs: the verdicts under each judge (analysis.certificate)
    # label → the adaptive record of a run judged until decided against the baseline (components.analysis.adaptive)
    sequential: dict[str, AdaptiveSection] = field(default_factory=dict)
    # label → the judge whose grades it holds, when uninformative (components.analysis.uninformative)
    uninformative: dict[str, str] = field(default_factory=dict)

    def specs(self) -> list[M.Metric]:
        return [M.METRICS[key] for key in self.metrics if key in M.METRICS]

    def to_json(self) -> dict:
        """Strict-JSON-ready dict (see the compare documentation for the schema)."""
        return finite({
            "schema_version": COMPARE_SCHEMA_VERSION,
            "runs": [asdict(r) for r in self.runs],
            "common_question_count": len(self.question_ids),
            "question_ids": list(self.question_ids),
            "left_out": dict(self.left_out),
            "warnings": list(self.warnings),
            "metrics": [{"key": m.key, "label": m.label_at(self.k), "level": m.level, "unit": m.unit,
                         "effect": m.effect, "digits": m.digits} for m in self.specs()],
            "comparisons": [asdict(c) for c in self.comparisons],
            "settings": {
                "alpha": self.alpha, "power": self.power,
                "bootstrap": {"resamples": S.RESAMPLES, "seed": self.bootstrap_seed, "method": S.METHOD,
                              "level": S.LEVEL},
                "permutation": {"permutations": S.PERMUTATIONS, "seed": self.permutation_seed,
                                "test": "paired sign-flip, two-sided"},
            },
            **({"recommendations": self.recommendations.to_json()} if self.recommendations is not None else {}),
            **({"certificate": self.certificate.to_json()} if self.certificate is not None else {}),
            **({"sequential": {label: r.to_json() for label, r in self.sequential.items()}}
               if self.sequential else {}),
            **({"uninformative": dict(self.uninformative)} if self.uninformative else {}),
        })


def finite(value: Any) -> Any:
    """Tuples → lists, non-finite floats → None, numpy scalars → Python: strict JSON."""
    if isinstance(value, dict):
        return {k: finite(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [finite(v) for v in value]
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    value = float(value)
    return value if math.isfinite(value) else None
