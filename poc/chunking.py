"""The old path of the chunk and the chunker: ``from poc.chunking import Chunk`` keeps working for
existing plug-ins. They live in the benchmark now: ``from components.core import Chunk``."""

from components.core.chunk import Chunk
from components.core.chunking import MAX_WORDS, MIN_WORDS, TARGET_WORDS, chunk_corpus, chunk_document

__all__ = ["Chunk", "MAX_WORDS", "MIN_WORDS", "TARGET_WORDS", "chunk_corpus", "chunk_document"]
