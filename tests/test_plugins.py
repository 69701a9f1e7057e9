"""The one plug-in route (components/plugins.py): a module named by BENCHMARK_PLUGINS (or an installed
entry point of retrieval_benchmark.plugins) registers a metric, a judge provider, an input reader, a
strategy or an audit attack, and the command line then uses it; the older routes go through it."""

from __future__ import annotations

import csv
import json
import re
import sys
from pathlib import Path

import pytest

from components.core import plugins
from components.core.strategies import strategies, unregister_strategy
from components.judges.providers.scripted import play
from tests.conftest import clean_env, run_cli
from tests.test_judge_audit import robust_judge, row, run_file
from utils.records.audit_file import read_audit

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def plugin(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """``write(name, code)``: the module ``name`` in a folder on the import path; gone from
    ``sys.modules`` afterwards (the command line's run puts the registries back itself)."""
    folder = tmp_path / "plugins"
    folder.mkdir()
    monkeypatch.syspath_prepend(str(folder))
    written: list[str] = []

    def write(name: str, code: str) -> str:
        (folder / f"{name}.py").write_text(code, encoding="utf-8")
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def example(page: str, module: str) -> str:
    """The code block of docs/``page`` that starts ``# module.py``: the page's example plug-in."""
    text = (ROOT / "docs" / page).read_text(encoding="utf-8")
    return re.search(rf"```python\n(# {re.escape(module)}\.py.*?)```", text, re.S).group(1)


def test_a_metric_from_a_plugin_is_in_the_results_and_the_summary(plugin, tmp_path: Path):
    """docs/metrics.md's example plug-in: hit@2 is in the results, as the share of ranks 1-2 of its rows."""
    name = plugin("plugin_hit2", example("metrics.md", "my_metrics"))
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline", "--quick", "--output", str(out), env=clean_env(BENCHMARK_PLUGINS=name))
    assert run.code == 0, run.stderr
    doc = json.loads(out.read_text())
    ranks = [r["rank"] for r in doc["results"]]
    expected = 100.0 * sum(1 for rank in ranks if rank is not None and rank <= 2) / len(ranks)
    assert doc["hit_at_2_rate"] == pytest.approx(expected, abs=0.05) and 0 < expected < 100
    assert re.search(r"^hit@2 ", run.stdout + run.stderr, re.M), run.stdout
    from utils.metrics import METRICS

    assert "hit_at_2_rate" not in METRICS  # registered for the run only


def test_a_provider_from_a_plugin_grades_the_run(plugin, tmp_path: Path):
    """docs/judges.md's example plug-in: its judge grades every question 9."""
    name = plugin("plugin_constant_judge", example("judges.md", "my_judge"))
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline", "--quick", "--output", str(out),
                  env=clean_env(BENCHMARK_PLUGINS=name, BENCHMARK_JUDGE="constant"))
    assert run.code == 0, run.stderr
    doc = json.loads(out.read_text())
    assert (doc["run"]["judge"]["provider"], doc["run"]["judge"]["model"]) == ("constant", "constant-1")
    assert doc["results"] and {r["llm_grade"] for r in doc["results"]} == {9}


def test_the_older_provider_variable_is_the_same_route(plugin, tmp_path: Path):
    name = plugin("plugin_constant_judge_old", example("judges.md", "my_judge"))
    assert plugins.named_modules({"BENCHMARK_PROVIDERS": f" {name} ,", "BENCHMARK_PLUGINS": "a,b"}) == [
        ("BENCHMARK_PLUGINS", "a"), ("BENCHMARK_PLUGINS", "b"), ("BENCHMARK_PROVIDERS", name)]
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline", "--quick", "--limit", "2", "--output", str(out),
                  env=clean_env(BENCHMARK_PROVIDERS=name, BENCHMARK_JUDGE="constant"))
    assert run.code == 0, run.stderr
    assert {r["llm_grade"] for r in json.loads(out.read_text())["results"]} == {9}


def test_a_reader_from_a_plugin_reads_the_corpus(plugin, tmp_path: Path):
    """The example reader of docs/formats.md ("Add an input format"), as a plug-in module."""
    name = plugin("plugin_csv_reader", example("formats.md", "csv_reader"))
    docs = tmp_path / "docs.csv"
    with open(docs, "w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([("id", "title", "text"), ("apples", "Apples", "Apples are red or green fruit."),
                                  ("boats", "Boats", "A boat floats on water and is moved by sails.")])
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps([{"id": "q1", "question": "How does a boat move on water?",
                                      "expected_answer": "By sails.", "needle_doc_id": "boats"}]))
    out = tmp_path / "r.json"
    run = run_cli("--strategy", "baseline", "--corpus", str(docs), "--questions", str(questions), "--output",
                  str(out), env=clean_env(BENCHMARK_PLUGINS=name))
    assert run.code == 0, run.stderr
    doc = json.loads(out.read_text())
    assert doc["run"]["corpus"]["documents"] == 2 and doc["results"][0]["rank"] == 1


