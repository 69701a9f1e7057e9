"""Retrieval benchmark: rank the needle, grade the chunks with a judge, score, write results.

    python benchmark.py --strategy modular-no-llm --quick
    python benchmark.py compare RUN_A RUN_B          (and the other commands in COMMANDS)

This is the only module that reads the environment, adds log sinks, or turns exceptions into
console lines and exit codes (see EXIT_* and the README). The run itself is
:mod:`components.run.benchmark_run`.
"""

from __future__ import annotations

import os
import signal
import sys


def _quiet_early_signals() -> None:
    """While the modules load (up to a second): a Ctrl-C, SIGTERM or SIGHUP ends the command at
    once with 130 and one line, instead of a traceback from an import. :func:`main` hands the
    signals to its :class:`SignalGuard` as soon as it starts."""
    def stop(signum: int, _frame: object) -> None:
        os.write(2, b"interrupted while starting: nothing written\n")
        os._exit(130)

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)


if __name__ == "__main__" or (__name__ == "benchmark"
                               and os.path.basename(sys.argv[0] if sys.argv else "") == "retrieval-benchmark"):
    _quiet_early_signals()

import argparse  # noqa: E402 - after the early signal handlers, on purpose
import contextlib  # noqa: E402
import difflib  # noqa: E402
import importlib  # noqa: E402
import threading  # noqa: E402
from pathlib import Path  # noqa: E402

from loguru import logger  # noqa: E402

from components.judges.providers import load_provider_modules  # noqa: E402
from components.run.concurrency import MAX_CONCURRENCY, check_concurrency  # noqa: E402
from utils.console import escape_control  # noqa: E402
from utils.errors import (EXIT_BUDGET, EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_JUDGE,  # noqa: E402
                          EXIT_OK, EXIT_WRITE, BenchmarkError, InputError, ResultsWriteError)
from utils.logger import add_sinks, log_file_path, log_header, prune_logs  # noqa: E402
from utils.output import DEFAULT_OUTPUT_NAME, remove_temp_files, resolve_output  # noqa: E402
from utils.settings import Settings, secrets_in  # noqa: E402

ROOT = Path(__file__).resolve().parent
LOG_DIR = Path("logs")  # --log-dir's default: in the current folder, like every output
STATUS_EXIT = {"completed": EXIT_OK, "interrupted": EXIT_INTERRUPTED, "judge_failed": EXIT_JUDGE,
               "rate_limited": EXIT_JUDGE, "budget_exhausted": EXIT_BUDGET}

EPILOG = """\
examples:
  python benchmark.py --strategy modular-no-llm --quick
  python benchmark.py --strategy baseline,modular-no-llm --corpus ../shared/datasets/kubernetes/docs \\
      --questions ../shared/datasets/kubernetes/needle_questions.json
  python benchmark.py --resume runs/20261123T120000Z_modular-no-llm.journal.jsonl --strategy modular-no-llm
  python benchmark.py --corpus docs/examples/beir --questions docs/examples/beir --split test   (a BEIR folder)
  python benchmark.py export-run benchmark_results.json -o run.trec --qrels qrels.txt
  python benchmark.py compare baseline.json benchmark_results.json --fail-on worse:mrr,ndcg --margin hit1=20
  python benchmark.py compare runs/A.json runs/B.json
  python benchmark.py --questions q.json --estimate       (what a run would cost, before it spends)

environment:
{environment}
exit codes:
  0 done · 1 internal error (the journal keeps the run) · 2 bad usage or input, nothing written ·
  3 the judge or the query rewriter became unusable, or kept rate-limiting (--resume finishes later) ·
  4 --max-cost reached · 5 the results could not be written (the journal keeps the run) ·
  6 compare's gate failed (--fail-on, --margin, --fail-on-regressions: one FAIL line per check) · 130 interrupted
"""


