"""Questions: what a run asks, each with the documents that answer it (its needles).

The readers of :mod:`components.readers` build them from a questions JSON file or BEIR queries.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

from utils.errors import InputError


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    expected_answer: str | None
    needle_doc_ids: tuple[str, ...]  # the relevant documents
    extra: dict = field(default_factory=dict)
    needle_grades: dict[str, int] | None = None  # {doc id: grade} when graded and not every grade is 1

    @property
    def relevance(self) -> dict[str, int]:
        """``{doc id: grade}`` of the needles (grade 1 each unless ``needle_grades`` says)."""
        grades = self.needle_grades or {}
        return {d: grades.get(d, 1) for d in self.needle_doc_ids}


@dataclass(frozen=True)
class QuestionSet:
    path: str
    sha256: str
    questions: list[Question]
    document: object = field(default=None, repr=False, compare=False)  # the file's JSON as parsed
    qrels: str | None = None  # BEIR queries: the qrels file their needles came from
    about: dict = field(default_factory=dict, compare=False)  # the set's own version, name, description (those given)


def check_needles(questions: QuestionSet, corpus_ids: set[str], corpus_source: str) -> None:
    """Every needle must be a document of the corpus; name up to three close ids when not."""
    for i, q in enumerate(questions.questions):
        for needle in q.needle_doc_ids:
            if needle in corpus_ids:
                continue
            close = difflib.get_close_matches(needle, corpus_ids, n=3, cutoff=0.6)
            hint = f"did you mean {', '.join(repr(c) for c in close)}?" if close else \
                "check --corpus, or the doc id (a file stem)"
            raise InputError(f"{questions.path}: question #{i + 1} (id {q.id!r}): needle {needle!r} is not a "
                             f"document of the corpus {corpus_source}: {hint}")
