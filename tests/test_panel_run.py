"""A panel of three loopback judges (the real openai SDK against scripted servers on 127.0.0.1) that
disagree: one lenient, one strict, one that flips the order of two retrievers. Three runs of one
panel file (``--judges panel.toml``), then ``compare`` and its verdict certificate, the gate's
``--require-agreement``, and ``report``, ``label`` and ``calibrate`` reading the panel runs.

The retrievers (a plug-in written here) put the question's needle document first (``good``), second
(``second``) or nowhere (``bad``). Each judge grades from whether the needle's chunk is in the prompt:
lenient 9 / 5, strict 7 / 2, flip 3 / 8. So under the panel (the median: 7 / 5) and the lenient and
strict judges ``bad`` is worse than ``good``, and under flip it is better; ``second`` has the same
grades as ``good`` under every judge (the grade holds), and a lower total score under every judge
(0.95 × the grade: the total's verdict holds too).
"""

from __future__ import annotations

import json

import pytest

from components.stats.agreement import kendall_tau
from tests.conftest import ROOT, clean_env, run_cli
from tests.loopback_openai import OpenAILoopback, Reply

QUESTIONS = json.loads((ROOT / "questions.json").read_text())["questions"][:12]
NEEDLES = {q["question"]: q["needle_doc_id"] for q in QUESTIONS}
GRADES = {"lenient": (9, 5), "strict": (7, 2), "flip": (3, 8)}  # judge: (needle shown, needle not shown)
KEYS = {name: f"sk-panel-{name}-SENTINEL-0123456789" for name in GRADES}
RETRIEVERS = '''
import json
from components.core import ScoredChunk
NEEDLES = {q["question"]: q["needle_doc_id"] for q in json.load(open(QUESTIONS))["questions"]}
class Placed:
    def __init__(self, at): self.at = at
    def index(self, chunks): self.chunks = list(chunks)
    def retrieve(self, query, k):
        needle = NEEDLES[query]
        out = [c for c in self.chunks if c.doc_id != needle][:k]
        if self.at is not None:
            out.insert(self.at - 1, next(c for c in self.chunks if c.doc_id == needle))
        return [ScoredChunk(c, 1.0) for c in out[:k]]
def good(): return Placed(1)
def second(): return Placed(2)
def bad(): return Placed(None)
'''


def shown(prompt: str) -> bool:
    question = prompt.split("USER QUESTION: ", 1)[1].split("\n", 1)[0]
    return f"doc_id={NEEDLES[question]} " in prompt


def judge(name: str):
    def answer(n: int, body: dict) -> Reply:
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        grade = GRADES[name][0 if shown(prompt) else 1]
        return Reply(f'{{"grade": {grade}, "reasoning": "{name} says {grade}"}}')
    return answer


@pytest.fixture(scope="module")
def panel(tmp_path_factory):
    """Three runs (good, bad, second) graded by the panel; their results files and the servers."""
    folder = tmp_path_factory.mktemp("panel")
    questions = folder / "q.json"
    questions.write_text(json.dumps({"questions": QUESTIONS}))
    (folder / "panel_rets.py").write_text(f"QUESTIONS = {str(questions)!r}\n" + RETRIEVERS)
    servers = {name: OpenAILoopback(judge(name)).__enter__() for name in GRADES}
    try:
        (folder / "panel.toml").write_text("".join(
            f'[[judge]]\nname = "{name}"\nprovider = "openai"\nmodel = "gpt-4.1"\nbase_url = "{server.url}"\n'
            f'api_key_env = "{name.upper()}_KEY"\n\n' for name, server in servers.items()))
        env = clean_env(PYTHONPATH=str(folder), **{f"{n.upper()}_KEY": key for n, key in KEYS.items()})
        runs = {}
        for strategy in ("good", "bad", "second"):
            out = folder / f"{strategy}.json"
            run = run_cli("--strategy", f"panel_rets:{strategy}", "--questions", str(questions), "--judges",
                          str(folder / "panel.toml"), "--output", str(out), env=env, cwd=folder)
            assert run.code == 0, run.stderr
            runs[strategy] = (out, run)
        yield folder, runs, servers, env
    finally:
        for server in servers.values():
            server.__exit__(None, None, None)


