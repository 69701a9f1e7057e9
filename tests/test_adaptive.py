"""Adaptive judging (components/run/adaptive.py): ``--until-decided`` stops paying the judge once the
verdict against the baseline is known, ``--target-ci`` once the interval is narrow enough; compare,
its gate and ``--resume`` read such runs. Judges are scripted (no network)."""

from __future__ import annotations

import json
import re

import pytest

from components import api
from components.analysis.adaptive import decided_against
from components.core import Document, Question
from components.judges.providers.scripted import play
from components.run.adaptive import Request, judging_order
from tests.conftest import clean_env, run_cli
from tests.panel_fixtures import scripted_judges
from tests.test_api import KeywordRetriever
from utils.errors import InputError
from utils.results import RunResult, load_run

N = 40
DOCS = [Document(f"d{i}", f"Doc {i}", f"# Doc {i}\n\nThe word w{i}x lives in document {i} about topic t{i}y.")
        for i in range(N)]
QUESTIONS = [{"id": f"q{i}", "question": f"Where does w{i}x live?", "expected_answer": f"In document {i} about t{i}y.",
              "needle_doc_id": f"d{i}"} for i in range(N)]


def grader(offset: int, spread: int = 3, phase: int = 0):
    """A judge whose grade of question i is 3 + offset + ((7i + phase) mod spread): with phase 0 the
    same noise for every offset; with phase 1 against phase 0 the paired differences are offset + 1,
    offset + 1, offset − 2 for i mod 3 = 0, 1, 2 (unequal: the t and Hall intervals decide, not the
    rule for differences that are all the same)."""
    def answer(prompt: str) -> str:
        i = int(re.search(r"w(\d+)x", prompt).group(1))
        return json.dumps({"grade": min(10, 3 + offset + (i * 7 + phase) % spread), "reasoning": "scripted"})
    return answer


def evaluate(offset: int, phase: int = 0, **kwargs) -> tuple[RunResult, int]:
    """A run graded by ``grader(offset, phase=phase)``; with the number of judge calls made."""
    with play(grader(offset, phase=phase)) as script:
        result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judge="scripted", **kwargs)
    return result, len(script.prompts)


@pytest.fixture(scope="module")
def baseline() -> RunResult:
    return evaluate(0)[0]


def test_a_clear_win_stops_early_and_records_its_calls(baseline):
    result, calls = evaluate(4, phase=1, until_decided=baseline)  # differences +5, +5, +2: mean about +4
    record = result.adaptive.to_json()
    assert record["mode"] == "until_decided" and record["decided"] and record["seed"] == 0 and record["block"] == 5
    assert record["decided_after"] < N and calls == record["judged"] == record["decided_after"]
    assert record["calls"] == {"spent": calls, "saved": N - calls, "full": N}
    assert set(record["metrics"]) == {"avg_llm_grade"}  # the default gate: the primary metric, the mean grade, alone
    for entry in record["metrics"].values():
        assert entry["verdict"] == "better" and entry["decided"] and entry["interval"][0] > 0
    assert "Lan-DeMets" in record["procedure"] and "Bonferroni" in record["procedure"]
    skipped = [r for r in result.rows if r.llm_grade is None]
    assert len(skipped) == N - calls and [r.question_id for r in result.rows] == [q["id"] for q in QUESTIONS]
    assert {r.grade_error for r in skipped} == {f"not judged: decided after {calls}"}
    assert all(r.rank is not None for r in result.rows)  # retrieval ran for every question
    assert result.metrics["pass_rate_7"] == 100.0  # over the questions judged: an unjudged one is not a failure


def test_identical_strategies_never_stop_better_or_worse(baseline):
    """The same retrieval, graded by a judge whose noise differs from the baseline's (differences +1,
    +1, −2: mean +1/40 over the 40 questions) and by one whose noise is the baseline's (all 0)."""
    for phase in (1, 0):
        result, calls = evaluate(0, phase=phase, until_decided=baseline)
        assert calls == N and not result.adaptive.to_json()["decided"]
        assert {e["verdict"] for e in result.adaptive.to_json()["metrics"].values()} == {"no detectable difference"}


def test_a_margin_decides_non_inferiority(baseline):
    result, calls = evaluate(0, until_decided=baseline, margins={"grade": 1.0}, fail_on="worse:grade")
    entry = result.adaptive.to_json()["metrics"]["avg_llm_grade"]
    assert list(result.adaptive.to_json()["metrics"]) == ["avg_llm_grade"] and entry["margin"] == 1.0
    assert entry["verdict"] == "non-inferior" and calls < N


