"""Diagnosis rules on a hand-made corpus: each rule fires, and does not, at its threshold."""

from __future__ import annotations

import json
import math
import re
from dataclasses import replace

import pytest

from components.analysis.diagnosis import (FIXES, SPECIFICITY_MAX_MEAN_IDF, TAGS, Diagnoser, Diagnosis,
                                           NeedleBestChunk, count_tags)
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
COMMON = "common"
# 40 filler chunks, each with its own word and COMMON: N = 45 chunks, IDF(common) = ln(46/41) + 1 = 1.115
FILLER = [chunk(f"f{i}", 0, f"word{i} {COMMON}") for i in range(40)]
CORPUS = [N0, N1, N2, GATE, OTHER, *FILLER]


@pytest.fixture(scope="module")
def dx() -> Diagnoser:
    return Diagnoser(CORPUS)


def tags(d: Diagnosis | None) -> list[str]:
    assert d is not None
    return d.tags


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


def test_needle_best_chunk_over_several_needles(dx):
    assert dx.needle_best_chunk("memory reserves", ["needle", "other"]).chunk_id == "other#0"


# ---- when a question is diagnosed

def test_rank_one_pass_is_not_diagnosed(dx):
    assert dx.diagnose("topology manager", "v1.27", ["needle"], [N0], 1, 7, 7.0) is None


@pytest.mark.parametrize("grade,total", [(None, None), (6, 6.9)])
def test_rank_one_without_pass_is_diagnosed(dx, grade, total):
    d = dx.diagnose("topology manager", "v1.27", ["needle"], [N0], 1, grade, total)
    assert d is not None and d.tags == []
    assert d.sentence.endswith("no rule fired.")


# ---- vocabulary_mismatch: share of question terms in the needle doc < 0.5

def test_vocabulary_mismatch_fires(dx):
    # terms: numa, align, placement, topolog -> only topolog in the needle doc: 1/4
    d = dx.diagnose("NUMA alignment placement topology", None, ["needle"], [OTHER, N0], 2, None, None)
    assert "vocabulary_mismatch" in tags(d)
    assert d.details["needle_share"] == 0.25
    assert "only 1 of 4 question terms occur in the needle document (missing: numa, align, placement)" in d.sentence


def test_vocabulary_mismatch_not_at_half(dx):
    # numa, topolog: 1/2 = 0.5 is not below the threshold
    d = dx.diagnose("NUMA topology", None, ["needle"], [OTHER, N0], 2, None, None)
    assert d.details["needle_share"] == 0.5 and "vocabulary_mismatch" not in d.tags


def test_vocabulary_mismatch_not_for_rank_one(dx):
    d = dx.diagnose("NUMA alignment placement topology", None, ["needle"], [N0], 1, None, None)
    assert "vocabulary_mismatch" not in tags(d) and d.details["needle_share"] is None


# ---- distractor: a chunk above the needle shares at least as many question terms as its best chunk

def test_distractor_names_the_document(dx):
    # "topology manager policy": GATE holds 3, the needle's best chunk (N0 or N1) 2
    d = dx.diagnose("topology manager policy", None, ["needle"], [OTHER, GATE, N1], 3, None, None)
    assert "distractor" in tags(d)
    assert d.details["distractor"] == {"doc_id": "gates", "chunk_id": "gates#0", "rank": 2,
                                       "shared_terms": 3, "needle_shared_terms": 2}
    assert "gates (rank 2) shares 3 question terms (the needle's best chunk: 2)" in d.sentence


def test_distractor_when_needle_missing(dx):
    d = dx.diagnose("topology manager policy", None, ["needle"], [GATE, OTHER], None, None, None)
    assert d.details["distractor"]["rank"] == 1


def test_no_distractor_with_fewer_shared_terms(dx):
    # "restricted policy rejects": N1 holds 3, GATE only polici (1)
    d = dx.diagnose("restricted policy rejects", None, ["needle"], [GATE, N1], 2, None, None)
    assert "distractor" not in tags(d) and d.details["distractor"] is None


def test_no_distractor_sharing_nothing(dx):
    # neither the needle nor OTHER holds "quux": 0 shared terms is no distractor
    d = dx.diagnose("quux", None, ["needle"], [OTHER], None, None, None)
    assert "distractor" not in tags(d)


# ---- specificity_gap: mean IDF of the question terms < 1 + ln 20

def test_specificity_gap_fires_on_common_terms(dx):
    d = dx.diagnose("common", None, ["needle"], [OTHER], None, None, None)
    assert "specificity_gap" in tags(d)
    assert d.details["mean_idf"] == 1.115
    assert f"mean IDF 1.12 < {SPECIFICITY_MAX_MEAN_IDF:.2f}" in d.sentence


