"""The old path of the retriever types: ``from poc.retriever import ScoredChunk`` keeps working for
existing plug-ins. They live in the benchmark now: ``from components.core import ScoredChunk``."""

from components.core.chunk import Chunk
from components.core.retriever import Retriever, ScoredChunk, top_indices, top_k

__all__ = ["Chunk", "Retriever", "ScoredChunk", "top_indices", "top_k"]
