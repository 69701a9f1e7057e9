"""``python benchmark.py validate QUESTIONS`` (or ``--questions QUESTIONS``): its arguments and exit
code; the work is :func:`components.dataset.validate.validate_file`."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from components.cli.common import exit_code, outputs_epilog
from components.dataset.validate import validate_file
from utils.errors import InputError

DEFAULT_JSON = "validation.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.epilog = outputs_epilog("--json", DEFAULT_JSON)
    p.add_argument("questions", type=Path, nargs="?", metavar="QUESTIONS",
                   help="questions JSON file to validate (or --questions QUESTIONS)")
    p.add_argument("--questions", type=Path, dest="questions_option", metavar="QUESTIONS",
                   help="questions JSON file to validate, as in the other commands")
    p.add_argument("--corpus", type=Path, default=None,
                   help="folder of Markdown files, one document each (default: built-in Python reference)")
    p.add_argument("--k", type=int, default=5, help="chunks per check (default 5)")
    p.add_argument("--seed", type=int, default=0, help="seed of the random chunks of the necessity check (default 0)")
    p.add_argument("--judge-repeats", type=int, default=1, help="grade each check N times and report the spread")
    p.add_argument("--json", type=Path, default=Path(DEFAULT_JSON),
                   help=f"validation JSON to write (default {DEFAULT_JSON}, in the current folder)")
    p.add_argument("--write-clean", type=Path, default=None, metavar="OUT",
                   help="write the questions that pass to OUT, in the input's format")
    p.add_argument("--force", action="store_true",
                   help="with --write-clean and the offline lexical judge: also drop the questions that fail "
                        "only the necessity check (unreliable on a single-topic corpus)")


def questions_argument(args: argparse.Namespace) -> Path:
    """The questions file, given as ``validate QUESTIONS`` or ``validate --questions QUESTIONS``."""
    positional, option = args.questions, getattr(args, "questions_option", None)
    if positional is None and option is None:
        raise InputError("validate needs a questions file: python benchmark.py validate --questions QUESTIONS.json")
    if positional is not None and option is not None and \
            os.path.abspath(positional) != os.path.abspath(option):
        raise InputError(f"two questions files ({positional} and --questions {option}): give one, "
                         "either as validate QUESTIONS or as --questions QUESTIONS")
    return positional if positional is not None else option


def run(args: argparse.Namespace, settings) -> int:
    questions = questions_argument(args)
    if args.k < 1:
        raise InputError(f"--k {args.k}: give at least 1 chunk per check")
    if args.judge_repeats < 1:
        raise InputError(f"--judge-repeats {args.judge_repeats}: give at least 1")
    result = validate_file(questions, args.json, settings, corpus_path=args.corpus, k=args.k, seed=args.seed,
                           repeats=args.judge_repeats, write_clean=args.write_clean, force=args.force)
    return exit_code(result.status)
