"""pool: two recorded runs pooled at depth 5 with a scripted judge; the judgment store serves a second
pool (0 calls, byte-identical qrels) and a third run's new pairs only; the asymmetric review finds a
planted duplicate needle (false negative) and a needle without the answer (gold error); a judge that
says 3 to everything raises no gold error and is named; bad input is one line and exit 2."""

from __future__ import annotations

import json
import re
import sqlite3
import threading
from pathlib import Path

import pytest

from components.judges.providers.scripted import fail, play, reply
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from components.pool import store as store_module
from components.pool.store import JudgeKey, JudgmentStore, judgment_key, pair_key
from components.readers import load_questions
from tests.conftest import clean_env, run_cli
from utils.pricing import Price
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
                          retrieved=[RetrievedItem(r, d, f"{d}#0", text=text_of(d)) for r, d in enumerate(docs, 1)],
                          extra={"category": f"c{i % 2}", "required_concepts": [f"limit{i}"]})


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
    return re.findall(r"\[CHUNK \d+/\d+ doc_id=(\S+) chunk_id=(\S+)\]\n(.*?)\n\[END CHUNK", prompt, re.DOTALL)


def reading_judge(prompt: str) -> str:
    """3 for a chunk that holds the expected answer, else 0."""
    expected = re.search(r"^EXPECTED ANSWER \(ground truth\): (.*)$", prompt, re.MULTILINE).group(1)
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


def test_accepted_false_negatives_are_written_as_extra_needles_beside_the_input(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    with play(reading_judge):
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", tmp_path / "s.sqlite",
                    "--accept-false-negatives")
    assert done.code == 0, done.stderr
    reviewed = load_questions(tmp_path / "out" / "questions.reviewed.json")
    needles = {q.id: list(q.needle_doc_ids) for q in reviewed.questions}
    assert needles == {"q0": ["doc0"], "q1": ["doc1", "dup1"], "q2": ["doc2"], "q3": ["doc3"]}
    # the questions' own fields are kept: their groups and concepts still work on the reviewed set
    assert {q.id: q.extra for q in reviewed.questions}["q1"] == {"category": "c1", "required_concepts": ["limit1"]}
    lines = [json.loads(x) for x in (tmp_path / "out" / "provenance.jsonl").read_text().splitlines()]
    assert len(lines) == 25
    first = next(x for x in lines if (x["question_id"], x["doc_id"]) == ("q1", "dup1"))
    assert first["label"] == 3 and first["chunk_id"] == "dup1#0"
    assert first["given_by"]["kind"] == "judge" and first["given_by"]["judge"] == "scripted/scripted-1"
    assert len(first["given_by"]["prompt_sha256"]) == 64
    assert first["votes"]["scripted/scripted-1"]["label"] == 3 and first["date"]
    chunk_qrels = (tmp_path / "out" / "qrels.chunks.tsv").read_text()
    assert "q1\t0\tdup1#0\t3\n" in chunk_qrels and "q3\t0\tdoc3#0\t0\n" in chunk_qrels


def test_a_panel_labels_with_its_lowest_vote(tmp_path: Path):
    """The scripted judge says 3 to everything; the offline judge reads the text: only the chunks both
    label >= 2 are relevant, so the duplicate is the one false-negative candidate."""
    a, b, _ = runs(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("doc0", "doc1", "doc2", "doc3", "dup1", *FILLER):
        (docs / f"{name}.md").write_text(f"# {name}\n\n{text_of(name).split(chr(10) * 2)[-1]}\n")
    with play(lambda prompt: json.dumps([3] * len(chunks_shown(prompt)))) as script:
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", tmp_path / "s.sqlite",
                    "--judges", "offline,scripted", "--corpus", docs)
    assert done.code == 0, done.stderr
    figures = read_pool(tmp_path / "out")
    assert [(c["question_id"], c["doc_id"]) for c in figures["false_negative_candidates"]] == [("q1", "dup1")]
    assert figures["false_negative_candidates"][0]["votes"] == {"offline": 3, "scripted": 3}
    assert figures["judge_calls"] == len(script.prompts) == N_QUESTIONS  # the offline judge calls no model
    qrels = (tmp_path / "out" / "qrels.tsv").read_text()
    assert "q0\tdoc0\t3" in qrels.replace("\t0\t", "\t") and "q0\t0\tfiller0\t0\n" in qrels
    offline = next(j for j in figures["judges"] if j["name"] == "offline")
    assert len(offline["corpus_fingerprint"]) == 64 and offline["calls"] == 0

    # the offline judge's key holds the corpus: another corpus, its judgments are not reused
    (docs / "filler0.md").write_text("# filler0\n\nOther words entirely.\n")
    with play(lambda prompt: json.dumps([3] * len(chunks_shown(prompt)))) as script:
        again = pool(a, b, "-o", tmp_path / "out2", "--depth", "5", "--store", tmp_path / "s.sqlite",
                     "--judges", "offline,scripted", "--corpus", docs)
    assert again.code == 0, again.stderr
    figures = read_pool(tmp_path / "out2")
    assert script.prompts == [] and figures["judged"] == figures["pairs"]  # the scripted votes came from the store
    assert "24 judgment(s) by offline written with another prompt or over another corpus are not reused" in again.stderr