def test_no_specificity_gap_on_rare_terms(dx):
    # v1.27 is in one chunk: IDF ln(46/2) + 1 = 4.135 >= 3.996
    d = dx.diagnose("v1.27", None, ["needle"], [OTHER], None, None, None)
    assert d.details["mean_idf"] == pytest.approx(math.log(46 / 2) + 1, abs=1e-3)
    assert "specificity_gap" not in d.tags


# ---- wrong_chunk: needle retrieved, its best chunk for the answer not, gain >= 0.2

def test_wrong_chunk_fires(dx):
    d = dx.diagnose("topology manager version", "v1.27", ["needle"], [GATE, N1], 2, 1, 0.95)
    assert "wrong_chunk" in tags(d)
    assert d.details["needle_best_chunk"] == {"chunk_id": "needle#0", "heading_path": [], "overlap": 1.0}
    assert "the answer's key terms are in needle#0 (no heading; overlap 100% against 0% retrieved)" in d.sentence


def test_no_wrong_chunk_when_best_chunk_retrieved(dx):
    d = dx.diagnose("topology manager version", "v1.27", ["needle"], [GATE, N0], 2, 1, 0.95)
    assert "wrong_chunk" not in tags(d)


def test_no_wrong_chunk_when_needle_missing(dx):
    d = dx.diagnose("topology manager version", "v1.27", ["needle"], [GATE, OTHER], None, 1, 0.6)
    assert "wrong_chunk" not in tags(d)


def test_no_wrong_chunk_below_gain(dx):
    # "restricted policy rejects hints quux": N1 holds restrict, polici, reject, hint (4/5), N2 2/5: gain 0.4
    fires = dx.diagnose("q", "restricted policy rejects hints quux", ["needle"], [N2], 1, 3, 3.0)
    assert "wrong_chunk" in tags(fires)
    # "restricted policy quux pods": N1 holds restrict, polici, pod (3/4); N2 restrict, polici (2/4): gain 0.25
    assert "wrong_chunk" in tags(dx.diagnose("q", "restricted policy quux pods", ["needle"], [N2], 1, 3, 3.0))
    # "restricted policy quux pods a1 a2 a3": N1 3/7, N2 2/7: gain 1/7 < 0.2
    below = dx.diagnose("q", "restricted policy quux pods a1 a2 a3", ["needle"], [N2], 1, 3, 3.0)
    assert "wrong_chunk" not in tags(below)


# ---- answer_not_in_corpus: share of the answer's key terms in the needle doc < 0.5

def test_answer_not_in_corpus_fires(dx):
    d = dx.diagnose("topology manager version", "v1.99 stable quux", ["needle"], [N0], 1, 3, 3.0)
    assert "answer_not_in_corpus" in tags(d)
    assert d.details["answer_share_in_needle"] == pytest.approx(0.333)
    assert "2 of 3 key terms of the expected answer occur nowhere in the needle document (v1.99, quux)" in d.sentence


def test_answer_in_needle_at_half(dx):
    d = dx.diagnose("topology manager version", "v1.27 quux", ["needle"], [N0], 1, 3, 3.0)
    assert d.details["answer_share_in_needle"] == 0.5 and "answer_not_in_corpus" not in d.tags


def test_answer_rule_needs_an_expected_answer(dx):
    d = dx.diagnose("quux zzz", None, ["needle"], [N0], 1, None, None)
    assert "answer_not_in_corpus" not in tags(d) and d.details["answer_share_in_needle"] is None


# ---- judge against needle

@pytest.mark.parametrize("rank,grade,expected", [
    (3, 4, ["needle_hit_low_grade"]), (3, 5, []), (1, 1, ["needle_hit_low_grade"]),
    (None, 7, ["needle_miss_high_grade"]), (None, 6, []), (None, None, []), (3, None, []),
])
def test_judge_needle_disagreement(dx, rank, grade, expected):
    retrieved = [OTHER, GATE, N0] if rank else [OTHER, GATE]
    d = dx.diagnose("v1.27", "v1.27", ["needle"], retrieved, rank, grade,
                    None if grade is None else grade * 0.6)
    found = [t for t in tags(d) if t.startswith("needle_")]
    assert found == expected


def test_needle_miss_high_grade_names_a_candidate(dx):
    d = dx.diagnose("v1.27", "v1.27", ["needle"], [OTHER, GATE], None, 9, 5.4)
    assert "candidate second needle: other" in d.sentence


# ---- the whole sentence, JSON, counts

