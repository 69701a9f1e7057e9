"""pool: two recorded runs pooled at depth 5 with a scripted judge; the judgment store serves a second
pool (0 calls, byte-identical qrels) and a third run's new pairs only; the asymmetric review finds a
planted duplicate needle (false negative) and a needle without the answer (gold error); a judge that
says 3 to everything raises no gold error and is named; bad input is one line and exit 2."""

from __future__ import annotations

import json
import re
import sqlite3
from pathlib import Path

import pytest

from components.judges.chunk_relevance import RELEVANCE_PROMPT, RELEVANCE_PROMPT_SHA256
from components.judges.providers.scripted import fail, play
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from components.pool.store import JudgmentStore
from tests.conftest import clean_env, run_cli
from utils.results import JudgeInfo, QuestionResult, RetrievedItem, RunInfo, RunResult

SCRIPTED = {"BENCHMARK_JUDGE": "scripted"}
N_QUESTIONS = 4
FILLER = [f"filler{j}" for j in range(8)]


def answer(i: int) -> str:
    return f"set limit{i} in alpha{i}.toml"


def text_of(doc: str) -> str:
    """Each document's text: doc<i> holds question i's answer; dup1 is doc1 word for word; the
    fillers hold nothing; doc3 (question 3's needle) does not hold its answer."""
    if doc == "dup1":
        return text_of("doc1")
    match = re.fullmatch(r"doc(\d)", doc)
    if match and doc != "doc3":
        i = int(match.group(1))
        return f"Settings\n\nTo change it, {answer(i)} and restart."
    return f"Notes\n\nGeneral notes about {doc}, nothing on limits."


def row(i: int, docs: list[str]) -> QuestionResult:
    return QuestionResult(question_id=f"q{i}", question=f"How do I change limit{i}?", expected_answer=answer(i),
                          needle_doc_id=f"doc{i}", needle_doc_ids=[f"doc{i}"],
                          retrieved=[RetrievedItem(r, d, f"{d}#0", text=text_of(d)) for r, d in enumerate(docs, 1)])


def run_file(path: Path, rankings: dict[int, list[str]], run_id: str) -> Path:
    info = RunInfo(status="completed", strategy=run_id, id=run_id,
                   judge=JudgeInfo("scripted", "scripted-1", PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256))
    rows = [row(i, rankings[i]) for i in range(N_QUESTIONS)]
    RunResult(run=info, rows=rows, question_count=len(rows)).save(path)
    return path


def runs(tmp_path: Path) -> tuple[Path, Path, Path]:
    """Run A and B share most of their top 5; C brings two new documents."""
    a = {i: [f"doc{i}", *FILLER[:4]] for i in range(N_QUESTIONS)}
    a[1] = ["doc1", "dup1", *FILLER[:3]]
    b = {i: [*FILLER[1:5], f"doc{i}"] for i in range(N_QUESTIONS)}
    c = {i: [f"doc{i}", "filler6", "filler7", *FILLER[:2]] for i in range(N_QUESTIONS)}
    return (run_file(tmp_path / "a.json", a, "A"), run_file(tmp_path / "b.json", b, "B"),
            run_file(tmp_path / "c.json", c, "C"))


def chunks_shown(prompt: str) -> list[str]:
    return re.findall(r"\[CHUNK \d+/\d+ doc_id=(\S+) chunk_id=(\S+)\]\n(.*?)\n\[END CHUNK", prompt, re.S)


def reading_judge(prompt: str) -> str:
    """3 for a chunk that holds the expected answer, else 0."""
    expected = re.search(r"^EXPECTED ANSWER \(ground truth\): (.*)$", prompt, re.M).group(1)
    return json.dumps([3 if expected in text.replace("│ ", "") else 0 for _, _, text in chunks_shown(prompt)])


def pool(*args: str | Path, env: dict | None = None):
    return run_cli("pool", *map(str, args), env=env or clean_env(**SCRIPTED))


def read_pool(folder: Path) -> dict:
    return json.loads((folder / "pool.json").read_text())


