"""Which judges label a pool (:func:`pool_judges`): the environment's judge, as a run's, or each
judge ``--judges`` names; each checked at start-up as a run checks its judges, each rating chunks
0-3 with the per-chunk relevance prompt (:mod:`components.judges.chunk_relevance`) or, for the
offline judge, its lexical rule over the corpus (:meth:`components.judges.lexical_judge.LexicalJudge.relevance`).

A judge's identity in the judgment store is a :class:`~components.pool.store.JudgeKey`: provider,
model, base URL, the prompt's hash (the reference or the reference-free variant, as the question
has an expected answer or not) and, for the offline judge, the corpus fingerprint.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from components.judges.chunk_relevance import REFERENCE_FREE_RELEVANCE_PROMPT_SHA256, RELEVANCE_PROMPT_SHA256
from components.judges.lexical_judge import RELEVANCE_CUTS
from components.judges.panel import check_panel, panel_settings, parse_judges
from components.judges.settings import Settings
from components.judges.setup import JudgeSetup, check_models, make_judge, relevance_judge
from components.pool.store import JudgeKey, public_url

# The offline judge has no prompt: its rule stands in for one in the store key.
OFFLINE_RULE = f"lexical-idf-v1 relevance: IDF-weighted key-term share, cuts {','.join(map(str, RELEVANCE_CUTS))}"
OFFLINE_RULE_SHA256 = hashlib.sha256(OFFLINE_RULE.encode()).hexdigest()


@dataclass
class PoolJudge:
    """One judge of the pool: its name, its start-up setup, the relevance judge it rates with, and
    the corpus fingerprint of the offline judge ("" for one that calls a model)."""

    name: str
    setup: JudgeSetup
    relevance: Any
    fingerprint: str = ""

    @property
    def calls_models(self) -> bool:
        return self.setup.calls_models

    @property
    def provider(self) -> str:
        return self.setup.judge_provider.name

    @property
    def model(self) -> str:
        if self.setup.judge is not None:
            return self.setup.judge.model
        return getattr(self.relevance, "model", self.provider)

    @property
    def base_url(self) -> str:
        return public_url(getattr(getattr(self.setup.judge_provider, "config", None), "base_url", None))

    def prompt_sha256(self, expected_answer: str | None) -> str:
        if not self.calls_models:
            return OFFLINE_RULE_SHA256
        return RELEVANCE_PROMPT_SHA256 if expected_answer else REFERENCE_FREE_RELEVANCE_PROMPT_SHA256

    def key(self, expected_answer: str | None) -> JudgeKey:
        return JudgeKey(self.provider, self.model, self.base_url, self.prompt_sha256(expected_answer), self.fingerprint)

    def to_json(self) -> dict:
        return {"name": self.name, "provider": self.provider, "model": self.model, "base_url": self.base_url or None,
                "prompt_sha256": self.prompt_sha256("reference"),
                "reference_free_prompt_sha256": self.prompt_sha256(None),
                "corpus_fingerprint": self.fingerprint or None}


def _name(setup: JudgeSetup) -> str:
    return f"{setup.judge_provider.name}/{setup.judge.model}" if setup.judge is not None else setup.judge_provider.name


def pool_judges(settings: Settings, env: Mapping[str, str], judges: str | Sequence | None,
                corpus_chunks: Callable[[], tuple[list, str]]) -> list[PoolJudge]:
    """The judges of the pool (module docstring); ``corpus_chunks()`` gives the offline judge's chunks
    and their fingerprint, asked only when an offline judge is among them. Raises
    :class:`~utils.errors.InputError` (exit 2) or a fatal :class:`~utils.errors.JudgeError` (exit 3)."""
    if judges is not None:
        settings = panel_settings(parse_judges(judges), env)
    members = list(settings.panel) or [None]
    setups = check_panel(settings) if settings.panel else [check_models(settings)]
    corpus: tuple[list, str] | None = None
    out = []
    for member, setup in zip(members, setups, strict=True):
        member_settings = member.settings if member is not None else settings
        chunks, fingerprint = [], ""
        if not setup.calls_models:
            corpus = corpus if corpus is not None else corpus_chunks()
            chunks, fingerprint = corpus
        judge = make_judge(member_settings, chunks, setup)
        out.append(PoolJudge(member.name if member is not None else _name(setup), setup,
                             relevance_judge(setup, judge), fingerprint))
    return out
