"""What the in-process loop measurements run on: ``n`` questions of the built-in set (cycled, each
with its own id) and a strategy's retriever indexed on the built-in corpus; library logs off."""

from __future__ import annotations

import itertools
import logging
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def loop_inputs(n: int, strategy: str = "baseline") -> tuple[list, object]:
    """``(questions, indexed retriever)`` for a :class:`components.run.benchmark_loop.BenchmarkLoop`."""
    from loguru import logger

    from components.core import Question, resolve_strategy
    from components.core.chunking import chunk_corpus
    from components.readers import load_questions
    from components.readers.builtin import builtin_corpus

    logger.remove()
    logging.getLogger("httpx2").setLevel(logging.WARNING)
    base = load_questions(ROOT / "questions.json").questions
    questions = [Question(f"{q.id}-{i}", q.question, q.expected_answer, q.needle_doc_ids)
                 for i, q in zip(range(n), itertools.cycle(base))]
    retriever = resolve_strategy(strategy).factory()
    retriever.index(chunk_corpus(builtin_corpus().documents))
    return questions, retriever
