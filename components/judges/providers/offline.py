"""The ``offline`` judge provider: the lexical proxy judge, no model, no key, no cost.

It grades with :class:`components.judges.lexical_judge.LexicalJudge` (IDF-weighted key-term overlap
with the expected answer over the corpus chunks), which also rates chunk relevance. It is the
judge when no other provider is configured, so that the main command runs on a fresh clone; its
grades are a lexical proxy, and every output says so.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from components.judges.providers import ModelChoice, Provider, register_provider

if TYPE_CHECKING:
    from components.core import Chunk

NOTE = "offline lexical judge: grades are a lexical proxy (IDF-weighted key-term overlap), not {title}"


@register_provider
class OfflineProvider(Provider):
    name = "offline"
    label = "offline lexical judge (a lexical proxy: IDF-weighted key-term overlap, not an LLM)"
    calls_models = False

    @classmethod
    def note(cls) -> str:
        """What every output says of these grades: a proxy, not the default judge's."""
        from components.judges.providers import providers

        title = next((c.title for c in providers().values() if c.is_default), "an LLM judge's")
        return NOTE.format(title=title)

    def judge(self, choice: ModelChoice | None, chunks: Sequence[Chunk]):
        from components.judges.lexical_judge import LexicalJudge

        return LexicalJudge(chunks)
