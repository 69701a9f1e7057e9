"""``python benchmark.py label RUN --sample 60 --seed 0 -o labels.jsonl``: its arguments; the work is
:func:`components.calibration.labels.write_labels`."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.calibration.labels import write_labels
from components.cli.common import help_epilog, positive_int
from utils.errors import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    help_epilog(parser, "examples:\n"
                "  python benchmark.py label benchmark_results.json --sample 60 --seed 0 -o labels.jsonl\n"
                "  (fill in human_grade 1-10 on each line, then)\n"
                "  python benchmark.py calibrate benchmark_results.json --labels labels.jsonl\n\n"
                "exit codes: 0 written; 2 bad input (nothing written)")
    parser.add_argument("run", type=Path, metavar="RUN", help="results JSON file of a benchmark run (with chunk text)")
    parser.add_argument("--sample", type=positive_int, default=60, metavar="N",
                        help="rows to draw, stratified over the judge's grade bands (default: %(default)s)")
    parser.add_argument("--seed", type=int, default=0, help="the sample's seed, recorded in the file (default: 0)")
    parser.add_argument("-o", "--output", type=Path, default=Path("labels.jsonl"),
                        help="labelling file to write, JSON lines (default: labels.jsonl)")


def run(args: argparse.Namespace, settings) -> int:
    write_labels(args.run, args.output, sample=args.sample, seed=args.seed, secrets=settings.secrets)
    return EXIT_OK
