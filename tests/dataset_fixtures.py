"""A tiny hand-made corpus folder and questions file whose validation verdicts are known by hand.

Documents (one Markdown file each):

* ``alpha`` — section "Quorum": "The zephyr flag enables quorum mode on the widget." + filler;
  section "Appendix": filler only (two chunks: each section has >= 50 words);
* ``beta`` — "Bananas are yellow fruit grown in tropical climates.";
* ``gamma`` and ``delta`` — both "Planets orbit the sun ..." (so a planet question is answerable
  from a document that is not its needle);
* ``epsilon`` — "Turn the dial to start the engine." (shares only "turn" with the quorum question:
  a hard negative for it, no key term of its answer);
* ``empty`` — front matter only (one title-only chunk without text).

Filler is "lorem ipsum dolor sit amet", a phrase no question or answer uses.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from components.cli import export_dataset, validate
from components.judges.settings import Settings

OFFLINE = Settings.from_env({"BENCHMARK_JUDGE": "offline"})
ANTHROPIC = Settings.from_env({"ANTHROPIC_API_KEY": "sk-test"})

FILLER = " ".join(["lorem ipsum dolor sit amet"] * 12)  # 60 words

DOCS = {
    "alpha": f"# Alpha\n\n## Quorum\n\nThe zephyr flag enables quorum mode on the widget. {FILLER}\n\n"
             f"## Appendix\n\n{FILLER}\n",
    "beta": "# Beta\n\nBananas are yellow fruit grown in tropical climates.\n",
    "gamma": "# Gamma\n\nPlanets orbit the sun on elliptical paths.\n",
    "delta": "# Delta\n\nPlanets orbit the sun, as every astronomer knows.\n",
    "epsilon": "# Epsilon\n\nTurn the dial to start the engine.\n",
    "empty": "---\ntitle: Empty\n---\n",
}

QUORUM_Q = "How do I turn on quorum mode?"
QUORUM_A = "The zephyr flag enables quorum mode."

QUESTIONS = [
    # passes: alpha holds every key term of the answer (grade 10); no other document holds any (grade 1)
    {"id": "q_pass", "question": QUORUM_Q, "expected_answer": QUORUM_A, "needle_doc_id": "alpha",
     "category": "config", "difficulty": "easy"},
    # wrong needle: beta holds none of the answer's terms (1 < 7) and alpha, among the others, all (10 > 3)
    {"id": "q_wrong_needle", "question": "Which flag enables quorum mode?", "expected_answer": QUORUM_A,
     "needle_doc_id": "beta"},
    # passes: "banana", "yellow" are in beta only
    {"id": "q_pass2", "question": "What colour are bananas?", "expected_answer": "Bananas are yellow.",
     "needle_doc_id": "beta", "difficulty": "easy"},
    # not necessary: delta answers it as well as the needle gamma (10 > 3)
    {"id": "q_generic", "question": "What do planets do?", "expected_answer": "Planets orbit the sun.",
     "needle_doc_id": "gamma"},
    # duplicate of q_pass once case and punctuation are normalised
    {"id": "q_dup", "question": "how do I turn on  QUORUM mode", "expected_answer": QUORUM_A,
     "needle_doc_id": "alpha"},
    # no expected answer: the lexical judge cannot grade, both checks ungraded
    {"id": "q_noanswer", "question": "What is the widget's zephyr flag for?", "needle_doc_id": "alpha"},
    {"id": "q_empty", "question": "What does the empty page say?", "expected_answer": "Nothing at all.",
     "needle_doc_id": "empty"},
    {"id": "q_unknown", "question": "Where is the missing page?", "expected_answer": "Nowhere.",
     "needle_doc_id": "nosuch"},
]

VERDICTS = {"q_pass": "pass", "q_wrong_needle": "fail", "q_pass2": "pass", "q_generic": "fail", "q_dup": "fail",
            "q_noanswer": "fail", "q_empty": "fail", "q_unknown": "fail"}


def write_corpus(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for doc_id, text in DOCS.items():
        (folder / f"{doc_id}.md").write_text(text, encoding="utf-8")
    return folder


def write_questions(path: Path, questions: list[dict] | None = None) -> Path:
    payload = {"description": "hand-made", "question_count": len(questions or QUESTIONS),
               "questions": questions or QUESTIONS}
    path.write_text(json.dumps(payload, indent=2), encoding="utf-8")
    return path


def strict_load(text: str):
    """json.loads that refuses NaN/Infinity (strict JSON)."""
    def no_constant(name):
        raise ValueError(f"non-strict JSON constant {name}")

    return json.loads(text, parse_constant=no_constant)


def validate_args(questions: Path, corpus: Path, out: Path, *extra: str) -> argparse.Namespace:
    """``validate``'s parsed arguments, as the CLI would build them (for :func:`components.cli.validate.run`)."""
    parser = argparse.ArgumentParser()
    validate.add_arguments(parser)
    return parser.parse_args([str(questions), "--corpus", str(corpus), "--json", str(out), *extra])


def export_args(questions: Path, corpus: Path, out: Path, *extra: str) -> argparse.Namespace:
    """``export-dataset``'s parsed arguments, as the CLI would build them (for
    :func:`components.cli.export_dataset.run`)."""
    parser = argparse.ArgumentParser()
    export_dataset.add_arguments(parser)
    return parser.parse_args(["--questions", str(questions), "--corpus", str(corpus), "-o", str(out), *extra])