def test_with_concurrency_calls_in_flight_are_kept_and_counted(baseline):
    result, calls = evaluate(4, until_decided=baseline, concurrency=4)
    record = result.adaptive.to_json()
    assert record["decided"] and calls == record["calls"]["spent"] == record["judged"] >= record["decided_after"]
    assert sum(r.llm_grade is not None for r in result.rows) == calls < N


def test_a_panel_is_judged_until_decided_against_the_same_panel():
    with scripted_judges(one=grader(0), two=grader(0)):
        base = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judges=["one", "two"])
    with scripted_judges(one=grader(4), two=grader(5)) as scripts:
        result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judges=["one", "two"], until_decided=base)
        with pytest.raises(InputError, match="another judge"):
            api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judges=["two", "one"], until_decided=base)
    judged = result.adaptive.to_json()["judged"]
    assert result.adaptive.to_json()["decided"] and judged < N
    assert len(scripts["one"].prompts) == len(scripts["two"].prompts) == judged


def test_target_ci_stops_once_the_interval_is_narrow_enough():
    result, calls = evaluate(0, target_ci=2.5)
    record = result.adaptive.to_json()
    entry = record["metrics"]["avg_llm_grade"]
    assert record["mode"] == "target_ci" and "Waudby-Smith" in record["procedure"]
    assert entry["verdict"] == "reached" and entry["half_width"] <= 2.5 and calls == entry["judged"] < N
    narrow, calls = evaluate(0, target_ci={"grade": 0.01})  # never that narrow: every question judged
    assert calls == N and narrow.adaptive.to_json()["metrics"]["avg_llm_grade"]["verdict"] == "not reached"


def test_a_run_the_budget_stops_decides_nothing_it_had_not_decided(baseline):
    """--max-cost ends judging after 13 calls (each call's worst case: max_tokens 100 at $10,000 per
    million output tokens = $1, and no input price): the questions left are not "judged", the
    metrics not decided stay "not yet" (not "no detectable difference"), and the full cost counts
    every question."""
    from utils.pricing import Price

    with play(grader(0, phase=1), output_cap=100, price=Price(0.0, 10_000.0)) as script:
        result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judge="scripted", until_decided=baseline,
                              max_cost_usd=13.5)
    record, calls = result.adaptive.to_json(), len(script.prompts)
    assert result.run.status == "budget_exhausted" and calls == 13
    assert (record["judged"], record["not_judged"], record["ungraded"]) == (13, 0, N - 13)
    assert not record["decided"] and {e["verdict"] for e in record["metrics"].values()} == {"not yet"}
    assert record["calls"] == {"spent": 13, "saved": 0, "full": N}
    from components.analysis.adaptive import failed

    assert failed(result.adaptive) == []  # a gate does not fail on a verdict the run never reached


def test_the_output_cannot_overwrite_the_baseline(cli_baseline):
    tmp, files = cli_baseline
    before = (tmp / "base.json").read_bytes()
    run, calls = _cli(4, *files, "--strategy", "baseline", "--until-decided", str(tmp / "base.json"),
                      "--output", str(tmp / "base.json"))
    assert run.code == 2 and calls == 0 and "the --until-decided baseline" in run.stderr, run.stderr
    assert (tmp / "base.json").read_bytes() == before


def test_a_record_with_fields_of_the_wrong_type_is_refused_with_its_name(cli_baseline, tmp_path):
    tmp, _ = cli_baseline
    _decided(tmp, _files(tmp_path), "typed.json")
    doc = json.loads((tmp / "typed.json").read_text(encoding="utf-8"))
    doc["adaptive"]["alpha"] = "five percent"
    (tmp_path / "bad.json").write_text(json.dumps(doc), encoding="utf-8")
    run = run_cli("report", str(tmp_path / "bad.json"), "-o", str(tmp_path / "r.html"))
    assert run.code == 2 and "adaptive.alpha is a string" in run.stderr and not (tmp_path / "r.html").exists()


def test_compare_says_which_questions_a_run_judged_in_part_has_grades_for(baseline):
    """A --target-ci run (or one decided against another baseline) beside a baseline: its recorded
    verdict is not compare's, but its missing grades and its cost to the verdict are said."""
    result, calls = evaluate(0, target_ci=2.5)
    comparison = api.compare([baseline, result])
    (note,) = [w for w in comparison.warnings if "judged until its interval" in w]
    assert note.startswith(f"run #2 was judged until its interval was narrow enough (--target-ci): "
                           f"{N - calls} of its {N} questions have no grade, so its grade metrics cover the {calls} "
                           f"judged ones (cost to the verdict: {calls} of {N} questions judged")
    assert not comparison.sequential
    other, _ = evaluate(4, until_decided=evaluate(1)[0])  # decided against another baseline than this one
    assert any("judged until decided against another baseline" in w for w in api.compare([baseline, other]).warnings)
    decided = evaluate(4, until_decided=baseline)[0]
    assert not any("have no grade" in w for w in api.compare([baseline, decided]).warnings)


