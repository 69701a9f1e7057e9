"""Generated inputs for ``--judge-batch`` runs: a tiny Markdown corpus and as many questions as
wanted (the 10,000-question simulated run, ``bench/judge_batch.py``). Seeded: the same call
writes the same files."""

from __future__ import annotations

import json
import random
from pathlib import Path

_WORDS = ("pod node volume secret ingress service replica schedule taint label selector probe quota limit "
          "namespace cluster gateway route certificate token mount image registry rollout budget").split()


def make_corpus(folder: Path, docs: int = 60, seed: int = 7) -> list[str]:
    """``docs`` Markdown pages in ``folder`` (created); returns their doc ids (file stems)."""
    rng = random.Random(seed)
    folder.mkdir(parents=True, exist_ok=True)
    ids = []
    for d in range(docs):
        doc_id = f"page-{d:03d}"
        topic = f"topic{d:03d}"
        paragraphs = [" ".join([topic] + rng.choices(_WORDS, k=40)) + "." for _ in range(4)]
        (folder / f"{doc_id}.md").write_text(f"# Page {d}: {topic}\n\n" + "\n\n## Details\n\n".join(paragraphs) + "\n",
                                             encoding="utf-8")
        ids.append(doc_id)
    return ids


def make_questions(path: Path, n: int, doc_ids: list[str], seed: int = 11, odd_ids: bool = False) -> list[str]:
    """``n`` questions over ``doc_ids`` (each names its page's topic word) written to ``path``;
    returns their ids. ``odd_ids``: ids with spaces, slashes, quotes, unicode and a 300-character one."""
    rng = random.Random(seed)
    questions = []
    for i in range(n):
        d = i % len(doc_ids)
        qid = f"gen_{i:05d}"
        if odd_ids:
            qid = [f"q {i}/ä\"'", f"../{i}\\x", f"{'long' * 75}{i}", f"🙂-{i}", f"q{i}"][i % 5]
        questions.append({"id": qid, "question": f"How does topic{d:03d} handle {rng.choice(_WORDS)}?",
                          "expected_answer": f"topic{d:03d} explains {rng.choice(_WORDS)}.",
                          "needle_doc_id": doc_ids[d], "category": ["a", "b"][i % 2]})
    path.write_text(json.dumps({"questions": questions}), encoding="utf-8")
    return [q["id"] for q in questions]
