"""Corpus parsing speed: linear on hostile pages, and the Kubernetes corpus load time.

    python -m bench.parsing [--repeat 3] [--sizes 1000000 2000000 4000000]

1. Each hostile page of ``tests/test_input_bounds.py`` (the rows built from a 100,000-space run or
   a repeated unclosed construct), rebuilt at each size n, parsed and chunked in process: best of
   ``--repeat`` wall times. Linear time shows as a time that doubles when n doubles (ratio ~2);
   the regexes this replaced went quadratic (ratio 4) or cubic (ratio 8).
2. The Kubernetes corpus (``../shared/datasets/kubernetes/docs``): load + chunk, best of
   ``--repeat``; skipped when absent.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
K8S = ROOT.parent / "shared" / "datasets" / "kubernetes" / "docs"

# name → page of size ~n (the same constructs as the test table's rows)
PAGES = {
    "heading text-spaces-text": lambda n: "## a" + " " * n + "b\n\ntext",
    "anchor after spaces": lambda n: "## t" + " " * n + "{#id}\n\ntext",
    "anchor unclosed repeated": lambda n: "## t " + "{#" * (n // 2) + "\n\ntext",
    "shortcode open + spaces": lambda n: "{{<" + " " * n + "!",
    "shortcode unclosed repeated": lambda n: "{{< note a " * (n // 11),
    "link [ unclosed repeated": lambda n: "[" * n,
    "link target unclosed": lambda n: "[x](" + "a" * n,
    "comment unclosed repeated": lambda n: "<!--" * (n // 4),
    "front matter never closed": lambda n: "---\n" + "a: b\n" * (n // 5) + "body",
    "fence never closed": lambda n: "# T\n\n```\n" + "x y\n" * (n // 4),
}


def best_of(repeat: int, fn) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--sizes", type=int, nargs="+", default=[1_000_000, 2_000_000, 4_000_000])
    args = p.parse_args()

    from loguru import logger

    from components.core.chunking import chunk_document
    from components.readers import load_corpus
    from components.readers.markdown import parse_markdown

    logger.remove()
    rows = []
    for name, make in PAGES.items():
        pages = [make(n) for n in args.sizes]  # built before the timing
        times = [best_of(args.repeat, lambda page=page: chunk_document(parse_markdown(page, "p"))) for page in pages]
        ratios = [round(b / a, 2) if a > 0 else None for a, b in zip(times, times[1:], strict=False)]
        rows.append({"page": name, "sizes": args.sizes, "seconds": [round(t, 4) for t in times], "ratios": ratios})
        sys.stdout.write(json.dumps(rows[-1]) + "\n")
    if K8S.is_dir():
        from components.core.chunking import chunk_corpus

        load = best_of(args.repeat, lambda: load_corpus(K8S))
        total = best_of(args.repeat, lambda: chunk_corpus(load_corpus(K8S).documents))
        sys.stdout.write(json.dumps({"kubernetes": str(K8S), "load_s": round(load, 3),
                                     "load_and_chunk_s": round(total, 3)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
