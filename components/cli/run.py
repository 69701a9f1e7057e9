"""The benchmark run, ``python benchmark.py [--strategy a,b] ...``: its arguments, ``--resume``'s
defaults, and the run itself (:class:`components.run.benchmark_run.BenchmarkRun`) under the
:class:`SignalGuard`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loguru import logger

from components.cli.common import SignalGuard, comma_list, concurrency, dollars, exit_code, positive_int
from components.run.concurrency import MAX_CONCURRENCY
from utils.errors import EXIT_INTERRUPTED, EXIT_OK, ResultsWriteError
from utils.history_index import record_history_folder
from utils.output import DEFAULT_OUTPUT_NAME, remove_empty_folders, resolve_output

ROOT = Path(__file__).resolve().parents[2]  # the folder of benchmark.py


def default_questions() -> Path:
    """The built-in corpus's questions: ``questions.json`` beside ``benchmark.py`` in a source
    checkout, else the copy an installed package keeps under ``<prefix>/share/retrieval-benchmark``."""
    here = ROOT / "questions.json"
    return here if here.is_file() else Path(sys.prefix) / "share" / "retrieval-benchmark" / "questions.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    _add_input_arguments(p)
    # a str, not a Path: Path drops the trailing "/" that says "a folder" (utils.output.resolve_output)
    p.add_argument("--output", default=DEFAULT_OUTPUT_NAME,
                   help=f"results JSON file, or a folder (existing, or ending in /) to write {DEFAULT_OUTPUT_NAME} "
                        "in (default: %(default)s); every run is also kept under runs/ beside it")
    p.add_argument("--resume", type=Path, help="continue a run from its results file or journal: graded rows are "
                   "kept without a new judge call, the rest run; the results go to the output that run recorded "
                   "unless --output is given")
    p.add_argument("--max-cost", type=dollars, dest="max_cost", metavar="USD",
                   help="stop grading before the judge's cost would pass USD (exit 4; --resume finishes later); a "
                        "run whose estimated cost is over USD says so before the first judge call")
    p.add_argument("--estimate", action="store_true",
                   help="build every request the run would send (retrieval runs, the judge is not called), count "
                        "its tokens and print what it would cost per role, sequentially and as a batch; writes nothing")
    _add_judging_arguments(p)
    p.add_argument("--no-text", action="store_true", help="leave the retrieved chunks' text out of the results")
    p.add_argument("--chunk-relevance", action=argparse.BooleanOptionalAction, default=None,
                   help="rate each retrieved chunk 0-3 (proxy NDCG/precision; one more judge call per question); "
                        "default: on with the offline judge, off with the LLM judge")
    p.add_argument("--group-by", action="append", metavar="FIELD",
                   help="aggregate per value of a question field (repeatable; default: every one of category, "
                        "difficulty, type, section the questions carry)")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="index cache folder (default: $XDG_CACHE_HOME/retrieval-benchmark, else "
                        "~/.cache/retrieval-benchmark)")
    p.add_argument("--no-cache", action="store_true", help="build the index without reading or writing the cache")


def _add_input_arguments(p: argparse.ArgumentParser) -> None:
    """What runs on what: the strategies, the questions selected, k, the questions and corpus files."""
    p.add_argument("--strategy", default="modular-no-llm",
                   help="registered strategy (baseline, modular-no-llm, modular) or package.module:factory; "
                        "several, comma-separated, run in turn on the same questions and judge, and are compared (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="only the first 5 questions (= --limit 5)")
    p.add_argument("--limit", type=positive_int, help="only the first N questions")
    p.add_argument("--ids", help="only these question ids, comma-separated")
    p.add_argument("--k", type=positive_int, default=5, help="chunks retrieved per question (default: %(default)s)")
    p.add_argument("--questions", type=Path, default=None,
                   help="questions JSON file, or BEIR queries: a BEIR folder or queries.jsonl (default: the questions "
                        f"of the built-in corpus, {default_questions()})")
    p.add_argument("--qrels", type=Path, default=None, metavar="PATH",
                   help="with BEIR queries: their qrels (TREC or BEIR .tsv; default: qrels/test.tsv of the folder)")
    p.add_argument("--split", default=None, metavar="NAME",
                   help="with a BEIR folder: read qrels/NAME.tsv (default: test)")
    p.add_argument("--corpus", type=Path, default=None,
                   help="folder of Markdown files, one document each; or a BEIR folder or corpus.jsonl "
                        "(default: built-in Python reference)")


def _add_judging_arguments(p: argparse.ArgumentParser) -> None:
    """How the judge grades: repeats, batch, concurrency, the order check."""
    p.add_argument("--judge-repeats", type=positive_int, default=1, metavar="N",
                   help="grade each question N times; the row keeps every grade and their spread")
    p.add_argument("--judge-batch", action="store_true",
                   help="after retrieval, send every grading request as one Message Batch (half price, results "
                        "usually within the hour); --resume collects an interrupted run's batch")
    p.add_argument("--concurrency", type=concurrency, default=1, metavar="N",
                   help=f"judge calls in flight at once, 1 to {MAX_CONCURRENCY} (default 1: one question after the "
                        "other); rows still come in question order, and rate limits lower it")
    p.add_argument("--order-check", action="store_true",
                   help="grade each question a second time with its chunks in reverse order: how much the order "
                        "moves the judge's grade (one more judge call per question checked)")
    p.add_argument("--order-check-sample", type=positive_int, metavar="N",
                   help="with --order-check: check N questions drawn with a fixed seed (default: all)")


def header_details(args: argparse.Namespace) -> dict[str, object]:
    """What the log file's header says the run works on."""
    return {"strategy": args.strategy, "corpus": args.corpus or "built-in",
            "questions": args.questions or default_questions()}


