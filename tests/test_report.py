"""The HTML report: content and escaping (no browser), the command, and the page in headless Chromium."""

from __future__ import annotations

import copy
import html
import json
import re
from pathlib import Path

import pytest

from components.analysis.compare import compare_runs
from components.report.page import _group_stats, _rows, paired_deltas, render_comparison, render_report
from tests.browser import Elements, dump_dom, find_chromium, screenshot
from tests.conftest import run_cli


def row(qid: str, rank: int | None, grade: int | None, difficulty: str, **more) -> dict:
    retrieved = [{"rank": 1, "doc_id": "other", "chunk_id": "other#0", "score": 0.9},
                 {"rank": 2, "doc_id": "needle", "chunk_id": "needle#1", "score": 0.8}]
    if rank == 1:
        retrieved = [{**retrieved[1], "rank": 1}, {**retrieved[0], "rank": 2}]
    elif rank is None:
        retrieved = retrieved[:1]
    total = None if grade is None else round(grade * {1: 1.0, 2: 0.95, None: 0.6}[rank], 4)
    base = {"question_id": qid, "question": f"question {qid}?", "expected_answer": "v1.27", "needle_doc_id": "needle",
            "needle_doc_ids": ["needle"], "needle_found": rank is not None, "rank": rank, "hit_at_1": rank == 1,
            "hit_at_5": rank is not None, "llm_grade": grade, "llm_reasoning": f"reasoning {qid}",
            "grade_error": None if grade else "no_expected_answer: none", "llm_raw_reply": None,
            "prompt_variant": "reference", "total_score": total, "latency_ms": 1.0, "grading_latency_ms": 0.5,
            "retrieved": retrieved, "difficulty": difficulty}
    base.update(more)
    return base


SCHEMA1 = {
    "schema_version": 1,
    "run": {"status": "completed", "strategy": "modular-no-llm", "k": 2, "judge": {"provider": "offline",
            "model": "lexical-idf-v1", "prompt_sha256": "f" * 64}, "corpus": {"source": "docs", "documents": 2,
            "chunks": 3, "sha256": "a" * 64}, "questions_sha256": "b" * 64},
    "hit_at_1_rate": 33.3, "hit_at_5_rate": 66.7, "mrr": 0.5, "avg_llm_grade": 6.0, "avg_total_score": 5.5,
    "pass_rate_8": 33.3, "pass_rate_7": 33.3, "pass_rate_6_5": 33.3, "question_count": 3, "graded_count": 2,
    "ungraded_count": 1, "grade_errors": {"no_expected_answer": 1},
    "results": [row("q1", 1, 9, "easy"), row("q2", 2, 3, "hard"), row("q3", None, None, "hard")],
}


def schema2() -> dict:
    report = copy.deepcopy(SCHEMA1)
    report["schema_version"] = 2
    report["run"].update(id="20261123T114500Z_modular-no-llm", cost_usd=None,
                         usage={"judge": {"calls": 3, "input_tokens": 900, "output_tokens": 120, "cost_usd": None}})
    report.update(ci95={"mrr": [0.5, 1.0], "hit_at_1_rate": None}, diagnosis_counts={"wrong_chunk": 1},
                  groups={"difficulty": {"easy": {"count": 1, "hit_at_1_rate": 100.0, "hit_at_5_rate": 100.0},
                                         "hard": {"count": 2, "hit_at_1_rate": 0.0, "hit_at_5_rate": 50.0}}})
    for r in report["results"]:
        r["diagnosis"] = None
        r["needle_best_chunk"] = {"chunk_id": "needle#0", "heading_path": ["Intro"], "overlap": 1.0}
        for item in r["retrieved"]:
            item.update(title="T", heading_path=["H"], text=f"T > H\n\ntext of {item['chunk_id']}")
    report["results"][1]["diagnosis"] = {"tags": ["wrong_chunk", "needle_hit_low_grade"],
                                         "sentence": "Needle at rank 2, grade 3: the answer is in needle#0.",
                                         "details": {}}
    report["results"][2]["diagnosis"] = {"tags": ["vocabulary_mismatch"], "sentence": "Needle not in the top 2.",
                                         "details": {}}
    return report