def test_a_trec_run_needs_the_corpus_and_is_judged_by_document(tmp_path: Path):
    a, _, _ = runs(tmp_path)
    trec_run = tmp_path / "other.trec"
    trec_run.write_text("".join(f"q{i} Q0 filler7 1 2.0 other\nq{i} Q0 doc{i} 2 1.0 other\n" for i in range(4)))
    with play(reading_judge):
        refused = pool(a, trec_run, "-o", tmp_path / "out", "--store", tmp_path / "s.sqlite")
    assert refused.code == 2
    assert "other.trec is a TREC run, which names documents without their text: give the corpus" in refused.stderr
    docs = tmp_path / "docs"
    docs.mkdir()
    for name in ("doc0", "doc1", "doc2", "doc3", "filler7"):
        (docs / f"{name}.md").write_text(f"# {name}\n\n{text_of(name).split(chr(10) * 2)[-1]}\n")
    with play(reading_judge):
        done = pool(a, trec_run, "-o", tmp_path / "out", "--depth", "5", "--store", tmp_path / "s.sqlite",
                    "--corpus", docs)
    assert done.code == 0, done.stderr
    figures = read_pool(tmp_path / "out")
    assert figures["pairs"] == 4 * 5 + 4 * 2  # A's, and each question's two whole documents
    chunk_qrels = (tmp_path / "out" / "qrels.chunks.tsv").read_text()
    assert "q0\t0\tdoc0\t3\n" in chunk_qrels and "q0\t0\tfiller7\t0\n" in chunk_qrels


# --------------------------------------------------------------------------- the store

