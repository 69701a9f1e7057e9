"""Loading a BEIR ``corpus.jsonl`` against the same documents as a folder of Markdown files.

    python -m bench.beir_load [--docs 100000] [--repeat 5] [--seed 7] [--keep DIR]

Generates ``--docs`` seeded synthetic documents (a title of 2-6 words, a text of 20-300 words
drawn from a 5,000-word vocabulary with a Zipf-like law: about the size of a BEIR passage or
abstract) in a temporary folder, twice: as ``corpus.jsonl`` (one ``{"_id", "title", "text"}`` a
line) and as ``md/<id>.md`` files (``# title``, a blank line, the text: the cheapest Markdown page,
no front matter to parse). Then, each in a fresh process and ``--repeat`` times, alternating:

- ``load_corpus``: the documents (what a run without the index cache reads);
- ``fingerprint``: the index cache's ids and digest (what a run with the cache reads first).

Reported per format and step: the median, min and max wall time, and the median peak RSS of the
process (``ru_maxrss`` from ``os.wait4``) with the same process's RSS before loading (imports
done) beside it. Results on stdout and in ``bench/out/beir_load.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent

MEASURE = """
import json, resource, sys, time
from pathlib import Path
from loguru import logger
logger.remove()
from components.readers import load_corpus
from components.run.retrieval.index_cache import fingerprint
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t = time.perf_counter()
if sys.argv[2] == "load":
    n = len(load_corpus(Path(sys.argv[1])).documents)
else:
    n = len(fingerprint(Path(sys.argv[1])).doc_ids)
print(json.dumps({"s": time.perf_counter() - t, "documents": n, "rss_before_kb": before}))
"""


def generate(folder: Path, docs: int, seed: int) -> tuple[Path, Path]:
    rng = random.Random(seed)
    vocabulary = [f"w{i}" + "".join(rng.choice("aeioulmnrst") for _ in range(rng.randint(2, 7))) for i in range(5000)]
    weights = [1 / (r + 3) for r in range(len(vocabulary))]
    jsonl, md = folder / "corpus.jsonl", folder / "md"
    md.mkdir()
    with open(jsonl, "w", encoding="utf-8") as out:
        for i in range(docs):
            title = " ".join(rng.choices(vocabulary, weights, k=rng.randint(2, 6))).capitalize()
            words = rng.choices(vocabulary, weights, k=rng.randint(20, 300))
            text = " ".join(words) + "."
            doc_id = f"doc{i:06d}"
            out.write(json.dumps({"_id": doc_id, "title": title, "text": text}) + "\n")
            (md / f"{doc_id}.md").write_text(f"# {title}\n\n{text}\n", encoding="utf-8")
    return jsonl, md


def measure_rss(path: Path, step: str) -> dict:
    """One measurement, with the child's peak RSS from ``os.wait4``."""
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1"}
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: exec the measurement with stdout on the pipe
        os.close(r)
        os.dup2(w, 1)
        os.chdir(ROOT)
        os.execve(sys.executable, [sys.executable, "-c", MEASURE, str(path), step], env)
    os.close(w)
    with os.fdopen(r) as fh:
        out = fh.read()
    _, status, usage = os.wait4(pid, 0)
    if status != 0:
        raise RuntimeError(f"{path} {step} exited with status {status}")
    row = json.loads(out)
    row["peak_rss_mb"] = usage.ru_maxrss / 1024
    row["rss_before_mb"] = row.pop("rss_before_kb") / 1024
    return row


def summary(rows: list[dict]) -> dict:
    seconds = [r["s"] for r in rows]
    return {"median_s": round(statistics.median(seconds), 3), "min_s": round(min(seconds), 3),
            "max_s": round(max(seconds), 3),
            "median_peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in rows), 1),
            "median_rss_before_mb": round(statistics.median(r["rss_before_mb"] for r in rows), 1),
            "documents": rows[0]["documents"], "n": len(rows)}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=5)
    p.add_argument("--seed", type=int, default=7)
    p.add_argument("--keep", type=Path, default=None, help="generate into this folder and keep it")
    args = p.parse_args(argv)
    folder = args.keep or Path(tempfile.mkdtemp(prefix="beir-load-"))
    folder.mkdir(parents=True, exist_ok=True)
    try:
        t = time.perf_counter()
        jsonl, md = generate(folder, args.docs, args.seed)
        print(f"generated {args.docs:,} documents in {time.perf_counter() - t:.1f}s: {jsonl} "
              f"({jsonl.stat().st_size / 1e6:.1f} MB) and {md}/", flush=True)
        results: dict[str, dict[str, list[dict]]] = {"jsonl": {"load": [], "fingerprint": []},
                                                     "markdown": {"load": [], "fingerprint": []}}
        for _ in range(args.repeat):
            for step in ("load", "fingerprint"):
                for name, path in (("jsonl", jsonl), ("markdown", md)):
                    results[name][step].append(measure_rss(path, step))
        table = {name: {step: summary(rows) for step, rows in steps.items()} for name, steps in results.items()}
        print(f"\n{'format':<10}{'step':<13}{'median s':>10}{'min s':>8}{'max s':>8}{'peak RSS MB':>13}"
              f"{'RSS before':>12}")
        for name, steps in table.items():
            for step, s in steps.items():
                print(f"{name:<10}{step:<13}{s['median_s']:>10.3f}{s['min_s']:>8.3f}{s['max_s']:>8.3f}"
                      f"{s['median_peak_rss_mb']:>13.1f}{s['median_rss_before_mb']:>12.1f}")
        out = ROOT / "bench" / "out"
        out.mkdir(parents=True, exist_ok=True)
        (out / "beir_load.json").write_text(json.dumps({"docs": args.docs, "repeat": args.repeat, "seed": args.seed,
                                                        "results": table}, indent=2) + "\n")
        print(f"\n{args.repeat} runs each; written to {out / 'beir_load.json'}")
    finally:
        if args.keep is None:
            shutil.rmtree(folder, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
