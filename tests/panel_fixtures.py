"""Judges for panel tests: providers registered under names of their own, each a scripted model
(:mod:`components.judges.providers.scripted`) answering from its own script, no network; and
results rows of panel runs built by hand."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator

from components.judges.providers import providers, register_provider, unregister_provider
from components.judges.providers.scripted import Script, ScriptedProvider
from utils.results import JudgeGrade, QuestionResult

MODEL = "scripted-1"


def _provider(name: str, script: Script) -> type:
    def configure(cls, env, models):
        return script

    return type(f"Panel_{name}", (ScriptedProvider,), {"name": name, "label": f"the scripted judge {name}",
                                                       "configure": classmethod(configure)})


@contextlib.contextmanager
def scripted_judges(**answers: Callable[[str], str] | str | Script) -> Iterator[dict[str, Script]]:
    """One provider per keyword (``--judges lenient,strict``), each answering every prompt with
    ``answers[name](prompt)`` (or that text, or playing that :class:`Script`); afterwards the
    registry is as it was."""
    scripts = {name: answer if isinstance(answer, Script) else Script(then=answer) for name, answer in answers.items()}
    before = {name: providers().get(name) for name in scripts}
    for name, script in scripts.items():
        register_provider(_provider(name, script))
    try:
        yield scripts
    finally:
        for name, cls in before.items():
            if cls is None:
                unregister_provider(name)
            else:
                register_provider(cls)


def grade_reply(grade: int) -> str:
    return f'{{"grade": {grade}, "reasoning": "scripted {grade}"}}'


def panel_row(qid: str, grades: dict[str, int | None], rank: int | None = 1, method: str = "median",
              **fields) -> QuestionResult:
    """A panel run's row: each judge's grade, the aggregate as the loop computes it."""
    from components.run.panel.grading import panel_outcome

    by_judge = {n: JudgeGrade(grade=g, error=None if g is not None else "timeout: scripted") for n, g in grades.items()}
    outcome = panel_outcome(by_judge, list(grades), method)
    from utils.metrics import total_score

    return QuestionResult(qid, f"question {qid}", needle_doc_id="d", needle_doc_ids=["d"], rank=rank,
                          needle_found=rank is not None, hit_at_1=rank == 1, llm_grade=outcome.grade.grade,
                          grade_error=outcome.grade.error, total_score=total_score(outcome.grade.grade, rank),
                          grades_by_judge=by_judge, panel_grade=outcome.value, panel_graded=outcome.graded, **fields)
