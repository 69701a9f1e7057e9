"""The old path of the document types and the corpus loader: ``from poc.corpus import Document``
keeps working for existing plug-ins. They live in the benchmark now: the types in
``components.core``, the loader and the Markdown reader in ``components.readers``."""

from components.core.corpus import Corpus, Document
from components.readers import load_corpus
from components.readers.builtin import builtin_corpus
from components.readers.markdown import parse_markdown, split_front_matter

__all__ = ["Corpus", "Document", "builtin_corpus", "load_corpus", "parse_markdown", "split_front_matter"]
