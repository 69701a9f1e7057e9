"""``python benchmark.py export-run RUN.json -o run.trec [--qrels qrels.txt] [--level doc|chunk]``: its
arguments; the work is :func:`components.analysis.export_run.export_run_file`."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.analysis.export_run import LEVELS, export_run_file
from utils.errors import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("run", metavar="RUN", help="results file or run id (runs/<id>.json)")
    parser.add_argument("-o", "--output", type=Path, required=True, metavar="RUN_FILE",
                        help="the TREC run file to write (e.g. run.trec)")
    parser.add_argument("--qrels", type=Path, default=None, metavar="PATH",
                        help="also write the qrels (qid 0 docid grade) from the rows' needles and grades")
    parser.add_argument("--level", choices=LEVELS, default="doc",
                        help="doc: each question's distinct documents, as the document-level metrics see them "
                             "(default); chunk: the chunk ids")
    parser.add_argument("--tag", default=None, help="the run's tag, its last column (default: the strategy)")


def run(args: argparse.Namespace, settings) -> int:
    export_run_file(args.run, args.output, qrels=args.qrels, level=args.level, tag=args.tag, secrets=settings.secrets,
                    state_dir=settings.state_dir)
    return EXIT_OK