def test_sentence_pinned(dx):
    d = dx.diagnose("topology manager version", "v1.27", ["needle"], [GATE, N1], 2, 1, 0.95)
    # IDF: topolog and manag df 3 -> ln(46/4) + 1 = 3.442; version df 0 -> ln(46) + 1 = 4.829; mean 3.904
    assert d.tags == ["distractor", "specificity_gap", "wrong_chunk", "needle_hit_low_grade"]
    assert d.details["mean_idf"] == 3.904
    assert d.sentence == (
        "Needle at rank 2, grade 1: gates (rank 1) shares 2 question terms (the needle's best chunk: 2); "
        "the question's terms are common in the corpus (mean IDF 3.90 < 4.00); "
        "the answer's key terms are in needle#0 (no heading; overlap 100% against 0% retrieved), which was "
        "not retrieved; the judge graded 1 although a needle chunk was in the top 2.")
    text = json.dumps(d.to_json(), allow_nan=False)
    assert json.loads(text)["tags"] == d.tags


def test_count_tags():
    rows = [{"diagnosis": {"tags": ["distractor", "wrong_chunk"]}}, {"diagnosis": None}, {},
            {"diagnosis": Diagnosis(["wrong_chunk", "zz_new"], "s")}, {"diagnosis": {"tags": []}}]
    counts = count_tags(rows)
    assert list(counts) == [*TAGS, "zz_new"]
    assert counts["distractor"] == 1 and counts["wrong_chunk"] == 2 and counts["zz_new"] == 1
    assert sum(counts.values()) == 4
    assert count_tags([]) == dict.fromkeys(TAGS, 0)


def test_shares_the_judges_idf():
    judge = LexicalJudge(CORPUS)
    dx = Diagnoser(CORPUS, stats=judge.stats)
    assert dx.stats is judge.stats and dx.stats.idf("v1.27") == pytest.approx(math.log(46 / 2) + 1)


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
    assert "v1.27" in by_id[best.chunk_id].text
    retrieved = [by_id[f"{GATES}#0"], by_id[f"{NEEDLE}#1"], by_id[f"{NEEDLE}#6"]]
    d = dx.diagnose(question, "v1.27", [NEEDLE], retrieved, 2, 1, 0.95)
    assert {"wrong_chunk", "needle_hit_low_grade"} <= set(d.tags)
    assert not {"answer_not_in_corpus", "vocabulary_mismatch", "needle_miss_high_grade"} & set(d.tags)
    assert f"{NEEDLE}#0" in d.sentence
    # an answer newer than the docs is not in the corpus; the right chunk retrieved is not a wrong chunk
    d = dx.diagnose(question, "v1.99", [NEEDLE], [by_id[f"{NEEDLE}#0"], *retrieved], 1, 1, 1.0)
    assert "answer_not_in_corpus" in d.tags and "wrong_chunk" not in d.tags


# ---- fixes

def test_every_tag_names_a_short_specific_fix():
    assert list(FIXES) == list(TAGS)
    assert len(set(FIXES.values())) == len(TAGS) and all(0 < len(f) <= 100 for f in FIXES.values())
    assert FIXES["distractor"].startswith("add a disambiguating heading or metadata filter")
    assert FIXES["wrong_chunk"].startswith("smaller chunks or overlap")


def test_a_diagnosis_carries_the_fixes_of_its_tags(dx):
    d = dx.diagnose("topology manager version", "v1.27", ["needle"], [GATE, N1], 2, 1, 0.95)
    fixes = json.loads(json.dumps(d.to_json()))["fixes"]
    assert fixes == {tag: FIXES[tag]
                     for tag in ["distractor", "specificity_gap", "wrong_chunk", "needle_hit_low_grade"]}
    assert Diagnosis([], "no rule fired").to_json()["fixes"] == {}


def test_the_console_tally_and_the_report_name_each_fix():
    from components.analysis.aggregate import build_report
    from components.report.page import render_report
    from tests.test_aggregate import ROWS
    from utils.console import summary_table
    from utils.results import RunInfo, RunResult

    diagnosed = [replace(ROWS[0], diagnosis=Diagnosis(["distractor"], "s").to_json()),
                 replace(ROWS[1], diagnosis=Diagnosis(["distractor", "wrong_chunk"], "t").to_json()), *ROWS[2:]]
    result = build_report(RunInfo(k=5), diagnosed)
    text = summary_table(result, proxy=False)
    assert re.search(r"^diagnosis +distractor 2, wrong_chunk 1\n +distractor → add a disambiguating heading or "
                     r"metadata filter.*\n +wrong_chunk → smaller chunks or overlap", text, re.M)
    html = render_report([result], ["run"])
    assert f"<tr><th>distractor</th><td class=num>2</td><td>{FIXES['distractor']}</td></tr>" in html
    assert f"<p class=diag><b>Fix</b> distractor: {FIXES['distractor']}; wrong_chunk: " in html
    older = result.to_json()  # a file written before the fixes were recorded: the rules' own
    for row in older["results"]:
        if row["diagnosis"]:
            del row["diagnosis"]["fixes"]
    assert f"<td>{FIXES['wrong_chunk']}</td>" in render_report([RunResult.from_json(older)], ["older"])
