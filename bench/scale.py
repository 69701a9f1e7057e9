"""Growth curve: cold index, warm load, query latency and peak RSS on synthetic corpora.

    python -m bench.scale [--sizes 10000 30000 100000] [--strategies baseline modular-no-llm]
                          [--queries 200] [--seed 16] [--out bench/out/scale] [--plot docs/scale.png (needs .[plot])]

Corpora: seeded synthetic Markdown pages written to ``<out>/corpus-<N>/`` (page i is the same in
every size, so a smaller corpus is a prefix of a larger one; files are hard-linked between sizes).
Page lengths follow the Kubernetes pages (log-normal in words: mu 5.59, sigma 1.59, measured on the
1,363 pages of ``../shared/datasets/kubernetes/docs``: median 300 words, mean 800, max 15,810), with
front matter, ``##``/``###`` headings about every 120 words (K8s: 6.7 a page), fenced code blocks
(K8s: 3.4 a page) and bullet lists. Words are drawn from a Zipf-Mandelbrot law (exponent 1.1)
over a 200,000-word vocabulary whose head is the English of the built-in corpus (Python reference
topics, stop words included) and whose tail is pronounceable made-up words, so that the number of
distinct terms keeps growing with the corpus as in real text. Queries are 4-10 word windows of
random pages' paragraphs.

Per size and strategy, each measurement runs in its own process; peak RSS is that process's
``ru_maxrss`` (from ``os.wait4``):

- cold: ``prepare_index`` into an empty cache folder (parse, chunk, index, store the entry);
- warm: ``prepare_index`` from that entry (fingerprint, chunks, index), then ``--queries``
  retrievals of the top 5 chunks: query latency p50/p95 (the first query reported apart), and
  the CPU time per query; ``--warm-repeat`` runs, each figure their median, peak RSS their max.

One cold run per size and strategy (the 100k hybrid build takes minutes); wall times on a shared
VM also count the time other tenants held the CPU, so the 1-minute load average before each pair
is recorded next to the figures.

Results: ``<out>/scale.json``, a table on stdout and a plot (matplotlib) at ``--plot``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
VOCAB_SIZE = 200_000
ZIPF_S, ZIPF_Q = 1.1, 2.7  # p(rank r) ~ 1 / (r + q)^s
WORDS_MU, WORDS_SIGMA, WORDS_MIN, WORDS_MAX = 5.59, 1.59, 20, 16_000
WORDS_PER_HEADING = 120
SYLLABLES = [c + v for c in ["b", "c", "d", "f", "g", "k", "l", "m", "n", "p", "r", "s", "t", "v", "z", "st", "tr",
                             "pl", "qu", "sh"] for v in ["a", "e", "i", "o", "u", "ae", "io", "ou"]]


# --------------------------------------------------------------------------- corpus generator

def vocabulary(seed: int) -> np.ndarray:
    """The built-in corpus's words by frequency, then made-up words, ``VOCAB_SIZE`` in all."""
    from collections import Counter

    from pydoc_data.topics import topics

    counts = Counter(w.lower() for text in topics.values() for w in re.findall(r"[A-Za-z][a-z]+", text))
    head = [w for w, _ in counts.most_common()]
    rng = np.random.default_rng([seed, 0])
    seen, tail = set(head), []
    while len(head) + len(tail) < VOCAB_SIZE:
        word = "".join(SYLLABLES[i] for i in rng.integers(len(SYLLABLES), size=int(rng.integers(2, 5))))
        if word not in seen:
            seen.add(word)
            tail.append(word)
    return np.array(head + tail, dtype=object)


def _cdf() -> np.ndarray:
    p = 1.0 / (np.arange(1, VOCAB_SIZE + 1) + ZIPF_Q) ** ZIPF_S
    return np.cumsum(p / p.sum())


