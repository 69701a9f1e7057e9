"""Retrieval quality and speed on the Kubernetes question sets, next to the reference systems.

    python -m bench.retrieval [--strategies baseline modular-no-llm] [--sets FILE ...] [--json OUT]
    python -m bench.retrieval --corpus builtin --sets questions.json   # the built-in corpus, on any clone

The Kubernetes data set is expected in ``../shared/datasets/kubernetes`` beside the project (skipped
when absent); ``--corpus builtin`` reads the built-in corpus (the Python Language Reference).
Each strategy runs in its own process, so peak RSS (VmHWM) is that strategy's alone.
Rank = position of the first of the top 5 chunks whose doc id is the needle.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT.parent / "shared" / "datasets" / "kubernetes"
SETS = ["needle_questions.json", "needle_questions_adversarial.json", "informed_questions.json"]
BUILTIN = "builtin"  # --corpus builtin: the built-in corpus


def metrics(ranks: list[int | None]) -> dict:
    from utils.metrics import RetrievalMetrics as M

    rows = [{"rank": r} for r in ranks]
    return {"hit_at_1": M.calculate_hit_rate(rows, 1) / 100, "hit_at_5": M.calculate_hit_rate(rows, 5) / 100,
            "mrr": round(M.calculate_mrr(rows), 3)}


def peak_rss_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def one(strategy: str, corpus: Path, sets: list[Path]) -> dict:
    from components.core import resolve_strategy
    from components.core.chunking import chunk_corpus
    from components.readers import load_corpus, load_questions
    from utils.metrics import RetrievalMetrics as M

    t0 = time.perf_counter()
    docs = load_corpus(None if str(corpus) == BUILTIN else corpus)
    chunks = chunk_corpus(docs.documents)
    load_s = time.perf_counter() - t0
    retriever = resolve_strategy(strategy).factory()
    t1 = time.perf_counter()
    retriever.index(chunks)
    index_s = time.perf_counter() - t1
    out = {"strategy": strategy, "documents": len(docs.documents), "chunks": len(chunks),
           "load_and_chunk_s": round(load_s, 3), "index_s": round(index_s, 3), "sets": {}}
    latencies = []
    for path in sets:
        qset = load_questions(path)
        ranks = []
        for q in qset.questions:
            s = time.perf_counter()
            hits = retriever.retrieve(q.question, 5)
            latencies.append((time.perf_counter() - s) * 1000)
            ranks.append(M.calculate_rank(hits, q.needle_doc_ids))
        refs = {}
        for q in qset.questions:
            for system, rank in (q.extra.get("reference_ranks") or {}).items():
                refs.setdefault(system, []).append(rank)
        out["sets"][path.name] = {"ours": metrics(ranks),
                                  "reference": {s: metrics(r) for s, r in refs.items()}}
    latencies.sort()
    out["retrieve_ms_p50"] = round(statistics.median(latencies), 3)
    out["retrieve_ms_p95"] = round(latencies[int(0.95 * (len(latencies) - 1))], 3)
    out["peak_rss_mb"] = round(peak_rss_mb(), 1)
    return out


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--strategies", nargs="+", default=["baseline", "modular-no-llm"])
    p.add_argument("--sets", nargs="+", type=Path, default=[K8S / s for s in SETS])
    p.add_argument("--corpus", type=Path, default=K8S / "docs", help=f"a corpus folder, or {BUILTIN}")
    p.add_argument("--json", type=Path, default=ROOT / "bench" / "out" / "retrieval.json")
    p.add_argument("--one", help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.one:
        from loguru import logger

        logger.remove()
        print(json.dumps(one(args.one, args.corpus, args.sets)))
        return 0
    if str(args.corpus) != BUILTIN and not args.corpus.is_dir():
        print(f"skipped: {args.corpus} is absent", file=sys.stderr)
        return 0
    results = []
    for strategy in args.strategies:
        proc = subprocess.run([sys.executable, __file__, "--one", strategy, "--corpus", str(args.corpus), "--sets",
                               *(str(s.resolve()) for s in args.sets)], cwd=ROOT, capture_output=True, text=True,
                              check=True,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
        results.append(json.loads(proc.stdout))
    print(f"{'strategy':<22}{'set':<38}{'H@1':>6}{'H@5':>6}{'MRR':>7}")
    for r in results:
        for name, s in r["sets"].items():
            m = s["ours"]
            print(f"{r['strategy']:<22}{name:<38}{m['hit_at_1']:>6.2f}{m['hit_at_5']:>6.2f}{m['mrr']:>7.3f}")
    for name, s in results[0]["sets"].items():
        for system, m in s["reference"].items():
            print(f"{'ref:' + system:<22}{name:<38}{m['hit_at_1']:>6.2f}{m['hit_at_5']:>6.2f}{m['mrr']:>7.3f}")
    print(f"\n{'strategy':<16}{'docs':>6}{'chunks':>8}{'load+chunk s':>14}{'index s':>9}{'p50 ms':>8}{'p95 ms':>8}"
          f"{'peak MB':>9}")
    for r in results:
        print(f"{r['strategy']:<16}{r['documents']:>6}{r['chunks']:>8}{r['load_and_chunk_s']:>14.2f}"
              f"{r['index_s']:>9.2f}{r['retrieve_ms_p50']:>8.2f}{r['retrieve_ms_p95']:>8.2f}{r['peak_rss_mb']:>9.0f}")
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2))
    print(f"\nwritten: {args.json}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
