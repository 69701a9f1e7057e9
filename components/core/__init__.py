"""The harness's own types, beneath everything else of the benchmark (it imports only ``utils``).

A user's retriever takes its types from here::

    from components.core import ScoredChunk

``Chunk`` (what a retriever indexes), ``ScoredChunk`` and ``Retriever`` (what it returns, what it
is), ``Document`` and ``Corpus`` (what the chunks come from), ``Question`` and ``QuestionSet``
(what a run asks), ``top_k`` / ``top_indices`` (the best k of a score array, deterministically),
the strategy registry (``Strategy``, ``register_strategy``, ``resolve_strategy``), and the one
plug-in route that loads a plug-in's module into any registry (:mod:`components.core.plugins`).
"""

from components.core.chunk import Chunk
from components.core.corpus import Corpus, Document
from components.core.questions import Question, QuestionSet
from components.core.retriever import Retriever, ScoredChunk, top_indices, top_k
from components.core.strategies import Strategy, register_strategy, resolve_strategy

__all__ = ["Chunk", "ScoredChunk", "Retriever", "Document", "Corpus", "Question", "QuestionSet", "top_k",
           "top_indices", "Strategy", "register_strategy", "resolve_strategy"]