class PageMaker:
    """``page(i)`` is the Markdown of page i, the same for a given seed whatever the corpus size."""

    def __init__(self, seed: int) -> None:
        self.seed, self.vocab, self.cdf = seed, vocabulary(seed), _cdf()

    def _words(self, rng: np.random.Generator, n: int, lo: int = 0) -> list[str]:
        ranks = np.searchsorted(self.cdf, rng.random(n) * (1 - self.cdf[lo]) + self.cdf[lo])
        return list(self.vocab[np.minimum(ranks, VOCAB_SIZE - 1)])

    def _paragraph(self, rng: np.random.Generator, n: int) -> str:
        words = self._words(rng, n)
        cuts = np.cumsum(rng.integers(6, 25, size=n // 6 + 1))
        for c in cuts[cuts < n]:
            words[c - 1] += "."
        words[0] = words[0].capitalize()
        return " ".join(words) + "."

    def page(self, i: int) -> tuple[str, list[str]]:
        """(Markdown, its paragraphs' plain text)."""
        rng = np.random.default_rng([self.seed, 1, i])
        total = int(np.clip(rng.lognormal(WORDS_MU, WORDS_SIGMA), WORDS_MIN, WORDS_MAX))
        title = " ".join(self._words(rng, int(rng.integers(2, 6)), lo=50)).title()
        out = [f"---\ntitle: {title}\ncontent_type: {rng.choice(['concept', 'task', 'reference'])}\n"
               f"weight: {int(rng.integers(1, 100)) * 10}\n---\n"]
        paragraphs: list[str] = []
        left = total
        headings = rng.poisson(total / WORDS_PER_HEADING)
        for section in range(headings + 1):
            if section:
                level = "##" if rng.random() < 0.7 else "###"
                out.append(f"{level} {' '.join(self._words(rng, int(rng.integers(1, 5)), lo=50)).capitalize()}\n")
            budget = left if section == headings else int(min(left, rng.exponential(total / (headings + 1)) + 1))
            while budget > 0:
                n = int(min(budget, max(5, rng.lognormal(3.9, 0.6))))  # paragraphs: median ~50 words
                kind = rng.random()
                if kind < 0.12:  # a code block
                    lines = [" ".join(["kubectl", *self._words(rng, int(rng.integers(1, 4)), lo=200),
                                       f"--{self._words(rng, 1, lo=500)[0]}={int(rng.integers(1, 999))}"])
                             for _ in range(int(rng.integers(1, 7)))]
                    out.append("```shell\n" + "\n".join(lines) + "\n```\n")
                    n = sum(len(line.split()) for line in lines)
                elif kind < 0.22:  # a bullet list
                    items = [self._paragraph(rng, int(rng.integers(4, 18))) for _ in range(int(rng.integers(2, 6)))]
                    out.append("\n".join(f"- {item}" for item in items) + "\n")
                    paragraphs.extend(items)
                    n = sum(len(item.split()) for item in items)
                else:
                    text = self._paragraph(rng, n)
                    out.append(text + "\n")
                    paragraphs.append(text)
                budget -= n
                left -= n
        return "\n".join(out), paragraphs


def generate(folder: Path, n: int, seed: int, sources: list[Path]) -> float:
    """Write pages 0..n-1 as ``page-<i>.md`` (hard links to a folder of ``sources`` that has the
    page); return seconds spent. A folder with a matching ``.done`` marker is kept as it is."""
    marker = folder / ".done"
    stamp = json.dumps({"n": n, "seed": seed, "vocab": VOCAB_SIZE, "zipf": [ZIPF_S, ZIPF_Q]})
    if marker.is_file() and marker.read_text() == stamp:
        return 0.0
    start = time.perf_counter()
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    maker: PageMaker | None = None
    done = [s for s in sources if (s / ".done").is_file() and json.loads((s / ".done").read_text())["seed"] == seed]
    for i in range(n):
        name = f"page-{i:06d}.md"
        src = next((s / name for s in done if (s / name).is_file()), None)
        if src is not None:
            os.link(src, folder / name)
            continue
        maker = maker or PageMaker(seed)
        (folder / name).write_text(maker.page(i)[0], encoding="utf-8")
    marker.write_text(stamp)
    return time.perf_counter() - start


def queries(n_pages: int, count: int, seed: int) -> list[str]:
    maker = PageMaker(seed)
    rng = np.random.default_rng([seed, 2, n_pages])
    out: list[str] = []
    while len(out) < count:
        paragraphs = maker.page(int(rng.integers(n_pages)))[1]
        if not paragraphs:
            continue
        words = paragraphs[int(rng.integers(len(paragraphs)))].replace(".", "").split()
        if len(words) < 4:
            continue
        size = int(rng.integers(4, 11))
        start = int(rng.integers(0, max(1, len(words) - size)))
        out.append(" ".join(words[start:start + size]).lower())
    return out


# --------------------------------------------------------------------------- measurements (child side)

def child(mode: str, corpus: str, strategy: str, cache: str, queries_file: str | None) -> dict:
    from loguru import logger

    logger.remove()
    logger.add(sys.stderr, level="WARNING")
    from components.core import resolve_strategy
    from components.run.retrieval.index_cache import prepare_index

    factory = resolve_strategy(strategy).factory
    prepared = prepare_index(Path(corpus), strategy, factory, Path(cache))
    expected = "miss" if mode == "cold" else "hit"
    if prepared.cache != expected:
        raise RuntimeError(f"{mode} run: index cache {prepared.cache}, expected {expected}")
    out = {"cache": prepared.cache, "documents": prepared.documents, "chunks": len(prepared.chunks),
           "load_s": prepared.load_s, "index_s": prepared.index_s, "save_s": prepared.save_s}
    if queries_file:
        latencies, cpu = [], []
        for q in json.loads(Path(queries_file).read_text()):
            t, c = time.perf_counter(), time.process_time()
            prepared.retriever.retrieve(q, 5)
            latencies.append((time.perf_counter() - t) * 1000)
            cpu.append((time.process_time() - c) * 1000)
        out["first_query_ms"] = latencies[0]
        latencies.sort()
        out["query_ms_p50"] = statistics.median(latencies)
        out["query_ms_p95"] = latencies[min(len(latencies) - 1, int(round(0.95 * (len(latencies) - 1))))]
        out["query_cpu_ms_p50"] = statistics.median(cpu)  # all threads; on a busy VM wall time > CPU time
    return out


# --------------------------------------------------------------------------- parent side

def measure(mode: str, corpus: Path, strategy: str, cache: Path, queries_file: Path | None) -> dict:
    """Run one measurement in its own process; add its wall time and peak RSS (MB)."""
    cmd = [sys.executable, "-m", "bench.scale", "--child", mode, str(corpus), strategy, str(cache),
           str(queries_file or "")]
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        start = time.perf_counter()
        env = {**os.environ, "OPENBLAS_NUM_THREADS": os.environ.get("OPENBLAS_NUM_THREADS", "1")}  # as benchmark.py
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=out, stderr=err, env=env)
        _, status, usage = os.wait4(proc.pid, 0)
        proc.returncode = os.waitstatus_to_exitcode(status)
        wall = time.perf_counter() - start
        out.seek(0)
        err.seek(0)
        if proc.returncode != 0:
            raise RuntimeError(f"{' '.join(cmd)} exited {proc.returncode}:\n{err.read().decode()[-3000:]}")
        result = json.loads(out.read().decode().strip().splitlines()[-1])
    result.update(process_wall_s=wall, peak_rss_mb=usage.ru_maxrss / 1024)  # Linux: kilobytes
    return result


def median_of(runs: list[dict]) -> dict:
    """Each figure's median over the warm runs, peak RSS their maximum; ``runs`` keeps them all."""
    out = {k: statistics.median(r[k] for r in runs) if isinstance(runs[0][k], float) else runs[0][k]
           for k in runs[0]}
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in runs)
    out["runs"] = runs
    return out


