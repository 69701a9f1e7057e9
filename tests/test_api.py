"""The Python API (components.api): a retriever object in, a typed result out; the registries of
metrics and judge providers; the one typed results reader and its JSON Schema."""

from __future__ import annotations

import json
import math
import os
import re
from pathlib import Path

import pytest

from components import api
from components.core import Document, ScoredChunk
from components.judges.providers import ModelChoice, Provider, Variable, register_provider, unregister_provider
from components.judges.providers.scripted import Script, reply
from tests.conftest import ROOT, loguru_messages
from utils import metrics as registry
from utils.errors import InputError
from utils.results import RunResult, load_run
from utils.records.schema import json_schema

DOCS = [Document("apples", "Apples", "# Apples\n\nApples are red or green fruit that grow on trees."),
        Document("boats", "Boats", "# Boats\n\nA boat floats on water and is moved by sails or engines."),
        Document("clocks", "Clocks", "# Clocks\n\nA clock tells the time with hands or digits.")]
QUESTIONS = [{"id": "q1", "question": "What colour are apples?", "expected_answer": "Apples are red or green.",
              "needle_doc_id": "apples", "category": "food"},
             {"id": "q2", "question": "How does a boat move?", "expected_answer": "Sails or engines move a boat.",
              "needle_doc_id": "boats", "category": "things"},
             {"id": "q3", "question": "What tells the time?", "expected_answer": "A clock tells the time.",
              "needle_doc_id": "clocks", "category": "things"}]


class KeywordRetriever:
    """A retriever a user writes in a notebook cell: chunks sharing most words with the query first."""

    def index(self, chunks):
        self.chunks = list(chunks)

    def retrieve(self, query, k):
        words = set(re.findall(r"\w+", query.lower()))
        scored = [(len(words & set(re.findall(r"\w+", c.index_text.lower()))), i) for i, c in enumerate(self.chunks)]
        return [ScoredChunk(self.chunks[i], float(s)) for s, i in sorted(scored, key=lambda x: (-x[0], x[1]))[:k]]


def test_evaluate_takes_a_retriever_object_and_returns_a_typed_result(tmp_path, capsys, monkeypatch, quiet_library):
    monkeypatch.chdir(tmp_path)
    seen = []
    result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=2, judge="offline",
                          on_row=lambda row, i, n: seen.append((row.question_id, i, n)))
    assert isinstance(result, RunResult) and [r.question_id for r in result.rows] == ["q1", "q2", "q3"]
    assert seen == [("q1", 1, 3), ("q2", 2, 3), ("q3", 3, 3)]  # in question order, as they finish
    assert result.run.strategy == "KeywordRetriever" and result.run.k == 2 and result.run.judge.provider == "offline"
    assert [r.rank for r in result.rows] == [1, 1, 1] and result.metrics["mrr"] == 1.0
    assert result.metrics["hit_at_1_rate"] == 100.0 and result.ci95["mrr"] == [1.0, 1.0]
    assert set(result.groups["category"]) == {"food", "things"}
    assert list(tmp_path.iterdir()) == []  # it wrote nothing
    out = capsys.readouterr()
    assert out.out == "" and out.err == ""  # and printed nothing
    path = result.save(tmp_path / "run.json")
    assert load_run(path) == RunResult.from_json(json.loads(path.read_text()), str(path))
    assert load_run(path).to_json() == result.to_json()  # the reader reads what the writer wrote


def test_evaluate_stops_when_asked():
    calls = []

    def stop():
        calls.append(1)
        return len(calls) > 2

    result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline", should_stop=stop)
    assert result.run.status == "interrupted" and len(result.rows) < 3


def test_evaluate_refuses_bad_input_with_one_line():
    with pytest.raises(InputError, match="not a retriever"):
        api.evaluate(object(), QUESTIONS, DOCS, judge="offline")
    with pytest.raises(InputError, match="needle 'nowhere' is not a document of the corpus"):
        api.evaluate(KeywordRetriever(), [dict(QUESTIONS[0], needle_doc_id="nowhere")], DOCS, judge="offline")


# ---- the metric registry: one spec and one formula, seen everywhere

def test_a_registered_metric_is_in_the_results_compare_report_and_console():
    spec = registry.Metric("hit_at_2_rate", "hit@2", "chunk", "percent",
                           lambda row, k: 100.0 if row.rank is not None and row.rank <= 2 else 0.0, 1, 5.0,
                           "share of questions whose needle chunk is in the top 2")
    registry.register_metric(spec)
    try:
        a = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, k=3, judge="offline")
        b = api.evaluate("baseline", QUESTIONS, DOCS, k=3, judge="offline")
        assert a.metrics["hit_at_2_rate"] == 100.0 and a.ci95["hit_at_2_rate"] == [100.0, 100.0]
        assert a.groups["category"]["things"]["hit_at_2_rate"] == 100.0
        assert RunResult.from_json(a.to_json()).metrics["hit_at_2_rate"] == 100.0
        comparison = api.compare([a, b])
        assert "hit_at_2_rate" in [m.metric for m in comparison.comparisons[0].metrics]
        assert "hit@2" in str(comparison)
        assert ">hit@2</th>" in api.report([a, b])
        from utils.console import summary_table

        assert re.search(r"^hit@2 +100\.0% \[100\.0, 100\.0\]$", summary_table(a, proxy=True), re.M)
        from components.run.benchmark_run import log_metrics

        with loguru_messages("INFO") as lines:
            log_metrics(a)
        assert "METRIC hit_at_2_rate=100 %" in lines
    finally:
        registry.unregister_metric("hit_at_2_rate")
    assert "hit_at_2_rate" not in api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline").metrics