def test_compare_and_its_gate_reuse_the_recorded_sequential_verdict(baseline, tmp_path):
    result, _ = evaluate(4, until_decided=baseline)
    assert decided_against(baseline, result) is not None
    assert decided_against(result, baseline) is None
    comparison = api.compare([baseline, result], labels=["base", "new"])
    assert "Sequential verdicts, recorded by the run" in str(comparison)
    assert comparison.to_json()["sequential"]["new"]["metrics"]["avg_llm_grade"]["verdict"] == "better"
    gate = comparison.gate(worse=["avg_llm_grade", "mrr"])
    rules = {c.metric: c.rule for c in gate.checks}
    assert rules == {"avg_llm_grade": "sequential", "mrr": "worse"} and gate.passed
    assert "better by the sequential procedure" in next(c.line for c in gate.checks if c.rule == "sequential")
    high = evaluate(4)[0]
    worse, _ = evaluate(0, until_decided=high)  # the baseline is better: decided worse
    failed = api.compare([high, worse]).gate(worse=["avg_llm_grade"])
    assert not failed.passed and failed.checks[0].rule == "sequential"


def test_the_record_is_written_and_read_back(baseline, tmp_path):
    result, _ = evaluate(4, until_decided=baseline)
    read = load_run(result.save(tmp_path / "r.json"))
    assert read.adaptive.to_json() == json.loads(json.dumps(result.adaptive.to_json()))
    assert read.rows[-1].grade_error == result.rows[-1].grade_error


def test_with_judge_batch_each_block_is_one_batch():
    from components.judges.providers.anthropic import MessageBatches
    from components.run.adaptive import TargetCI
    from components.run.calls.judge_batch import BatchJudge, run_batch
    from tests.loopback import LoopbackServer
    from tests.test_judge_batch import SONNET, _loop_and_questions, provider

    with LoopbackServer(batch_polls=0) as srv:  # every grade 8
        loop, questions = _loop_and_questions(15)
        plan = TargetCI(Request(targets={"avg_llm_grade": 4.0}), questions, 3)
        loop.unjudged, loop.on_row = plan.unjudged, plan.on_row(None)
        rows = run_batch(loop, plan.order, {}, BatchJudge(MessageBatches(provider(srv.url), SONNET),
                                                          sleep=lambda s: None), blocks=plan.counts)
    assert plan.counts == (5, 10, 15) and plan.decided_after == 5
    assert [len(b["requests"]) for b in srv.batch_creates] == [5]  # the first block's batch only
    assert [r.llm_grade for r in rows] == [8] * 5 + [None] * 10
    assert {r.grade_error for r in rows[5:]} == {"not judged: decided after 5"}


def test_the_judging_order_is_seeded():
    questions = [Question(q["id"], q["question"], q["expected_answer"], (q["needle_doc_id"],)) for q in QUESTIONS]
    first = [q.id for q in judging_order(questions, 0)]
    assert first == [q.id for q in judging_order(questions, 0)] != [q["id"] for q in QUESTIONS]
    assert first != [q.id for q in judging_order(questions, 1)]


def test_bad_requests_are_refused(baseline):
    with pytest.raises(InputError, match="--target-ci"):
        api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline", target_ci=0)
    with pytest.raises(InputError, match="gate it against --until-decided"):
        api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline", fail_on="worse")
    with pytest.raises(InputError, match="no metric that uses grades"):
        api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline", until_decided=baseline,
                     fail_on="worse:mrr")
    with pytest.raises(InputError, match="without a baseline"):
        api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline", until_decided=baseline, target_ci=1)


# --------------------------------------------------------------------------- the command line

def _files(tmp_path):
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    for d in DOCS:
        (corpus / f"{d.doc_id}.md").write_text(d.text, encoding="utf-8")
    questions = tmp_path / "questions.json"
    questions.write_text(json.dumps(QUESTIONS), encoding="utf-8")
    return ["--questions", str(questions), "--corpus", str(corpus), "--k", "2"]


def _cli(offset: int, *args: str):
    with play(grader(offset)) as script:
        run = run_cli(*args, env=clean_env(BENCHMARK_JUDGE="scripted"))
    return run, len(script.prompts)