def test_the_store_survives_ctrl_c_and_serves_what_was_answered(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    store = tmp_path / "s.sqlite"
    with play(reading_judge, reading_judge, KeyboardInterrupt()) as script:
        stopped = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", store)
    assert stopped.code == 130, stopped.stderr
    figures = read_pool(tmp_path / "out")
    assert figures["status"] == "interrupted" and len(script.prompts) == 3
    assert figures["judged"] == 6 + 7  # q0's and q1's pairs, labelled before the interrupt
    with JudgmentStore(store) as held:
        assert held.count() == 6 + 6  # q1's duplicate is one judgment
    with play(reading_judge) as script:
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", store)
    assert done.code == 0 and len(script.prompts) == 2  # q2 and q3 only
    assert read_pool(tmp_path / "out")["from_store"] == 13


def test_max_cost_stops_the_calls_and_keeps_what_was_labelled(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    price = Price(input_per_mtok=1000.0, output_per_mtok=1000.0)  # $0.001 a token

    def priced(prompt: str):  # 100 tokens in, 10 out: $0.11 a call
        return reply(reading_judge(prompt), input_tokens=100, output_tokens=10)

    # the worst case of a call: its prompt (~430-490 tokens) and the 50-token cap, ~$0.48-0.54: with
    # $0.65, call 2 fits ($0.11 spent + its worst case), call 3 does not ($0.22 + ~$0.48)
    with play(priced, output_cap=50, price=price) as script:
        estimate = pool(a, b, "-o", tmp_path / "out", "--store", tmp_path / "s.sqlite", "--depth", "5",
                        "--estimate")
        assert estimate.code == 0 and script.prompts == []
        assert "Pool estimate: 25 pair(s)" in estimate.stdout and "0 judgment(s) from the store, 4 call(s)" in \
            estimate.stdout
        assert not (tmp_path / "out").exists() and not (tmp_path / "s.sqlite").exists()
        spent = pool(a, b, "-o", tmp_path / "out", "--store", tmp_path / "s.sqlite", "--depth", "5",
                     "--max-cost", "0.65")
    assert spent.code == 4, spent.stderr
    figures = read_pool(tmp_path / "out")
    assert figures["status"] == "budget_exhausted" and "--max-cost $0.65 reached" in figures["stopped"]
    assert figures["judge_calls"] == len(script.prompts) == 2 and figures["cost_usd"] == 0.22
    assert figures["judged"] == 6 + 7 and (tmp_path / "out" / "qrels.tsv").read_text().count("\n") == 6 + 7


def test_concurrent_calls_and_two_processes_share_one_store(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    store = tmp_path / "s.sqlite"
    with play(reading_judge) as script:
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", store, "--concurrency", "4")
    assert done.code == 0 and len(script.prompts) == 4
    assert (tmp_path / "out" / "qrels.tsv").read_text().count("\t3\n") == 3 + 1  # doc0-2 and dup1
    judge = JudgeKey("p", "m", "", "h")
    stores = [JudgmentStore(store), JudgmentStore(store)]  # two connections: as two processes

    def write(n: int) -> None:
        for i in range(100):
            key = judgment_key(f"question {n}", None, f"chunk {i}", judge)
            stores[n].put(judge, [(key, pair_key(f"question {n}", None, f"chunk {i}", judge), i % 4)], "2026-01-01")

    threads = [threading.Thread(target=write, args=(n,)) for n in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(stores[0].judgments_of(judge)) == 200
    for s in stores:
        s.close()
    assert sqlite3.connect(store).execute("PRAGMA journal_mode").fetchone()[0] == "wal"


def test_two_processes_write_one_store_at_once(tmp_path: Path):
    import subprocess
    import sys

    store = tmp_path / "s.sqlite"
    JudgmentStore(store).close()
    code = ("import sys\nfrom components.pool.store import JudgeKey, JudgmentStore, judgment_key, pair_key\n"
            "judge = JudgeKey('p', 'm', '', 'h')\nn = sys.argv[2]\n"
            "with JudgmentStore(sys.argv[1]) as s:\n"
            "    for i in range(150):\n"
            "        key = judgment_key(n, None, str(i), judge)\n"
            "        s.put(judge, [(key, pair_key(n, None, str(i), judge), 1)], 'd')\n")
    root = Path(__file__).resolve().parents[1]
    procs = [subprocess.Popen([sys.executable, "-c", code, str(store), f"q{n}"], cwd=root,
                              env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"}) for n in (0, 1)]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with JudgmentStore(store) as held:
        assert held.count() == 300


def test_a_store_of_another_prompt_is_not_reused_and_says_how_many(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    store = tmp_path / "s.sqlite"
    with play(reading_judge):
        assert pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", store).code == 0
    db = sqlite3.connect(store)
    db.execute("UPDATE judgments SET prompt_sha256 = 'an older prompt', key = 'old-' || key")
    db.commit()
    db.close()
    with play(reading_judge) as script:
        again = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", store)
    assert again.code == 0 and len(script.prompts) == 4
    assert "24 judgment(s) by scripted/scripted-1 written with another prompt are not reused" in again.stderr
    assert read_pool(tmp_path / "out")["judges"][0]["skipped_other_prompt"] == 24


@pytest.mark.parametrize("kind", ["not a store", "corrupt", "locked"])
def test_a_store_that_cannot_serve_is_refused_with_exit_2(tmp_path: Path, kind: str, monkeypatch):
    a, b, _ = runs(tmp_path)
    store = tmp_path / "s.sqlite"
    holder = None
    if kind == "not a store":
        db = sqlite3.connect(store)
        db.execute("CREATE TABLE notes (text TEXT)")
        db.commit()
        db.close()
    elif kind == "corrupt":
        store.write_bytes(b"SQLite format 3\x00" + b"\x07" * 4000)
    else:
        with play(reading_judge):
            assert pool(a, b, "-o", tmp_path / "warm", "--depth", "5", "--store", store).code == 0
        monkeypatch.setattr(store_module, "BUSY_TIMEOUT_MS", 200)
        holder = sqlite3.connect(store)
        holder.execute("BEGIN IMMEDIATE")
    before = store.read_bytes()
    with play(reading_judge) as script:
        refused = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", store)
    if holder is not None:
        holder.rollback()
        holder.close()
    assert refused.code == 2 and script.prompts == []
    expected = {"not a store": "is not a judgment store", "corrupt": "cannot be read as a judgment store",
                "locked": "is locked by another process"}[kind]
    errors = [line for line in refused.stderr.splitlines() if "error:" in line]
    assert len(errors) == 1 and expected in errors[0], refused.stderr
    assert store.read_bytes() == before and not (tmp_path / "out").exists()


# --------------------------------------------------------------------------- bad input

def test_runs_over_different_questions_are_refused_naming_the_first_difference(tmp_path: Path):
    a, _, _ = runs(tmp_path)
    short = run_file(tmp_path / "short.json", {i: ["doc0"] for i in range(N_QUESTIONS)}, "S")
    data = json.loads(short.read_text())
    data["results"] = [r for r in data["results"] if r["question_id"] != "q2"]
    short.write_text(json.dumps(data))
    with play(reading_judge):
        refused = pool(a, short, "-o", tmp_path / "out", "--store", tmp_path / "s.sqlite")
    assert refused.code == 2
    assert "the runs are over different question sets: " in refused.stderr
    assert "short.json has no question 'q2', which " in refused.stderr
    assert not (tmp_path / "s.sqlite").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("depth", ["0", "-3"])
def test_a_depth_below_1_is_refused(tmp_path: Path, depth: str):
    a, b, _ = runs(tmp_path)
    with play(reading_judge):
        refused = pool(a, b, "-o", tmp_path / "out", "--depth", depth, "--store", tmp_path / "s.sqlite")
    assert refused.code == 2 and f"--depth {depth} is not a whole number of at least 1" in refused.stderr


def test_a_failed_call_leaves_its_pairs_unlabelled_with_the_reason(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    with play(reading_judge, "no list here", fail("overloaded"), reading_judge) as script:
        done = pool(a, b, "-o", tmp_path / "out", "--depth", "5", "--store", tmp_path / "s.sqlite")
    assert done.code == 8 and len(script.prompts) == 4  # incomplete, as a run with missing grades
    assert "Incomplete: 13 pair(s) have no label" in done.stderr
    figures = read_pool(tmp_path / "out")
    assert figures["unlabelled"] == 7 + 6 and figures["judged"] == 12 and figures["status"] == "incomplete"
    assert figures["judged"] + figures["from_store"] + figures["unlabelled"] == figures["pairs"]
    reasons = {f["question_id"]: (f["error"], f["raw_reply"]) for f in figures["failures"]}
    assert reasons["q1"] == ("unparseable: no JSON list in reply", "no list here")
    assert reasons["q2"][0].startswith("overloaded:") and reasons["q2"][1] is None


# --------------------------------------------------------------------------- grades are not cached

def test_a_graded_run_never_opens_the_store(tmp_path: Path, monkeypatch):
    """The same graded run twice, a warm store in the state folder: the same judge calls both times."""
    env = clean_env(BENCHMARK_JUDGE="scripted", XDG_STATE_HOME=str(tmp_path / "state"))
    questions = Path(__file__).resolve().parents[1] / "examples" / "recorded_retrievals.json"

    def judge(prompt: str) -> str:
        if "RELEVANCE SCALE" in prompt:
            return json.dumps([3] * len(chunks_shown(prompt)))
        return json.dumps({"grade": 7, "reasoning": "scripted"})

    def graded_run(name: str) -> int:
        with play(judge) as script:
            done = run_cli("--strategy", "recorded", "--questions", str(questions), "--output",
                           str(tmp_path / name), env=env)
        assert done.code == 0, done.stderr
        return len(script.prompts)

    first = graded_run("r1.json")
    assert first == 4  # one grade per question
    with play(judge):
        assert pool(tmp_path / "r1.json", "-o", tmp_path / "pooled", env=env).code == 0
    store = tmp_path / "state" / "retrieval-benchmark" / "judgments.sqlite"
    with JudgmentStore(store) as warm:
        assert warm.count() > 0
    before = store.read_bytes()

    def refuse(*_args, **_kwargs):
        raise AssertionError("a run opened the judgment store")

    monkeypatch.setattr(store_module.JudgmentStore, "__init__", refuse)
    assert graded_run("r2.json") == first
    assert graded_run("r3.json") == first
    assert store.read_bytes() == before


def test_the_api_pools_as_the_command_does(tmp_path: Path):
    from components import api

    a, b, _ = runs(tmp_path)
    with play(reading_judge) as script:
        done = api.pool([a, b], tmp_path / "out", depth=5, judge="scripted", store=tmp_path / "s.sqlite")
    figures = done.summary
    assert done.folder == tmp_path / "out" and done.status == "completed"
    assert figures["pairs"] == 25 and figures["judge_calls"] == len(script.prompts) == 4
    assert [(c["question_id"], c["doc_id"]) for c in figures["gold_error_candidates"]] == [("q3", "doc3")]
    assert json.loads((tmp_path / "out" / "pool.json").read_text())["pairs"] == 25


def test_a_loopback_judge_is_called_once_per_pair_and_its_endpoint_is_part_of_the_key(tmp_path: Path):
    """The done-when with a real provider over HTTP: the openai judge against a loopback server."""
    from tests.loopback_openai import OpenAILoopback, Reply
    from tests.test_openai_provider import openai_env

    a, b, _ = runs(tmp_path)
    store = tmp_path / "s.sqlite"

    def answer(_n: int, body: dict) -> Reply:
        return Reply(reading_judge(body["messages"][-1]["content"]))

    with OpenAILoopback(answer) as server:
        env = openai_env(server.url, "llama-3.1-8b-instruct")
        first = pool(a, b, "-o", tmp_path / "p1", "--depth", "5", "--store", store, env=env)
        assert first.code == 0, first.stderr
        assert len(server.requests) == N_QUESTIONS
        second = pool(a, b, "-o", tmp_path / "p2", "--depth", "5", "--store", store, env=env)
        assert second.code == 0 and len(server.requests) == N_QUESTIONS  # not one more
    assert read_pool(tmp_path / "p2")["judge_calls"] == 0
    assert (tmp_path / "p2" / "qrels.tsv").read_bytes() == (tmp_path / "p1" / "qrels.tsv").read_bytes()
    judge = read_pool(tmp_path / "p1")["judges"][0]
    assert (judge["provider"], judge["model"], judge["base_url"]) == ("openai", "llama-3.1-8b-instruct", server.url)
    with OpenAILoopback(answer) as other:  # the same model at another endpoint is another judge
        third = pool(a, b, "-o", tmp_path / "p3", "--depth", "5", "--store", store,
                     env=openai_env(other.url, "llama-3.1-8b-instruct"))
        assert third.code == 0 and len(other.requests) == N_QUESTIONS
    assert (tmp_path / "p3" / "qrels.tsv").read_bytes() == (tmp_path / "p1" / "qrels.tsv").read_bytes()


def test_the_output_folder_may_not_hold_an_input_nor_be_in_the_corpus(tmp_path: Path):
    a, b, _ = runs(tmp_path)
    docs = tmp_path / "docs"
    docs.mkdir()
    (docs / "doc0.md").write_text("# doc0\n\ntext\n")
    taken = tmp_path / "out"
    taken.mkdir()
    run_as_input = taken / "pool.json"
    run_as_input.write_bytes(a.read_bytes())
    with play(reading_judge) as script:
        inside = pool(a, b, "-o", docs / "labels", "--corpus", docs, "--store", tmp_path / "s.sqlite")
        over = pool(run_as_input, b, "-o", taken, "--store", tmp_path / "s.sqlite")
    assert inside.code == 2 and "inside the corpus folder" in inside.stderr
    assert over.code == 2 and "pool.json is a run (" in over.stderr
    assert script.prompts == [] and run_as_input.read_bytes() == a.read_bytes()
