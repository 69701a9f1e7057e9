"""``python benchmark.py pool RUN... -o DIR [--depth K] [--judges ...] [--store PATH]``: its arguments
and its exit code; the work is :func:`components.pool.pool.run_pool`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from components.cli.common import concurrency, dollars, exit_code, help_epilog
from components.judges.panel import panel_file, panel_secrets
from components.pool.pool import DEFAULT_DEPTH, PoolRequest, run_pool
from components.pool.review import review_table
from utils.console import Progress
from utils.errors import EXIT_OK

TAKES_ENV = True  # run(args, settings, env): --judges reads the variables a panel file names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    help_epilog(parser, "examples:\n"
                "  python benchmark.py pool runs/A.json runs/B.json -o pooled/ --depth 10\n"
                "  python benchmark.py pool runs/A.json runs/B.json runs/C.json -o pooled/   (only C's new pairs are "
                "judged)\n"
                "  python benchmark.py pool run.trec runs/A.json --corpus docs/ -o pooled/ --judges panel.toml\n"
                "  python benchmark.py compare runs/A.json runs/B.json --qrels pooled/qrels.tsv\n\n"
                "exit codes: 0 done; 2 bad input (runs over different questions, a TREC run without --corpus, "
                "--depth below 1, a --store that is not a judgment store, locked or damaged; nothing written); "
                "3 a judge became unusable, 4 --max-cost stopped the calls, 130 interrupted (each: what was labelled "
                "is kept in the store and written); 5 a file could not be written")
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="results files of benchmark runs (written with the chunks' text), or TREC/ranx runs "
                             "with --corpus")
    parser.add_argument("-o", "--output", type=Path, default=None, metavar="DIR",
                        help="the folder to write qrels.tsv, qrels.chunks.tsv, provenance.jsonl and pool.json to")
    parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, metavar="K",
                        help="the top K items of each run are pooled (default: %(default)s)")
    parser.add_argument("--judges", default=None, metavar="SPEC[,SPEC...]|panel.toml",
                        help="the judges that label (docs/judges.md#a-panel-of-judges; default: the environment's "
                             "judge); a panel's label is its lowest vote")
    parser.add_argument("--store", type=Path, default=None, metavar="PATH",
                        help="the judgment store (SQLite; default: judgments.sqlite in the state folder)")
    parser.add_argument("--corpus", type=Path, default=None, metavar="FOLDER",
                        help="the corpus: the text of a TREC run's documents, and the offline judge's term weights")
    parser.add_argument("--questions", type=Path, default=None, metavar="FILE",
                        help="the questions, when every run is a TREC run")
    parser.add_argument("--accept-false-negatives", action="store_true",
                        help="also write DIR/questions.reviewed.json: the questions with every false-negative "
                             "candidate added to needle_doc_ids")
    parser.add_argument("--estimate", action="store_true",
                        help="print what the pool's calls would cost (after the store), make none, write nothing")
    parser.add_argument("--max-cost", type=dollars, dest="max_cost", metavar="USD",
                        help="stop calling the judges before the pool's cost would pass USD (exit 4)")
    parser.add_argument("--concurrency", type=concurrency, default=1, metavar="N",
                        help="judge calls in flight at once (default: 1)")


def run(args: argparse.Namespace, settings, env: dict[str, str]) -> int:
    secrets = (*settings.secrets, *panel_secrets(args.judges, env))
    panel = panel_file(args.judges)
    request = PoolRequest(runs=args.runs, output=args.output, depth=args.depth, judges=args.judges, store=args.store,
                          corpus=args.corpus, questions=args.questions, max_cost_usd=args.max_cost,
                          concurrency=args.concurrency, accept_false_negatives=args.accept_false_negatives,
                          estimate=args.estimate, inputs=[("the --judges panel file", panel)] if panel else [])
    result = run_pool(request, settings, env, secrets=secrets,
                      progress=lambda total: Progress("pooling", total, sys.stderr, unit="call", delay=2.0))
    if result.estimate is not None:
        sys.stdout.write(result.estimate)
        return EXIT_OK
    sys.stdout.write(review_table(result.summary))
    sys.stdout.flush()
    return exit_code(result.status)