def baseline_run() -> dict:
    """schema2() with reference ranks of one reference system (a name that needs escaping)."""
    report = schema2()
    for r, ref in zip(report["results"], (1, 3, None), strict=True):
        r["reference_ranks"] = {"bm25<i>": ref}
    return report


def other_run() -> dict:
    """A second run (schema 1, k 2) of the same questions plus q4, that moved: q1 rank 1 → 2 (total
    9 → 8.55), q2 rank 2 → 1 and grade 3 → 8 (total 2.85 → 8), q3 unretrieved → rank 1, ungraded → 7."""
    report = copy.deepcopy(SCHEMA1)
    report["run"].update(strategy="hybrid", id="20261124T090000Z_hybrid")
    report["results"] = [row("q1", 2, 9, "easy"), row("q2", 1, 8, "hard"), row("q3", 1, 7, "hard"),
                         row("q4", 1, 10, "easy")]
    return report


LABELS = ["modular-no-llm", "hybrid"]  # compare's default labels: the strategies


def comparison() -> dict:
    """The real comparison of the two runs, as a report reads it (strict JSON)."""
    return json.loads(json.dumps(compare_runs([baseline_run(), other_run()]).to_json(), allow_nan=False))


def metric(comp: dict, key: str, index: int = 0) -> dict:
    return next(m for m in comp["comparisons"][index]["metrics"] if m["metric"] == key)


def count(page: str, tag: str, cls: str) -> int:
    return len(Elements(page).find(tag, cls))


# ---- content

def test_schema1_page():
    page = render_report([SCHEMA1], ["old"])
    assert count(page, "details", "q") == 3
    assert count(page, "figure", "plot") == 4  # rank, grade, quadrant, and difficulty derived from the rows
    assert "no chunk text in this results file" in page and "no diagnoses in this results file" in page
    assert "95% CI" in page and "[0." not in page  # no intervals in a schema-1 file
    assert "reasoning q2" in page and "no_expected_answer: none" in page
    assert "Comparison" not in page


def test_schema2_page():
    page = render_report([schema2()], ["new"])
    assert count(page, "figure", "plot") == 4
    assert "<td class=ci>[0.50, 1.00]</td>" in page  # MRR with its interval
    assert '<button type=button data-tag="wrong_chunk">wrong_chunk (1)</button>' in page
    assert '<button type=button data-tag="_diagnosed">diagnosed (2)</button>' in page
    assert "Needle at rank 2, grade 3: the answer is in needle#0." in page
    assert "text of needle#1" in page and "best chunk <code>needle#0</code> (Intro, overlap 100%)" in page
    assert "judge usage" in page and "<th>cost</th><td>unknown</td>" in page
    details = Elements(page).find("details", "q")
    assert [d["data-tags"] for d in details] == [" _clean", "wrong_chunk needle_hit_low_grade _diagnosed",
                                                 "vocabulary_mismatch _diagnosed"]


def test_graded_needles_show_their_grades():
    """Graded relevance (BEIR qrels): each needle named with its grade, best first, and the grade on
    the retrieved chunk's needle badge; an ungraded needle keeps the plain badge."""
    data = copy.deepcopy(SCHEMA1)
    first = data["results"][0]
    first.update(needle_doc_ids=["needle", "extra"], needle_grades={"extra": 1, "needle": 2})
    page = render_report([data], ["graded"])
    assert "<p><b>Needle</b> needle (grade 2), extra (grade 1)</p>" in page
    assert "<span class=badge>needle (grade 2)</span>" in page
    assert "<span class=badge>needle</span>" in page  # the other questions' needles carry no grade


def test_nothing_graded_shows_na():
    report = copy.deepcopy(SCHEMA1)
    report.update(graded_count=0, pass_rate_7=0.0, avg_llm_grade=None)
    page = render_report([report], ["x"])
    assert ">pass ≥ 7</th><td class=num>n/a (nothing graded)</td>" in page


def test_rank_derived_when_absent():
    report = copy.deepcopy(SCHEMA1)
    for r in report["results"]:
        del r["rank"]
    assert [r["rank"] for r in _rows(report)] == [1, 2, None]


