"""One safe file name for a strategy: the results file beside --output and the run's file under runs/."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from components.run.file_names import MAX_NAME, strategy_file_name, strategy_file_names, strategy_results_path
from tests.conftest import run_cli

PLUGIN = '''
from components.core import ScoredChunk


class Overlap:
    def index(self, chunks):
        self.chunks = list(chunks)

    def retrieve(self, query, k):
        words = set(query.lower().split())
        scored = [ScoredChunk(c, float(len(words & set(c.index_text.lower().split())))) for c in self.chunks]
        return sorted(scored, key=lambda s: s.score, reverse=True)[:k]


def make_tfidf():
    return Overlap()
'''


@pytest.mark.parametrize("strategy, name", [
    ("my_rets:make_tfidf", "my_rets-make_tfidf"),
    ("pkg.mod:factory", "pkg.mod-factory"),
    ("baseline", "baseline"),
    ("../../etc/passwd", "etc-passwd"),  # no folder, no parent
    ("..", "strategy"),
    ("/", "strategy"),
    ("", "strategy"),
    (".hidden", "hidden"),  # no hidden file
    ("-rf", "rf"),  # nothing a shell reads as an option
    ("a b\tc\nd", "a-b-c-d"),
    ("nul\x00byte", "nul-byte"),
    ("模型:检索", "strategy"),
    ("café:make", "caf-make"),
    ("C:\\dir\\x", "C-dir-x"),
])
def test_a_strategy_name_becomes_one_safe_file_name(strategy: str, name: str):
    assert strategy_file_name(strategy) == name
    assert strategy_results_path(Path("out/benchmark_results.json"), name) == \
        Path(f"out/benchmark_results.{name}.json")


def test_a_long_name_is_cut_and_kept_apart():
    a, b = "x" * 300 + ":a", "x" * 300 + ":b"
    assert len(strategy_file_name(a)) == MAX_NAME and strategy_file_name(a) != strategy_file_name(b)
    assert len(f"20261127T021757Z_{strategy_file_name(a)}.journal.jsonl".encode()) < 255  # one file name's limit


def test_names_that_meet_are_kept_apart():
    assert strategy_file_names(["a:b", "a/b", "a-b-2", "a b"]) == ["a-b", "a-b-2", "a-b-2-2", "a-b-3"]


def test_a_plugin_strategy_uses_the_same_safe_name_for_its_results_file_and_runs(tmp_path: Path):
    """``--strategy my_rets:make_tfidf,baseline``: the colon is in neither file name, and both files
    of the plug-in use the same name."""
    (tmp_path / "my_rets.py").write_text(PLUGIN)
    done = run_cli("--strategy", "my_rets:make_tfidf,baseline", "--limit", "2", "--output", str(tmp_path / "r.json"),
                   cwd=tmp_path)
    assert done.code == 0, done.stderr[-2000:]
    beside = sorted(p.name for p in tmp_path.glob("r.*.json"))
    assert beside == ["r.baseline.json", "r.my_rets-make_tfidf.json"]
    history = sorted(p.name for p in (tmp_path / "runs").glob("*.json") if not p.name.endswith("_comparison.json"))
    assert sorted(h.split("_", 1)[1] for h in history) == ["baseline.json", "my_rets-make_tfidf.json"]
    assert not list(tmp_path.rglob("*:*"))
    plugin = json.loads((tmp_path / "r.my_rets-make_tfidf.json").read_text())
    assert plugin["run"]["strategy"] == "my_rets:make_tfidf"  # the name in the file stays the user's
    assert plugin["run"]["id"].endswith("_my_rets-make_tfidf")