def test_metrics_are_stateless_with_documented_empty_input():
    for m in registry.metrics():
        assert m.aggregate([], 5) == m.empty, m.key  # rates and means over all questions: 0.0; over graded: None


# ---- the provider registry: a provider is one module, its secrets redacted

class FakeProvider(Provider):
    name = "fake"
    label = "a scripted judge for tests"
    variables = (Variable("FAKE_JUDGE_KEY", "the fake judge's key", secret=True),)
    default_models = {"judge": "scripted-1"}

    @classmethod
    def configure(cls, env, models):
        if not env.get("FAKE_JUDGE_KEY"):
            raise InputError("the fake judge needs FAKE_JUDGE_KEY: set it")
        return env["FAKE_JUDGE_KEY"]

    def check_model(self, role, model, *, effort=None):
        return ModelChoice(self.name, role, model, {"temperature": 0})

    def model(self, choice):
        return Script(then=reply(f'{{"grade": 9, "reasoning": "all there ({self.config})"}}', input_tokens=10,
                                 output_tokens=5, cost_usd=0.001), model="scripted-1")


def test_a_provider_added_through_the_registry_grades_and_its_secret_is_redacted(tmp_path, monkeypatch):
    register_provider(FakeProvider)
    try:
        key = "fake-secret-7f3a9c2e11"
        monkeypatch.setenv("FAKE_JUDGE_KEY", key)
        assert key in api.Settings.from_env(dict(os.environ)).secrets  # declared secret → redaction
        result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="fake/scripted-1")
        assert [r.llm_grade for r in result.rows] == [9, 9, 9]
        judge = result.to_json()["run"]["judge"]
        assert (judge["provider"], judge["model"], judge["temperature"]) == ("fake", "scripted-1", 0)
        assert result.run.cost_usd == pytest.approx(0.003)
        result.save(tmp_path / "r.json", secrets=api.Settings.from_env(dict(os.environ)).secrets)
        text = (tmp_path / "r.json").read_text()
        assert key not in text and "[REDACTED]" in text
        monkeypatch.delenv("FAKE_JUDGE_KEY")
        with pytest.raises(InputError, match="needs FAKE_JUDGE_KEY"):
            api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="fake")
    finally:
        unregister_provider("fake")


def test_a_providers_packages_are_recorded_with_their_versions():
    class Packaged(FakeProvider):
        name = "packaged"
        packages = ("pytest",)

    register_provider(Packaged)
    try:
        result = api.evaluate(KeywordRetriever(), QUESTIONS[:1], DOCS, judge="offline")
    finally:
        unregister_provider("packaged")
    assert result.run.packages["pytest"] == pytest.__version__
    assert {"anthropic", "openai"} <= set(result.run.packages)  # the built-in providers declare theirs


VENDOR_WORDS = re.compile(r"anthropic|openai|claude|sonnet|haiku|\bopus\b|\bgpt-", re.I)


def test_no_code_outside_the_provider_modules_names_a_vendor():
    """Messages, settings and records name vendors only through the provider registry (docstrings
    and comments may explain): a string literal outside components/judges/providers/ that names one
    would be wrong as soon as another provider is the judge."""
    import ast

    files = [p for folder in ("components", "utils", "poc") for p in (ROOT / folder).rglob("*.py")
             if "providers" not in p.relative_to(ROOT).parts] + [ROOT / "benchmark.py"]
    found = []
    for path in files:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                      if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                      and node.body and isinstance(node.body[0], ast.Expr)
                      and isinstance(node.body[0].value, ast.Constant)}
        found += [f"{path.relative_to(ROOT)}:{node.lineno}: {node.value[:60]!r}" for node in ast.walk(tree)
                  if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings
                  and VENDOR_WORDS.search(node.value)]
    assert found == []


