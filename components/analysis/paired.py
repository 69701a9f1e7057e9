"""The paired records of a comparison of runs (``compare``): what each run is, each metric's paired
result and verdict against the baseline, the questions that changed. The comparison's own record
(:class:`components.analysis.comparison.Comparison`) holds them; the CI gate
(:mod:`components.analysis.gate`) and the verdict certificate judge them.
"""

from __future__ import annotations

from dataclasses import dataclass, field

ALPHA = 0.05
POWER = 0.8
BETTER, WORSE, SAME, NOT_COMPARABLE = "better", "worse", "no detectable difference", "not comparable"


def verdict(delta: float | None, p: float | None, alpha: float = ALPHA) -> str:
    """A metric's verdict from its mean paired delta and (Holm-adjusted) p-value."""
    if p is None or delta is None:
        return NOT_COMPARABLE
    if p < alpha:
        return BETTER if delta > 0 else WORSE if delta < 0 else SAME
    return SAME


@dataclass(frozen=True)
class QuestionView:
    """One question of one run, as compare sees it."""

    question_id: str
    question: str
    rank: int | None
    doc_rank: int | None
    grade: float | None
    total_score: float | None
    top_docs: tuple[str, ...]
    values: dict[str, float | None]  # metric key → the question's value (None: not part of that metric)
    repeats: dict[str, list[float]]  # metric key → one value per judge repeat, when the row has llm_grades


@dataclass(frozen=True)
class RunSummary:
    label: str
    kind: str  # "run" | "reference"
    run_id: str | None
    strategy: str | None
    source: str | None  # file path, or "reference_ranks" for a reference system
    k: int | None
    status: str | None
    question_count: int  # questions in its file
    corpus_sha256: str | None
    judge_provider: str | None
    judge_model: str | None
    judge_prompt_sha256: str | None
    means: dict[str, float | None]  # over the common questions that have the metric
    judge_endpoint: str | None = None  # the host its judge was reached at (null: the provider's public API, or none)


@dataclass(frozen=True)
class MetricResult:
    metric: str
    n: int  # paired questions (both runs have the metric)
    mean_baseline: float | None
    mean_other: float | None
    delta: float | None  # mean(other − baseline)
    ci95: tuple[float, float] | None
    p: float | None  # two-sided, by ``test``
    p_holm: float | None  # when the family has more than one comparison
    wins: int  # questions where other > baseline
    ties: int
    losses: int
    verdict: str
    mde: float | None  # smallest detectable |delta| with these n questions
    effect: float
    questions_needed: int | None  # to detect ``effect``
    # the inference (components.stats.paired_inference): the test that gave ``p`` (sign-flip-exact, sign-flip-mc,
    # mcnemar-exact) and how ``ci95`` was made (test-inversion, bootstrap-percentile)
    test: str = "sign-flip-mc"
    ci_method: str = "bootstrap-percentile"
    p_mc_se: float | None = None  # the standard error of a Monte-Carlo ``p`` (sign-flip-mc); null otherwise
    borderline: bool = False  # ``ci95`` and the p the verdict used read differently (analysis.compare)


@dataclass(frozen=True)
class QuestionChange:
    question_id: str
    question: str
    rank_before: int | None
    rank_after: int | None
    doc_rank_before: int | None
    doc_rank_after: int | None
    grade_before: float | None
    grade_after: float | None
    total_before: float | None
    total_after: float | None
    delta_total: float | None
    delta_rr: float
    top_docs_before: list[str]
    top_docs_after: list[str]


@dataclass(frozen=True)
class PairComparison:
    baseline: str
    other: str
    kind: str  # "run" | "reference"
    metrics: list[MetricResult]
    worse: list[QuestionChange] = field(default_factory=list)
    better: list[QuestionChange] = field(default_factory=list)
