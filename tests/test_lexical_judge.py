"""The offline judge's grades, hand-computed on a three-chunk corpus."""

from __future__ import annotations

import math

import pytest

from components.core import Chunk
from components.judges.lexical_judge import LexicalJudge, key_terms


def chunk(i: int, text: str) -> Chunk:
    return Chunk(f"d{i}", f"d{i}#0", "x", (), text, 0)  # a one-letter title adds no term


CHUNKS = [chunk(0, "alpha beta"), chunk(1, "alpha gamma"), chunk(2, "delta")]
IDF_ALPHA = math.log(4 / 3) + 1  # N = 3, df = 2
IDF_DELTA = math.log(4 / 2) + 1  # df = 1


def test_idf():
    judge = LexicalJudge(CHUNKS)
    assert judge.idf("alpha") == pytest.approx(IDF_ALPHA)
    assert judge.idf("delta") == pytest.approx(IDF_DELTA)
    assert judge.idf("never") == pytest.approx(math.log(4) + 1)


@pytest.mark.parametrize("retrieved,grade", [
    ([0], 5),  # share IDF_ALPHA / (IDF_ALPHA + IDF_DELTA) = .432 -> 1 + floor(4.32) = 5
    ([2], 6),  # share .568 -> 1 + floor(5.68) = 6
    ([0, 2], 10),
    ([], 1),
])
def test_grades(retrieved, grade):
    result = LexicalJudge(CHUNKS).grade("q", "The alpha and the delta.", [CHUNKS[i] for i in retrieved])
    assert result.grade == grade
    assert result.error is None and "key terms found" in result.reasoning


def test_reasoning_names_found_and_missing():
    reasoning = LexicalJudge(CHUNKS).grade("q", "alpha delta", [CHUNKS[0]]).reasoning
    assert "1 of 2" in reasoning and "found: alpha" in reasoning and "missing: delta" in reasoning


def test_no_expected_answer_is_unscored():
    result = LexicalJudge(CHUNKS).grade("q", None, CHUNKS)
    assert result.grade is None and result.error.startswith("no_expected_answer")


def test_key_terms():
    assert key_terms("The pods are running v1.27 with kube-node-lease") == ["pod", "run", "v1.27", "kube-node-lease"]