def table(rows: list[dict]) -> str:
    head = (f"{'pages':>7} {'strategy':<15}{'chunks':>9}{'cold load+chunk':>16}{'cold index':>11}{'store':>7}"
            f"{'cold RSS':>9}{'warm load':>10}{'warm RSS':>9}{'q p50':>8}{'q p95':>8}{'1st q':>8}\n")
    unit = (f"{'':>7} {'':<15}{'':>9}{'s':>16}{'s':>11}{'s':>7}{'MB':>9}{'s':>10}{'MB':>9}{'ms':>8}{'ms':>8}"
            f"{'ms':>8}\n")
    lines = [head, unit]
    for r in rows:
        c, w = r["cold"], r["warm"]
        lines.append(f"{r['pages']:>7} {r['strategy']:<15}{c['chunks']:>9}{c['load_s']:>16.1f}{c['index_s']:>11.1f}"
                     f"{c['save_s']:>7.1f}{c['peak_rss_mb']:>9.0f}{w['load_s'] + w['index_s']:>10.2f}"
                     f"{w['peak_rss_mb']:>9.0f}{w['query_ms_p50']:>8.1f}{w['query_ms_p95']:>8.1f}"
                     f"{w['first_query_ms']:>8.1f}\n")
    return "".join(lines)


def markdown_table(rows: list[dict]) -> str:
    lines = ["| pages | strategy | chunks | cold load+chunk | cold index | store | cold peak RSS | warm load+index"
             " | warm peak RSS | query p50 / p95 |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        c, w = r["cold"], r["warm"]
        lines.append(f"| {r['pages']:,} | `{r['strategy']}` | {c['chunks']:,} | {c['load_s']:.1f} s | "
                     f"{c['index_s']:.1f} s | {c['save_s']:.1f} s | {c['peak_rss_mb']:,.0f} MB | "
                     f"{w['load_s'] + w['index_s']:.2f} s | {w['peak_rss_mb']:,.0f} MB | "
                     f"{w['query_ms_p50']:.1f} / {w['query_ms_p95']:.1f} ms |")
    return "\n".join(lines) + "\n"


def plot(rows: list[dict], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    panels = [
        ("cold: load + chunk + index (s)", lambda r: r["cold"]["load_s"] + r["cold"]["index_s"], None),
        ("warm: load from the cache (s), median", lambda r: r["warm"]["load_s"] + r["warm"]["index_s"], None),
        ("query latency p50, bar to p95 (ms)", lambda r: r["warm"]["query_ms_p50"], 50),
        ("peak RSS, cold (solid) / warm (dashed) (MB)", lambda r: r["cold"]["peak_rss_mb"], 3000),
    ]
    for ax, (title, value, target) in zip(axes.flat, panels, strict=True):
        for strategy in dict.fromkeys(r["strategy"] for r in rows):
            mine = sorted((r for r in rows if r["strategy"] == strategy), key=lambda r: r["pages"])
            xs = [r["pages"] for r in mine]
            line, = ax.plot(xs, [value(r) for r in mine], marker="o", label=strategy)
            if title.startswith("query"):
                ax.vlines(xs, [r["warm"]["query_ms_p50"] for r in mine], [r["warm"]["query_ms_p95"] for r in mine],
                          color=line.get_color())
            if title.startswith("peak"):
                ax.plot(xs, [r["warm"]["peak_rss_mb"] for r in mine], marker="s", linestyle="--",
                        color=line.get_color())
        if target:
            ax.axhline(target, color="grey", linestyle=":", linewidth=1, label=f"target {target}")
        ax.set_title(title, fontsize=10)
        ax.set_xscale("log")
        if title.startswith("cold"):
            ax.set_yscale("log")
        ax.set_xlabel("pages")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle("Synthetic Markdown corpora (python -m bench.scale), 2-core shared VM", fontsize=11)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", nargs="+", type=int, default=[10_000, 30_000, 100_000])
    p.add_argument("--strategies", nargs="+", default=["baseline", "modular-no-llm"])
    p.add_argument("--queries", type=int, default=200)
    p.add_argument("--seed", type=int, default=16)
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "out" / "scale")
    p.add_argument("--plot", type=Path, default=None,
                   help='draw the figures at this path too (docs/scale.png; needs pip install -e ".[plot]")')
    p.add_argument("--warm-repeat", type=int, default=3, help="warm runs per size and strategy (medians)")
    p.add_argument("--keep-cache", action="store_true", help="keep the cache entries (they are large)")
    p.add_argument("--report-only", action="store_true",
                   help="print the table and plot <out>/scale.json, measure nothing")
    p.add_argument("--child", nargs=5, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.plot and importlib.util.find_spec("matplotlib") is None:
        p.error('--plot needs matplotlib: pip install -e ".[plot]"')
    if args.child:
        mode, corpus, strategy, cache, queries_file = args.child
        sys.stdout.write(json.dumps(child(mode, corpus, strategy, cache, queries_file or None)) + "\n")
        return 0
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "scale.json"
    rows: list[dict] = json.loads(results_path.read_text()) if results_path.is_file() else []
    for n in [] if args.report_only else sorted(args.sizes):
        folder = args.out / f"corpus-{n}"
        others = [args.out / f"corpus-{m}" for m in sorted(args.sizes, reverse=True) if m != n]
        spent = generate(folder, n, args.seed, others)
        sys.stderr.write(f"corpus {n}: {folder} ({'generated in %.0fs' % spent if spent else 'kept'})\n")
        qfile = args.out / f"queries-{n}.json"
        qfile.write_text(json.dumps(queries(n, args.queries, args.seed)))
        for strategy in args.strategies:
            cache = args.out / f"cache-{n}-{strategy}"
            shutil.rmtree(cache, ignore_errors=True)
            load = os.getloadavg()[0]
            cold = measure("cold", folder, strategy, cache, None)
            warm = median_of([measure("warm", folder, strategy, cache, qfile) for _ in range(args.warm_repeat)])
            row = {"pages": n, "strategy": strategy, "seed": args.seed, "queries": args.queries, "cold": cold,
                   "warm": warm, "loadavg_1min_before": load, "measured_at": time.strftime("%Y-%m-%dT%H:%M:%S")}
            rows = [r for r in rows if (r["pages"], r["strategy"]) != (n, strategy)] + [row]
            rows.sort(key=lambda r: (r["pages"], r["strategy"]))
            results_path.write_text(json.dumps(rows, indent=2))
            sys.stderr.write(table([row]))
            if not args.keep_cache:
                shutil.rmtree(cache, ignore_errors=True)
    sys.stdout.write(table(rows) + "\n" + markdown_table(rows))
    if args.plot:
        plot(rows, args.plot)
    sys.stdout.write(f"\nwritten: {results_path}{f', {args.plot}' if args.plot else ''}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
