"""The sections of a results file beside its rows, as typed records (:class:`~utils.records.json_record.JsonRecord`):
read and checked by the typed reader with the rest of the file, written back key for key.

==================  ==========================================  ===============================================
section             record                                      made by
==================  ==========================================  ===============================================
bootstrap           :class:`Bootstrap`                          components.analysis.aggregate
judge_consistency   :class:`JudgeConsistency`                   components.analysis.aggregate (--judge-repeats)
order_check         :class:`OrderCheck`                         components.analysis.aggregate (--order-check)
quality_bands       {metric key: :class:`QualityBand`}          utils.quality_bands
targets             [:class:`TargetCheck`]                      components.analysis.targets (--targets)
panel               :class:`PanelSection`                       components.analysis.panel (--judges)
adaptive            :class:`AdaptiveSection`                    components.run.adaptive (--until-decided, --target-ci)
==================  ==========================================  ===============================================

docs/results.md describes each field; the JSON Schema (:mod:`utils.records.schema`) follows from these records.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, ClassVar

from utils.errors import InputError
from utils.files.output import strict_json_value
from utils.records.json_record import JsonRecord, Number
from utils.records.judge_signal import JudgeSignal

FIX = "pass a results file written by benchmark.py"


@dataclass(frozen=True)
class Bootstrap(JsonRecord):
    """How the 95% intervals (``ci95``) were drawn: resamples, seed, method (``percentile``, or
    ``percentile-two-level`` with judge repeats). A file without intervals has ``{}``."""

    resamples: int | None = None
    seed: int | None = None
    method: str | None = None


def no_bootstrap() -> Bootstrap:
    """The ``bootstrap`` of a file that has none: written back as ``{}``."""
    return Bootstrap(json_keys=())


@dataclass(frozen=True)
class JudgeConsistency(JsonRecord):
    """With judge repeats: how much the grades moved between repeats. Under ``--repeat-where
    uncertain`` it covers only the questions the rule repeated (``repeat_where``), chosen among the
    ``graded`` ones."""

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"repeat_where", "graded"})

    questions: int  # graded more than once
    moved_2_or_more_rate: Number  # percent whose grade moved by 2 or more
    mean_sd: Number  # the mean standard deviation of their grades
    repeat_where: str | None = None  # "uncertain": the rule chose the repeated questions
    graded: int | None = None  # the graded questions they were chosen from


@dataclass(frozen=True)
class OrderCheck(JsonRecord):
    """With ``--order-check``: how much reversing the chunks moved the grade."""

    questions: int  # graded in both orders
    mean_abs_change: Number
    flip_rate: Number  # percent whose pass/fail at the pass mark flipped
    mean_change: Number  # reversed − original
    mean_change_ci95: list[Number] | None  # its paired 95% bootstrap interval
    errors: int  # questions whose reversed grading failed


@dataclass(frozen=True)
class QualityBand(JsonRecord):
    """One metric's quality band (:mod:`utils.quality_bands`)."""

    label: str
    value: Number
    band: str  # Excellent | Good | Fair | Poor
    line: str  # what the band means
    ci95_bands: list[str] | None = None  # the bands of the interval's bounds; null without an interval


@dataclass(frozen=True)
class TargetCheck(JsonRecord):
    """One ``--targets`` target, met or not (:mod:`components.analysis.targets`)."""

    metric: str  # the metric's key
    label: str
    target: Number  # the floor, in the metric's unit
    value: Number | None  # null: not measured in this run
    ci95: list[Number] | None
    met: bool
    ci_clear: bool | None  # the whole interval on the same side of the target; null without one
    line: str  # as the console and the report print it


@dataclass(frozen=True)
class JudgePair(JsonRecord):
    """Two judges of a panel on the questions both graded."""

    judges: list[str]
    n: int
    kappa_quadratic: Number | None
    pass_agreement: dict[str, Number | None]  # pass mark → share of pass/fail agreement
    mean_difference: Number | None  # the second judge's grade − the first's


@dataclass(frozen=True)
class AlphaOrdinal(JsonRecord):
    """Krippendorff's α (ordinal) over the panel, with its bootstrap interval over questions."""

    value: Number | None
    ci95: list[Number] | None
    questions: int
    method: str
    resamples: int
    seed: int


@dataclass(frozen=True)
class PanelAgreement(JsonRecord):
    pass_marks: list[Number]
    pairs: list[JudgePair]
    alpha_ordinal: AlphaOrdinal


@dataclass(frozen=True)
class PanelJudge(JsonRecord):
    """One judge of a panel: what it graded, its judge-level metrics and their intervals."""

    graded: int
    metrics: dict[str, Number | None]
    ci95: dict[str, list[Number] | None]
    grade_errors: dict[str, int]
    unusable: str | None  # why it became unusable, if it did
    judge_signal: JudgeSignal | None = None  # its signal check (utils.records.judge_signal); null in older files

    OMITTED_WHEN_NONE: ClassVar[frozenset[str]] = frozenset({"judge_signal"})


