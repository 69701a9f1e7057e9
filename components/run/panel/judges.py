"""A panel of judges (``--judges``) as the loop grades with it: :class:`Panel`, the
:class:`~components.run.judges.Judges` protocol for several named judges.

Every judge of the panel grades every question with the same prompt, parser, retries and
``--judge-repeats``, through the loop's one admission point; each has its own circuit breaker and
fatal failure (a judge that becomes unusable mid-run is not called again, its grades are null with
the reason, and the others go on). The row keeps each judge's grade (``grades_by_judge``) and the
aggregate (:func:`components.run.panel.grading.panel_outcome`). The run's
:class:`~components.run.evaluation.Judging` holds one ``Judging`` per judge (``members``); chunk
relevance and the diagnosis are the first judge's. ``run.judge`` has provider ``panel``, model the
judges' names, and each judge's own record, usage and failure under ``judges``; the results get a
``panel`` section (:func:`components.analysis.panel.panel_section`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from components.analysis.panel import PANEL_PROVIDER
from components.core import Chunk
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256, GradeResult, prompt_variant
from components.run.judge import LoopJudge
from components.judges.panel import choose
from components.run.judges import Judges, OneJudge
from components.run.panel.grading import MEDIAN, judge_grade, panel_outcome, transient
from components.run.partial import Partial, combine_grades
from utils.errors import InputError
from utils.results import JudgeGrade, JudgeInfo, QuestionResult
from utils.records.sections import PanelSection


class Panel(Judges):
    """Several named judges; the question's grade is their aggregate (module docstring)."""

    @classmethod
    def start(cls, judging, method: str = MEDIAN, kept: Mapping | None = None) -> Panel:
        """The loop's panel: one judge per member of ``judging``; ``kept``: the grades ``--resume`` keeps."""
        pairs = zip(judging.settings.panel, judging.members, strict=True)
        return cls([LoopJudge(m.name, j.judge) for m, j in pairs], method, kept)

    def settle(self, p: Partial, todo: Sequence[LoopJudge], grades: Mapping[str | None, list[GradeResult]],
               costs: Mapping[str | None, float | None]) -> None:
        for m in todo:
            p.by_judge[m.name] = judge_grade(combine_grades(grades[m.name]), grades[m.name], costs[m.name])
            p.add_cost(costs[m.name])
        self.aggregate(p, prompt_variant(p.q.expected_answer))

    def aggregate(self, p: Partial, variant: str) -> None:
        """The question's grade: the aggregate of its judges' grades in ``p.by_judge``."""
        outcome = panel_outcome(p.by_judge, self.names, self.method, variant)
        p.grade, p.panel_value, p.panel_graded = outcome.grade, outcome.value, outcome.graded

    def row_fields(self, p: Partial) -> dict:
        return {"grades_by_judge": {n: p.by_judge[n] for n in self.names if n in p.by_judge},
                "panel_grade": p.panel_value, "panel_graded": p.panel_graded}

    def order_check(self, loop, p: Partial, chunks: list[Chunk]) -> None:
        return None  # refused with a panel at start-up (RunSpec.check)

    def retried(self, loop, p: Partial) -> list[LoopJudge]:
        return [m for m in self.members if transient(p.by_judge.get(m.name)) and self.refusal(loop, m) is None]

    def wants_retry(self, loop, p: Partial, row: QuestionResult) -> bool:
        return bool(self.retried(loop, p))

    def regraded(self, p: Partial, todo: Sequence[LoopJudge]) -> bool:
        return any(p.by_judge[m.name].grade is not None for m in todo)

    def run_judge(self, judging, repeats: int) -> JudgeInfo:
        judges = []
        for panel_member, member_judging, member in zip(judging.settings.panel, judging.members, self.members,
                                                        strict=True):
            info = member_judging.judge_info("judge", repeats, member.usage.models)
            judges.append({**panel_member.spec.to_json(), "judge": info.to_json(), "usage": member.usage.to_json(),
                           "unusable": member.unusable()})
        names = self.names
        return JudgeInfo(PANEL_PROVIDER, ",".join(names), PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256,
                         judging.settings.judge_timeout,
                         f"a panel of {len(judges)} judge{'s' * (len(judges) != 1)} ({', '.join(names)}): llm_grade is "
                         f"their {self.method}, rounded half up; each judge's grade is in grades_by_judge",
                         repeats=repeats,
                         relevance_prompt_sha256=judging.judge_info("judge", repeats).relevance_prompt_sha256,
                         reply_models=list(self.usage.models), details={"aggregate": self.method, "judges": judges})

    def section(self, rows: Sequence[QuestionResult], k: int) -> PanelSection:
        from components.analysis.panel import panel_section

        failures = {m.name: reason for m in self.members if (reason := m.unusable()) is not None}
        return panel_section(rows, self.names, self.method, k, failures)

    def unusable_lines(self, rows: Sequence[QuestionResult]) -> list[str]:
        """One line per judge that became unusable or rate-limited: how many questions it graded, and
        that the aggregate used the others."""
        out = []
        for member in self.members:
            reason = member.unusable()
            if reason is None:
                continue
            graded = sum(1 for r in rows if (r.grades_by_judge or {}).get(member.name, JudgeGrade()).grade is not None)
            out.append(f"{member.label().capitalize()} became unusable after grading {graded} of {len(rows)} "
                       f"question(s) ({reason[:300]}): its grades are null from there, the aggregate uses the other "
                       "judges; --resume grades them with it later")
        return out

    def failure_to_log(self, loop):
        return (self.failure or loop.rewriter_failure) if loop.rewriter_failure is not None else None  # judges: above

    # ------------------------------------------------------------------ before the run (the settings' panel)

    @staticmethod
    def check(settings, *, rewrites_queries: bool = False) -> list:
        """The start-up check of every judge (first: the one that rates chunks and whose provider rewrites)."""
        from components.judges.panel import check_panel

        return check_panel(settings, rewrites_queries=rewrites_queries)

    @staticmethod
    def seats(judging) -> list:
        return list(judging.members)

    @staticmethod
    def budget_names(settings) -> list[str]:
        return [m.name for m in settings.panel]

    @staticmethod
    def check_options(*, order_check: object = None) -> None:
        """``--order-check`` is refused: it is made with one judge."""
        if order_check:
            raise InputError("--order-check is not made with a panel of judges (--judges): run it with one judge")

    @staticmethod
    def judges_now(settings, setups: Sequence) -> list[tuple[str | None, str, str | None]]:
        return [(m.name, m.spec.provider, m.spec.model) for m in settings.panel]

    @staticmethod
    def console_lines(settings, setups: Sequence, method: str) -> list[str]:
        """The start-up lines that say which judges of ``settings.panel`` grade."""
        lines = [f"Judges: a panel of {len(setups)}, llm_grade is their {method} (chunk relevance and the diagnosis: "
                 "the first judge)"]
        for member, setup in zip(settings.panel, setups, strict=True):
            lines.append(f"  {member.name}: " + setup.console_line(member.settings).removeprefix("Judge: "))
        return lines

    @staticmethod
    def identity(settings, method: str) -> dict:
        """What a panel run's journal header adds to the resume identity: the judges and the aggregate
        (``judge_model`` is then the judges' names, as ``run.judge.model`` records them)."""
        return {"judge_model": ",".join(m.name for m in settings.panel), "judge_provider": PANEL_PROVIDER,
                "panel": [m.spec.to_json() for m in settings.panel], "aggregate": method}

    @staticmethod
    def kept(rows: Mapping[str, QuestionResult], settings) -> tuple[dict, dict]:
        """``--resume`` of a panel run: ``(done, kept)`` — the rows every judge graded (taken over as
        they are) and, for the others, the grades of the judges that did grade them (question id →
        judge → grade: those judges are not called again)."""
        names = [m.name for m in settings.panel]
        done, kept = {}, {}
        for qid, row in rows.items():
            graded = {n: g for n, g in (row.grades_by_judge or {}).items() if n in names and g.grade is not None}
            if len(graded) == len(names):
                done[qid] = row
            elif graded:
                kept[qid] = graded
        return done, kept

    @staticmethod
    def estimate(retriever, questions: Sequence, k: int, judging, *, strategy: str = "?", repeats: int = 1,
                 relevance: bool = False, rewrites: bool = False, order_check=(), known_answers: int | None = None):
        from components.run.panel.estimate import estimate_panel

        return estimate_panel(retriever, questions, k, judging, strategy=strategy, repeats=repeats,
                              relevance=relevance, rewrites=rewrites, known_answers=known_answers)

    @staticmethod
    def batch(judging, settings, engine):
        """``--judge-batch``: each judge's own batches (:mod:`components.run.panel.batch`)."""
        from components.run.panel.batch import PanelBatch

        pairs = zip(settings.panel, judging.members, strict=True)
        return PanelBatch({m.name: engine(j.setup, m.name) for m, j in pairs})


def judges_kind(settings) -> type[Judges]:
    """The judge side ``settings`` name: :class:`Panel` for a panel of judges (``--judges``), else
    :class:`~components.run.judges.OneJudge` (:func:`components.judges.panel.choose`: the one place the
    two are told apart)."""
    return choose(settings, OneJudge, Panel)
