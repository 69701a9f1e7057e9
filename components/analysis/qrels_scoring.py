"""``compare --qrels FILE``: every run rescored against graded relevance labels (the qrels ``pool``
writes, or any TREC/BEIR qrels), in a second table headed ``against <qrels file>``; the needle
table above it is unchanged.

Each run's ranking of a question is its documents in order (a results file's retrieved chunks, each
document at its first chunk's place), cut at the run's k. Over the questions the qrels judge (at
least one judgment), as trec_eval and pytrec_eval compute them:

* **P@k**: the documents labelled at least 2 (ir_measures' ``rel=2``) among the top k, over k;
* **recall@k**: those documents over every document the qrels label at least 2 for the question
  (0 when there is none);
* **MRR**: 1 / the rank of the first document labelled at least 2 (0 when there is none);
* **nDCG@k**: the labels as gains (0-3), ``sum(label / log2(rank + 1))`` over the ideal ordering of
  the question's labels;
* **unjudged@k**: the share of the top-k documents the qrels do not judge, over every question.

An unjudged document counts as not relevant (gain 0), as in trec_eval: a run that retrieves what the
pool never saw is scored low for it, which the unjudged share shows.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from utils.records import trec
from utils.results import RunResult

RELEVANT = 2
COLUMNS = ("P@k", "recall@k", "MRR", "nDCG@k", "unjudged@k")


@dataclass(frozen=True)
class QrelsScore:
    """One run against the qrels: means over the judged questions; ``unjudged`` a share (0-1)."""

    label: str
    k: int
    questions: int
    precision: float
    recall: float
    mrr: float
    ndcg: float
    unjudged: float

    def to_json(self) -> dict:
        return {"label": self.label, "k": self.k, "questions": self.questions, "precision": self.precision,
                "recall": self.recall, "mrr": self.mrr, "ndcg": self.ndcg, "unjudged": self.unjudged}


def document_ranking(retrieved: Sequence, k: int) -> list[str]:
    """The distinct documents of ``retrieved`` (best first), at most ``k``."""
    return list(dict.fromkeys(item.doc_id for item in retrieved))[:k]


def question_scores(docs: Sequence[str], judged: Mapping[str, int], k: int) -> tuple[float, float, float, float]:
    """``(P@k, recall@k, RR, nDCG@k)`` of one question's ranking ``docs`` (module docstring)."""
    top = list(docs)[:k]
    hits = [judged.get(d, 0) >= RELEVANT for d in top]
    relevant = sum(1 for g in judged.values() if g >= RELEVANT)
    rr = next((1.0 / rank for rank, hit in enumerate(hits, start=1) if hit), 0.0)
    dcg = sum(max(judged.get(d, 0), 0) / math.log2(rank + 1) for rank, d in enumerate(top, start=1))
    ideal = sorted((g for g in judged.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal, start=1))
    return sum(hits) / k, (sum(hits) / relevant if relevant else 0.0), rr, (dcg / idcg if idcg else 0.0)


def score_rankings(label: str, rankings: Mapping[str, Sequence[str]], qrels: trec.Qrels, k: int) -> QrelsScore:
    """One run's rankings against ``qrels`` (module docstring)."""
    sums = [0.0, 0.0, 0.0, 0.0]
    shown = unjudged = 0
    questions = [q for q in qrels if qrels[q]]
    for q in questions:
        docs = list(rankings.get(q, []))[:k]
        for i, value in enumerate(question_scores(docs, qrels[q], k)):
            sums[i] += value
        shown += len(docs)
        unjudged += sum(1 for d in docs if d not in qrels[q])
    n = len(questions)
    means = [s / n if n else 0.0 for s in sums]
    return QrelsScore(label, k, n, *means, unjudged / shown if shown else 0.0)


def score_runs(results: Sequence[RunResult], labels: Sequence[str], systems: Sequence, qrels: trec.Qrels,
               k: int | None = None) -> list[QrelsScore]:
    """The results files (each at its own k) and the TREC/ranx ``systems`` (``label`` and
    ``rankings``; at the first run's k) against ``qrels``."""
    out = [score_rankings(label, {r.question_id: document_ranking(r.retrieved, result.k) for r in result.rows},
                          qrels, result.k) for result, label in zip(results, labels, strict=True)]
    depth = k if k is not None else (results[0].k if results else 10)
    out += [score_rankings(s.label, s.rankings, qrels, depth) for s in systems]
    return out


def qrels_table(scores: Sequence[QrelsScore], source: str) -> str:
    """The second table of ``compare --qrels``: one line per run."""
    from utils.console import escape_control

    width = max([len("run"), *(len(s.label) for s in scores)])
    judged = scores[0].questions if scores else 0
    lines = [escape_control(f"against {source}") + f" ({judged} judged question(s); relevant: label >= {RELEVANT}; "
             "nDCG gains: the labels 0-3; an unjudged document counts as not relevant)",
             f"  {'run':<{width}}  {'k':>3}  " + "  ".join(f"{c:>10}" for c in COLUMNS)]
    for s in scores:
        values = (s.precision, s.recall, s.mrr, s.ndcg)
        lines.append(f"  {escape_control(s.label):<{width}}  {s.k:>3}  " + "  ".join(f"{v:>10.4f}" for v in values)
                     + f"  {s.unjudged:>9.1%}")
    return "\n".join(lines) + "\n"