def test_groups_derived_from_rows():
    stats = _group_stats(SCHEMA1, _rows(SCHEMA1))
    assert stats == {"difficulty": {"easy": {"count": 1, "hit_at_1_rate": 100.0, "hit_at_5_rate": 100.0, "mrr": 1.0},
                                    "hard": {"count": 2, "hit_at_1_rate": 0.0, "hit_at_5_rate": 50.0, "mrr": 0.25}}}
    assert _group_stats(schema2(), _rows(schema2()))["difficulty"]["hard"] == {
        "count": 2, "hit_at_1_rate": 0.0, "hit_at_5_rate": 50.0}  # the run's own groups win


def test_everything_is_escaped():
    report = copy.deepcopy(SCHEMA1)
    evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>\x1b[31m'
    report["results"][0].update(question=evil, question_id=evil, llm_reasoning=evil, difficulty="$x^2$ " + evil)
    report["results"][0]["retrieved"][0]["chunk_id"] = evil
    report["run"]["strategy"] = evil
    page = render_report([report], [evil])
    assert page.count("<script") == 2  # the page's own: the error hook and the filter script
    assert "<img" not in page and "alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img" in page
    assert "\x1b" not in page and "\\x1b[31m" in page


def test_comparison_is_escaped():
    base, other = baseline_run(), other_run()
    evil = '<script>alert(1)</script>"><img src=x onerror=alert(2)>'
    other["run"]["strategy"] = evil
    for run in (base, other):
        run["results"][0]["question"] = evil
    base["results"][0]["reference_ranks"] = {evil: 1}
    comp = json.loads(json.dumps(compare_runs([base, other]).to_json()))
    assert comp["comparisons"][0]["worse"][0]["question"] == evil and comp["runs"][2]["label"] == f"ref:{evil}"
    page = render_report([base, other], ["modular-no-llm", evil], comp)
    assert page.count("<script") == 2 and "<img" not in page
    section = render_comparison(comp, [base, other])
    assert "&lt;script&gt;alert(1)&lt;/script&gt;&quot;&gt;&lt;img" in section
    assert count(section, "figure", "plot") == 1  # the plot's title holds the label, escaped by the SVG writer


def test_self_contained():
    page = render_report([baseline_run(), other_run()], LABELS, comparison())
    refs = re.findall(r"""\b(?:src|href)\s*=\s*["']?([^"'\s>]*)""", page)
    assert all(ref.startswith("#") for ref in refs), refs  # only in-page references (SVG markers)
    assert all(ref.startswith("#") for ref in re.findall(r"url\(([^)]*)\)", page))  # SVG clip paths
    assert "@import" not in page
    assert "default-src 'none'" in page  # the browser may load nothing else


def test_paired_deltas_by_hand():
    deltas = paired_deltas(baseline_run(), other_run(), ["q1", "q2", "q3"])
    assert [q for q, _ in deltas["mrr"]] == ["q1", "q2", "q3"]
    assert [d for _, d in deltas["mrr"]] == pytest.approx([-0.5, 0.5, 1.0])
    assert [q for q, _ in deltas["avg_total_score"]] == ["q1", "q2"]  # q3 is ungraded in the baseline
    assert [d for _, d in deltas["avg_total_score"]] == pytest.approx([-0.45, 5.15])
    comp = comparison()
    for key, values in deltas.items():  # the plotted differences are those compare's statistics used
        assert metric(comp, key)["n"] == len(values)
        assert metric(comp, key)["delta"] == pytest.approx(sum(d for _, d in values) / len(values))
    assert paired_deltas(baseline_run(), other_run(), []) == {"mrr": [], "avg_total_score": []}


def test_render_comparison():
    comp = comparison()
    section = render_comparison(comp, [baseline_run(), other_run()])
    assert "<td><b>modular-no-llm</b></td><td>baseline</td><td>modular-no-llm</td>" in section
    assert "<td><b>hybrid</b></td><td>run</td><td>hybrid</td><td>20261124T090000Z_hybrid</td>" in section
    assert ("<tr class=ref><td><b>ref:bm25&lt;i&gt;</b></td><td><span class='badge ref'>reference system</span>"
            in section)
    assert "Compared on 3 questions" in section and "Left out (not in every run): 0 of modular-no-llm, 1 of hybrid." \
        in section
    assert "<li>warning: the runs have different question sets" in section
    # MRR by hand: baseline 1, 1/2, 0 → 0.5; other 1/2, 1, 1 → 0.833; wins q2, q3, loss q1
    mrr = metric(comp, "mrr")  # 3 questions: the exact sign-flip test, which no interval can bound
    assert mrr["ci95"] is None and mrr["ci_method"] == "test-inversion" and mrr["p"] == pytest.approx(0.75)
    assert ("<tr><th>MRR</th><td class=num>3</td><td class=num>0.500</td><td class=num>0.833</td>"
            "<td class=num>+0.333</td><td class=ci>unbounded</td><td class=num>0.750</td><td class=num>-</td>"
            "<td class=num>2/0/1</td><td class='verdict muted'>no detectable difference</td></tr>") in section
    assert "<th>avg total</th><td class=num>2</td>" in section and "<td class=num>+2.35</td>" in section
    means = "<th>MRR</th><td class=num>0.500</td><td class='num best'><b>0.833</b></td><td class=num>0.444</td></tr>"
    assert means in section  # the reference system's ranks 1, 3, none: MRR 0.444; the best value in bold
    assert (f"MRR: 3 questions detect a change of about {mrr['mde']:.3f}; you would need about "
            f"{mrr['questions_needed']} questions to detect a 0.05 MRR change.") in section
    assert len(Elements(section).find("details", "changes")) == 2
    worse, better = section.split("Better in hybrid")
    worse = worse[worse.index("Worse in hybrid"):]
    assert ("<td><span class=qid>q1</span> <span title=\"question q1?\">question q1?</span></td>"
            "<td class=num>1 → 2</td><td class=num>1 → 2</td><td class=num>9 → 9</td>"
            "<td class=num>9.00 → 8.55</td>"
            "<td class='num bad'>-0.45</td><td class='num bad'>-0.500</td>") in worse and ">q2</span>" not in worse
    assert ">q1</span>" not in better and better.index(">q2</span>") < better.index(">q3</span>")  # largest first
    assert "<td class=num>2 → 1</td><td class=num>2 → 1</td><td class=num>3 → 8</td>" in better  # q2
    assert "<td class=num>- → 1</td><td class=num>- → 1</td><td class=num>- → 7</td>" in better  # q3
    assert "<td class='num good'>+5.15</td><td class='num good'>+0.500</td>" in better
    # the reference system: its own block, rank-only, no question lists
    ref = section[section.index("<div class='pair ref'>"):]
    assert "ref:bm25&lt;i&gt; <span class='badge ref'>reference system</span> against modular-no-llm" in ref
    assert "Not comparable (no question has it in both): avg grade, avg total, pass ≥ 7" in ref
    assert "Worse in" not in ref
    plots = Elements(section).find("figure", "plot")
    assert [p["data-plot"] for p in plots] == ["paired-delta-0"]
    assert "MRR: 3 questions, mean Δ +0.333; total score: 2 questions, mean Δ +2.350</figcaption>" in section


def test_render_comparison_without_runs_has_no_plot():
    section = render_comparison(comparison())
    assert "<h3>hybrid against modular-no-llm</h3>" in section and "<figure" not in section


def test_render_comparison_with_little():
    section = render_comparison({"runs": [], "comparisons": []})
    assert "<h2>Comparison</h2>" in section and "<figure" not in section and "<table" not in section


# ---- the command

def test_report_command(tmp_path: Path):
    src, out = tmp_path / "run.json", tmp_path / "report.html"
    src.write_text(json.dumps(schema2()))
    run = run_cli("report", str(src), "-o", str(out))
    assert run.code == 0, run.stderr
    assert "Report written to" in run.stderr
    assert count(out.read_text(encoding="utf-8"), "details", "q") == 3


@pytest.mark.parametrize("content,message", [
    (None, "no such results file"), ("{not json", "not valid JSON (line 1"), ('{"run": {}}', 'no "results" list'),
])
def test_report_bad_input(tmp_path: Path, content, message):
    src = tmp_path / "run.json"
    if content is not None:
        src.write_text(content)
    run = run_cli("report", str(src), "-o", str(tmp_path / "r.html"))
    assert run.code == 2 and message in run.stderr
    assert not (tmp_path / "r.html").exists()


def test_report_several_runs(tmp_path: Path):
    a, b, out = tmp_path / "a.json", tmp_path / "b.json", tmp_path / "report.html"
    runs = [baseline_run(), other_run()]
    a.write_text(json.dumps(runs[0]))
    b.write_text(json.dumps(runs[1]))
    run = run_cli("report", str(a), str(b), "-o", str(out))
    assert run.code == 0, run.stderr
    page = out.read_text(encoding="utf-8")
    assert "<h2>Comparison</h2>" in page and count(page, "section", "run") == 2
    assert "<h2>Run modular-no-llm " in page and "<h2>Run hybrid " in page  # compare's labels on the whole page
    expected = render_comparison(compare_runs(runs, LABELS, sources=[str(a), str(b)]).to_json(), runs)
    assert expected in page  # the section is the real comparison's, plot included
    assert count(page, "table", "compare") == 3  # means, the run pair, the reference system
    assert count(page, "details", "changes") == 2
    assert [p["data-plot"] for p in Elements(page).find("figure", "plot")][0] == "paired-delta-0"
    assert ("<tr><th>MRR</th><td class=num>3</td><td class=num>0.500</td><td class=num>0.833</td>"
            "<td class=num>+0.333</td>") in page
    assert f"<td>{a}</td>" in page  # the source of each run


# ---- in a real browser

needs_chromium = pytest.mark.skipif(find_chromium() is None,
                                    reason="Chromium is not installed (apt-get install chromium): browser test skipped")


@needs_chromium
def test_report_in_chromium(tmp_path: Path):
    page = tmp_path / "report.html"
    page.write_text(render_report([baseline_run(), other_run()], LABELS, comparison()), encoding="utf-8")
    dom = Elements(dump_dom(page))
    root = dom.find("html")[0]
    assert root.get("data-ready") == "1" and root.get("data-errors") is None
    assert len(dom.find("details", "q")) == 7
    assert len(dom.find("figure", "plot")) == 9  # the paired deltas + each run's 4
    assert len(dom.find("table", "compare")) == 3 and len(dom.find("details", "changes")) == 2
    assert [s.get("data-shown") for s in dom.find("section", "run")] == ["3", "4"]

    dom = Elements(dump_dom(page, "tag=wrong_chunk&open=q2"))
    first = [d for d in dom.find("details", "q")][:3]
    assert ["hidden" in d for d in first] == [True, False, True]
    assert "open" in first[1]
    assert [s.get("data-shown") for s in dom.find("section", "run")] == ["1", "4"]  # the other run has no tags

    png = screenshot(page, tmp_path / "report.png", (1280, 1600))
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 20_000


@needs_chromium
def test_chromium_reports_script_errors(tmp_path: Path):
    page = tmp_path / "broken.html"
    html = render_report([SCHEMA1], ["x"]).replace("document.documentElement.setAttribute('data-ready','1');",
                                                   "undefinedFunction();")
    page.write_text(html, encoding="utf-8")
    root = Elements(dump_dom(page)).find("html")[0]
    assert root.get("data-ready") is None and "undefinedFunction" in (root.get("data-errors") or "")


# ---- bounded work and presentation

def test_report_work_is_bounded_in_k_and_groups():
    huge = copy.deepcopy(schema2())
    huge["run"]["k"] = 10**7
    huge["results"][0]["rank"] = 5_000_000
    huge["groups"] = {"section": {f"s{i}": {"count": 1, "hit_at_1_rate": 0.0} for i in range(20_000)}}
    page = render_report([huge], ["huge"])  # finishes (it drew 10^7 bars and 20,000 groups before)
    assert "21-10000000" in page  # ranks past 20 share one bar
    assert "other (19989 values)" in page  # the largest 11 groups, then one "other"


def test_fold_groups_keeps_the_largest():
    from components.report.page import fold_groups

    stats = {f"v{i}": {"count": i} for i in range(1, 16)}
    folded = fold_groups(stats, limit=4)
    assert list(folded) == ["v15", "v14", "v13", "other (12 values)"] and folded["other (12 values)"] == {"count": 78}
    assert fold_groups({"a": {"count": 1}}, limit=4) == {"a": {"count": 1}}


def test_a_zero_delta_is_not_coloured_as_a_loss():
    from components.report.page import _sign_class

    assert [_sign_class(x) for x in (-0.5, 0.0, 1e-15, 0.2, None)] == ["bad", "muted", "muted", "good", "muted"]


def test_glossary_names_every_metric():
    page = render_report([schema2()], ["new"])
    start = page.index("<details class=glossary>")
    glossary = page[start:page.index("</details>", start)]
    from utils.metrics import metrics

    assert all(f"<dt>{html.escape(m.label)}</dt>" in glossary for m in metrics())
    assert "<dt>lexical proxy</dt>" in glossary and "<dt>total score</dt>" in glossary


# A script run in the test's copy of the page: the tables wider than their card, and the cells of
# numbers and headings broken over more than one line, written on <html> for the dumped DOM.
_LAYOUT_PROBE = """<script>window.addEventListener('load', () => {
  const lines = (e) => { const r = document.createRange(); r.selectNodeContents(e);
    return new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top))).size; };
  const wide = [...document.querySelectorAll('table')].filter(t => t.offsetParent !== null &&
    t.getBoundingClientRect().width > t.closest('section, details.glossary').clientWidth + 1)
    .map(t => t.className);
  const broken = [...document.querySelectorAll('table.changes td.num, table.changes th, table.compare td.num, '
    + 'table.compare th, table.metrics td.num, table.runs th, table.runs td.num')]
    .filter(e => e.offsetParent !== null && lines(e) > 1)
    .map(e => e.closest('table').className + ':' + e.textContent);
  document.documentElement.setAttribute('data-wide', wide.join('|'));
  document.documentElement.setAttribute('data-broken', broken.join('|'));
});</script>"""


@needs_chromium
def test_comparison_tables_fit_their_card_at_1280px(tmp_path: Path):
    """At 1280 px every table fits its card, and no number or column heading of the comparison's
    tables is broken over two lines (Δ total "-1.45" used to read "-1." above "45")."""
    from utils.results import RunResult

    base = json.loads((Path(__file__).parent.parent / "examples" / "kubernetes_run.json").read_text())
    other = copy.deepcopy(base)
    for i, r in enumerate(other["results"][:12]):  # a dozen questions move, both ways, with their documents
        r["rank"], r["doc_rank"] = (None, None) if i % 3 == 0 else (4, 3)
        r["rr"] = 0.0 if r["rank"] is None else 0.25
        r["llm_grade"] = 2 + i % 7
        r["total_score"] = round(r["llm_grade"] * (0.6 if r["rank"] is None else 0.85), 2)
        r["retrieved"] = list(reversed(r["retrieved"]))
    other["run"]["strategy"], other["run"]["id"] = "modular-no-llm", other["run"]["id"] + "-other"
    runs = [RunResult.from_json(base, "base.json"), RunResult.from_json(other, "other.json")]
    labels = ["baseline", "modular-no-llm"]
    page = render_report(runs, labels, compare_runs(runs, labels).to_json())
    assert "<table class=changes>" in page
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", _LAYOUT_PROBE + "</body>"), encoding="utf-8")
    root = Elements(dump_dom(probe, size=(1280, 2000))).find("html")[0]
    assert root.get("data-ready") == "1" and root.get("data-errors") is None
    assert root.get("data-wide") == "", root.get("data-wide")
    assert root.get("data-broken") == "", root.get("data-broken")


def test_offline_grades_say_lexical_proxy_beside_the_number():
    """With the offline judge the grade cards and the judge metrics' rows say "lexical proxy" beside
    their figure, as the console summary does; an LLM judge's do not."""
    offline = render_report([schema2()], ["new"])
    cards = offline[offline.index('<div class="cards">'):offline.index('<table class="metrics">')]
    assert cards.count("(lexical proxy)") == 2  # avg grade and pass ≥ 7; not hit@1 or MRR
    assert re.search(r"<th [^>]*>avg grade <span [^>]*>\(lexical proxy\)</span></th><td class=num>6\.00</td>", offline)
    assert not re.search(r">MRR <span", offline)
    llm = schema2()
    llm["run"]["judge"].update(provider="anthropic", model="claude-sonnet-4-5")
    assert "(lexical proxy)</span>" not in render_report([llm], ["new"])