# --------------------------------------------------------------------------- done when

def test_second_pool_makes_no_call_and_third_run_judges_only_its_new_pairs(tmp_path: Path):
    a, b, c = runs(tmp_path)
    store = tmp_path / "judgments.sqlite"
    with play(reading_judge) as script:
        first = pool(a, b, "-o", tmp_path / "p1", "--depth", "5", "--store", store)
    assert first.code == 0, first.stderr
    figures = read_pool(tmp_path / "p1")
    # per question: A's 5 and B's filler4 (B's filler1-3 and doc<i> are A's too): 6; q1 also dup1
    assert figures["pairs"] == N_QUESTIONS * 6 + 1
    # dup1 is doc1's text: one judgment serves both pairs
    assert figures["judged"] == figures["pairs"] and figures["from_store"] == 0
    assert figures["judge_calls"] == len(script.prompts) == N_QUESTIONS
    qrels1 = (tmp_path / "p1" / "qrels.tsv").read_bytes()
    assert b"q0\t0\tdoc0\t3\n" in qrels1 and b"q0\t0\tfiller0\t0\n" in qrels1

    with play(reading_judge) as script:
        second = pool(a, b, "-o", tmp_path / "p2", "--depth", "5", "--store", store)
    assert second.code == 0, second.stderr
    again = read_pool(tmp_path / "p2")
    assert script.prompts == [] and again["judge_calls"] == 0
    assert again["from_store"] == again["pairs"] == figures["pairs"] and again["judged"] == 0
    assert (tmp_path / "p2" / "qrels.tsv").read_bytes() == qrels1

    with play(reading_judge) as script:
        third = pool(a, b, c, "-o", tmp_path / "p3", "--depth", "5", "--store", store)
    assert third.code == 0, third.stderr
    grown = read_pool(tmp_path / "p3")
    assert grown["judged"] == N_QUESTIONS * 2  # filler6 and filler7 per question
    assert grown["from_store"] == figures["pairs"] and grown["judged"] + grown["from_store"] == grown["pairs"]
    assert len(script.prompts) == N_QUESTIONS
    assert all(len(chunks_shown(p)) == 2 for p in script.prompts)


def test_review_finds_the_duplicate_needle_and_the_needle_without_its_answer(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    with play(reading_judge) as script:
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", tmp_path / "s.sqlite")
    assert done.code == 0, done.stderr
    figures = read_pool(tmp_path / "out")
    fn = [(c["question_id"], c["doc_id"]) for c in figures["false_negative_candidates"]]
    gold = [(c["question_id"], c["doc_id"]) for c in figures["gold_error_candidates"]]
    assert fn == [("q1", "dup1")]
    assert gold == [("q3", "doc3")]
    candidate = figures["false_negative_candidates"][0]
    assert candidate["votes"] == {"scripted/scripted-1": 3}
    assert candidate["chunks"][0]["text"] == text_of("doc1") and candidate["question"] == "How do I change limit1?"
    # blind: no document id, no chunk id in any prompt
    assert all(d == "hidden" and c == "hidden" for p in script.prompts for d, c, _ in chunks_shown(p))
    assert "doc1" not in "".join(script.prompts) and "dup1" not in "".join(script.prompts)
    assert "False-negative candidates (not a needle, every judge >= 2): 1" in done.stdout
    assert "q1  dup1" in done.stdout


def test_a_judge_that_says_3_to_everything_raises_no_gold_error_and_is_named(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    with play(lambda prompt: json.dumps([3] * len(chunks_shown(prompt)))):
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", tmp_path / "s.sqlite")
    assert done.code == 0, done.stderr
    figures = read_pool(tmp_path / "out")
    assert figures["gold_error_candidates"] == []
    assert figures["lenient_judges"] == {"scripted/scripted-1": {"relevant": 25, "labels": 25}}
    assert "Judge scripted/scripted-1 labels everything relevant (25 of 25 labels are 2 or 3)" in done.stderr