@pytest.fixture(scope="module")
def cli_baseline(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("adaptive")
    files = _files(tmp)
    run, _ = _cli(0, *files, "--strategy", "baseline", "--output", str(tmp / "base.json"))
    assert run.code == 0, run.stderr
    return tmp, files


def _decided(tmp, files, name: str):
    """A clear win judged until decided against base.json, written to ``name``: (its run, judge calls)."""
    run, calls = _cli(4, *files, "--strategy", "baseline", "--until-decided", str(tmp / "base.json"),
                      "--output", str(tmp / name))
    assert run.code == 0, run.stderr
    return run, calls


def test_the_command_line_stops_early_shows_the_cost_and_gates(cli_baseline):
    tmp, files = cli_baseline
    run, calls = _decided(tmp, files, "new.json")
    assert "Judged until decided against" in run.stdout and "cost to the verdict" in run.stdout
    record = load_run(tmp / "new.json").adaptive.to_json()
    assert record["decided"] and calls == record["judged"] < N
    assert record["request"]["until_decided"] == str(tmp / "base.json")
    high, _ = _cli(4, *files, "--strategy", "baseline", "--output", str(tmp / "high.json"))
    worse, _ = _cli(0, *files, "--strategy", "baseline", "--until-decided", str(tmp / "high.json"),
                    "--fail-on", "worse:grade", "--output", str(tmp / "worse.json"))
    assert worse.code == 6 and "sequential verdict" in worse.stderr
    compared = run_cli("compare", str(tmp / "base.json"), str(tmp / "new.json"), "--fail-on", "worse:grade")
    assert compared.code == 0 and "by the sequential procedure" in compared.stdout


def _interrupted(tmp, name: str, judged: int):
    """``name`` as if its run had stopped after judging ``judged`` questions: (the file, its document)."""
    doc = json.loads((tmp / name).read_text(encoding="utf-8"))
    order = [q.id for q in judging_order([Question(q["id"], q["question"], None, ("d0",)) for q in QUESTIONS], 0)]
    kept = set(order[:judged])
    for row in doc["results"]:
        if row["question_id"] not in kept:
            row.update(llm_grade=None, total_score=None, grade_error="timeout: interrupted")
    doc["run"]["status"] = "interrupted"
    partial = tmp / f"partial-{name}"
    partial.write_text(json.dumps(doc), encoding="utf-8")
    return partial, doc


def test_a_resumed_adaptive_run_continues_the_same_sequence(cli_baseline):
    tmp, files = cli_baseline
    _, calls = _decided(tmp, files, "full.json")
    partial, doc = _interrupted(tmp, "full.json", 7)
    resumed, more = _cli(4, "--resume", str(partial), "--output", str(tmp / "resumed.json"))
    assert resumed.code == 0, resumed.stderr
    again, first = load_run(tmp / "resumed.json").adaptive.to_json(), doc["adaptive"]
    assert more == calls - 7 and again["looks"] == first["looks"] and again["metrics"] == first["metrics"]
    # this session paid for the calls after the 7 kept; "full" still prices every question
    assert again["resumed_rows"] == 7 and again["calls"]["spent"] == more and again["calls"]["full"] == N
    assert "in this session (it resumed a run that had kept 7)" in resumed.stdout


def test_a_resumed_adaptive_run_keeps_its_gate_and_refuses_another(cli_baseline):
    """The gated metrics and the baseline are fixed before the first look: a resume takes them from
    the file, accepts them given again, and refuses others (the guarantee would not hold)."""
    tmp, files = cli_baseline
    run, _ = _cli(4, *files, "--strategy", "baseline", "--until-decided", str(tmp / "base.json"),
                  "--fail-on", "worse:grade", "--output", str(tmp / "gated.json"))
    assert run.code == 0, run.stderr
    recorded = load_run(tmp / "gated.json").adaptive.to_json()["request"]
    assert recorded["gate"] is True and list(recorded["gated"]) == ["avg_llm_grade"]
    partial, _ = _interrupted(tmp, "gated.json", 7)
    for given in ([], ["--fail-on", "worse:grade"], ["--until-decided", str(tmp / "base.json")]):
        resumed, _ = _cli(4, "--resume", str(partial), *given, "--output", str(tmp / "resumed-gated.json"))
        assert resumed.code == 0, resumed.stderr
        assert load_run(tmp / "resumed-gated.json").adaptive.to_json()["request"] == recorded, given
    (tmp / "other-base.json").write_bytes((tmp / "base.json").read_bytes())
    for given in (["--fail-on", "worse:total"], ["--until-decided", str(tmp / "other-base.json")],
                  ["--target-ci", "0.5"]):
        refused, calls = _cli(4, "--resume", str(partial), *given, "--output", str(tmp / "refused.json"))
        errors = [line for line in refused.stderr.splitlines() if "| ERROR" in line]
        assert refused.code == 2 and calls == 0 and len(errors) == 1, (given, refused.stderr)


def test_a_baseline_judged_until_decided_is_refused_with_the_fix_that_works(cli_baseline):
    tmp, files = cli_baseline
    _decided(tmp, files, "decided-base.json")
    run, calls = _cli(4, *files, "--strategy", "baseline", "--until-decided", str(tmp / "decided-base.json"),
                      "--output", str(tmp / "bad.json"))
    assert run.code == 2 and calls == 0 and "grade the baseline whole, running it again without --until-decided" \
        in run.stderr and "--resume" not in run.stderr, run.stderr


@pytest.mark.parametrize("change, message", [
    (lambda files, tmp: [*files[:-2], "--k", "3"], "k=2, this run k=3"),
    (lambda files, tmp: [*files, "--limit", "12"], "other question ids"),
    (lambda files, tmp: [*files, "--strategy", "baseline,modular-no-llm"], "one --strategy"),
    (lambda files, tmp: [*files, "--target-ci", "0.5"], "without a baseline"),
])
def test_bad_input_is_one_line_and_exit_2(cli_baseline, change, message):
    tmp, files = cli_baseline
    run, calls = _cli(4, *change(files, tmp), "--until-decided", str(tmp / "base.json"),
                      "--output", str(tmp / "bad.json"))
    errors = [line for line in run.stderr.splitlines() if "| ERROR" in line]
    assert run.code == 2 and calls == 0 and len(errors) == 1 and message in errors[0], run.stderr


def test_a_baseline_without_grades_or_by_another_judge_is_refused(cli_baseline):
    tmp, files = cli_baseline
    doc = json.loads((tmp / "base.json").read_text(encoding="utf-8"))
    for row in doc["results"]:
        row.update(llm_grade=None, total_score=None, grade_error="timeout: x")
    (tmp / "ungraded.json").write_text(json.dumps(doc), encoding="utf-8")
    run, calls = _cli(4, *files, "--until-decided", str(tmp / "ungraded.json"), "--output", str(tmp / "bad.json"))
    assert run.code == 2 and "the baseline has no grades" in run.stderr and calls == 0
    offline = run_cli(*files, "--until-decided", str(tmp / "base.json"), "--output", str(tmp / "bad.json"),
                      env=clean_env(BENCHMARK_JUDGE="offline"))
    assert offline.code == 2 and "another judge" in offline.stderr


def test_the_report_shows_how_judging_stopped_and_the_sequential_verdict(cli_baseline):
    tmp, files = cli_baseline
    _decided(tmp, files, "report-new.json")
    page = tmp / "report.html"
    done = run_cli("report", str(tmp / "base.json"), str(tmp / "report-new.json"), "-o", str(page))
    assert done.code == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert "Judged until the verdict was known" in html and "cost to the verdict" in html
    assert "Sequential verdicts, recorded by the run" in html


def test_a_panel_with_judge_batch_sends_one_batch_per_judge_per_block(tmp_path):
    """Two judges of the loopback Messages API, every grade 8: the first block's grades make the
    interval narrow enough, so the second block is never sent."""
    from tests.batch_fixtures import make_corpus, make_questions
    from tests.conftest import judge_env
    from tests.loopback import LoopbackServer, Reply

    make_questions(tmp_path / "q.json", 15, make_corpus(tmp_path / "docs", docs=15))
    out = tmp_path / "r.json"
    with LoopbackServer(batch_polls=0, batch_script=lambda cid, params, seen: Reply(text='{"grade": 8}')) as srv:
        run = run_cli("--questions", str(tmp_path / "q.json"), "--corpus", str(tmp_path / "docs"), "--judges",
                      "anthropic/claude-haiku-4-5,anthropic/claude-sonnet-5-5", "--judge-batch", "--target-ci", "3.5",
                      "--output", str(out), env=judge_env(srv.url, BENCHMARK_BATCH_POLL_MAX="0.05"))
    assert run.code == 0, run.stderr
    assert [len(b["requests"]) for b in srv.batch_creates] == [5, 5] and not srv.requests
    doc = json.loads(out.read_text(encoding="utf-8"))
    assert doc["adaptive"]["decided_after"] == 5 and doc["adaptive"]["not_judged"] == 10
    assert sum(r["llm_grade"] == 8 for r in doc["results"]) == 5
