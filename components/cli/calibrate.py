"""``python benchmark.py calibrate RUN --labels labels.jsonl [--json out.json]``: its arguments; the
work is :func:`components.calibration.calibrate.calibrate_files`."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.calibration.calibrate import calibrate_files
from components.cli.common import help_epilog
from utils.errors import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    help_epilog(parser, "examples:\n"
                "  python benchmark.py calibrate benchmark_results.json --labels labels.jsonl\n"
                "  python benchmark.py calibrate examples/kubernetes_run.json "
                "--labels examples/kubernetes_labels.jsonl --json calibration.json\n\n"
                "exit codes: 0 done; 2 bad input (a label not in the run, a grade outside 1-10...; nothing "
                "written)")
    parser.add_argument("run", type=Path, metavar="RUN", help="results JSON file of the run the labels were drawn from")
    parser.add_argument("--labels", type=Path, required=True, metavar="FILE",
                        help="labelling file (benchmark.py label) with human_grade filled in")
    parser.add_argument("--json", type=Path, default=None, metavar="FILE", help="also write the figures as JSON")


def run(args: argparse.Namespace, settings) -> int:
    calibrate_files(args.run, args.labels, json_path=args.json, secrets=settings.secrets)
    return EXIT_OK
