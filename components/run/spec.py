"""One run's options: :class:`RunSpec`, one frozen record that the Python API
(:func:`components.api.evaluate`) and the command line (:mod:`components.cli.run`) both build, checked
once before any indexing or judging (:meth:`RunSpec.check`, which raises :class:`InputError`), and
recorded in the results as ``run.spec`` (:meth:`RunSpec.to_json`: the options as given, no path
that could hold a secret, no key)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from components.judges.panel import AGGREGATES, check_aggregate, judge_settings
from components.run.panel.judges import judges_kind
from components.run.adaptive import JUDGE_ALL
from components.run.calls.concurrency import check_concurrency
from components.run.calls.judge_batch import check_batch_options
from components.run.known_answers import check_number
from components.run.repeat_where import ALL, RepeatRule, repeat_rule
from components.run.retrieval.deadline import DEFAULT_RETRIEVAL_TIMEOUT_S, check_retrieval_timeout
from utils.errors import InputError
from utils.metrics import PASS_MARK


@dataclass(frozen=True)
class RunSpec:
    """Every option of a run (docs/options.md names each flag; :func:`components.api.evaluate` each argument)."""

    k: int = 5
    judge_repeats: int = 1
    repeat_where: str = ALL  # --repeat-where: which questions get the repeats (components/run/repeat_where.py)
    pass_marks: tuple[float, ...] = (PASS_MARK,)  # the marks --repeat-where uncertain repeats near (--targets')
    chunk_relevance: bool | None = None  # None: on with a judge that calls no model (free), off with an LLM judge
    max_cost_usd: float | None = None
    group_by: tuple[str, ...] | None = None
    keep_text: bool = True
    cache_dir: Path | None = None  # the index cache; None = no cache
    judge_batch: bool = False  # grade through the provider's batch API (components/run/calls/judge_batch.py)
    concurrency: int = 1  # judge calls in flight at once (1: the sequential loop)
    order_check: int | bool | None = None  # --order-check: True (all), a sample size, or None
    order_check_seed: int = 0
    retrieval_timeout: float | None = DEFAULT_RETRIEVAL_TIMEOUT_S  # None: no deadline
    panel_aggregate: str = "median"  # a panel's grade of a question (with --judges)
    adaptive: Any = None  # --until-decided / --target-ci: a components.run.adaptive.Request; None: judge every question
    known_answers: int | None = None  # --known-answers N: check the judge on N known answers first (known_answers.py)

    def __post_init__(self) -> None:
        aggregate = str(self.panel_aggregate or "").strip().lower()
        if aggregate in AGGREGATES:  # "Median" is median; anything else is refused by check()
            object.__setattr__(self, "panel_aggregate", aggregate)
        object.__setattr__(self, "adaptive", self.adaptive or JUDGE_ALL)  # judging every question is a plan too

    def check(self, settings) -> None:
        """Refuse options that are bad or do not go together with each other or with the judges of
        ``settings`` (:class:`InputError`, one line naming the fix). Nothing is indexed or called."""
        check_concurrency(self.concurrency)
        check_retrieval_timeout(self.retrieval_timeout)
        check_aggregate(self.panel_aggregate)
        for judge in judge_settings(settings):  # every judge of a panel
            check_batch_options(judge=judge.judge, judge_batch=self.judge_batch, max_cost_usd=self.max_cost_usd,
                                chunk_relevance=self.chunk_relevance)
        judges_kind(settings).check_options(order_check=self.order_check)
        self.rule()  # a bad --repeat-where
        check_number(self.known_answers)  # against the run's questions once they are known (known_answers.choose)
        if self.judge_batch and self.order_check:
            raise InputError("--order-check is not sent through --judge-batch: run without one of them")
        if self.judge_batch and self.concurrency > 1:
            raise InputError("--concurrency does not apply to --judge-batch (the batch API grades in parallel "
                             "itself): run without one of them")

    def rule(self) -> RepeatRule:
        """``--repeat-where``'s rule (raises :class:`InputError` for a bad one)."""
        return repeat_rule(self.repeat_where, self.judge_repeats, self.pass_marks, self.panel_aggregate)

    def to_json(self) -> dict:
        """``run.spec``: the options of the run (the adaptive request as its journal records it)."""
        return {"k": self.k, "judge_repeats": self.judge_repeats, "repeat_where": self.repeat_where,
                "chunk_relevance": self.chunk_relevance, "max_cost_usd": self.max_cost_usd,
                "group_by": list(self.group_by) if self.group_by is not None else None, "keep_text": self.keep_text,
                "index_cache": self.cache_dir is not None, "judge_batch": self.judge_batch,
                "concurrency": self.concurrency, "order_check": self.order_check,
                "order_check_seed": self.order_check_seed, "retrieval_timeout": self.retrieval_timeout,
                "panel_aggregate": self.panel_aggregate,
                "adaptive": self.adaptive.identity(), "known_answers": self.known_answers}
