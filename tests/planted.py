"""The planted-failure fixture (``tests/fixtures/planted_failures.json``): known causes of a miss,
planted by edits of the built-in corpus and of ``questions.json``, to score the diagnosis on.

The fixture has rounds; each round is one corpus: the built-in corpus (the Python Language
Reference topics of ``pydoc_data``, :func:`components.readers.builtin.builtin_corpus`) with that
round's edits applied, and one question per plant, a copy of a built-in question that hits at
rank 1 and passes unedited (``base``), so that the edit is what makes it miss. The needle docs
of a round are distinct, so no plant's edit touches another's question. A plant is:

* ``id``, ``type`` (the failure type planted: the diagnosis's primary type should be it), ``base``;
* ``question`` / ``expected_answer``: replace the base question's (omitted: kept);
* ``edits``: corpus edits, each ``{"doc": id, "find": text, "replace": text}`` (``find`` must occur
  exactly once in that document's Markdown) or ``{"add": {"doc_id", "title", "text"}}`` (a new
  document);
* ``why``: how the edit plants the type, in words.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from pathlib import Path

from components.core import Document
from components.readers.builtin import builtin_corpus

ROOT = Path(__file__).resolve().parent.parent
FIXTURE = Path(__file__).resolve().parent / "fixtures" / "planted_failures.json"


@dataclass(frozen=True)
class Round:
    documents: list[Document]
    questions: list[dict]
    types: dict[str, str]  # question id → the type planted


def load_plants(path: Path = FIXTURE) -> list[list[dict]]:
    """The fixture's rounds, each a list of plants."""
    return [r["plants"] for r in json.loads(path.read_text(encoding="utf-8"))["rounds"]]


def _apply(documents: dict[str, Document], edit: dict, plant: str) -> None:
    if "add" in edit:
        doc = edit["add"]
        if doc["doc_id"] in documents:
            raise ValueError(f"plant {plant}: document {doc['doc_id']!r} exists already")
        documents[doc["doc_id"]] = Document(doc_id=doc["doc_id"], title=doc["title"], text=doc["text"])
        return
    doc = documents[edit["doc"]]
    found = doc.text.count(edit["find"])
    if found != 1:
        raise ValueError(f"plant {plant}: {edit['find'][:60]!r} occurs {found} times in {edit['doc']}, not once "
                         "(has the built-in corpus changed?)")
    documents[edit["doc"]] = replace(doc, text=doc.text.replace(edit["find"], edit["replace"]))


def build_round(plants: list[dict]) -> Round:
    """The corpus and the questions of one round of plants."""
    base = {q["id"]: q for q in json.loads((ROOT / "questions.json").read_text(encoding="utf-8"))["questions"]}
    documents = {d.doc_id: d for d in builtin_corpus().documents}
    questions, types = [], {}
    for plant in plants:
        for edit in plant.get("edits", []):
            _apply(documents, edit, plant["id"])
        question = {**base[plant["base"]], "id": plant["id"]}
        question.update({k: plant[k] for k in ("question", "expected_answer") if k in plant})
        questions.append(question)
        types[plant["id"]] = plant["type"]
    return Round(list(documents.values()), questions, types)
