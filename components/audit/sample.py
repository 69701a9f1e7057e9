"""The rows a judge audit grades: a sample of the run's graded rows, stratified over the judge's grade
bands, that prefers rows with headroom.

**Eligible** rows were graded by the run and showed the judge at least one chunk. They fall into the
grade bands of ``label`` (:data:`components.calibration.labels.BANDS`: 1-3, 4-6, 7-8, 9-10). A row
graded 9 or 10 has no headroom left for an attack meant to raise its grade, so the 9-10 band counts
at **half its size** (rounded up) when the sample is allocated over the bands, in proportion, by
largest remainder (:func:`components.calibration.labels.allocate`); when the sample is larger than
that allocation can fill, the rest come from the 9-10 band. Within each band rows are drawn without
replacement with ``random.Random(seed)``, one band after the other; the sample keeps the run's order.

The default size is min(:data:`DEFAULT_SAMPLE`, eligible rows); an explicit ``--sample`` larger than
the eligible rows is refused.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from components.calibration.labels import BANDS, allocate, band_of, draw_strata
from utils.errors import InputError
from utils.results import QuestionResult

DEFAULT_SAMPLE = 40
NO_HEADROOM = f"{BANDS[-1][0]}-{BANDS[-1][1]}"  # the band an up-attack cannot raise


def eligible(rows: Sequence[QuestionResult]) -> list[QuestionResult]:
    """The rows an audit can grade again: graded, with at least one chunk."""
    return [r for r in rows if r.llm_grade is not None and r.retrieved]


def sample_size(requested: int | None, available: int, source: str) -> int:
    """``--sample``: the default min(40, rows), or the size asked, refused above the rows there are."""
    if requested is None:
        return min(DEFAULT_SAMPLE, available)
    if requested > available:
        raise InputError(f"--sample {requested}: {source} has {available} row(s) an audit can grade (graded, with "
                         f"chunks): give --sample {available} or less, or leave it out (default: min("
                         f"{DEFAULT_SAMPLE}, rows))")
    return requested


def draw(rows: Sequence[QuestionResult], n: int, seed: int) -> tuple[list[QuestionResult], dict[str, dict[str, int]]]:
    """The sample of ``n`` eligible ``rows`` (module docstring), in run order, and the strata
    ``{band: {"graded": N_b, "sampled": n_b}}``."""
    bands: dict[str, list[int]] = {f"{low}-{high}": [] for low, high in BANDS}
    for position, row in enumerate(rows):
        bands[band_of(row.llm_grade)].append(position)
    weighted = [math.ceil(len(members) / 2) if band == NO_HEADROOM else len(members)
                for band, members in bands.items()]
    counts = allocate(weighted, n)
    counts[-1] += min(len(bands[NO_HEADROOM]) - counts[-1], max(0, n - sum(counts)))
    chosen, strata = draw_strata(bands, counts, seed)
    return [rows[i] for i in chosen], strata
