"""Diagnosis rules on a hand-made corpus: each rule fires, and does not, at its threshold; one
primary type and at most one secondary; stopwords ignored; the counts are of primary types."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pytest

from components.analysis.diagnosis import (FIXES, SPECIFICITY_MAX_MEAN_IDF, TAGS, Diagnoser, Diagnosis,
                                           NeedleBestChunk, content_terms, count_carrying, count_tags, primary_of)
from components.core import Chunk
from components.judges.lexical_judge import LexicalJudge
from tests.conftest import K8S, needs_k8s


def chunk(doc: str, pos: int, text: str, heading: tuple[str, ...] = ()) -> Chunk:
    return Chunk(doc, f"{doc}#{pos}", "x", heading, text, pos)  # a one-letter title adds no term


N0 = chunk("needle", 0, "Topology manager overview. It graduated to stable in v1.27.")
N1 = chunk("needle", 1, "The restricted policy rejects pods. Topology hints.", ("Policies",))
N2 = chunk("needle", 2, "Restricted policy again, restricted.", ("More",))
GATE = chunk("gates", 0, "Topology manager feature gate for policy options.")
OTHER = chunk("other", 0, "Memory manager reserves memory.")
COPY = chunk("copy", 0, "Stable since v1.27: the topology manager.")  # holds the answer "v1.27 stable" too
# a sentence of the "split" document cut by a chunk boundary ("... the single | numa policy ...")
S0 = chunk("split", 0, "The kubelet aligns nodes when the single")
S1 = chunk("split", 1, "numa policy is chosen by the operator.")
# the same words, the boundary between two sentences
W0 = chunk("whole", 0, "The kubelet aligns nodes with the single.")
W1 = chunk("whole", 1, "Numa policy is chosen by the operator.")
COMMON = "common usual typical frequent"
# 40 filler chunks, each with its own word and the four common words: N = 48 chunks
FILLER = [chunk(f"f{i}", 0, f"word{i} {COMMON}") for i in range(40)]
CORPUS = [N0, N1, N2, GATE, OTHER, COPY, S0, S1, W0, W1, *FILLER]
N = len(CORPUS)


@pytest.fixture(scope="module")
def dx() -> Diagnoser:
    return Diagnoser(CORPUS)


def idf(df: int) -> float:
    return math.log((N + 1) / (df + 1)) + 1


def types(d: Diagnosis | None) -> list[str]:
    assert d is not None
    return d.tags


# ---- terms: stopwords ignored

def test_question_terms_ignore_stopwords():
    question = "My loop has an else block and I can't figure out when that block actually runs. Sometimes it does?"
    assert content_terms(question) == ["loop", "els", "block", "figur", "run"]  # no my, has, can, out, when...
    assert content_terms("Why does my change not stick?") == ["chang", "stick"]
    assert content_terms(None) == content_terms("") == []


# ---- needle_best_chunk

def test_needle_best_chunk_holds_the_answer(dx):
    assert dx.needle_best_chunk("v1.27 stable", ["needle"]) == NeedleBestChunk("needle#0", (), 1.0)
    # "restricted policy quux": restrict + polici in N1 and N2 (2 of 3), the earlier chunk wins the tie
    best = dx.needle_best_chunk("restricted policy quux", ["needle"])
    assert best == NeedleBestChunk("needle#1", ("Policies",), pytest.approx(2 / 3))
    assert best.to_json() == {"chunk_id": "needle#1", "heading_path": ["Policies"], "overlap": 0.667}


@pytest.mark.parametrize("text,needles", [("quux zzz", ["needle"]), ("", ["needle"]), (None, ["needle"]),
                                          ("v1.27", ["unknown"]), ("v1.27", [])])
def test_needle_best_chunk_none(dx, text, needles):
    assert dx.needle_best_chunk(text, needles) is None


# ---- which questions

def test_rank_one_pass_is_not_diagnosed(dx):
    assert dx.diagnose("topology manager", "v1.27", ["needle"], [N0], 1, 7, 7.0) is None


def test_a_rank_one_question_that_fails_is_the_judges_low_grade(dx):
    d = dx.diagnose("topology manager stable graduated", "v1.27 stable", ["needle"], [N0], 1, 6, 6.0)
    assert (d.primary, d.secondary, d.tags) == ("needle_hit_low_grade", None, ["needle_hit_low_grade"])
    assert d.sentence == "Needle at rank 1, grade 6: the judge graded 6 although a needle chunk was at rank 1."


# ---- 1. needle_absent: the needle holds < 0.5 (IDF-weighted) of the answer's terms

def test_needle_absent_fires_below_half_of_the_answers_weight(dx):
    # answer terms: v1.99 (df 0), stabl (df 2: N0, COPY), quux (df 0): the needle holds stabl only
    d = dx.diagnose("topology manager stable graduated", "v1.99 stable quux", ["needle"], [N0], 1, 3, 3.0)
    share = idf(2) / (idf(0) + idf(2) + idf(0))
    assert d.primary == "needle_absent" and d.details["answer_share_in_needle"] == round(share, 3)
    assert f"the needle document holds {share:.0%} of the expected answer's terms (missing: v1.99, quux)" in d.sentence
    assert f"{share:.0%}" == "28%"


def test_needle_absent_not_at_half_and_not_without_an_answer(dx):
    # v1.27 (df 2) and quux (df 0): the needle's share idf(2) / (idf(2) + idf(0)) >= 0.5? no: below
    below = dx.diagnose("topology manager", "v1.27 quux", ["needle"], [N0], 1, 3, 3.0)
    assert idf(2) / (idf(2) + idf(0)) < 0.5 and below.primary == "needle_absent"
    held = dx.diagnose("topology manager", "v1.27 stable", ["needle"], [N0], 1, 3, 3.0)
    assert held.details["answer_share_in_needle"] == 1.0 and "needle_absent" not in held.tags
    free = dx.diagnose("quux zzz", None, ["needle"], [N0], 1, None, None)
    assert "needle_absent" not in types(free) and free.details["answer_share_in_needle"] is None


# ---- 2. chunking_split: a boundary cutting a sentence inside the answer's passage

def test_chunking_split_fires_on_a_boundary_inside_a_sentence(dx):
    d = dx.diagnose("kubelet numa operator chooses", "aligns nodes single numa policy operator", ["split"],
                    [GATE, S0], 2, 5, 4.75)
    assert d.primary == "chunking_split"
    # S0 holds align, node, singl (df 2 each) of align, node, singl, numa, oper (df 2) and polici (df 5)
    single = 3 * idf(2) / (5 * idf(2) + idf(5))
    assert d.details["split"] == {"chunk_id": "split#0", "next_chunk_id": "split#1", "single_share": round(single, 3),
                                  "pair_share": 1.0}
    assert "a chunk boundary cuts a sentence of the answer's passage: split#0 | split#1" in d.sentence


def test_no_chunking_split_at_a_sentences_end(dx):
    d = dx.diagnose("kubelet numa operator chooses", "aligns nodes single numa policy operator", ["whole"],
                    [GATE, W0], 2, 5, 4.75)
    assert "chunking_split" not in types(d) and d.details["split"] is None


# ---- 3. grade_without_needle: another document above the needle holds the answer as well

def test_grade_without_needle_names_the_candidate_second_needle(dx):
    d = dx.diagnose("graduated stable release topology", "v1.27 stable", ["needle"], [COPY, N0], 2, 9, 8.55)
    assert d.primary == "grade_without_needle"
    assert d.details["second_needle"] == {"doc_id": "copy", "chunk_id": "copy#0", "rank": 1, "answer_share": 1.0,
                                          "needle_answer_share": 1.0}
    assert "copy (rank 1) holds 100% of the answer's terms, as much as the needle's best chunk (100%)" in d.sentence


def test_no_grade_without_needle_when_the_other_holds_less(dx):
    # GATE holds topolog and manag of "v1.27 topology manager overview": less than N0 (all four)
    d = dx.diagnose("graduated stable release topology", "v1.27 topology manager overview", ["needle"],
                    [GATE, N0], 2, 9, 8.55)
    assert "grade_without_needle" not in types(d) and d.details["second_needle"]["answer_share"] < 1.0


def test_grade_without_needle_without_an_answer_reads_the_grade(dx):
    d = dx.diagnose("graduated stable release topology", None, ["needle"], [OTHER, GATE], None, 7, 4.2)
    assert d.primary == "grade_without_needle" and "candidate second needle: other" in d.sentence
    low = dx.diagnose("graduated stable release topology", None, ["needle"], [OTHER, GATE], None, 6, 3.6)
    assert "grade_without_needle" not in types(low)


# ---- 4. specificity_gap: at most 3 terms, or a mean IDF below 1 + ln 5

def test_specificity_gap_on_few_terms_at_any_rank(dx):
    d = dx.diagnose("How does the topology manager work?", None, ["needle"], [N0], 1, 5, 5.0)
    assert d.primary == "specificity_gap"  # topolog, manag: "how", "does", "the", "work" are stopwords
    assert "the question is generic: 2 content words (topolog, manag)" in d.sentence


def test_specificity_gap_on_common_terms(dx):
    d = dx.diagnose(f"{COMMON} word1", None, ["needle"], [OTHER], None, None, None)
    mean = (4 * idf(40) + idf(1)) / 5
    assert mean < SPECIFICITY_MAX_MEAN_IDF and d.details["mean_idf"] == round(mean, 3)
    assert d.primary == "specificity_gap" and f"mean IDF {mean:.2f} < 2.61" in d.sentence


def test_no_specificity_gap_on_four_rare_terms(dx):
    d = dx.diagnose("restricted policy rejects pods", None, ["needle"], [GATE, N1], 2, None, None)
    assert "specificity_gap" not in types(d) and d.details["mean_idf"] > SPECIFICITY_MAX_MEAN_IDF


# ---- 5/7. vocabulary_mismatch: words absent from the corpus, or < half the terms in the needle

def test_vocabulary_mismatch_on_words_the_corpus_never_uses(dx):
    # topolog, manag in the needle; quux, zorp nowhere: 2 of 4 (< 0.75) in the needle
    d = dx.diagnose("topology manager quux zorp", None, ["needle"], [OTHER, N0], 2, None, None)
    assert d.primary == "vocabulary_mismatch" and d.details["absent_terms"] == ["quux", "zorp"]
    assert "the question's words quux, zorp occur nowhere in the corpus, and 50% of its terms" in d.sentence


def test_absent_words_with_the_needle_holding_the_rest_are_no_strong_mismatch(dx):
    # restrict, polici, reject in the needle, quux nowhere: 3 of 4 = 0.75 is not below 0.75
    d = dx.diagnose("restricted policy rejects quux", None, ["needle"], [OTHER, N1], 2, None, None)
    assert d.details["needle_share"] == 0.75 and "vocabulary_mismatch" not in types(d)


def test_vocabulary_mismatch_below_half_of_the_question_in_the_needle(dx):
    # memori, reserv, featur in other documents, topolog in the needle: 1 of 4
    d = dx.diagnose("memory reserves feature topology", None, ["needle"], [N0], 1, 3, 3.0)
    assert "vocabulary_mismatch" not in types(d)  # never at rank 1
    d = dx.diagnose("memory reserves feature topology", None, ["needle"], [N2, N0], 2, None, None)
    assert d.primary == "vocabulary_mismatch" and d.details["needle_share"] == 0.25
    assert "only 1 of 4 question terms occur in the needle document (missing: memori, reserv, featur)" in d.sentence


# ---- 6/8. distractor: another document above the needle shares (2 more / as many) question terms

def test_a_strong_distractor_comes_before_the_vocabulary(dx):
    # GATE shares topolog, manag, featur, gate; the needle's best chunk only topolog, manag: 2 more
    d = dx.diagnose("topology manager feature gate", None, ["needle"], [GATE, N0], 2, None, None)
    assert d.tags == ["distractor"]
    assert d.details["distractor"] == {"doc_id": "gates", "chunk_id": "gates#0", "rank": 1, "shared_terms": 4,
                                       "needle_shared_terms": 2, "weak": False}


def test_a_distractor_sharing_as_many_terms(dx):
    # "topology manager policy": GATE holds 3, the needle's best chunk (N0 or N1) 2
    d = dx.diagnose("topology manager policy options", None, ["needle"], [OTHER, GATE, N1], 3, None, None)
    assert "distractor" in types(d)
    assert d.details["distractor"]["doc_id"] == "gates" and d.details["distractor"]["weak"] is False


def test_no_rule_leaves_the_top_document_as_a_weak_distractor(dx):
    # restrict, polici, reject, pod all in N1; OTHER shares none of them
    d = dx.diagnose("restricted policy rejects pods", "pods rejected", ["needle"], [OTHER, N1], 2, 9, 8.55)
    assert d.tags == ["distractor"] and d.details["distractor"]["weak"] is True
    assert d.sentence == "Needle at rank 2, grade 9: other (rank 1) outranked the needle."


# ---- 9. needle_hit_low_grade

@pytest.mark.parametrize("rank,grade,fires", [(3, 4, True), (3, 5, False), (1, 6, True), (None, 1, False)])
def test_needle_hit_low_grade(dx, rank, grade, fires):
    retrieved = [OTHER, N2, N1] if rank else [OTHER, N2]
    d = dx.diagnose("restricted policy rejects pods", "pods rejected", ["needle"], retrieved, rank, grade,
                    grade * 0.6)
    assert ("needle_hit_low_grade" in types(d)) is fires


# ---- one primary, at most one secondary

def test_two_types_at_most_the_primary_first(dx):
    # needle_absent (v1.99, quux nowhere), then specificity (2 terms); the low grade is a third: left out
    d = dx.diagnose("topology manager", "v1.99 quux", ["needle"], [N0], 1, 2, 2.0)
    assert d.tags == ["needle_absent", "specificity_gap"]
    assert (d.primary, d.secondary) == ("needle_absent", "specificity_gap")
    data = json.loads(json.dumps(d.to_json(), allow_nan=False))
    assert (data["tags"], data["primary"], data["secondary"]) == (d.tags, "needle_absent", "specificity_gap")
    assert data["fixes"] == {t: FIXES[t] for t in d.tags}


def test_every_miss_of_the_hand_corpus_carries_one_or_two_types(dx):
    questions = ["topology manager quux", "memory reserves feature topology", "restricted policy rejects pods",
                 f"{COMMON}", "zzz", "topology manager feature gate"]
    for question in questions:
        for retrieved, rank in (([OTHER, N0], 2), ([OTHER, GATE], None), ([GATE, COPY, N1], 3)):
            d = dx.diagnose(question, "v1.27 stable", ["needle"], retrieved, rank, 5, 3.0)
            assert 1 <= len(d.tags) <= 2 and len(set(d.tags)) == len(d.tags), (question, rank, d.tags)


# ---- counts of primary types

def test_count_tags_counts_primaries():
    rows = [{"diagnosis": {"tags": ["distractor", "vocabulary_mismatch"], "primary": "distractor"}},
            {"diagnosis": None}, {},
            {"diagnosis": Diagnosis(["vocabulary_mismatch", "zz_new"], "s")},
            {"diagnosis": {"tags": ["wrong_chunk", "needle_hit_low_grade"]}},  # a file written before "primary"
            {"diagnosis": {"tags": []}}]
    counts = count_tags(rows)
    assert list(counts) == [*TAGS, "wrong_chunk"]
    assert (counts["distractor"], counts["vocabulary_mismatch"], counts["wrong_chunk"]) == (1, 1, 1)
    assert counts["needle_hit_low_grade"] == 0 and sum(counts.values()) == 3  # one per diagnosed question
    assert count_tags([]) == dict.fromkeys(TAGS, 0)
    assert count_carrying(rows) == {"vocabulary_mismatch": 2, "distractor": 1, "needle_hit_low_grade": 1,
                                    "wrong_chunk": 1, "zz_new": 1}
    assert primary_of({"tags": ["a", "b"]}) == "a" and primary_of(None) is None


def test_shares_the_judges_idf():
    judge = LexicalJudge(CORPUS)
    dx = Diagnoser(CORPUS, stats=judge.stats)
    assert dx.stats is judge.stats and dx.stats.idf("v1.27") == pytest.approx(idf(2))


# ---- Kubernetes: q_006 (answer v1.27 in the page's first chunk, another chunk retrieved)

@pytest.fixture(scope="module")
def k8s() -> tuple[Diagnoser, dict[str, Chunk]]:
    from components.core.chunking import chunk_corpus
    from components.readers import load_corpus

    chunks = chunk_corpus(load_corpus(K8S / "docs").documents)
    return Diagnoser(chunks), {c.chunk_id: c for c in chunks}


NEEDLE = "tasks_administer-cluster_topology-manager"
GATES = "reference_command-line-tools-reference_feature-gates_topology-manager-policy-beta-options"


@needs_k8s
def test_k8s_q006(k8s):
    dx, by_id = k8s
    question = "Which k8s version made topology manager GA/stable?"
    best = dx.needle_best_chunk("v1.27", [NEEDLE])
    assert best.chunk_id == f"{NEEDLE}#0" and best.overlap == 1.0
    retrieved = [by_id[f"{GATES}#0"], by_id[f"{NEEDLE}#1"], by_id[f"{NEEDLE}#6"]]
    d = dx.diagnose(question, "v1.27", [NEEDLE], retrieved, 2, 1, 0.95)
    assert 1 <= len(d.tags) <= 2 and "needle_absent" not in d.tags
    # an answer newer than the docs is absent from the needle
    d = dx.diagnose(question, "v1.99", [NEEDLE], [by_id[f"{NEEDLE}#0"], *retrieved], 1, 1, 1.0)
    assert d.primary == "needle_absent"


# ---- fixes

def test_every_type_names_a_short_specific_fix():
    assert list(FIXES)[: len(TAGS)] == list(TAGS)
    assert len({FIXES[t] for t in TAGS}) == len(TAGS) and all(0 < len(f) <= 100 for f in FIXES.values())
    assert FIXES["distractor"].startswith("add a disambiguating heading or metadata filter")
    assert FIXES["chunking_split"].startswith("larger chunks or overlap")


def test_the_console_tally_and_the_report_count_primaries_and_name_each_fix():
    from components.analysis.aggregate import build_report
    from components.report.page import render_report
    from tests.test_aggregate import ROWS
    from utils.console import summary_table
    from utils.results import RunInfo

    diagnosed = [replace(ROWS[0], diagnosis=Diagnosis(["distractor"], "s").to_json()),
                 replace(ROWS[1], diagnosis=Diagnosis(["distractor", "chunking_split"], "t").to_json()), *ROWS[2:]]
    result = build_report(RunInfo(k=5), diagnosed)
    assert result.diagnosis_counts["distractor"] == 2 and result.diagnosis_counts["chunking_split"] == 0
    text = summary_table(result, proxy=False)
    assert re.search(r"^diagnosis +distractor 2 \(primary types\)\n +distractor → add a disambiguating heading or "
                     r"metadata filter", text, re.MULTILINE)
    html = render_report([result], ["run"])
    assert f"<tr><th>distractor</th><td class=num>2</td><td>{FIXES['distractor']}</td></tr>" in html
    assert '<button type=button data-tag="chunking_split">chunking_split (1)</button>' in html  # filter: any type
    assert f"<p class=diag><b>Fix</b> distractor: {FIXES['distractor']}; chunking_split: " in html


def test_chunking_split_when_the_needles_chunk_holding_the_answer_was_not_retrieved(dx):
    # the needle's N1 was retrieved (rank 2), its N0 holds the whole answer "v1.27 stable", N1 none of it
    d = dx.diagnose("restricted policy rejects pods hints", "v1.27 stable", ["needle"], [GATE, N1], 2, 1, 0.95)
    assert d.tags == ["chunking_split", "needle_hit_low_grade"]
    assert d.details["split"] == {"chunk_id": "needle#0", "next_chunk_id": None, "single_share": 0.0,
                                  "pair_share": 1.0}
    assert "the answer is in needle#0 (100% of its terms), which was not retrieved" in d.sentence
    # N0 retrieved: no such split
    held = dx.diagnose("restricted policy rejects pods hints", "v1.27 stable", ["needle"], [GATE, N0], 2, 9, 8.55)
    assert "chunking_split" not in types(held)
