"""``python benchmark.py export-dataset --questions Q [-o dataset.jsonl]``: its arguments; the work is
:func:`components.dataset.export_dataset.write_dataset`."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.cli.common import outputs_epilog
from components.dataset.export_dataset import write_dataset
from utils.errors import EXIT_OK, InputError

DEFAULT_OUTPUT = "dataset.jsonl"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = outputs_epilog("-o", DEFAULT_OUTPUT)
    p.add_argument("--questions", type=Path, required=True, help="questions JSON file")
    p.add_argument("--corpus", type=Path, default=None,
                   help="folder of Markdown files, one document each (default: built-in Python reference)")
    p.add_argument("--validation", type=Path, default=None,
                   help="validation JSON written by `benchmark.py validate` for these questions")
    p.add_argument("--hard-negatives", type=int, default=5, help="hard negatives per question (default 5)")
    p.add_argument("--positives", type=int, default=1, help="best needle chunks per needle document (default 1)")
    p.add_argument("-o", "--output", type=Path, default=Path(DEFAULT_OUTPUT),
                   help=f"JSON lines file to write (default {DEFAULT_OUTPUT}, in the current folder)")


def run(args: argparse.Namespace, settings) -> int:
    if args.hard_negatives < 0:
        raise InputError(f"--hard-negatives {args.hard_negatives}: give 0 or more")
    if args.positives < 1:
        raise InputError(f"--positives {args.positives}: give at least 1")
    write_dataset(args.questions, args.output, corpus_path=args.corpus, validation=args.validation,
                  positives=args.positives, hard_negatives=args.hard_negatives, secrets=settings.secrets)
    return EXIT_OK
