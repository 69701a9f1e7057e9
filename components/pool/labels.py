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
    pair: Pair
    votes: dict[str, Vote]  # judge name → vote; a judge without a vote is absent
    judges: int  # how many judges were asked

    @property
    def complete(self) -> bool:
        return len(self.votes) == self.judges

    @property
    def label(self) -> int | None:
        return min(v.label for v in self.votes.values()) if self.complete else None

    @property
    def from_store(self) -> bool:
        return self.complete and all(v.from_store for v in self.votes.values())

    @property
    def created_at(self) -> str | None:
        return max(v.created_at for v in self.votes.values()) if self.votes else None


def pair_labels(pairs: Sequence[Pair], plans: Sequence[JudgePlan], outcome: Outcome) -> list[PairLabel]:
    """Every pair with its judges' votes (the store's, then this pool's calls')."""
    out = []
    for i, pair in enumerate(pairs):
        votes = {}
        for plan in plans:
            key = plan.keys[i]
            vote = plan.served.get(key) or outcome.tallies[plan.judge.name].made.get(key)
            if vote is not None:
                votes[plan.judge.name] = vote
        out.append(PairLabel(pair, votes, len(plans)))
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
