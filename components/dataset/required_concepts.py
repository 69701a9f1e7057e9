"""The concepts a question requires: its expected answer's key concepts, for ``export-dataset``'s
``metadata.required_concepts``.

The candidates are the expected answer's key terms by the project's one lexical rule
(:func:`components.judges.lexical_judge.key_terms`: content words without English stopwords,
matched by their stem; numbers and identifiers such as ``v1.27`` or ``__exit__`` whole). Each is
weighed ``idf² × ln(1 + n)``: ``idf`` over the corpus chunks (rare in the corpus: specific), ``n``
the times it occurs in the needle document(s) (frequent there: what the document is about). The
:data:`MAX_CONCEPTS` heaviest are the concepts, heaviest first (ties keep the answer's order),
each shown as the word the answer first writes it with, lower-cased. So "The else clause of a for
loop runs when the iterable is exhausted..." over the Python reference gives ``loop, iterable,
terminated, exhausted, else``. A question without an expected answer has none (null); one whose
expected answer has no content words, an empty list.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable

from components.core import Chunk
from components.judges.lexical_judge import TermStats, key_term_words, term_counts

MAX_CONCEPTS = 5


def required_concepts(expected_answer: str | None, needle_chunks: Iterable[Chunk], stats: TermStats,
                      limit: int = MAX_CONCEPTS) -> list[str] | None:
    """The key concepts of ``expected_answer`` (module docstring): IDF from ``stats``, occurrences
    in ``needle_chunks``."""
    if not expected_answer:
        return None
    words = key_term_words(expected_answer)
    counts: Counter[str] = Counter()
    for chunk in needle_chunks:
        counts.update(term_counts(chunk.index_text))
    ranked = sorted(words, key=lambda term: -(stats.idf(term) ** 2 * math.log1p(counts[term])))
    return [words[term] for term in ranked[:limit]]