def test_every_judge_grades_every_question_with_its_own_endpoint_and_key(panel):
    folder, runs, servers, _ = panel
    for name, server in servers.items():
        assert len(server.requests) == 3 * len(QUESTIONS)
        assert {r.headers["authorization"] for r in server.requests} == {f"Bearer {KEYS[name]}"}
    for out, run in runs.values():  # no key in the results, the journal-less history, the console, the log
        for text in (out.read_text(), run.stdout, run.stderr, run.log_text()):
            assert not any(key in text for key in KEYS.values())


def test_rows_keep_each_judges_grade_and_the_median_as_llm_grade(panel):
    _, runs, _, _ = panel
    rows = json.loads(runs["bad"][0].read_text())["results"]
    assert len(rows) == len(QUESTIONS)
    for row in rows:
        assert {n: g["grade"] for n, g in row["grades_by_judge"].items()} == {"lenient": 5, "strict": 2, "flip": 8}
        assert row["grades_by_judge"]["flip"]["reasoning"] == "flip says 8"
        assert row["panel_grade"] == 5.0 and row["llm_grade"] == 5 and row["panel_graded"] == 3
        assert row["total_score"] == 3.0  # 5 × 0.6: the needle was not retrieved


def test_the_results_give_each_judges_metrics_and_the_agreement(panel):
    _, runs, _, _ = panel
    doc = json.loads(runs["bad"][0].read_text())
    assert doc["run"]["judge"]["provider"] == "panel" and doc["run"]["judge"]["model"] == "lenient,strict,flip"
    assert [j["name"] for j in doc["run"]["judge"]["judges"]] == ["lenient", "strict", "flip"]
    per = doc["panel"]["per_judge"]
    assert {n: per[n]["metrics"]["avg_llm_grade"] for n in per} == {"lenient": 5.0, "strict": 2.0, "flip": 8.0}
    assert per["flip"]["ci95"]["avg_llm_grade"] == [8.0, 8.0] and per["strict"]["graded"] == 12
    assert doc["avg_llm_grade"] == 5.0
    pairs = {tuple(p["judges"]): p for p in doc["panel"]["agreement"]["pairs"]}
    # each judge gives one grade to every question (5 and 8): the disagreement is all chance's, κ = 0;
    # pass/fail at 7 on totals 3.0 / 4.8: both fail every question, so they agree on all of them
    assert pairs[("lenient", "flip")]["kappa_quadratic"] == 0.0
    assert pairs[("lenient", "flip")]["pass_agreement"]["7"] == 1.0
    assert doc["panel"]["graded_by"] == {"3": 12}


def test_the_summary_shows_the_panel(panel):
    _, runs, _, _ = panel
    out = runs["good"][1].stdout
    assert "panel            3 judges, llm_grade = their median" in out
    assert "flip" in out and "Krippendorff's α (ordinal)" in out


