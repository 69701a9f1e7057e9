"""Each pair's label from its judges' votes, and each document's label from its chunks'.

A pair is labelled when every judge voted (a vote from the store or from a call of this pool); its
label is the **lowest** vote: LLM judges err toward "relevant", so a negative is trusted and a
positive needs every judge's agreement (with one judge, its vote). A document's label for a question
is its best chunk's (the qrels are by document; the chunk-level file keeps every chunk's).

A pair counts as ``from_store`` when every vote came from the store, as ``judged`` when at least one
came from a call this pool made (a content duplicate served by that call included), else it is
unlabelled: ``judged + from_store + unlabelled == pairs``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from components.pool.judging import JudgePlan, Outcome, Vote
from components.pool.runs import Pair


@dataclass(frozen=True)
class PairLabel:
    """One pair and its judges' votes (judge name → vote; a judge without a vote is absent), its label
    (None: a judge did not vote) and whether every vote came from the store."""

    pair: Pair
    votes: dict[str, Vote]
    label: int | None
    from_store: bool
    created_at: str | None

    @property
    def complete(self) -> bool:
        return self.label is not None


def pair_labels(pairs: Sequence[Pair], plans: Sequence[JudgePlan], outcome: Outcome) -> list[PairLabel]:
    """Every pair with its judges' votes (the store's, then this pool's calls')."""
    sources = [(plan.judge.name, plan.keys, plan.served, outcome.tallies[plan.judge.name].made) for plan in plans]
    out = []
    for i, pair in enumerate(pairs):
        votes = {}
        for name, keys, served, made in sources:
            vote = served.get(keys[i]) or made.get(keys[i])
            if vote is not None:
                votes[name] = vote
        complete = len(votes) == len(sources)
        out.append(PairLabel(pair, votes, min(v.label for v in votes.values()) if complete else None,
                             complete and all(v.from_store for v in votes.values()),
                             max(v.created_at for v in votes.values()) if votes else None))
    return out


def counts(labels: Sequence[PairLabel]) -> dict[str, int]:
    """``pairs``, ``judged``, ``from_store``, ``unlabelled`` (module docstring)."""
    from_store = sum(1 for x in labels if x.from_store)
    judged = sum(1 for x in labels if x.complete and not x.from_store)
    return {"pairs": len(labels), "judged": judged, "from_store": from_store,
            "unlabelled": len(labels) - judged - from_store}


def document_labels(labels: Sequence[PairLabel]) -> dict[str, dict[str, int]]:
    """Question id → {doc id: its best chunk's label}, in the pool's order (unlabelled pairs left out)."""
    out: dict[str, dict[str, int]] = {}
    for x in labels:
        if x.label is None:
            continue
        docs = out.setdefault(x.pair.question.id, {})
        docs[x.pair.item.doc_id] = max(docs.get(x.pair.item.doc_id, 0), x.label)
    return out
