"""The grader's public home, under the user's plan's import path: :class:`RetrievalGrader` and
:class:`GradeResult`::

    from components.retrieval_grader import RetrievalGrader, GradeResult

    g = RetrievalGrader(timeout=30.0)   # the judge a run would use
    print(g.judge)                      # "offline", "anthropic/claude-sonnet-5-5", ...
    result = g.grade("How do I check the installed version?", "Run acme --version.",
                     [{"doc_id": "install", "content": "Run `acme --version` to see it."}])
    result.grade, result.reasoning, result.latency_ms, result.error

* ``RetrievalGrader(timeout=30.0)`` resolves the judge the way a run does
  (:mod:`components.judges.settings`): the provider ``BENCHMARK_JUDGE`` / ``BENCHMARK_JUDGE_MODEL``
  name, else Anthropic when ``ANTHROPIC_API_KEY`` is set, else the offline lexical judge (which
  weighs terms over the built-in corpus, or over ``corpus``). ``g.judge`` says which, as
  ``evaluate(judge=...)`` takes it, and is logged. The model's start-up check runs on the first
  :meth:`~RetrievalGrader.grade`, so building a grader never calls the network.
* ``RetrievalGrader(llm)`` grades with an LLM object you pass (``.model`` and
  ``.complete(prompt) -> LLMReply``, :class:`components.judges.llm.LLM`), as the run's grader does.
* ``RetrievalGrader(timeout=30.0, call_llm=fn)`` grades with the POC's own caller: each grade is one
  call ``fn(prompt, model="claude-sonnet", timeout=int(timeout))`` (``model=`` chooses the model
  string). Its reply is a ``str``, or an object with ``.text`` or ``.content[0].text``; anything
  else is a null grade with ``error="call_llm returned <type>"`` (:mod:`components.judges.caller`).
  ``BENCHMARK_CALL_LLM=package.module:function`` in the environment does the same.
* :meth:`~RetrievalGrader.grade` takes the plan's chunk dicts (``doc_id``, ``content`` or ``text``,
  optional ``title``/``heading``: :meth:`Chunk.from_mapping`), :class:`Chunk` or :class:`ScoredChunk`.
* **Exactly one request per grade, never retried** (the plan: "Do NOT retry on failure (return
  None, let caller continue)"): a provider's client is built with ``max_retries=0``, so neither the
  grader nor the SDK sends a second request. ``timeout`` bounds that one request; it bounds a model
  object or a ``call_llm`` you pass too (the call runs in a daemon thread, abandoned at the timeout:
  :mod:`components.judges.bounded`).
* **Any failure is a null grade, never raised**: ``GradeResult(grade=None, ...)`` with the reason in
  ``error`` (and logged) — a timeout, an HTTP error, an unparseable reply (the raw reply kept), an
  exception from your model object or ``call_llm``, a fatal error (a refused key: ``auth: …``;
  after it the judge is not called again: ``judge_unusable: …``). Only a chunk that is not one raises
  (:class:`InputError`). A grade outside 1-10 in the reply's JSON is clamped, ``clamped_from``
  keeping the judge's (docs/reliability.md).

The implementation is the run's grader, :mod:`components.judges.retrieval_grader`; this module is
above it and nothing of the benchmark imports it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields, is_dataclass, replace
from typing import Any

from loguru import logger

from components.core import Chunk, Corpus, Document, ScoredChunk
from components.judges.bounded import BoundedLLM
from components.judges.caller import CallerLLM
from components.judges.llm import LLM
from components.judges.providers.call_llm import DEFAULT_MODEL
from components.judges.retrieval_grader import GradeResult, prompt_variant
from components.judges.retrieval_grader import RetrievalGrader as LLMGrader
from components.judges.settings import Settings
from components.judges.setup import check_models, make_judge
from utils.errors import InputError, JudgeError
from utils.settings import DEFAULT_JUDGE_TIMEOUT_S, MAX_JUDGE_TIMEOUT_S, seconds

__all__ = ["RetrievalGrader", "GradeResult"]

ChunkLike = Chunk | ScoredChunk | Mapping[str, Any]


class RetrievalGrader:
    """Grades 1-10 how well retrieved chunks answer a question (see the module docstring).

    ``llm``: the model to grade with; ``call_llm``: a function ``fn(prompt, model=..., timeout=...)``
    to grade with instead (``model``: the model string it is given); with neither, the judge is
    resolved from ``env`` (default ``os.environ``) as a run does. ``timeout``: seconds for the one
    request of a grade (above 0, at most 600). ``corpus``: what the offline judge weighs terms over
    (a corpus folder as ``--corpus`` takes, a :class:`Corpus` or a list of :class:`Document`; None:
    the built-in corpus)."""

    def __init__(self, llm: LLM | None = None, timeout: float = DEFAULT_JUDGE_TIMEOUT_S, *,
                 call_llm: Callable[..., Any] | None = None, model: str = DEFAULT_MODEL,
                 corpus: str | os.PathLike | Corpus | Sequence[Document] | None = None,
                 env: Mapping[str, str] | None = None) -> None:
        self.timeout = seconds("RetrievalGrader timeout", str(timeout), DEFAULT_JUDGE_TIMEOUT_S, 0.0,
                               MAX_JUDGE_TIMEOUT_S, above_low=True)
        if llm is not None and call_llm is not None:
            raise InputError("RetrievalGrader: pass llm or call_llm, not both")
        if call_llm is not None and not callable(call_llm):
            raise InputError(f"RetrievalGrader: call_llm is a {type(call_llm).__name__}, not a function: pass "
                             "call_llm(prompt, model=..., timeout=...)")
        self._corpus = corpus
        self._unusable: str | None = None  # after a fatal failure: why no call is made any more
        self._settings: Settings | None = None
        self._grader: Any = None  # built on the first grade: the start-up check may call the network
        if call_llm is not None:
            self._grader = LLMGrader(BoundedLLM(CallerLLM(call_llm, model, self.timeout), self.timeout))
            self.judge = f"call_llm/{model}"
        elif llm is not None:
            self._grader = LLMGrader(BoundedLLM(llm, self.timeout))
            self.judge = llm.model
        else:
            settings = Settings.from_env(os.environ if env is None else env)
            self._settings = replace(settings, judge_timeout=self.timeout,
                                     judge_config=_no_retries(settings.judge_config))
            self.judge = settings.judge if settings.judge_model is None else f"{settings.judge}/{settings.judge_model}"
        logger.info("[retrieval-grader] judge {} (timeout {:g}s)", self.judge, self.timeout)

    def grade(self, question: str, expected_answer: str | None, chunks: Sequence[ChunkLike]) -> GradeResult:
        """The grade of ``chunks`` for ``question`` against ``expected_answer`` (None: graded from
        the question alone), after at most one request. Every failure is a null grade with its
        reason in ``error``; raises :class:`InputError` only for a chunk that is not one."""
        items = [_as_chunk(item, i) for i, item in enumerate(chunks)]
        start = time.perf_counter()
        judge = self._judge()
        if judge is None:
            return self._failed(expected_answer, start)
        try:
            return judge.grade(question, expected_answer, items)
        except JudgeError as err:  # only a fatal one propagates from the judge
            logger.error("[retrieval-grader] judge unusable ({}): {}", err.kind, err)
            self._unusable = f"judge_unusable: not graded after an earlier {err.kind} error"
            return GradeResult(None, None, (time.perf_counter() - start) * 1000, f"{err.kind}: {err}", None,
                               prompt_variant(expected_answer))
        except Exception as err:  # noqa: BLE001 - the plan: a failure is a null grade, the caller goes on
            error = f"error: {type(err).__name__}: {str(err)[:300]}"
            logger.warning("[retrieval-grader] FAILED: {}", error)
            return GradeResult(None, None, (time.perf_counter() - start) * 1000, error, None,
                               prompt_variant(expected_answer))

    def _judge(self) -> Any:
        """The judge object (built once, on first use), or None when it cannot be used."""
        if self._grader is None and self._unusable is None:
            try:
                setup = check_models(self._settings)
            except Exception as err:  # noqa: BLE001 - a start-up check that fails is a null grade
                logger.error("[retrieval-grader] judge unusable: {}", err)
                self._unusable = f"judge_unusable: {err}"
                return None
            self._grader = make_judge(self._settings, () if setup.calls_models else self._corpus_chunks(), setup)
        return self._grader if self._unusable is None else None

    def _failed(self, expected_answer: str | None, start: float) -> GradeResult:
        return GradeResult(None, None, (time.perf_counter() - start) * 1000, self._unusable, None,
                           prompt_variant(expected_answer))

    def _corpus_chunks(self) -> list[Chunk]:
        from components.core.chunking import chunk_corpus
        from components.readers import load_corpus

        corpus = self._corpus
        if corpus is None or isinstance(corpus, (str, os.PathLike)):
            corpus = load_corpus(corpus)
        return chunk_corpus(list(corpus.documents if isinstance(corpus, Corpus) else corpus))


def _no_retries(config: Any) -> Any:
    """A provider's checked settings with ``max_retries=0`` (when it has that field): the SDK then
    sends one request per call, as the plan's grader must."""
    if is_dataclass(config) and not isinstance(config, type) and any(f.name == "max_retries" for f in fields(config)):
        return replace(config, max_retries=0)
    return config


def _as_chunk(item: ChunkLike, position: int) -> Chunk:
    if isinstance(item, Chunk):
        return item
    if isinstance(item, ScoredChunk):
        return item.chunk
    if isinstance(item, Mapping):
        return Chunk.from_mapping(item, position)
    raise InputError(f"chunk {position + 1} is {type(item).__name__}: pass a dict with doc_id and content (or "
                     "text), a Chunk or a ScoredChunk")