def test_the_certificate_says_where_the_verdict_depends_on_the_judge(panel):
    folder, runs, _, env = panel
    paths = [str(runs[s][0]) for s in ("good", "bad", "second")]
    result = run_cli("compare", *paths, "--json", str(folder / "cmp.json"), env=env, cwd=folder)
    assert result.code == 0, result.stderr
    out = result.stdout
    assert "panel_rets:bad vs panel_rets:good, avg grade: depends on the judge: the panel says worse (Δ -2.00, " \
           "95% CI [-2.00, -2.00]); flip says better (Δ +5.00, 95% CI [+5.00, +5.00])" in out
    assert "panel_rets:second vs panel_rets:good, avg grade: holds under every judge: no detectable difference" in out
    assert "panel_rets:second vs panel_rets:good, avg total: holds under every judge: worse" in out
    cert = json.loads((folder / "cmp.json").read_text())["certificate"]
    entry = next(e for e in cert["entries"] if e["other"] == "panel_rets:bad" and e["metric"] == "pass_rate_7")
    # pass at 7: good passes under lenient (9), strict (7) and the panel (7); bad never; flip fails both (3 and 4.8)
    assert entry["holds"] is False and entry["disagreeing"] == ["flip"]
    assert entry["judges"]["flip"]["verdict"] == "no detectable difference"
    # the runs ranked by their mean grade: panel good 7, bad 5, second 7; flip 3, 8, 3 — by hand, τ-b = -1
    ranking = next(r for r in cert["rankings"] if r["metric"] == "avg_llm_grade")
    assert ranking["panel"] == [7.0, 5.0, 7.0] and ranking["judges"]["flip"] == [3.0, 8.0, 3.0]
    assert ranking["tau"] == {"lenient": 1.0, "strict": 1.0, "flip": -1.0}
    assert ranking["top"] == []  # three runs: no top half apart
    assert kendall_tau([3.0, 8.0, 3.0], [7.0, 5.0, 7.0]) == -1.0


def test_require_agreement_fails_the_gate_only_where_the_verdict_depends_on_the_judge(panel):
    folder, runs, _, env = panel
    good, bad, second = (str(runs[s][0]) for s in ("good", "bad", "second"))
    depends = run_cli("compare", good, bad, "--fail-on", "worse:mrr,grade", "--require-agreement", env=env, cwd=folder)
    assert depends.code == 6
    assert "FAIL  agreement  avg_llm_grade (avg grade), panel_rets:bad vs panel_rets:good: the outcome (worse: the " \
           "panel says worse) depends on the judge: flip: better (Δ +5.00, 95% CI [+5.00, +5.00])" in depends.stdout
    holds = run_cli("compare", good, second, "--fail-on", "worse:grade", "--require-agreement", env=env, cwd=folder)
    assert holds.code == 0, holds.stdout
    assert "pass  agreement  avg_llm_grade (avg grade), panel_rets:second vs panel_rets:good: the outcome (not " \
           "worse: the panel says no detectable difference) holds under every judge (lenient, strict, flip)" \
        in holds.stdout
    without = run_cli("compare", good, second, "--fail-on", "worse:grade", env=env, cwd=folder)
    assert without.code == 0 and "agreement" not in without.stdout


def test_report_label_and_calibrate_read_a_panel_run(panel):
    folder, runs, _, env = panel
    good, bad = str(runs["good"][0]), str(runs["bad"][0])
    report = run_cli("report", good, bad, "-o", str(folder / "r.html"), env=env, cwd=folder)
    assert report.code == 0, report.stderr
    page = (folder / "r.html").read_text()
    assert "Judges of the panel" in page and 'data-plot="r0-panel-grades"' in page and "depends on the judge" in page
    labels = folder / "labels.jsonl"
    assert run_cli("label", bad, "--sample", "4", "-o", str(labels), env=env, cwd=folder).code == 0
    lines = [json.loads(line) for line in labels.read_text().splitlines()]
    for line in lines[1:]:
        line["human_grade"] = 6
    labels.write_text("".join(json.dumps(line) + "\n" for line in lines))
    calibrated = run_cli("calibrate", bad, "--labels", str(labels), "--json", str(folder / "cal.json"), env=env,
                         cwd=folder)
    assert calibrated.code == 0, calibrated.stderr
    doc = json.loads((folder / "cal.json").read_text())
    assert doc["judge"] == "panel/lenient,strict,flip"
    # judge - human on every labelled row: the panel 5 - 6, lenient 5 - 6, strict 2 - 6, flip 8 - 6
    assert doc["mean_difference"]["value"] == -1.0
    assert {n: j["mean_difference"]["value"] for n, j in doc["judges"].items()} == \
        {"lenient": -1.0, "strict": -4.0, "flip": 2.0}
    assert "Calibration of the judge lenient" in calibrated.stdout
    assert "Calibration of the judge flip" in calibrated.stdout