def test_save_redacts_the_environments_secrets_without_being_told(tmp_path, monkeypatch):
    """``result.save(path)`` from a notebook is the same redacted write as the command line's: a key
    of a registered provider in the environment never reaches the file, even when no secrets are passed."""
    register_provider(FakeProvider)
    try:
        key = "fake-secret-5d1e88b0c4"
        monkeypatch.setenv("FAKE_JUDGE_KEY", key)
        leaky = [dict(QUESTIONS[0], note=f"pasted by mistake: {key}")]
        result = api.evaluate(KeywordRetriever(), leaky, DOCS, judge="offline")
        assert result.rows[0].extra["note"].endswith(key)  # in memory the row is as given
        text = result.save(tmp_path / "r.json").read_text()
        assert key not in text and "pasted by mistake: [REDACTED]" in text
    finally:
        unregister_provider("fake")


# ---- the one reader

def _results(tmp_path: Path) -> dict:
    result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="offline")
    return result.to_json()


HOSTILE = [  # (name, change to a valid results dict, words of the one error line)
    ("rank-as-string", lambda d: d["results"][0].update(rank="1"), "results[0].rank is a string"),
    ("grade-as-string", lambda d: d["results"][1].update(llm_grade="9"), "results[1].llm_grade is a string"),
    ("id-as-number", lambda d: d["results"][0].update(question_id=7), "results[0].question_id is a number"),
    ("list-for-object", lambda d: d.update(run=[1, 2]), "run is a list, not an object"),
    ("retrieved-malformed", lambda d: d["results"][0].update(retrieved=[{"rank": 1}]), "has no doc_id"),
    ("metric-as-string", lambda d: d.update(mrr="high"), "mrr is a string"),
    ("no-results", lambda d: d.pop("results"), 'not a results file (no "results" list)'),
    ("newer-schema", lambda d: d.update(schema_version=99), "upgrade the benchmark"),
    ("lone-surrogate", lambda d: d["results"][0].update(question="\ud800"), "lone surrogate"),
]


@pytest.mark.parametrize("change,words", [h[1:] for h in HOSTILE], ids=[h[0] for h in HOSTILE])
def test_hostile_results_are_refused_with_one_line(tmp_path, change, words):
    data = _results(tmp_path)
    change(data)
    with pytest.raises(InputError, match=re.escape(words)) as err:
        RunResult.from_json(data, "r.json")
    assert "\n" not in str(err.value) and str(err.value).startswith("r.json")


@pytest.mark.parametrize("text,words", [
    ('{"results": [], "mrr": NaN}', "NaN is not a JSON number"),
    ('{"results": [], "mrr": Infinity}', "Infinity is not a JSON number"),
    ('{"results": [], "x": ' + "1" * 5000 + "}", "digits"),
    ('{"results": [], "x": ' + "[" * 200_000 + "]" * 200_000 + "}", "nested too deeply"),
    ('{"results": [], "x": ' + "[" * 100 + "]" * 100 + "}", "nested more than 64 levels"),
    ("\ufeff" + '{"results": []}', None),  # a BOM is accepted
])
def test_files_that_are_not_strict_json(tmp_path, text, words):
    path = tmp_path / "r.json"
    path.write_text(text, encoding="utf-8")
    if words is None:
        assert load_run(path).rows == []
        return
    with pytest.raises(InputError, match=re.escape(words)):
        load_run(path)


def test_only_regular_files_are_read(tmp_path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    for path, words in ((fifo, "not a regular file"), (Path("/dev/zero"), "not a regular file"),
                        (tmp_path, "is a folder"), (tmp_path / "missing.json", "no such results file")):
        with pytest.raises(InputError, match=words):
            load_run(path)


# ---- the JSON Schema

def test_the_shipped_schema_is_the_records_and_real_output_follows_it(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    shipped = json.loads((ROOT / "docs" / "results.schema.json").read_text())
    assert shipped == json_schema(), "regenerate docs/results.schema.json (see docs/results.md)"
    data = _results(tmp_path)
    jsonschema.validate(data, shipped)
    data["results"][0]["rank"] = "first"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(data, shipped)


# ---- the README's API section runs as written

def test_readme_api_section_runs(tmp_path, monkeypatch):
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    section = text[text.index("## Use it from Python"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    (tmp_path / "questions.json").write_bytes((ROOT / "questions.json").read_bytes())
    monkeypatch.chdir(tmp_path)
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102 - the README's own example
    assert isinstance(namespace["result"], RunResult) and math.isfinite(namespace["result"].metrics["mrr"])
    assert load_run(tmp_path / "mine.json").metrics == namespace["result"].metrics


def test_a_run_whose_server_sent_no_usage_says_so():
    class SilentProvider(FakeProvider):
        name = "silent"

        def model(self, choice):
            return Script(then='{"grade": 7, "reasoning": "ok"}', model="scripted-1")  # no usage, no cost

    register_provider(SilentProvider)
    try:
        os.environ["FAKE_JUDGE_KEY"] = "k-1234567"
        result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="silent/scripted-1")
    finally:
        os.environ.pop("FAKE_JUDGE_KEY", None)
        unregister_provider("silent")
    assert result.run.cost_usd is None and result.run.usage["judge"]["unreported"] == 3
    assert "the server sent no token usage for 3 judge call(s)" in result.run.cost_note