GENERAL_VARIABLES = (
    ("BENCHMARK_JUDGE", "the judge's provider: {providers} (default: the default provider when its key is set, "
                        "else offline)"),
    ("BENCHMARK_JUDGE_MODEL", "<provider>/<model>: the judge's provider and model at once"),
    ("BENCHMARK_REWRITER_MODEL", "<provider>/<model>: the query rewriter's (strategies that rewrite queries)"),
    ("BENCHMARK_PROVIDERS", "package.module[,...]: modules that register judge providers of your own"),
    ("BENCHMARK_JUDGE_TIMEOUT", "seconds per judge attempt, headers and body included (default 30, at most 600)"),
    ("BENCHMARK_JUDGE_EFFORT", "low | medium | high | xhigh | max, sent only where the model supports it"),
    ("BENCHMARK_RETRY_WAIT_MAX", "seconds the retry pass may wait for a retry-after (default 60)"),
    ("BENCHMARK_BATCH_POLL_MAX", "longest wait between two polls of a --judge-batch batch (default 60)"),
)


def environment_help() -> str:
    """The environment section of ``--help``: the general variables, then each provider's own."""
    from components.judges.providers import providers, variables

    rows = [(name, text.format(providers=" | ".join(providers()))) for name, text in GENERAL_VARIABLES]
    rows += [(var.name, f"{provider}: {var.help}") for provider, var in variables()]
    width = max(len(name) for name, _ in rows) + 1
    return "\n".join(f"  {name:<{width}}{text}" for name, text in rows)


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} must be at least 1")
    return value


def _concurrency(text: str) -> int:
    try:
        return check_concurrency(_positive_int(text))
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{value} must be 0 or more")
    return value


