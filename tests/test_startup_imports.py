"""What the plain offline run imports: nothing heavy it does not use (scipy, the judges' SDKs, the
plotting library; wordllama only for a strategy with dense retrieval), and bm25s without scipy until
an index is built. Each check runs in a fresh interpreter (this one has imported everything)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from tests.conftest import ROOT, clean_env, run_cli

HEAVY = ("scipy", "anthropic", "openai", "httpx", "httpx2", "matplotlib", "wordllama")

RUNS = """
import json, os, sys
from benchmark import main
HEAVY = {heavy!r}
out = {{}}
for strategy in ("baseline", "modular-no-llm"):  # BM25 alone first: it must not load the dense model either
    code = main(["--strategy", strategy, "--quick", "--output", os.path.join({tmp!r}, strategy + ".json"),
                 "--log-dir", {tmp!r}], dict(os.environ))
    out[strategy] = {{"code": code, "heavy": sorted(m for m, v in sys.modules.items()
                                                  if v is not None and m.split(".")[0] in HEAVY)}}
with open(os.path.join({tmp!r}, "modules.json"), "w") as f:
    json.dump(out, f)
"""


def _python(code: str, tmp: Path) -> subprocess.CompletedProcess:
    env = clean_env(PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-c", code], cwd=tmp, env=env, capture_output=True, text=True, timeout=120)


def test_offline_run_imports_no_scipy_no_sdk(tmp_path):
    """A warm offline ``--quick`` run, as ``python benchmark.py`` runs it: no scipy (the sequential
    statistics and bm25s's index build import it when they run), no judge SDK, no plotting library;
    wordllama for the hybrid only."""
    for strategy in ("baseline", "modular-no-llm"):  # warm the index cache (built once a session)
        assert run_cli("--strategy", strategy, "--quick", "--output", str(tmp_path / "warm.json")).code == 0
    proc = _python(RUNS.format(heavy=HEAVY, tmp=str(tmp_path)), tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    runs = json.loads((tmp_path / "modules.json").read_text())
    assert runs["baseline"] == {"code": 0, "heavy": []}
    assert runs["modular-no-llm"]["code"] == 0
    heavy = {m.split(".")[0] for m in runs["modular-no-llm"]["heavy"]}
    assert heavy == {"wordllama"}, runs["modular-no-llm"]["heavy"]
    assert "index cache hit" in proc.stderr


BUILD = """
import json, sys
from utils.bm25s_loader import load_bm25s
bm25s = load_bm25s()
before = sorted(m for m in sys.modules if m.split(".")[0] == "scipy")
stopwords = "the" in bm25s.stopwords.STOPWORDS_EN
from components.core import Chunk
from poc.bm25 import BM25Retriever
texts = ["the quick brown fox jumps", "a lazy dog sleeps all day", "foxes and dogs are animals", "quick quick fox"]
chunks = [Chunk(f"d{i}", f"d{i}#0", "T", (), t, 0) for i, t in enumerate(texts)]
mine = BM25Retriever()
mine.index(chunks)
after = "scipy.sparse" in sys.modules and sys.modules["scipy.sparse"].__class__.__name__ == "module"
tokenizer = bm25s.tokenization.Tokenizer(stopwords="en", stemmer=mine._tokenizer.stemmer)
plain = bm25s.BM25(k1=1.5, b=0.75, csc_backend="numpy")
tokens = tokenizer.tokenize([c.index_text for c in chunks], return_as="tuple", show_progress=False)
plain.index(tokens, show_progress=False)
print(json.dumps({"before": before, "stopwords": stopwords, "after": after, "backend": mine._bm25.csc_backend,
                  "mine": mine.scores("quick fox").tolist(), "plain": plain.get_scores(["quick", "fox"]).tolist()}))
"""


def test_bm25s_without_scipy_until_an_index_is_built(tmp_path):
    """bm25s is imported without scipy (its stopwords too); building an index imports scipy.sparse
    then and gives the scores bm25s's numpy build gives."""
    proc = _python(BUILD, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["before"] == [] and out["stopwords"] is True
    assert out["after"] is True and out["backend"] == "scipy"
    assert out["mine"] == out["plain"]
    assert out["mine"][0] > 0 and out["mine"][1] == 0.0 and out["mine"][3] > out["mine"][0]  # a real index


FALLBACK = """
import json, sys
from utils.bm25s_loader import load_bm25s
bm25s = load_bm25s()
left = [m for m in ("scipy", "scipy.sparse") if type(sys.modules.get(m)).__name__ == "Deferred"]
print(json.dumps({"file": bm25s.__file__, "real": bm25s.csc_matrix.__module__, "stand_ins_left": left}))
"""


def test_a_bm25s_that_reads_scipy_while_imported_is_imported_the_ordinary_way(tmp_path):
    """A bm25s whose import reads scipy (not 0.2 or 0.3; a later one might): the stand-ins give way
    and it is imported again with the real scipy."""
    fake = tmp_path / "fake" / "bm25s"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("from scipy.sparse import csc_matrix\n")
    env = clean_env(PYTHONPATH=f"{tmp_path / 'fake'}:{ROOT}")
    proc = subprocess.run([sys.executable, "-c", FALLBACK], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert out["file"] == str(fake / "__init__.py")
    assert out["real"].startswith("scipy.sparse") and out["stand_ins_left"] == []
