"""``label`` and ``calibrate`` end to end: the labelling file, its sample, the figures, bad input."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import pytest

from components.analysis.aggregate import build_report
from components.calibration.calibrate import calibrate, format_report
from components.calibration.labels import allocate, read_labels, sample_rows
from tests.conftest import ROOT, run_cli
from utils.errors import InputError
from utils.results import QuestionResult, RetrievedItem, RunInfo, load_run

# (question id, judge grade or None, rank)
ROWS = [(f"q{i:02d}", g, r) for i, (g, r) in enumerate(
    [(1, 1), (2, None), (3, 2), (5, 1), (6, 3), (7, 2), (8, 1), (9, 1), (10, 1), (10, 4),
     (2, 1), (9, 2), (4, 5), (None, 1), (10, 1), (7, 1), (3, None), (9, 1), (8, 2), (10, 1)])]


def make_run(path: Path, text: bool = True) -> Path:
    rows = []
    for qid, grade, rank in ROWS:
        retrieved = [RetrievedItem(rank=j, doc_id="needle" if j == rank else f"other{j}", chunk_id=f"c{j}",
                                   text=f"chunk {j} of {qid}" if text else None) for j in range(1, 6)]
        rows.append(QuestionResult(question_id=qid, question=f"question {qid}?", expected_answer=f"answer {qid}",
                                   needle_doc_id="needle", needle_doc_ids=["needle"], rank=rank, llm_grade=grade,
                                   llm_reasoning="JUDGE-REASONING" if grade else None, retrieved=retrieved,
                                   total_score=None if grade is None else round(grade * {1: 1, 2: .95, 3: .95, 4: .85,
                                                                                        5: .85}.get(rank, .6), 4)))
    result = build_report(RunInfo(id="run-1", strategy="baseline", k=5), rows)
    result.save(path)
    return path


def test_allocate_is_proportional_with_largest_remainder():
    # quotas 4, 2.5, 3, 10.5 → 4, 2, 3, 10 and one more: the tie of .5 goes to the earlier band
    assert allocate([8, 5, 6, 21], 20) == [4, 3, 3, 10]
    assert allocate([8, 5, 6, 21], 100) == [8, 5, 6, 21]
    assert allocate([0, 3, 0, 1], 2) == [0, 2, 0, 0]


def test_label_writes_a_stratified_sample_without_the_judges_grade(tmp_path: Path):
    run = make_run(tmp_path / "run.json")
    out = tmp_path / "labels.jsonl"
    done = run_cli("label", str(run), "--sample", "9", "--seed", "3", "-o", str(out))
    assert done.code == 0, done.stderr
    lines = [json.loads(line) for line in out.read_text().splitlines()]
    header, rows = lines[0], lines[1:]
    assert header["kind"] == "header" and header["seed"] == 3 and header["sampled"] == 9
    # 19 graded rows: bands 1-3: 5, 4-6: 3, 7-8: 4, 9-10: 7 → 9 · share = 2.37, 1.42, 1.89, 3.32
    # → floors 2, 1, 1, 3 and the two largest remainders (.89, .42) one more each: 2, 2, 2, 3
    assert {b: s["graded"] for b, s in header["strata"].items()} == {"1-3": 5, "4-6": 3, "7-8": 4, "9-10": 7}
    assert {b: s["sampled"] for b, s in header["strata"].items()} == {"1-3": 2, "4-6": 2, "7-8": 2, "9-10": 3}
    grades = dict((qid, g) for qid, g, _ in ROWS)
    bands = Counter(next(b for b, (lo, hi) in {"1-3": (1, 3), "4-6": (4, 6), "7-8": (7, 8), "9-10": (9, 10)}.items()
                         if lo <= grades[r["question_id"]] <= hi) for r in rows)
    assert bands == {"1-3": 2, "4-6": 2, "7-8": 2, "9-10": 3}
    text = out.read_text()
    assert "llm_grade" not in text and "JUDGE-REASONING" not in text and "total_score" not in text
    for r in rows:
        assert r["human_grade"] is None and grades[r["question_id"]] is not None  # ungraded rows left out
        assert [c["rank"] for c in r["chunks"]] == [1, 2, 3, 4, 5] and r["chunks"][0]["text"].startswith("chunk 1")
        assert {"question", "expected_answer", "rank", "chunks"} <= set(r)
    order = [r["question_id"] for r in rows]
    assert order == sorted(order)  # run order
    again = tmp_path / "again.jsonl"
    assert run_cli("label", str(run), "--sample", "9", "--seed", "3", "-o", str(again)).code == 0
    assert [json.loads(x)["question_id"] for x in again.read_text().splitlines()[1:]] == order


def test_the_seed_changes_the_sample(tmp_path: Path):
    result = load_run(make_run(tmp_path / "run.json"))
    picks = {tuple(r.question_id for r in sample_rows(result.rows, 6, seed)[0]) for seed in range(8)}
    assert len(picks) > 1


def test_label_refuses_a_run_without_chunk_text(tmp_path: Path):
    run = make_run(tmp_path / "run.json", text=False)
    out = tmp_path / "labels.jsonl"
    done = run_cli("label", str(run), "-o", str(out))
    assert done.code == 2 and "--no-text" in done.stderr and not out.exists()
    assert len([line for line in done.stderr.splitlines() if "error:" in line]) == 1


def fill(path: Path, grades: dict[str, object]) -> None:
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    for d in lines[1:]:
        if d["question_id"] in grades:
            d["human_grade"] = grades[d["question_id"]]
    path.write_text("".join(json.dumps(d) + "\n" for d in lines))


HUMAN = {"q00": 2, "q03": 4, "q06": 6, "q07": 7, "q08": 9, "q12": 3, "q15": 8, "q18": 8}


def test_calibrate_reports_and_writes_json(tmp_path: Path):
    run = make_run(tmp_path / "run.json")
    labels = tmp_path / "labels.jsonl"
    assert run_cli("label", str(run), "--sample", "100", "-o", str(labels)).code == 0
    fill(labels, HUMAN)
    out = tmp_path / "cal.json"
    done = run_cli("calibrate", str(run), "--labels", str(labels), "--json", str(out))
    assert done.code == 0, done.stderr
    doc = json.loads(out.read_text())
    assert doc["labelled"] == 8 and doc["graded"] == 19 and doc["not_yet_labelled"] == 11
    # judge grades of the labelled rows: q00 1, q03 5, q06 8, q07 9, q08 10, q12 4, q15 7, q18 8
    # differences judge − human: −1, 1, 2, 2, 1, 1, −1, 0 → mean 5/8
    assert doc["mean_difference"]["value"] == pytest.approx(5 / 8)
    lo, hi = doc["mean_difference"]["ci95"]
    assert lo < 5 / 8 < hi and doc["mean_difference"]["seed"] == 20251113
    # pass at ≥ 7 with the rank weight (q07 rank 1, q15 rank 1, q18 rank 2: 8 × 0.95 = 7.6):
    # judge passes q06 q07 q08 q15 q18; human passes q07 q08 q15 q18
    pf = doc["pass_fail"]
    assert (pf["both_pass"], pf["judge_only_pass"], pf["human_only_pass"], pf["both_fail"]) == (4, 1, 0, 3)
    assert pf["sensitivity"] == 1.0 and pf["specificity"] == pytest.approx(0.75)
    judge_all = [g for _, g, _ in ROWS if g is not None]
    ppi = doc["estimates"]["mean_grade"]["ppi"]["value"]
    assert ppi == pytest.approx(sum(judge_all) / 19 - 5 / 8)
    assert doc["estimates"]["mean_grade"]["judge_only"]["value"] == pytest.approx(sum(judge_all) / 19)
    # total score = grade × rank weight (1 at rank 1, 0.95 at 2-3, 0.85 at 4-5, 0.6 not retrieved), by hand:
    # judge totals of the 19 graded rows: 1, 1.2, 2.85, 5, 5.7, 6.65, 8, 9, 10, 8.5, 2, 8.55, 3.4, 10, 7,
    # 1.8, 9, 7.6, 10 → sum 117.25; labelled human − judge totals: q00 2−1, q03 4−5, q06 6−8, q07 7−9,
    # q08 9−10, q12 2.55−3.4, q15 8−7, q18 7.6−7.6 → sum −4.85
    total = doc["estimates"]["mean_total_score"]
    assert total["judge_only"]["value"] == pytest.approx(117.25 / 19)
    assert total["ppi"]["value"] == pytest.approx(117.25 / 19 - 4.85 / 8)
    assert total["human_labelled"]["value"] == pytest.approx((2 + 4 + 6 + 7 + 9 + 2.55 + 8 + 7.6) / 8)
    # pass rate: the judge passes 10 of 19 (q06 q07 q08 q09 q11 q14 q15 q17 q18 q19); on the labelled
    # rows only q06 differs (judge pass, human fail): correction −100 / 8 points
    rate = doc["estimates"]["pass_rate"]
    assert rate["judge_only"]["value"] == pytest.approx(100 * 10 / 19)
    assert rate["ppi"]["value"] == pytest.approx(100 * 10 / 19 - 100 / 8)
    assert rate["human_labelled"]["value"] == pytest.approx(100 * 4 / 8)
    assert "kappa" in done.stdout and "PPI" in done.stdout and "sensitivity 100.0%" in done.stdout
    direct = calibrate(load_run(run), read_labels(labels), str(run))
    assert direct["kappa_quadratic"] == pytest.approx(doc["kappa_quadratic"])


@pytest.mark.parametrize("grade, words", [(11, "outside 1-10"), (0, "outside 1-10"), (7.5, "not a whole number"),
                                          ("7", "not a whole number"), (True, "not a whole number")])
def test_calibrate_refuses_bad_grades(tmp_path: Path, grade, words):
    run = make_run(tmp_path / "run.json")
    labels = tmp_path / "labels.jsonl"
    assert run_cli("label", str(run), "--sample", "5", "-o", str(labels)).code == 0
    first = json.loads(labels.read_text().splitlines()[1])["question_id"]
    fill(labels, {first: grade})
    out = tmp_path / "cal.json"
    done = run_cli("calibrate", str(run), "--labels", str(labels), "--json", str(out))
    errors = [line for line in done.stderr.splitlines() if "error:" in line]
    assert done.code == 2 and len(errors) == 1 and words in errors[0] and "line 2" in errors[0]
    assert not out.exists()


def test_calibrate_refuses_a_label_not_in_the_run(tmp_path: Path):
    run = make_run(tmp_path / "run.json")
    labels = tmp_path / "labels.jsonl"
    labels.write_text(json.dumps({"question_id": "q00", "human_grade": 3}) + "\n"
                      + json.dumps({"question_id": "elsewhere", "human_grade": 5}) + "\n")
    done = run_cli("calibrate", str(run), "--labels", str(labels), "--json", str(tmp_path / "c.json"))
    assert done.code == 2 and "'elsewhere' is not in" in done.stderr and not (tmp_path / "c.json").exists()
    ungraded = tmp_path / "ungraded.jsonl"
    ungraded.write_text(json.dumps({"question_id": "q13", "human_grade": 3}) + "\n")
    done = run_cli("calibrate", str(run), "--labels", str(ungraded))
    assert done.code == 2 and "has no judge grade" in done.stderr


def test_read_labels_names_the_line():
    with pytest.raises(InputError, match="no such labelling file"):
        read_labels(ROOT / "no-such-labels.jsonl")


def test_read_labels_refuses_duplicates_and_bad_json(tmp_path: Path):
    path = tmp_path / "l.jsonl"
    path.write_text('{"question_id": "a", "human_grade": 3}\n{"question_id": "a", "human_grade": 4}\n')
    with pytest.raises(InputError, match="line 2: question 'a' is labelled again"):
        read_labels(path)
    path.write_text('{"question_id": "a", "human_grade": 3}\n{oops\n')
    with pytest.raises(InputError, match="line 2: not valid JSON"):
        read_labels(path)
    path.write_text('{"kind": "header"}\n{"question_id": "a", "human_grade": null}\n')
    assert read_labels(path).graded == []


def test_report_shows_the_labelling_sample(tmp_path: Path):
    run = make_run(tmp_path / "run.json")
    labels = tmp_path / "labels.jsonl"
    assert run_cli("label", str(run), "--sample", "4", "-o", str(labels)).code == 0
    fill(labels, {json.loads(labels.read_text().splitlines()[1])["question_id"]: 6})
    page = tmp_path / "r.html"
    done = run_cli("report", str(run), "--labels", str(labels), "-o", str(page))
    assert done.code == 0, done.stderr
    html = page.read_text()
    section = html[html.index("id=labels"):]
    assert "Labelling sample" in section and "human grade 6" in section and "not graded yet" in section
    assert section.count("class=label-row") == 4 and "JUDGE-REASONING" not in section
    assert "1 graded. Scale:" in section  # who graded is not assumed


def test_report_says_who_labelled_the_example_set(tmp_path: Path):
    page = tmp_path / "r.html"
    done = run_cli("report", str(ROOT / "examples" / "kubernetes_run.json"), "--labels",
                   str(ROOT / "examples" / "kubernetes_labels.jsonl"), "-o", str(page))
    assert done.code == 0, done.stderr
    html = page.read_text()
    section = html[html.index("id=labels"):]
    assert "40 graded (labelled by: Claude, an AI coding assistant" in section and "by a person" not in section


def test_the_shipped_example_set():
    """examples/: at least 40 labelled rows, every one of them a graded row of the shipped run."""
    labels = read_labels(ROOT / "examples" / "kubernetes_labels.jsonl")
    assert len(labels.graded) >= 40
    doc = calibrate(load_run(ROOT / "examples" / "kubernetes_run.json"), labels, "examples/kubernetes_run.json")
    assert doc["labelled"] == len(labels.graded) and doc["judge"].startswith("offline/")


def test_the_shipped_run_records_paths_relative_to_the_repository():
    """No scratch path of the machine it was made on: every recorded path is relative, and the
    files of the repository it names are where it says (the questions file is written by the
    recipe in examples/README.md; the corpus is the data set beside the repository)."""
    run = load_run(ROOT / "examples" / "kubernetes_run.json").run
    paths = {"questions_file": run.questions_file, "corpus": run.corpus.source, "log_file": run.log_file,
             "journal": run.journal, "runs_dir": run.runs_dir, "output": run.output}
    assert all(p and not Path(p).is_absolute() and "/tmp" not in p for p in paths.values()), paths
    assert (ROOT / run.output).resolve() == (ROOT / "examples" / "kubernetes_run.json").resolve()
    assert paths["questions_file"] == "examples/kubernetes_questions.json" and run.runs_dir == "examples/runs"
    recipe = (ROOT / "examples" / "README.md").read_text(encoding="utf-8")
    assert "open('examples/kubernetes_questions.json','w')" in recipe
    assert "--output examples/kubernetes_run.json" in recipe


@pytest.mark.parametrize("edit, words", [
    ({1: 7}, "already holds 1 human grade(s): write the new sample to another file"),
    # a grade mistyped while editing (11 is off the scale): the file is still people's work
    ({1: 7, 2: 11}, "exists and cannot be read as a labelling file"),
], ids=["graded", "a-grade-mistyped"])
def test_label_never_writes_over_human_grades(tmp_path: Path, edit: dict, words: str):
    """Drawing a sample again (to try another seed) must not wipe the grades people filled in."""
    run = make_run(tmp_path / "run.json")
    out = tmp_path / "labels.jsonl"
    assert run_cli("label", str(run), "--sample", "4", "-o", str(out)).code == 0
    assert run_cli("label", str(run), "--sample", "5", "-o", str(out)).code == 0  # nothing graded yet: replaced
    lines = out.read_text().splitlines()
    out.write_text("\n".join(json.dumps(dict(json.loads(line), human_grade=edit[i])) if i in edit else line
                             for i, line in enumerate(lines)) + "\n")
    before = out.read_text()
    again = run_cli("label", str(run), "--sample", "5", "--seed", "1", "-o", str(out))
    assert again.code == 2 and out.read_text() == before
    errors = [line for line in again.stderr.splitlines() if "| ERROR" in line]
    assert len(errors) == 1 and words in errors[0], again.stderr[-2000:]


def edge_run(path: Path, grade: int, rank: int | None) -> Path:
    """Five rows, every one graded ``grade`` by the judge with the needle at ``rank``."""
    rows = [QuestionResult(question_id=f"e{i}", question=f"question {i}?", needle_doc_id="needle",
                           needle_doc_ids=["needle"], rank=rank, llm_grade=grade) for i in range(5)]
    build_report(RunInfo(id="edge", strategy="baseline", k=5), rows).save(path)
    return path


def labelled(path: Path, grades: list[int]) -> Path:
    path.write_text("".join(json.dumps({"question_id": f"e{i}", "human_grade": g}) + "\n"
                            for i, g in enumerate(grades)))
    return path


def test_calibrate_clips_intervals_at_the_top_of_the_scale(tmp_path: Path):
    """Every judge grade 10 at rank 1 (every row passes), three rows labelled 10, 10, 6: the PPI and
    human intervals pass 10 and 100% and are clipped there, the footnote names each clipped bound."""
    run, labels = edge_run(tmp_path / "run.json", 10, 1), labelled(tmp_path / "l.jsonl", [10, 10, 6])
    out = tmp_path / "cal.json"
    done = run_cli("calibrate", str(run), "--labels", str(labels), "--json", str(out))
    assert done.code == 0, done.stderr
    est = json.loads(out.read_text())["estimates"]
    # judge only: all 10, sd 0 → [10, 10], nothing to clip
    assert est["mean_grade"]["judge_only"]["ci95"] == [10.0, 10.0] and est["mean_grade"]["judge_only"]["clipped"] == []
    # human − judge = 0, 0, −4: PPI 10 − 4/3; se √(var(0, 0, −4)/3) = √(16/3 / 3) = 4/3; ± 1.959964 · 4/3
    half = 1.959964 * 4 / 3
    for name in ("ppi", "human_labelled"):  # the human mean is 26/3 with the same se
        e = est["mean_grade"][name]
        assert e["value"] == pytest.approx(26 / 3) and e["clipped"] == ["high"]
        assert e["ci95"] == pytest.approx([26 / 3 - half, 10.0], abs=1e-5)
        assert e["ci95_unclipped"] == pytest.approx([26 / 3 - half, 26 / 3 + half], abs=1e-5)  # 11.28
        # pass rate: judge 100, 100, 100; human 100, 100, 0 (6 < 7): 200/3 ± 1.959964 · 100/3 → high 132.0
        rate = est["pass_rate"][name]
        assert rate["value"] == pytest.approx(200 / 3) and rate["clipped"] == ["high"]
        assert rate["ci95"] == pytest.approx([200 / 3 - 1.959964 * 100 / 3, 100.0], abs=1e-4)
    for figure in est.values():
        for e in figure.values():
            assert 0.0 <= e["ci95"][0] <= e["ci95"][1] <= 100.0
    assert all(0.6 <= b <= 10 for e in [*est["mean_grade"].values(), *est["mean_total_score"].values()]
               for b in e["ci95"])
    assert "8.67 [6.05, 10.00*]" in done.stdout and "66.7 [1.3, 100.0*]" in done.stdout
    note = next(line for line in done.stdout.splitlines() if "clipped to the scale" in line)
    assert "mean grade, PPI: high 11.28 -> 10.00" in note
    assert "pass rate, human, labelled rows: high 132.0 -> 100.0" in note
    assert "judge only" not in note


def test_calibrate_clips_intervals_at_the_bottom_of_the_scale(tmp_path: Path):
    """Every judge grade 1, needle never retrieved (total 0.6, nothing passes), labelled 1, 1, 5."""
    run, labels = edge_run(tmp_path / "run.json", 1, None), labelled(tmp_path / "l.jsonl", [1, 1, 5])
    doc = calibrate(load_run(run), read_labels(labels), str(run))
    grade, total, rate = (doc["estimates"][k]["ppi"] for k in ("mean_grade", "mean_total_score", "pass_rate"))
    half = 1.959964 * 4 / 3  # human − judge = 0, 0, 4: se 4/3
    assert grade["value"] == pytest.approx(7 / 3) and grade["clipped"] == ["low"]
    assert grade["ci95"] == pytest.approx([1.0, 7 / 3 + half], abs=1e-5)
    assert total["clipped"] == ["low"] and total["ci95"][0] == pytest.approx(0.6)  # 0.6 · (7/3 ± half): low < 0.6
    assert rate["ci95"] == [0.0, 0.0] and rate["clipped"] == []  # nobody passes: nothing to clip
    assert "clipped to the scale" not in format_report(calibrate(load_run(make_run(tmp_path / "r.json")),
                                                                 labelled_rows(tmp_path), "r.json"))


def labelled_rows(tmp_path: Path):
    path = tmp_path / "mid.jsonl"
    path.write_text("".join(json.dumps({"question_id": q, "human_grade": g}) + "\n" for q, g in HUMAN.items()))
    return read_labels(path)


def test_calibrate_gives_linear_kappa_and_the_grade_by_grade_table(tmp_path: Path):
    doc = calibrate(load_run(make_run(tmp_path / "run.json")), labelled_rows(tmp_path), "run.json")
    # (human, judge): q00 (2, 1), q03 (4, 5), q06 (6, 8), q07 (7, 9), q08 (9, 10), q12 (3, 4), q15 (8, 7), q18 (8, 8)
    table = doc["grade_table"]["counts"]
    assert table[1][0] == 1 and table[3][4] == 1 and table[7][6] == 1 and table[7][7] == 1
    assert sum(map(sum, table)) == 8 and [sum(r) for r in table] == [0, 1, 1, 1, 0, 1, 1, 2, 1, 0]
    # linear κ = 1 − Σ|h − j| / (n · E|h − j'|) with h, j' drawn independently from the two margins:
    # Σ|h − j| = 1+1+2+2+1+1+1+0 = 9; humans 2,3,4,6,7,8,8,9, judges 1,4,5,7,8,8,9,10:
    # Σ over the 64 pairs = 38+32+26+20+18+2·18+22 = 192
    assert doc["kappa_linear"] == pytest.approx(1 - 9 / (8 * 192 / 64))  # 0.625
    text = format_report(doc)
    assert "linear-weighted Cohen's kappa     0.625" in text
    row8 = next(line for line in text.splitlines() if line.startswith("              8"))
    assert row8.split() == ["8", ".", ".", ".", ".", ".", ".", "1", "1", ".", ".", "2"]