def _dollars(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of dollars") from None
    if not 0 <= value < 1e9:
        raise argparse.ArgumentTypeError(f"{text} must be a finite amount of dollars, 0 or more")
    return value


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    commands = "\n".join(f"  {name:<15}{help_}" for name, (_, help_) in COMMANDS.items())
    p = argparse.ArgumentParser(
        description="LLM-graded retrieval benchmark.",
        epilog=f"commands (python benchmark.py NAME --help):\n{commands}\n\n"
               + EPILOG.format(environment=environment_help()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--strategy", default="modular-no-llm",
                   help="registered strategy (baseline, modular-no-llm, modular) or package.module:factory; "
                        "several, comma-separated, run in turn on the same questions and judge, and are compared (default: %(default)s)")
    p.add_argument("--quick", action="store_true", help="only the first 5 questions (= --limit 5)")
    p.add_argument("--limit", type=_positive_int, help="only the first N questions")
    p.add_argument("--ids", help="only these question ids, comma-separated")
    p.add_argument("--k", type=_positive_int, default=5, help="chunks retrieved per question (default: %(default)s)")
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
    # a str, not a Path: Path drops the trailing "/" that says "a folder" (utils.output.resolve_output)
    p.add_argument("--output", default=DEFAULT_OUTPUT_NAME,
                   help=f"results JSON file, or a folder (existing, or ending in /) to write {DEFAULT_OUTPUT_NAME} "
                        "in (default: %(default)s); every run is also kept under runs/ beside it")
    p.add_argument("--resume", type=Path, help="continue a run from its results file or journal: graded rows are "
                   "kept without a new judge call, the rest run")
    p.add_argument("--max-cost", type=_dollars, dest="max_cost", metavar="USD",
                   help="stop grading before the judge's cost would pass USD (exit 4; --resume finishes later); a "
                        "run whose estimated cost is over USD says so before the first judge call")
    p.add_argument("--estimate", action="store_true",
                   help="build every request the run would send (retrieval runs, the judge is not called), count "
                        "its tokens and print what it would cost per role, sequentially and as a batch; writes nothing")
    p.add_argument("--judge-repeats", type=_positive_int, default=1, metavar="N",
                   help="grade each question N times; the row keeps every grade and their spread")
    p.add_argument("--judge-batch", action="store_true",
                   help="after retrieval, send every grading request as one Message Batch (half price, results "
                        "usually within the hour); --resume collects an interrupted run's batch")
    p.add_argument("--concurrency", type=_concurrency, default=1, metavar="N",
                   help=f"judge calls in flight at once, 1 to {MAX_CONCURRENCY} (default 1: one question after the "
                        "other); rows still come in question order, and rate limits lower it")
    p.add_argument("--order-check", action="store_true",
                   help="grade each question a second time with its chunks in reverse order: how much the order "
                        "moves the judge's grade (one more judge call per question checked)")
    p.add_argument("--order-check-sample", type=_positive_int, metavar="N",
                   help="with --order-check: check N questions drawn with a fixed seed (default: all)")
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
    _add_common_arguments(p)
    return p.parse_args(argv)


def _add_common_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the run and of every command."""
    p.add_argument("--log-dir", type=Path, default=LOG_DIR,
                   help="folder of the TRACE log files (default: %(default)s); when it cannot be written, "
                        "logging goes to the console only")
    p.add_argument("--log-keep", type=_count, default=50, metavar="N",
                   help="keep the newest N log files of --log-dir: older benchmark_*.log files there are deleted "
                        "once the new one is open (default: %(default)s; 0 keeps them all)")
    p.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR"], help="console log level")


class SignalGuard:
    """First SIGINT/SIGTERM/SIGHUP: KeyboardInterrupt in the main thread (the current question is
    abandoned) and ``received`` set, which the question loop also checks: an extension module can
    swallow the KeyboardInterrupt, or wrap it in another exception (once ``received`` is set,
    :func:`main` and the loop treat that exception as the interrupt). A second one exits at once
    with 130 (every finished row is already in the journal; a temp file being written is removed
    first). Inside :meth:`deferred` (the final write; a Message Batch being created and
    journaled) the first signal only sets ``received``: the write finishes, no temp file is left,
    and the run then ends with 130; a second one still exits at once."""

    SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s)

    def __init__(self) -> None:
        self.received: str | None = None
        self._deferring = False
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if self.received is not None:  # the second signal, deferring or not
            remove_temp_files()  # os._exit skips the write's own clean-up
            os._exit(EXIT_INTERRUPTED)
        self.received = name
        if not self._deferring:
            raise KeyboardInterrupt(name)

    @contextlib.contextmanager
    def deferred(self):
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False

    def __enter__(self) -> SignalGuard:
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def default_questions() -> Path:
    """The built-in corpus's questions: ``questions.json`` beside this file in a source checkout,
    else the copy an installed package keeps under ``<prefix>/share/retrieval-benchmark``."""
    here = ROOT / "questions.json"
    return here if here.is_file() else Path(sys.prefix) / "share" / "retrieval-benchmark" / "questions.json"


def run(args: argparse.Namespace, settings: Settings, log_path: Path | None, guard: SignalGuard, state) -> int:
    from components.run.benchmark_run import BenchmarkRun, RunOptions

    options = RunOptions(
        strategies=[s.strip() for s in args.strategy.split(",") if s.strip()] or [args.strategy],
        questions=args.questions, qrels=args.qrels, split=args.split, corpus=args.corpus, output=args.output, k=args.k,
        limit=5 if args.quick and args.limit is None else args.limit,
        ids=[i.strip() for i in args.ids.split(",") if i.strip()] if args.ids else None,
        resume=args.resume, max_cost_usd=args.max_cost, judge_repeats=args.judge_repeats,
        keep_text=not args.no_text, chunk_relevance=args.chunk_relevance, group_by=args.group_by,
        cache_dir=None if args.no_cache else (args.cache_dir or settings.cache_dir),
        judge_batch=args.judge_batch, concurrency=args.concurrency,
        order_check=(args.order_check_sample or True) if args.order_check else None, log_file=log_path, argv=list(args.argv),
        estimate=args.estimate)
    runner = BenchmarkRun(options, settings, should_stop=lambda: guard.received is not None,
                          deferred_signals=guard.deferred, state=state)
    results = runner.execute()
    if guard.received:
        return EXIT_INTERRUPTED
    codes = [STATUS_EXIT.get(r.run.status, EXIT_INTERNAL) for r in results]
    return max(codes, key=lambda c: (c != EXIT_OK, c)) if codes else EXIT_OK


# Commands beside the run: ``python benchmark.py NAME ...``. Each module named here exposes
# ``add_arguments(parser)`` and ``run(args, settings) -> int`` (exit code); it raises
# :class:`utils.errors.InputError` for bad input, which this edge turns into one line and exit 2.
COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "compare": ("components.analysis.compare", "compare runs question by question: deltas, CIs, p-values, verdicts"),
    "validate": ("components.dataset.validate",
                 "forward RAG check of a questions file: needle chunks must grade >= 7, random ones <= 3"),
    "export-dataset": ("components.dataset.export_dataset",
                       "export (query, positive chunks, hard negatives) as JSON lines for training a retriever"),
    "export-run": ("components.analysis.export_run",
                   "write a results file as a TREC run (and qrels) for trec_eval, ranx, ir_measures"),
    "report": ("components.analysis.report", "write one self-contained HTML report of one or more results files"),
    "label": ("components.analysis.labels", "draw a stratified sample of a run's graded rows for people to grade "
              "(JSON lines, judge grades left out)"),
    "calibrate": ("components.analysis.calibration", "the judge against human grades: kappa, rho, pass/fail, and "
                  "prediction-powered estimates of the run"),
}


def _unknown_command(word: str) -> str:
    """The error line for ``python benchmark.py WORD ...`` where WORD is no command: the run takes
    options only, so a first argument that is not an option is a mistyped command."""
    close = difflib.get_close_matches(word, COMMANDS, n=1, cutoff=0.6)
    if close:
        return f"unknown command {word!r}: did you mean {close[0]}?"
    if word.endswith(".json"):
        return f"unknown command {word!r}: a run takes options only: did you mean --questions {word}?"
    return (f"unknown command {word!r}: the commands are {', '.join(COMMANDS)}; a run takes options only "
            "(python benchmark.py --help)")


def _command_parser(name: str, module) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"benchmark.py {name}", description=COMMANDS[name][1])
    module.add_arguments(p)
    _add_common_arguments(p)
    return p


def _log_unraisable(unraisable) -> None:
    """An exception Python cannot raise (in a ``__del__``, e.g. of an SDK client whose
    construction a signal interrupted) goes to the log file, not as a traceback on the console."""
    logger.opt(exception=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback)).debug(
        "{} ({})", unraisable.err_msg or "Exception ignored", type(unraisable.object).__name__)


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    env = dict(os.environ if env is None else env)
    command = None
    if argv and argv[0] in COMMANDS:
        command = importlib.import_module(COMMANDS[argv[0]][0])
        args = _command_parser(argv[0], command).parse_args(argv[1:])
    elif argv and not argv[0].startswith("-"):
        sinks = add_sinks("INFO", None, secrets=secrets_in(env))
        logger.error("error: {}", escape_control(_unknown_command(argv[0])))
        sinks.remove()
        return EXIT_INPUT
    else:
        args = parse_args(argv)
    args.argv = argv
    try:  # plug-in providers first: their secrets are redacted like the built-in ones'
        load_provider_modules([m.strip() for m in (env.get("BENCHMARK_PROVIDERS") or "").split(",") if m.strip()])
        early_error = None
    except InputError as err:
        early_error = err
    sinks = add_sinks(args.log_level, log_file_path(args.log_dir), secrets=secrets_in(env))
    log_path = sinks.path  # None: console only (add_sinks said why, once)
    log_header(argv, {"strategy": args.strategy, "corpus": args.corpus or "built-in",
                      "questions": args.questions or default_questions()} if command is None else None)
    if log_path is not None:
        prune_logs(log_path.parent, args.log_keep, current=log_path)
    from components.run.benchmark_run import RunState

    state = RunState()
    guard = SignalGuard()
    code = EXIT_OK
    try:
        if early_error is not None:
            raise early_error
        if command is None and args.resume is not None:
            from components.run.benchmark_run import resume_defaults

            resume_defaults(args, env, given={a.split("=", 1)[0] for a in argv if a.startswith("--")})
        settings = Settings.from_env(env)
        if command is not None:
            with guard:  # a signal interrupts the command (its temp file removed), exit 130
                code = command.run(args, settings)
        else:
            if args.questions is None:
                args.questions = default_questions()
            args.output = resolve_output(args.output, questions_path=args.questions, corpus_dir=args.corpus)
            with guard:
                try:
                    code = run(args, settings, log_path, guard, state)
                except (OSError, ResultsWriteError):
                    raise  # a failed write stays one, signal or not
                except Exception as err:
                    if guard.received is None:
                        raise
                    # the signal's KeyboardInterrupt, wrapped by the code it interrupted (pydantic-core
                    # turns one into a SchemaError; a plug-in may raise its own error instead)
                    logger.opt(exception=err).debug("after {}: {}", guard.received, type(err).__name__)
                    raise KeyboardInterrupt(guard.received) from err
    except BenchmarkError as err:  # bad input (2), the judge at start-up (3), a write (5): err.exit_code
        # messages quote paths, ids, file names: escaped, so one line stays one line
        logger.opt(exception=err).debug("{}", type(err).__name__)
        logger.error("error: {}", escape_control(str(err)))
        code = err.exit_code
    except KeyboardInterrupt:
        if state.journal or state.written:  # the lines below name the journal, or the results written
            logger.error("interrupted")
        else:
            logger.error("interrupted before any question was graded: nothing written")
        code = EXIT_INTERRUPTED
    except OSError as err:
        logger.opt(exception=err).debug("results could not be written")
        logger.error("error: the results could not be written ({}: {})", type(err).__name__,
                     escape_control(str(err.strerror or err)))
        code = EXIT_WRITE
    except Exception as err:
        logger.opt(exception=err).debug("unexpected error")
        logger.error("internal error: {}: {} ({})", type(err).__name__, escape_control(str(err)),
                     f"traceback in {log_path}" if log_path else "no log file")
        code = EXIT_INTERNAL
    if log_path is not None:
        logger.info("Log file: {}", log_path)
    if code != EXIT_OK and state.journal is not None and state.journal.exists():
        logger.warning("Every finished question is in {}; to continue: {}", state.journal, state.continue_command)
    elif code in (EXIT_INTERRUPTED, EXIT_BUDGET, EXIT_JUDGE) and state.continue_command:
        logger.warning("To continue this run: {}", state.continue_command)
    sinks.remove()  # this command's sinks only: a caller's own (a test's) stay
    return code


def entry() -> None:
    """The ``retrieval-benchmark`` console script: ``python benchmark.py`` installed."""
    # One BLAS thread unless OPENBLAS_NUM_THREADS says otherwise (read when numpy is first imported,
    # which is later): a query's dense scores are one matrix-vector product, which OpenBLAS's thread
    # pool makes 3-10x slower whenever the other core is busy (bench/scale.py; same numbers either way).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.unraisablehook = _log_unraisable
    # A plug-in in the current folder (--strategy my_retriever:make, BENCHMARK_PROVIDERS) imports the
    # same whether this is `python benchmark.py` run from anywhere or the installed command: the
    # folder goes last on the import path, so it shadows none of the benchmark's own modules.
    with contextlib.suppress(OSError):
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
    code = main()
    # The command's work is done and written: a signal from now on changes nothing. Ignored, not
    # handled, because interpreter shutdown resets a Python handler to the default action, which
    # would end the process by the signal (exit -2) after a complete run.
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    if any(t.is_alive() and not t.daemon for t in threading.enumerate() if t is not threading.main_thread()):
        # a plug-in left a thread running: the results are written, so the process ends now
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)


if __name__ == "__main__":
    entry()