@dataclass(frozen=True)
class PanelSection(JsonRecord):
    """A panel run's ``panel`` section (:mod:`components.analysis.panel`)."""

    judges: list[str]  # in panel order
    aggregate: str  # median | mean
    graded_by: dict[str, int]  # how many judges graded → how many questions
    agreement: PanelAgreement
    per_judge: dict[str, PanelJudge]


@dataclass(frozen=True)
class AdaptiveMetric(JsonRecord):
    """A metric of an adaptive run: its verdict (``metrics``), or its figures at one look (``looks[].metrics``).
    ``--until-decided`` writes the sequential test's fields (the paired difference's ``estimate``, its
    repeated ``interval``, ``margin``, ``rule``, ``alpha_spent``, ``summary``); ``--target-ci`` the
    confidence sequence's (the mean's ``estimate`` and ``interval``, ``n``, ``half_width``, ``target``).
    An entry has the fields its procedure wrote."""

    verdict: str | None = None
    decided: bool | None = None
    look: int | None = None  # the look that decided it
    looks: int | None = None
    judged: int | None = None
    paired: int | None = None
    n: int | None = None
    estimate: Number | None = None
    interval: list[Number] | None = None
    half_width: Number | None = None
    target: Number | None = None
    margin: Number | None = None
    rule: str | None = None
    alpha_spent: Number | None = None
    summary: str | None = None


@dataclass(frozen=True)
class AdaptiveLook(JsonRecord):
    """One look of an adaptive run: the questions judged and paired then, each metric's figures."""

    look: int | None = None  # null: no new grades, no look made (see ``note``)
    judged: int | None = None
    paired: int | None = None
    boundary: Number | None = None  # --until-decided: the look's critical value
    note: str | None = None
    metrics: dict[str, AdaptiveMetric] | None = None


@dataclass(frozen=True)
class AdaptiveBaseline(JsonRecord):
    """The baseline an ``--until-decided`` run was compared with."""

    file: str | None = None
    run_id: str | None = None
    strategy: str | None = None
    grades_sha256: str | None = None  # the fingerprint of its grades (components.analysis.adaptive)


@dataclass(frozen=True)
class AdaptiveCalls(JsonRecord):
    spent: int | None = None  # this session's judge calls
    saved: int | None = None  # the questions not judged, priced as --estimate prices them
    full: int | None = None  # every question


@dataclass(frozen=True)
class AdaptiveCost(JsonRecord):
    spent: Number | None = None
    saved: Number | None = None
    full: Number | None = None


ADAPTIVE_MODES = ("until_decided", "target_ci")


@dataclass(frozen=True)
class AdaptiveSection(JsonRecord):
    """An adaptive run's ``adaptive`` section (:mod:`components.run.adaptive`): the procedure, the
    looks, each metric's verdict, and the calls and dollars spent against grading every question."""

    mode: str = ""  # until_decided | target_ci
    procedure: str | None = None
    request: dict[str, Any] | None = None  # the options, for --resume to ask again
    seed: int | None = None
    block: int | None = None
    questions: int | None = None
    judged: int | None = None
    not_judged: int | None = None
    ungraded: int | None = None
    resumed_rows: int | None = None
    decided: bool | None = None
    decided_after: int | None = None
    alpha: Number | None = None
    alpha_per_metric: Number | None = None  # --until-decided: α split over the gated metrics
    baseline: AdaptiveBaseline | None = None  # --until-decided
    metrics: dict[str, AdaptiveMetric] = field(default_factory=dict)
    looks: list[AdaptiveLook] = field(default_factory=list)
    calls: AdaptiveCalls | None = None
    cost_usd: AdaptiveCost | None = None
    cost_note: str | None = None

    @classmethod
    def built(cls, data: Mapping[str, Any]) -> AdaptiveSection:
        """The section of what a run built, as its results file will hold it: made strict JSON first
        (:func:`utils.files.output.strict_json_value`: numpy numbers as Python's, non-finite as null,
        tuples as lists), then read."""
        return cls.from_json(strict_json_value(data), "adaptive", "a bug in the adaptive run: report it")

    @classmethod
    def from_json(cls, data: object, where: str = "adaptive", fix: str = FIX) -> AdaptiveSection:
        """The section, checked: its fields' types, then :meth:`check`."""
        section = super().from_json(data, where, fix)
        section.check(where, fix)
        return section

    def check(self, where: str, fix: str = FIX) -> None:
        """What the types do not say: the mode is one of :data:`ADAPTIVE_MODES`, an interval has two
        bounds. Raises :class:`InputError` naming the field."""
        if self.mode not in ADAPTIVE_MODES:
            raise InputError(f"{where}.mode {self.mode or None!r} is not one of {', '.join(ADAPTIVE_MODES)}: {fix}")
        for key, entry in self.metrics.items():
            if entry.interval is not None and len(entry.interval) != 2:
                raise InputError(f"{where}.metrics.{key}.interval has {len(entry.interval)} bounds, not 2: {fix}")
