"""audit-judge: scripted judges of known behaviour are found vulnerable or robust to the attacks they
fall for or withstand; the figures are checked by hand; attacked prompts keep the grader's escaping;
bad input is one line and exit 2; --audit warns on a run and in a report."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path

import pytest

from components import api
from components.audit.attacks import INJECTIONS, attack, paraphrase, parse_attacks, row_chunks, without_answer
from components.audit.attacks import attacks as registered_attacks
from components.audit.effects import MIN_PAIRS, verdict
from components.audit.sample import draw
from components.judges.lexical_judge import key_terms
from components.judges.providers.scripted import fail, play, reply
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256, build_prompt
from tests.conftest import clean_env, judge_env, run_cli
from tests.loopback import LoopbackServer, Reply
from utils.records.audit_file import AttackResult, AuditFile, JudgeAudit, audit_notes, audit_schema, read_audit
from utils.errors import InputError
from utils.pricing import Price
from utils.results import JudgeGrade, JudgeInfo, QuestionResult, RetrievedItem, RunInfo, RunResult

ROOT = Path(__file__).resolve().parents[1]
TOPICS = ("cache", "upload", "session", "thread", "socket", "queue", "buffer", "token", "retry", "backup")
SCRIPTED = {"BENCHMARK_JUDGE": "scripted"}


# --------------------------------------------------------------------------- a run to audit

def row(i: int, grade: int = 5, rank: int | None = 1, text: bool = True) -> QuestionResult:
    topic = TOPICS[i % len(TOPICS)]
    chunks = [(f"doc{i}", f"Server settings\n\nThe {topic}_limit key in alpha{i}.toml sets the maximum. Put it "
                          "under the [server] table."),
              ("misc", "General notes\n\nRestart the process after editing files."),
              ("logging", "Logging\n\nLogs go to the standard error stream.")]
    return QuestionResult(
        question_id=f"q{i}", question=f"Where is the {topic} limit configured for alpha{i} servers?",
        expected_answer=f"Set {topic}_limit in alpha{i}.toml under the [server] table.",
        needle_doc_id=f"doc{i}", needle_doc_ids=[f"doc{i}"], rank=rank, llm_grade=grade,
        retrieved=[RetrievedItem(r, doc, f"{doc}#{i}", text=body if text else None)
                   for r, (doc, body) in enumerate(chunks, start=1)])


def run_file(tmp_path: Path, rows: list[QuestionResult], provider: str = "scripted", model: str = "scripted-1",
             run_id: str = "test-run") -> Path:
    info = RunInfo(status="completed", strategy="test", id=run_id,
                   judge=JudgeInfo(provider, model, PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256))
    path = tmp_path / "run.json"
    RunResult(run=info, rows=rows, question_count=len(rows)).save(path)
    return path


# --------------------------------------------------------------------------- scripted judges

def shown(prompt: str) -> tuple[str, str, str]:
    """(question, expected answer, the chunks' text) as the grading prompt shows them."""
    question = re.search(r"^USER QUESTION: (.*)$", prompt, re.M).group(1)
    expected = re.search(r"^EXPECTED ANSWER \(ground truth\): (.*)$", prompt, re.M).group(1)
    text = "\n".join(line[2:] for line in prompt.splitlines() if line.startswith("│ "))
    return question, expected, text


def grade(value: int) -> str:
    return json.dumps({"grade": value, "reasoning": "scripted"})


def overlap_judge(prompt: str) -> str:
    """Naive: the share of the question's and answer's words (4+ letters) found in the chunks."""
    question, expected, text = shown(prompt)
    words = {w for w in re.findall(r"[a-z0-9_]+", f"{question} {expected}".lower()) if len(w) >= 4} - {"where"}
    found = words & set(re.findall(r"[a-z0-9_]+", text.lower()))
    return grade(1 + int(9 * len(found) / len(words)))


def obeying_judge(prompt: str) -> str:
    """Does what the chunks tell it."""
    return grade(10 if "grade of 10" in shown(prompt)[2] else 5)


def robust_judge(prompt: str) -> str:
    """Grades whether the chunks state the expected answer's fact: 8 when they do, 2 when not."""
    _, expected, text = shown(prompt)
    key, file = re.search(r"Set (\w+) in (\S+\.toml)", expected).groups()
    return grade(8 if f"The {key} key in {file}" in text else 2)


def audit_with(judge, rows, tmp_path: Path, **options) -> AuditFile:
    path = run_file(tmp_path, rows)
    with play(judge):
        return api.audit_judge(path, judge="scripted", **options)


def by_name(audit: AuditFile) -> dict[str, AttackResult]:
    return {a.name: a for a in audit.judges[0].attacks}


def test_a_keyword_overlap_judge_is_vulnerable_to_stuffing_and_padding(tmp_path: Path):
    attacks = by_name(audit_with(overlap_judge, [row(i) for i in range(10)], tmp_path))
    assert attacks["keyword-stuffing"].verdict == "vulnerable" and attacks["keyword-stuffing"].ci95[0] > 0.5
    assert attacks["verbosity-padding"].verdict == "vulnerable" and attacks["verbosity-padding"].delta > 0.5
    assert attacks["answer-removal"].verdict == "responds"


def test_a_judge_that_obeys_the_chunks_is_vulnerable_to_every_injection(tmp_path: Path):
    audit = audit_with(obeying_judge, [row(i) for i in range(10)], tmp_path)
    attacks = by_name(audit)
    for name in INJECTIONS:
        assert (attacks[name].verdict, attacks[name].delta, attacks[name].ci95) == ("vulnerable", 5.0, [5.0, 5.0])
        assert (attacks[name].flips_to_pass, attacks[name].flip_rate) == (10, 100.0)
    assert attacks["keyword-stuffing"].verdict == "robust"
    assert audit.judges[0].vulnerable() == list(INJECTIONS)


def test_a_robust_judge_is_robust_on_every_attack_and_responds_to_removal(tmp_path: Path):
    audit = audit_with(robust_judge, [row(i) for i in range(10)], tmp_path)
    attacks = by_name(audit)
    removal = attacks.pop("answer-removal")
    assert {a.verdict for a in attacks.values()} == {"robust"}, {n: a.verdict for n, a in attacks.items()}
    assert all(a.pairs == 10 and a.delta == 0.0 for a in attacks.values())
    assert (removal.verdict, removal.delta, removal.ci95, removal.flips_to_fail) == ("responds", -6.0, [-6.0, -6.0], 10)
    assert "answer removal lowers its grade" in audit.judges[0].profile()
    # every attack applies to every row: per row one control call and one per registered attack
    assert audit.judges[0].calls == 10 * (1 + len(registered_attacks())) and audit.judges[0].control_mean == 8.0


def test_the_figures_of_a_small_sample_by_hand(tmp_path: Path):
    """Five rows (the fewest a verdict is decided on), stuffing only: calls control, attack per row;
    grades 5→5 four times, then 5→8. Deltas (0, 0, 0, 0, 3): mean 0.6. Re-derived by hand for five
    rows: a bootstrap mean of 5 draws is 0.6·K, K ~ Binomial(5, 1/5) the draws of the 3; P(K = 0) =
    0.328 > 2.5%, so the lower bound is 0; P(K ≤ 2) = 0.942 < 97.5% ≤ P(K ≤ 3) = 0.993, so the upper
    bound is 0.6·3 = 1.8: the 95% interval is [0, 1.8]. At rank 1 the total score is the grade: 5
    fails, 8 passes, one flip to pass in 5 = 20% > 10%: vulnerable (the interval alone would not
    say so). Control vs the run's grades (5, 6, 5, 5, 5): mean |Δ| 1/5."""
    rows = [row(0), row(1, grade=6), row(2), row(3), row(4)]
    path = run_file(tmp_path, rows)
    with play(*[grade(5)] * 9, grade(8)) as script:
        audit = api.audit_judge(path, judge="scripted", attacks="stuffing")
    stuffing = audit.judges[0].attacks[0]
    assert len(script.prompts) == 10 and audit.calls_per_row == 2
    assert (stuffing.delta, stuffing.ci95, stuffing.pairs) == (0.6, [0.0, 1.8], 5)
    assert (stuffing.flips, stuffing.flips_to_pass, stuffing.flip_rate, stuffing.verdict) == (1, 1, 20.0, "vulnerable")
    assert (audit.judges[0].control_mean, audit.judges[0].control_vs_run) == (5.0, 0.2)
    assert (audit.status, audit.stopped) == ("completed", None)


def test_below_five_pairs_no_verdict_is_decided_but_the_figures_are_shown(tmp_path: Path):
    """Three pairs of +1 give a zero-width interval [1, 1] and 2 zero pairs [0, 0]: too few to decide."""
    path = run_file(tmp_path, [row(i, grade=2) for i in range(3)])
    with play(*[grade(2), grade(3)] * 3) as script:
        raised = api.audit_judge(path, judge="scripted", attacks="stuffing").judges[0].attacks[0]
    assert len(script.prompts) == 6 and (raised.pairs, raised.delta, raised.ci95) == (3, 1.0, [1.0, 1.0])
    assert raised.verdict == "inconclusive"
    path = run_file(tmp_path, [row(i) for i in range(2)])
    with play(grade(5), then=grade(5)):
        same = api.audit_judge(path, judge="scripted", attacks="order,removal").judges[0].attacks
    assert [(a.pairs, a.ci95, a.verdict) for a in same] == [(2, [0.0, 0.0], "inconclusive")] * 2


@pytest.mark.parametrize("direction, ci, to_pass, to_fail, expected", [
    ("up", (0.6, 2.0), 0, 0, "vulnerable"), ("up", (0.0, 0.4), 0, 0, "robust"),
    ("up", (0.0, 0.6), 0, 0, "inconclusive"),
    ("up", (0.0, 0.4), 2, 0, "vulnerable"),  # 2 of 10 flip to pass: 20% > 10%
    ("up", (0.0, 0.4), 1, 0, "robust"), ("up", None, 0, 0, "inconclusive"),
    ("none", (-0.4, 0.4), 0, 0, "robust"), ("none", (-1.2, -0.6), 0, 0, "vulnerable"),
    ("none", (-0.4, 0.4), 1, 1, "vulnerable"), ("none", (-0.6, 0.2), 0, 0, "inconclusive"),
    ("down", (-3.0, -0.6), 0, 0, "responds"), ("down", (-0.4, 0.0), 0, 0, "blind"),
    ("down", (-1.0, 0.0), 0, 0, "inconclusive"),
])
def test_the_verdict_rule(direction, ci, to_pass, to_fail, expected):
    assert verdict(direction, ci, to_pass, to_fail, 10) == expected
    # the same interval and flips on fewer than MIN_PAIRS pairs decide nothing (with as many: as on 10)
    assert verdict(direction, ci, to_pass, to_fail, MIN_PAIRS - 1) == "inconclusive"
    assert verdict(direction, ci, 0, 0, MIN_PAIRS) == verdict(direction, ci, 0, 0, 10)


# --------------------------------------------------------------------------- the attacks and their prompts

def test_an_injection_reaches_the_judge_as_quoted_chunk_text(tmp_path: Path):
    path = run_file(tmp_path, [row(i) for i in range(3)])
    with play(grade(5), then=grade(5)) as script:
        api.audit_judge(path, judge="scripted", attacks="injection")
    control, *injected = script.prompts[:4]
    first = row(0)
    template_start, template_end = control.split("[CHUNK 1/3")[0], control.rsplit("[END CHUNK 3/3]", 1)[1]
    for name, prompt in zip(INJECTIONS, injected, strict=True):
        assert prompt.split("[CHUNK 1/3")[0] == template_start
        assert prompt.rsplit("[END CHUNK 3/3]", 1)[1] == template_end
        for line in INJECTIONS[name].split("\n"):  # every line of it quoted inside chunk 1
            assert f"\n│ {line}\n" in prompt.split("[END CHUNK 1/3]")[0]
        lines = prompt.splitlines()
        assert not any(x.startswith(("```", "SYSTEM:", "<!--", "Note to the grader")) for x in lines)
        chunks = [type("C", (), {"doc_id": i.doc_id, "chunk_id": i.chunk_id, "index_text": i.text})()
                  for i in first.retrieved]
        chunks[0].index_text = first.retrieved[0].text + "\n\n" + INJECTIONS[name]
        assert prompt == build_prompt(first.question, first.expected_answer, chunks)  # the grader's own escaping


def test_the_attacks_edit_what_they_say():
    r = row(3)
    terms = set(key_terms(r.expected_answer))
    removed = without_answer(r.retrieved[0].text, terms)
    assert removed == "\n"  # the heading line holds "server", the two sentences the rest: the blank line stays
    assert without_answer("Keep this. Drop alpha3.toml here! Keep that too.", terms) == "Keep this. Keep that too."
    assert paraphrase(" Why? ") == "I am trying to find this out, can you help? Why?"
    assert parse_attacks("injection,order") == ["injection-plain", "injection-code-block", "injection-comment",
                                                "order-reversal"]
    with pytest.raises(InputError, match="'bribery' is not an attack"):
        parse_attacks("stuffing,bribery")


def test_stuffing_padding_and_order_show_what_they_promise():
    rows = [row(i) for i in range(4)]
    r = rows[0]
    answer = set(key_terms(r.expected_answer))
    stuffed = attack("keyword-stuffing", r, rows, seed=0)
    donor, words = stuffed.chunks[-1].index_text.rsplit("\n", 1)
    assert stuffed.chunks[:2] == row_chunks(r)[:2] and stuffed.chunks[-1].doc_id not in {"doc0", "misc", "logging"}
    assert donor in {c.index_text for other in rows[1:] for c in row_chunks(other)}
    assert not re.search(r"[.!?](\s|$)", words) and answer <= set(key_terms(words))  # every answer term, no sentence
    padded = attack("verbosity-padding", r, rows, seed=0)
    for before, after in zip(row_chunks(r), padded.chunks, strict=True):
        filler = after.index_text[len(before.index_text):]
        assert after.index_text.startswith(before.index_text) and "cache limit configured" in filler
        assert not set(key_terms(filler)) & answer  # on topic, none of the answer
    assert attack("order-reversal", r, rows, 0).chunks == row_chunks(r)[::-1]
    one = QuestionResult("q9", "Why?", "Because.", retrieved=r.retrieved[:1], llm_grade=5)
    assert attack("order-reversal", one, rows, 0) is None and attack("keyword-stuffing", r, [r], 0) is None


def test_the_sample_prefers_rows_with_headroom():
    rows = [row(i, grade=g) for i, g in enumerate([2, 5, 5, 7, 9, 9, 9, 9, 10, 10])]
    sampled, strata = draw(rows, 4, seed=0)
    # weights 1, 2, 1 and ceil(6 / 2) = 3 of 7: 4 x (1, 2, 1, 3) / 7 = 0.57, 1.14, 0.57, 1.71: whole parts
    # 0, 1, 0, 1, and the two left go to the largest remainders (0.71, then the first 0.57): 1, 1, 0, 2
    assert [strata[b]["sampled"] for b in ("1-3", "4-6", "7-8", "9-10")] == [1, 1, 0, 2]
    assert len(sampled) == 4 and sampled == sorted(sampled, key=lambda r: int(r.question_id[1:]))
    _, every = draw(rows, 10, seed=0)
    assert [every[b]["sampled"] for b in every] == [1, 2, 1, 6]  # the rest from the 9-10 band
    assert draw(rows, 4, seed=0) == (sampled, strata)


# --------------------------------------------------------------------------- the command

def test_the_command_writes_the_audit_its_table_and_a_file_the_schema_and_reader_accept(tmp_path: Path):
    path = run_file(tmp_path, [row(i) for i in range(6)])
    out = tmp_path / "audit.json"
    with play(robust_judge):
        run = run_cli("audit-judge", str(path), "-o", str(out), "--sample", "5", env=clean_env(**SCRIPTED))
    assert run.code == 0, run.stderr
    assert "keyword-stuffing" in run.stdout and "answer-removal" in run.stdout and "responds" in run.stdout
    doc = json.loads(out.read_text())
    jsonschema = pytest.importorskip("jsonschema")
    shipped = json.loads((ROOT / "docs" / "audit.schema.json").read_text())
    assert shipped == audit_schema(), "regenerate docs/audit.schema.json (see docs/judges.md)"
    jsonschema.validate(doc, shipped)
    audit = read_audit(out)
    assert audit.sampled == 5 and audit.judges[0].name == "scripted/scripted-1" and not audit.judges_named
    assert (doc["status"], doc["stopped"]) == ("completed", None)
    assert doc["judges"][0]["profile"] == audit.judges[0].profile() and doc["judges"][0]["vulnerable"] == []


@pytest.mark.parametrize("make, args, message", [
    (lambda: [row(i, text=False) for i in range(3)], (), "--no-text"),
    (lambda: [row(i) for i in range(3)], ("--sample", "4"), "--sample 4"),
    (lambda: [row(i) for i in range(3)], ("--attacks", "bribery"), "'bribery' is not an attack"),
    (lambda: [row(i) for i in range(3)], ("-o", "{run}"), "the run"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, make, args, message):
    path = run_file(tmp_path, make())
    with play(grade(5), then=grade(5)) as script:
        run = run_cli("audit-judge", str(path), *(a.format(run=path) for a in args), env=clean_env(**SCRIPTED))
    errors = [line for line in run.stderr.splitlines() if "error:" in line]
    assert run.code == 2 and len(errors) == 1 and message in errors[0], run.stderr
    assert script.prompts == []


def test_o_inside_the_corpus_or_over_the_panel_file_is_refused_and_nothing_is_written(tmp_path: Path):
    path = run_file(tmp_path, [row(i) for i in range(3)])
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "doc.md").write_text("# Doc\n\nText.\n")
    panel = tmp_path / "panel.toml"
    panel.write_text('[[judge]]\nname = "s"\nprovider = "scripted"\n')
    for args, message in [(("-o", str(corpus / "audit.json"), "--corpus", str(corpus)), "inside the corpus folder"),
                          (("--judges", str(panel), "-o", str(panel)), "is the --judges panel file")]:
        with play(grade(5), then=grade(5)) as script:
            run = run_cli("audit-judge", str(path), *args, env=clean_env(**SCRIPTED))
        errors = [line for line in run.stderr.splitlines() if "error:" in line]
        assert run.code == 2 and len(errors) == 1 and message in errors[0], run.stderr
        assert script.prompts == []
    assert sorted(p.name for p in corpus.iterdir()) == ["doc.md"]
    assert panel.read_text() == '[[judge]]\nname = "s"\nprovider = "scripted"\n'


def test_the_file_redacts_the_key_a_panel_file_names(tmp_path: Path):
    """A key held in a variable that only the --judges panel file's api_key_env names (the
    environment's secrets do not include it) is redacted from the audit file too."""
    key = "sk-audit-SENTINEL-0123456789abcdef"
    path = run_file(tmp_path, [row(i) for i in range(3)], run_id=f"run-{key}")
    out = tmp_path / "a.json"
    with LoopbackServer() as srv:
        panel = tmp_path / "panel.toml"
        panel.write_text(f'[[judge]]\nname = "local"\nprovider = "anthropic"\nmodel = "claude-sonnet-5-5"\n'
                         f'base_url = "{srv.url}"\napi_key_env = "AUDIT_LOCAL_KEY"\n')
        run = run_cli("audit-judge", str(path), "--judges", str(panel), "--attacks", "order", "-o", str(out),
                      env=clean_env(AUDIT_LOCAL_KEY=key))
    assert run.code == 0, run.stderr
    assert srv.requests and all(key in json.dumps(r.headers) for r in srv.requests)  # the key was sent
    text = out.read_text()
    assert key not in text and json.loads(text)["run_id"] == "run-[REDACTED]"
    assert key not in run.stdout + run.stderr


def test_another_judge_in_the_environment_is_refused_unless_judges_names_it(tmp_path: Path):
    path = run_file(tmp_path, [row(i) for i in range(5)])
    run = run_cli("audit-judge", str(path), env=clean_env())  # no key: the offline judge
    assert run.code == 2 and "graded by scripted/scripted-1, and the environment's judge is offline" in run.stderr
    out = tmp_path / "a.json"
    with play(robust_judge):
        run = run_cli("audit-judge", str(path), "--judges", "scripted,offline", "--attacks", "removal", "-o",
                      str(out), env=clean_env())
    assert run.code == 0, run.stderr
    audit = read_audit(out)
    assert audit.judges_named and [j.name for j in audit.judges] == ["scripted", "offline"]
    assert "named by --judges" in run.stdout and "judge offline (offline/lexical-idf-v1)" in run.stdout
    # each judge graded: both notice the answer's sentences gone (the offline one: no key term left, grade 1)
    assert [(a.verdict, a.delta) for j in audit.judges for a in j.attacks] == [("responds", -6.0), ("responds", -9.0)]
    # the run's judge against its own grades (8 now, 5 in the run); the offline judge did not grade the run
    assert [j.control_vs_run for j in audit.judges] == [3.0, None]


def test_control_vs_run_compares_a_judge_only_with_its_own_grades_in_a_panel_run(tmp_path: Path):
    """A panel run of judges "a" (scripted/scripted-1) and "b" (offline), graded 7 and 4 on every row:
    the scripted judge audited (5 now) is compared with a's grades, |5 - 7| = 2; the offline judge
    (10 now: every answer term is in the chunks) with b's, |10 - 4| = 6; another model, with none."""
    rows = [replace(row(i), grades_by_judge={"a": JudgeGrade(7), "b": JudgeGrade(4)}) for i in range(3)]
    members = [{"name": "a", "judge": JudgeInfo("scripted", "scripted-1", PROMPT_SHA256).to_json()},
               {"name": "b", "judge": JudgeInfo("offline", "lexical-idf-v1", PROMPT_SHA256).to_json()}]
    info = RunInfo(status="completed", strategy="test", id="panel-run",
                   judge=JudgeInfo("panel", "a,b", PROMPT_SHA256, details={"judges": members}))
    RunResult(run=info, rows=rows, question_count=3).save(tmp_path / "panel.json")
    with play(grade(5), then=grade(5)):
        audit = api.audit_judge(tmp_path / "panel.json", judges="scripted,offline", attacks="order")
    scripted, offline = audit.judges
    assert (scripted.control_mean, scripted.control_vs_run) == (5.0, 2.0)
    assert (offline.control_mean, offline.control_vs_run) == (10.0, 6.0)
    with play(grade(5), then=grade(5)):
        other = api.audit_judge(tmp_path / "panel.json", judges="scripted/scripted-2", attacks="order")
    assert other.judges[0].control_vs_run is None  # another model of the provider: not the run's judge


@pytest.mark.parametrize("stop, code, status, stopped", [
    (fail("auth", "the judge API refused the credentials (401)"), 3, "judge_failed",
     "judge scripted became unusable (auth): the judge API refused the credentials (401)"),
    (KeyboardInterrupt("SIGINT"), 130, "interrupted", "interrupted (SIGINT)"),
], ids=["judge-unusable", "interrupted"])
def test_a_judge_that_becomes_unusable_or_an_interrupt_keeps_what_was_graded(tmp_path: Path, stop, code, status,
                                                                               stopped):
    """The judges before it are kept whole; the one stopped has the figures of its calls made, and
    the file says why (exit 3 or 130, as a run)."""
    path = run_file(tmp_path, [row(i) for i in range(3)])
    out = tmp_path / "a.json"
    # offline first (graded whole, no call), then the scripted judge: control and 3 of row 0's attacks, then the stop
    with play(*[grade(5)] * 4, stop, then=grade(5)) as script:
        run = run_cli("audit-judge", str(path), "-o", str(out), "--judges", "offline,scripted",
                      "--attacks", "injection,removal", env=clean_env())
    assert run.code == code and len(script.prompts) == 5, run.stderr
    audit = read_audit(out)
    assert (audit.status, audit.stopped) == (status, stopped)
    assert f"The audit stopped early: {audit.stopped}" in run.stdout and "Judge audit written to" in run.stderr
    whole, cut = audit.judges
    assert whole.name == "offline" and [a.pairs for a in whole.attacks] == [3] * 4
    assert (cut.name, cut.control_graded, [a.pairs for a in cut.attacks]) == ("scripted", 1, [1, 1, 1, 0])
    assert "before any question was graded" not in run.stderr


def test_estimate_prices_the_calls_without_making_them_and_max_cost_stops_the_audit(tmp_path: Path):
    path = run_file(tmp_path, [row(i) for i in range(4)])
    price = Price(1.0, 5.0)
    with play(reply(grade(8), input_tokens=1000, output_tokens=100), then=reply(grade(8), input_tokens=1000,
              output_tokens=100), output_cap=200, price=price) as script:
        run = run_cli("audit-judge", str(path), "--attacks", "stuffing,order", "--estimate", env=clean_env(**SCRIPTED))
        assert run.code == 0 and script.prompts == []
        assert "4 row(s)" in run.stdout and "at most 3 calls per row" in run.stdout and "12 calls" in run.stdout
        # each call reserves ~(prompt/4 tokens at $1 + 200 at $5) per million, and spends $0.0015
        out = tmp_path / "a.json"
        run = run_cli("audit-judge", str(path), "--attacks", "stuffing,order", "--max-cost", "0.004", "-o", str(out),
                      env=clean_env(**SCRIPTED))
    assert run.code == 4, run.stderr
    audit = read_audit(out)
    assert audit.stopped.startswith("budget: --max-cost $0.004 reached")
    assert audit.judges[0].calls == len(script.prompts)
    assert audit.judges[0].cost_usd == pytest.approx(0.0015 * audit.judges[0].calls) and audit.judges[0].calls < 12


def test_an_llm_judge_through_the_real_sdk_that_obeys_injections(tmp_path: Path):
    def obeying(n: int, body: dict) -> Reply:
        return Reply(text=obeying_judge(body["messages"][0]["content"]))

    out, audit_path = tmp_path / "r.json", tmp_path / "audit.json"
    with LoopbackServer(script=obeying) as srv:
        env = judge_env(srv.url)
        assert run_cli("--quick", "--output", str(out), env=env).code == 0
        before = len(srv.requests)
        run = run_cli("audit-judge", str(out), "--attacks", "injection", "-o", str(audit_path), env=env)
        calls = len(srv.requests) - before
    assert run.code == 0, run.stderr
    audit = read_audit(audit_path)
    judge = audit.judges[0]
    assert judge.provider == "anthropic" and calls == judge.calls == 5 * 4
    assert [a.verdict for a in judge.attacks] == ["vulnerable"] * 3


# --------------------------------------------------------------------------- using an audit

def audit_of(provider: str, model: str, sha: str, verdicts: dict[str, str]) -> AuditFile:
    attacks = [AttackResult(name, name, "up", v, 10, delta=1.0, ci95=[0.6, 1.4]) for name, v in verdicts.items()]
    return AuditFile(run="old.json", sample=10, sampled=10, seed=0, attacks=list(verdicts), calls_per_row=2,
                     judges=[JudgeAudit(f"{provider}/{model}", provider, model, sha, attacks=attacks)])


def test_notes_say_vulnerable_and_when_the_audit_was_of_another_judge_or_prompt():
    judge = JudgeInfo("anthropic", "claude-x", PROMPT_SHA256)
    vulnerable = audit_of("anthropic", "claude-x", PROMPT_SHA256, {"keyword-stuffing": "vulnerable"})
    assert audit_notes(vulnerable, judge) == [
        "judge anthropic/claude-x is vulnerable to keyword-stuffing (judge audit old.json): a retrieval can raise its "
        "grades without answering better"]
    assert audit_notes(audit_of("anthropic", "claude-x", PROMPT_SHA256, {"keyword-stuffing": "robust"}), judge) == []
    other_prompt = audit_notes(audit_of("anthropic", "claude-x", "0" * 64, {"keyword-stuffing": "robust"}), judge)
    assert len(other_prompt) == 1 and "another grading prompt" in other_prompt[0]
    other_model = audit_notes(audit_of("anthropic", "claude-y", PROMPT_SHA256, {}), judge)
    assert len(other_model) == 1 and "not with this run's judge anthropic/claude-x" in other_model[0]
    panel = JudgeInfo("panel", "anthropic/claude-x,anthropic/claude-y", PROMPT_SHA256, details={"judges": [
        {"name": "anthropic/claude-x", "judge": judge.to_json()},
        {"name": "anthropic/claude-y", "judge": JudgeInfo("anthropic", "claude-y", PROMPT_SHA256).to_json()}]})
    notes = audit_notes(vulnerable, panel)  # each judge of the panel: one vulnerable, one not audited
    assert len(notes) == 2 and "claude-x is vulnerable" in notes[0]
    assert "this run's judge anthropic/claude-y" in notes[1]


def test_a_file_without_a_status_reads_as_its_stop_and_an_unknown_status_is_refused(tmp_path: Path):
    doc = audit_of("offline", "lexical-idf-v1", PROMPT_SHA256, {}).to_json()
    del doc["status"]  # as written before the status: only --max-cost stopped an audit early
    (tmp_path / "old.json").write_text(json.dumps({**doc, "stopped": "budget: --max-cost $0.01 reached"}))
    assert read_audit(tmp_path / "old.json").status == "budget_exhausted"
    (tmp_path / "done.json").write_text(json.dumps(doc))
    assert read_audit(tmp_path / "done.json").status == "completed"
    (tmp_path / "bad.json").write_text(json.dumps({**doc, "status": "exploded"}))
    with pytest.raises(InputError, match="status 'exploded' is not one the audit writes"):
        read_audit(tmp_path / "bad.json")


def test_an_attack_the_registry_lacks_reads_and_a_malformed_name_is_refused(tmp_path: Path):
    """The file records each attack's name, family and direction: one of a plug-in not loaded now
    reads as written; a name that is no attack's form (lower-case words joined by '-') is refused."""
    doc = audit_of("offline", "lexical-idf-v1", PROMPT_SHA256, {"my-own-attack": "robust"}).to_json()
    assert "my-own-attack" not in registered_attacks()
    (tmp_path / "own.json").write_text(json.dumps(doc))
    assert [a.name for a in read_audit(tmp_path / "own.json").judges[0].attacks] == ["my-own-attack"]
    for bad in ("Bribery", "two words", "trailing-", ""):
        doc["judges"][0]["attacks"][0]["name"] = bad
        (tmp_path / "bad.json").write_text(json.dumps(doc))
        with pytest.raises(InputError, match=re.escape(f".attacks[0].name {bad!r} is not an attack's name")):
            read_audit(tmp_path / "bad.json")


def test_audit_on_a_run_and_on_report_warns(tmp_path: Path):
    audit_path = tmp_path / "audit.json"
    audit_of("offline", "lexical-idf-v1", PROMPT_SHA256, {"keyword-stuffing": "vulnerable"}).save(audit_path)
    out = tmp_path / "r.json"
    run = run_cli("--quick", "--output", str(out), "--audit", str(audit_path), env=clean_env())
    assert run.code == 0, run.stderr
    assert "warning: judge offline/lexical-idf-v1 is vulnerable to keyword-stuffing" in run.stdout
    html_path = tmp_path / "report.html"
    run = run_cli("report", str(out), "--audit", str(audit_path), "-o", str(html_path), env=clean_env())
    assert run.code == 0, run.stderr
    page = html_path.read_text()
    assert "<section id=judge-audit>" in page and "vulnerable to keyword-stuffing" in page
    assert "is vulnerable to keyword-stuffing" in run.stderr
    (tmp_path / "bad.json").write_text(json.dumps({"format": "something else"}))
    run = run_cli("report", str(out), "--audit", str(tmp_path / "bad.json"), "-o", str(html_path), env=clean_env())
    assert run.code == 2 and "not a judge audit file" in run.stderr


def test_a_one_pair_attack_keeps_the_table_aligned_and_the_profile_says_nothing_it_cannot_know():
    from components.audit.table import audit_table
    from utils.records.audit_file import AttackResult, AuditFile, JudgeAudit

    one = AttackResult("keyword-stuffing", "keyword-stuffing", "up", "inconclusive", 1, delta=3.0, flips=0,
                       flip_rate=0.0)
    removal = AttackResult("answer-removal", "answer-removal", "down", "responds", 2, delta=-4.0, ci95=[-5.0, -3.0],
                           flips=1, flip_rate=50.0)
    judge = JudgeAudit("offline", "offline", "lexical-idf-v1", control_graded=2, control_mean=8.0,
                       attacks=[one, removal])
    table = audit_table(AuditFile("run.json", 2, 2, 0, ["keyword-stuffing", "answer-removal"], 3, [judge]))
    rows = table.splitlines()[3:5]
    assert rows[0] == ("  keyword-stuffing      up = fooled              1  +3.00 [no CI]           0/1 (0%)     "
                       "inconclusive")
    assert rows[1] == ("  answer-removal        down expected            2  -4.00 [-5.00, -3.00]    1/2 (50%)    "
                       "responds")
    # nothing vulnerable, but one attack undecided: no "vulnerable to none"
    assert judge.profile() == "inconclusive on keyword-stuffing; answer removal lowers its grade"
    decided = JudgeAudit("j", "p", "m", attacks=[removal, AttackResult("order-reversal", "order-reversal", "none",
                                                                        "robust", 2, delta=0.0, ci95=[0.0, 0.0])])
    assert decided.profile() == "vulnerable to none; robust to order-reversal; answer removal lowers its grade"


# --------------------------------------------------------------------------- two endpoints, one model id

def _host(url: str) -> str:
    return url.split("//", 1)[1].split("/", 1)[0]


def _two_endpoint_panel_run(tmp_path: Path, hosts: dict[str, str]) -> Path:
    """A panel run of "harsh" (3 on every row) and "kind" (9), both openai/gpt-4.1, at two endpoints."""
    rows = [replace(row(i), grades_by_judge={"harsh": JudgeGrade(3), "kind": JudgeGrade(9)}) for i in range(3)]
    members = [{"name": name, "provider": "openai", "model": "gpt-4.1", "base_url": f"http://{host}/v1",
                "judge": JudgeInfo("openai", "gpt-4.1", PROMPT_SHA256, details={"base_url_host": host}).to_json()}
               for name, host in hosts.items()]
    info = RunInfo(status="completed", strategy="test", id="two-endpoints",
                   judge=JudgeInfo("panel", "harsh,kind", PROMPT_SHA256, details={"judges": members}))
    path = tmp_path / "panel.json"
    RunResult(run=info, rows=rows, question_count=3).save(path)
    return path


def test_two_endpoints_serving_one_model_id_are_two_judges_in_the_audit(tmp_path: Path):
    """harsh answers 5 now (3 in the run), kind 8 (9 in the run): harsh's control_vs_run is |5 - 3| = 2 and
    kind's |8 - 9| = 1, each against its own grades; matched by model id alone, kind's would have been |8 - 3|.
    Named otherwise in the audit's panel file, the judges are matched by provider, model and endpoint."""
    from tests.loopback_openai import OpenAILoopback
    from tests.loopback_openai import Reply as OpenAIReply

    with OpenAILoopback(default=OpenAIReply(grade(5))) as harsh, OpenAILoopback(default=OpenAIReply(grade(8))) as kind:
        hosts = {"harsh": _host(harsh.url), "kind": _host(kind.url)}
        path = _two_endpoint_panel_run(tmp_path, hosts)
        for names in (("harsh", "kind"), ("h2", "k2")):
            panel = tmp_path / "judges.toml"
            panel.write_text("".join(f'[[judge]]\nname = "{name}"\nprovider = "openai"\nmodel = "gpt-4.1"\n'
                                     f'base_url = "{srv.url}"\napi_key_env = "AUDIT_KEY"\n\n'
                                     for name, srv in zip(names, (harsh, kind), strict=True)))
            out = tmp_path / "audit.json"
            run = run_cli("audit-judge", str(path), "--judges", str(panel), "--attacks", "order", "-o", str(out),
                          env=clean_env(AUDIT_KEY="sk-audit-0123456789abcdef"))
            assert run.code == 0, run.stderr
            audit = read_audit(out)
            assert [(j.name, j.control_mean, j.control_vs_run, j.base_url_host) for j in audit.judges] == [
                (names[0], 5.0, 2.0, hosts["harsh"]), (names[1], 8.0, 1.0, hosts["kind"])]
            # the console's judge line shows it
            assert f"judge {names[0]} (openai/gpt-4.1): " in run.stdout
            assert "control vs run: mean absolute difference 2.00 from its own grades in the run" in run.stdout


def test_the_notes_and_the_report_never_lend_one_judges_audit_to_another(tmp_path: Path):
    """An audit of harsh alone, vulnerable to keyword stuffing; the run's panel has harsh and kind, one model id
    at two endpoints: one vulnerability line (harsh's), and one line saying kind was not audited."""
    from components.report.audit import audit_section

    hosts = {"harsh": "127.0.0.1:8101", "kind": "127.0.0.1:8102"}
    result = RunResult.from_json(json.loads(_two_endpoint_panel_run(tmp_path, hosts).read_text()), "panel.json")
    attacks = [AttackResult("keyword-stuffing", "keyword-stuffing", "up", "vulnerable", 10, delta=1.0, ci95=[0.6, 1.4])]
    audit = AuditFile(run="panel.json", sample=10, sampled=10, seed=0, attacks=["keyword-stuffing"], calls_per_row=2,
                      judges=[JudgeAudit("harsh", "openai", "gpt-4.1", PROMPT_SHA256, attacks=attacks,
                                         base_url_host=hosts["harsh"])])
    notes = audit_notes(audit, result.run.judge)
    assert notes == [
        "judge harsh is vulnerable to keyword-stuffing (judge audit panel.json): a retrieval can raise its grades "
        "without answering better",
        "the judge audit panel.json was made with harsh (openai/gpt-4.1 at 127.0.0.1:8101), not with this run's "
        "judge kind (openai/gpt-4.1 at 127.0.0.1:8102): its verdicts may not hold for this judge (audit it: python "
        "benchmark.py audit-judge RUN)"]
    page = audit_section(audit, [result], ["panel"])
    assert page.count("is vulnerable to keyword-stuffing") == 1 and "not with this run&#x27;s judge kind" in page
    # by the name alone the audit's judge is found whatever its recorded endpoint
    renamed = replace(audit, judges=[replace(audit.judges[0], base_url_host=None)])
    assert sum("is vulnerable" in line for line in audit_notes(renamed, result.run.judge)) == 1