def apply_resume_defaults(args: argparse.Namespace, env: dict[str, str]) -> None:
    """``--resume FILE``: the options not on the command line (``args.argv``) and the judge not set
    in ``env`` are taken from what FILE recorded (:func:`components.run.benchmark_run.recorded_defaults`);
    ``args`` and ``env`` are updated."""
    from components.run.benchmark_run import recorded_defaults

    defaults = recorded_defaults(args.resume, {a.split("=", 1)[0] for a in args.argv if a.startswith("--")}, env)
    for name, value in defaults.options.items():
        setattr(args, name, value)
    env.update(defaults.env)
    if "output" in defaults.options:
        logger.info("--resume {}: the results go to {}, the output of the run it continues (give --output to "
                    "write elsewhere)", args.resume, args.output)


def run(args: argparse.Namespace, env: dict[str, str], *, log_path: Path | None, guard: SignalGuard, state) -> int:
    """The run of ``args`` with the judge ``env`` names; its exit code. Raises what the run raises;
    an exception that wraps the guard's interrupt becomes a :class:`KeyboardInterrupt`."""
    from components.judges.settings import Settings

    if args.resume is not None:
        apply_resume_defaults(args, env)
    settings = Settings.from_env(env)
    if args.questions is None:
        args.questions = default_questions()
    args.output = resolve_output(args.output, questions_path=args.questions, corpus_dir=args.corpus)
    with guard:
        try:
            return _execute(args, settings, log_path, guard, state)
        except (OSError, ResultsWriteError):
            raise  # a failed write stays one, signal or not
        except Exception as err:
            if guard.received is None:
                raise
            # the signal's KeyboardInterrupt, wrapped by the code it interrupted (pydantic-core
            # turns one into a SchemaError; a plug-in may raise its own error instead)
            logger.opt(exception=err).debug("after {}: {}", guard.received, type(err).__name__)
            raise KeyboardInterrupt(guard.received) from err


def run_options(args: argparse.Namespace, settings, log_path: Path | None):
    """The :class:`components.run.benchmark_run.RunOptions` of the parsed arguments."""
    from components.run.benchmark_run import RunOptions

    return RunOptions(
        strategies=comma_list(args.strategy) or [args.strategy],
        questions=args.questions, qrels=args.qrels, split=args.split, corpus=args.corpus, output=args.output, k=args.k,
        limit=5 if args.quick and args.limit is None else args.limit,
        ids=comma_list(args.ids) if args.ids else None,
        resume=args.resume, max_cost_usd=args.max_cost, judge_repeats=args.judge_repeats,
        keep_text=not args.no_text, chunk_relevance=args.chunk_relevance, group_by=args.group_by,
        cache_dir=None if args.no_cache else (args.cache_dir or settings.cache_dir),
        judge_batch=args.judge_batch, concurrency=args.concurrency,
        order_check=(args.order_check_sample or True) if args.order_check else None, log_file=log_path,
        argv=list(args.argv), estimate=args.estimate)


def _execute(args: argparse.Namespace, settings, log_path: Path | None, guard: SignalGuard, state) -> int:
    from components.run.benchmark_run import BenchmarkRun

    runner = BenchmarkRun(run_options(args, settings, log_path), settings,
                          should_stop=lambda: guard.received is not None, deferred_signals=guard.deferred, state=state)
    try:
        results = runner.execute()
    finally:  # a run that wrote nothing leaves no empty folder behind; one that did is found by its id
        remove_empty_folders(runner.created_folders)
        if state.written:
            record_history_folder(settings.state_dir, state.written[0].parent)
    if guard.received:
        return EXIT_INTERRUPTED
    codes = [exit_code(r.run.status) for r in results]
    return max(codes, key=lambda c: (c != EXIT_OK, c)) if codes else EXIT_OK