def test_a_plugin_attack_runs_in_audit_judge_and_file_and_report_show_it_without_the_plugin(plugin, tmp_path: Path):
    """docs/judges.md's example plug-in, shouting. The robust judge grades 8 when a chunk says "The
    <key> key in <file>", else 2: in capitals it does not, so every one of the 10 pairs is 8 → 2:
    Δ -6.0, interval [-6, -6], below -0.5: a change where none is expected, vulnerable."""
    name = plugin("plugin_shouting", example("judges.md", "my_attacks"))
    path = run_file(tmp_path, [row(i) for i in range(10)])
    out = tmp_path / "audit.json"
    with play(robust_judge):
        run = run_cli("audit-judge", str(path), "--attacks", "shouting,removal", "-o", str(out),
                      env=clean_env(BENCHMARK_PLUGINS=name, BENCHMARK_JUDGE="scripted"))
    assert run.code == 0, run.stderr
    assert re.search(r"^  shouting +no change expected +10 +-6\.00 \[-6\.00, -6\.00\].* vulnerable$", run.stdout,
                     re.M), run.stdout
    audit = read_audit(out)  # the plug-in is gone (the run put the registry back): the file reads as it is
    assert audit.attacks == ["answer-removal", "shouting"] and audit.calls_per_row == 3
    shouting = audit.judges[0].attacks[1]
    assert (shouting.name, shouting.attack, shouting.direction, shouting.pairs, shouting.delta, shouting.verdict) == (
        "shouting", "shouting", "none", 10, -6.0, "vulnerable")
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads(out.read_text()), json.loads((ROOT / "docs" / "audit.schema.json").read_text()))
    page = tmp_path / "report.html"
    reported = run_cli("report", str(path), "--audit", str(out), "-o", str(page), env=clean_env())
    assert reported.code == 0, reported.stderr
    assert ("<tr><th>shouting</th><td>none</td><td class=num>10</td><td class=num>-6.00 [-6.00, -6.00]</td>"
            "<td class=num>10/10</td><td class=bad>vulnerable</td></tr>") in page.read_text()
    sys.modules.pop(name)  # imported afresh, as by a new process: it registers again
    helped = run_cli("audit-judge", "--help", env=clean_env(BENCHMARK_PLUGINS=name))
    assert re.search(r"^attacks: keyword-stuffing, .*, shouting \(or stuffing", helped.stdout, re.M), helped.stdout


def test_an_installed_entry_point_is_loaded_and_read_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A distribution's entry point of the group names a module, whose import registers a strategy."""
    (tmp_path / "plugin_entry_strategy.py").write_text(
        "from components.core.strategies import Strategy, register_strategy, strategies\n\n"
        "register_strategy(Strategy('from-entry-point', strategies()['baseline'].factory))\n")
    info = tmp_path / "plugin_entry-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: plugin-entry\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{plugins.GROUP}]\nmine = plugin_entry_strategy\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    plugins.entry_points.cache_clear()
    try:
        assert ("mine", "plugin_entry_strategy", "plugin-entry") in plugins.entry_points()
        assert "plugin_entry_strategy" in plugins.load_plugins({})
        assert "from-entry-point" in strategies()
    finally:
        unregister_strategy("from-entry-point")
        sys.modules.pop("plugin_entry_strategy", None)
        plugins.entry_points.cache_clear()


def test_a_plugin_that_does_not_import_is_one_line_and_exit_2(plugin, tmp_path: Path):
    broken = plugin("plugin_broken", "raise RuntimeError('half written')\n")
    for env in ({"BENCHMARK_PLUGINS": "plugin_no_such_module"}, {"BENCHMARK_PLUGINS": broken},
                {"BENCHMARK_PROVIDERS": broken}):
        run = run_cli("--quick", "--output", str(tmp_path / "r.json"), env=clean_env(**env))
        errors = [line for line in run.stderr.splitlines() if "error:" in line]
        variable, module = next(iter(env.items()))
        assert run.code == 2 and len(errors) == 1, run.stderr
        assert f"{variable}={module}: cannot import {module!r}" in errors[0], errors
        assert not (tmp_path / "r.json").exists()
    assert "half written" in errors[0]


def test_the_api_loads_the_plugins_of_the_environment(plugin, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """compare() in components.api imports BENCHMARK_PLUGINS' modules first: the plug-in's metric is compared."""
    from components import api
    from utils.metrics import unregister_metric

    name = plugin("plugin_hit2_api", example("metrics.md", "my_metrics"))
    path = run_file(tmp_path, [row(i, rank=1 + i % 3) for i in range(9)])
    monkeypatch.setenv("BENCHMARK_PLUGINS", name)
    try:
        comparison = api.compare([path, path])
        assert "hit_at_2_rate" in [m.metric for m in comparison.comparisons[0].metrics]
        assert re.search(r"^hit@2 .*66\.7", str(comparison), re.M), str(comparison)  # ranks 1, 2 of 1, 2, 3: 6 of 9
    finally:
        unregister_metric("hit_at_2_rate")
