"""The command line: ``python benchmark.py [OPTIONS]`` (the run, :mod:`components.cli.run`) and
``python benchmark.py COMMAND ...`` (one module of this package per command, see :data:`COMMANDS`).

This package is the only place that reads the environment (the ``env`` given to :func:`main`),
adds log sinks, or turns exceptions into console lines and exit codes (see ``utils.errors.EXIT_*``
and the README). :func:`main` may be called again in the same process: it removes the log sinks it
added, puts back the signal handlers it replaced, and reads no environment but its ``env``.
"""

from __future__ import annotations

import argparse
import contextlib
import difflib
import importlib
import os
import signal
import sys
import threading
from pathlib import Path

from loguru import logger

from components.cli.common import SignalGuard, add_common_arguments, environment_help
from components.judges.providers import secrets_in
from components.judges.settings import Settings
from components.core.plugins import load_plugins
from utils.console import escape_control
from utils.errors import (EXIT_BUDGET, EXIT_INCOMPLETE, EXIT_INPUT, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_JUDGE,
                          EXIT_OK, EXIT_WRITE, BenchmarkError, InputError)
from utils.logger import LogSinks, add_sinks, log_file_path, log_header, prune_logs
from utils.files.output import check_outside_corpus
from utils.redaction import mask_keylike, redacted_stdout

# Commands beside the run: ``python benchmark.py NAME ...``. Each module named here exposes
# ``add_arguments(parser)`` and ``run(args, settings) -> int`` (exit code); it raises
# :class:`utils.errors.InputError` for bad input, which :func:`main` turns into one line and exit 2.
COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
    "compare": ("components.cli.compare", "compare runs question by question: deltas, CIs, p-values, verdicts"),
    "validate": ("components.cli.validate",
                 "forward RAG check of a questions file: needle chunks must grade >= 7, random ones <= 3"),
    "export-dataset": ("components.cli.export_dataset",
                       "export (query, positive chunks, hard negatives) as JSON lines for training a retriever"),
    "export-run": ("components.cli.export_run",
                   "write a results file as a TREC run (and qrels) for trec_eval, ranx, ir_measures"),
    "report": ("components.cli.report", "write one self-contained HTML report of one or more results files"),
    "label": ("components.cli.label", "draw a stratified sample of a run's graded rows for people to grade "
              "(JSON lines, judge grades left out)"),
    "calibrate": ("components.cli.calibrate", "the judge against human grades: kappa, rho, pass/fail, and "
                  "prediction-powered estimates of the run"),
    "audit-judge": ("components.cli.audit_judge", "can a retrieval fool the judge? keyword stuffing, injected "
                    "instructions, padding... graded against an unedited control, per attack a verdict"),
    "pool": ("components.cli.pool", "relevance labels for the union of runs' top items, judged once and kept in a "
             "judgment store: qrels, false-negative and gold-error candidates"),
}

EPILOG = """\
examples:
  python benchmark.py --strategy modular-no-llm --quick
  python benchmark.py --strategy baseline,modular-no-llm --corpus ../shared/datasets/kubernetes/docs \\
      --questions ../shared/datasets/kubernetes/needle_questions.json
  python benchmark.py --resume runs/20261123T120000Z_modular-no-llm.journal.jsonl --strategy modular-no-llm
  python benchmark.py --suite examples/suites.yaml:chunk_comparison   (configurations of a YAML suite, compared)
  python benchmark.py --strategy recorded --questions examples/recorded_retrievals.json
  python benchmark.py --corpus docs/examples/beir --questions docs/examples/beir --split test   (a BEIR folder)
  python benchmark.py export-run benchmark_results.json -o run.trec --qrels qrels.txt
  python benchmark.py compare baseline.json benchmark_results.json --fail-on worse:mrr,ndcg --margin hit1=20
  python benchmark.py compare runs/A.json runs/B.json
  python benchmark.py --questions q.json --estimate       (what a run would cost, before it spends)
  python benchmark.py --strategy baseline,modular-no-llm --judges panel.toml   (a panel of judges, docs/judges.md)

outputs:
  benchmark_results.json, runs/ and logs/ in the current folder; beside benchmark.py when python
  path/to/benchmark.py is run from a folder that contains its folder (--output, --log-dir still choose)

environment:
{environment}
exit codes:
  0 done, every planned grade present · 1 internal error (the journal keeps the run) ·
  2 bad usage or input, nothing written ·
  3 the judge (a judge of a panel) or the query rewriter became unusable, or kept rate-limiting
    (--resume finishes later) ·
  4 --max-cost reached · 5 the results could not be written (the journal keeps the run) ·
  6 a gate failed: compare's (--fail-on, --margin, --fail-on-regressions, --require-agreement: one FAIL line
    per check), a run's --fail-on-targets, or a run's --until-decided gate (--fail-on, --margin) ·
  7 the retriever failed on every question (status retrieval_failed) ·
  8 a grade missing by a judge error (status incomplete; --allow-ungraded accepts a share) · 130 interrupted
"""


def run_parser() -> argparse.ArgumentParser:
    """The parser of the run (``python benchmark.py [OPTIONS]``), whose help lists the commands."""
    commands = "\n".join(f"  {name:<15}{help_}" for name, (_, help_) in COMMANDS.items())
    p = argparse.ArgumentParser(
        description="LLM-graded retrieval benchmark.",
        epilog=f"commands (python benchmark.py NAME --help):\n{commands}\n\n"
               + EPILOG.format(environment=environment_help()),
        formatter_class=argparse.RawDescriptionHelpFormatter)
    from components.cli import run as run_command  # here: a command (compare, report...) never loads the run

    run_command.add_arguments(p)
    add_common_arguments(p)
    return p


def program() -> str:
    """How the user started the command line: ``retrieval-benchmark`` (the installed command) or
    ``benchmark.py`` (the script, also when ``main`` is called from Python)."""
    return "retrieval-benchmark" if os.path.basename(sys.argv[0] if sys.argv else "") == "retrieval-benchmark" \
        else "benchmark.py"


def command_parser(name: str, module) -> argparse.ArgumentParser:
    """The parser of the command ``name``, whose arguments ``module`` adds."""
    p = argparse.ArgumentParser(prog=f"{program()} {name}", description=COMMANDS[name][1])
    module.add_arguments(p)
    add_common_arguments(p)
    return p


def parse(argv: list[str]) -> tuple[object | None, argparse.Namespace]:
    """The command's module (``None``: the run) and its parsed arguments (``argv`` kept as
    ``args.argv``). Raises ``SystemExit`` for ``--help`` and for bad usage, as argparse does."""
    command = None
    if argv and argv[0] in COMMANDS:
        command = importlib.import_module(COMMANDS[argv[0]][0])
        args = command_parser(argv[0], command).parse_args(argv[1:])
    else:
        args = run_parser().parse_args(argv)
    args.argv = argv
    return command, args


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


def main(argv: list[str] | None = None, env: dict[str, str] | None = None, *, script: str | None = None) -> int:
    """Run the command line ``argv`` (default: ``sys.argv[1:]``) with the environment ``env``
    (default: an empty one; :func:`entry` passes ``os.environ``); returns the exit code, also for
    ``--help`` and bad usage (argparse's message printed). ``script``: the path of ``benchmark.py``
    when it was run as a script, which may put the default outputs beside it
    (:mod:`components.cli.output_home`)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    env = dict(env or {})
    if argv and not argv[0].startswith("-") and argv[0] not in COMMANDS:
        return _refuse_unknown_command(argv[0], env)
    # first: a plug-in provider's secrets are redacted like the built-in ones', its attacks are in --help
    early_error = _load_plugins(env)
    try:
        command, args = parse(argv)
    except SystemExit as done:  # --help (0), bad usage (2)
        return done.code if isinstance(done.code, int) else EXIT_INPUT
    home = _output_home(command, args, script)
    try:  # before the log file is opened: never inside the corpus
        check_outside_corpus([("--log-dir", args.log_dir), ("--cache-dir", getattr(args, "cache_dir", None))],
                             getattr(args, "corpus", None))
    except InputError as err:
        return _refuse(str(err), env)
    sinks = _open_logs(command, args, env)
    if home.note:
        logger.warning("{}", home.note)
    try:
        from components.run.run_state import RunState

        state = RunState()
        with redacted_stdout(secrets_in(env)):
            code = _outcome(command, args, env, sinks.path, state, early_error)
        _closing_lines(code, state, sinks.path)
    finally:
        sinks.remove()
    return code


def _output_home(command, args: argparse.Namespace, script: str | None):
    """Where the default outputs go (:mod:`components.cli.output_home`); ``args`` updated."""
    from components.cli.output_home import apply_home, output_home

    try:
        home = output_home(script, os.getcwd())
    except OSError:  # the current folder is gone: the defaults fail later, as they would have
        home = output_home(None, ".")
    name = args.argv[0] if command is not None else None
    return apply_home(home, args, args.argv[1:] if command is not None else args.argv, command is None,
                      run_parser if command is None else lambda: command_parser(name, command))


def _refuse_unknown_command(word: str, env: dict[str, str]) -> int:
    return _refuse(_unknown_command(word), env)


def _refuse(message: str, env: dict[str, str]) -> int:
    """One error line on the console (no log file is open yet); exit 2."""
    sinks = add_sinks("INFO", None, secrets=secrets_in(env))
    logger.error("error: {}", escape_control(mask_keylike(message)))
    sinks.remove()
    return EXIT_INPUT


def _load_plugins(env: dict[str, str]) -> InputError | None:
    """Import the plug-in modules (:func:`components.core.plugins.load_plugins`: ``BENCHMARK_PLUGINS``,
    ``BENCHMARK_PROVIDERS``, the installed entry points); the error, raised once the log sinks are
    open, when one cannot be."""
    try:
        load_plugins(env)
    except InputError as err:
        return err
    return None


def _open_logs(command, args: argparse.Namespace, env: dict[str, str]) -> LogSinks:
    """The console and log file sinks, the log file's header, older log files pruned."""
    secrets = secrets_in(env)
    if isinstance(getattr(args, "judges", None), str):  # a panel file's keys too (the judge modules only then)
        from components.judges.panel import panel_secrets

        secrets = (*secrets, *panel_secrets(args.judges, env))
    sinks = add_sinks(args.log_level, log_file_path(args.log_dir), secrets=secrets)
    details = None
    if command is None:  # the run's own header lines
        from components.cli import run as run_command

        details = run_command.header_details(args)
    log_header(args.argv, details)
    if sinks.path is not None:  # None: console only (add_sinks said why, once)
        prune_logs(sinks.path.parent, args.log_keep, current=sinks.path)
    return sinks


def _work(command, args: argparse.Namespace, env: dict[str, str], log_path: Path | None, state) -> int:
    """The run or the command, under a :class:`SignalGuard`; its exit code."""
    guard = SignalGuard()
    if command is None:
        from components.cli import run as run_command

        return run_command.run(args, env, log_path=log_path, guard=guard, state=state)
    settings = Settings.from_env(env)
    with guard:  # a signal interrupts the command (its temp file removed), exit 130
        if getattr(command, "TAKES_ENV", False):  # a command that reads judges' variables itself (--judges)
            return command.run(args, settings, env)
        return command.run(args, settings)


def _outcome(command, args: argparse.Namespace, env: dict[str, str], log_path: Path | None, state,
             early_error: InputError | None) -> int:
    """:func:`_work`'s exit code, every exception it raises turned into one console line and its code."""
    try:
        if early_error is not None:
            raise early_error
        return _work(command, args, env, log_path, state)
    except BenchmarkError as err:  # bad input (2), the judge at start-up (3), a write (5): err.exit_code
        # messages quote paths, ids, file names: escaped, so one line stays one line
        logger.opt(exception=err).debug("{}", type(err).__name__)
        logger.error("error: {}", escape_control(mask_keylike(str(err))))
        return err.exit_code
    except KeyboardInterrupt:
        if state.journal or state.written:  # the lines below name the journal, or the results written
            logger.error("interrupted")
        else:
            logger.error("interrupted before any question was graded: nothing written")
        return EXIT_INTERRUPTED
    except OSError as err:
        logger.opt(exception=err).debug("results could not be written")
        logger.error("error: the results could not be written ({}: {})", type(err).__name__,
                     escape_control(str(err.strerror or err)))
        return EXIT_WRITE
    except Exception as err:
        logger.opt(exception=err).debug("unexpected error")
        logger.error("internal error: {}: {} ({})", type(err).__name__, escape_control(str(err)),
                     f"traceback in {log_path}" if log_path else "no log file")
        return EXIT_INTERNAL


def _closing_lines(code: int, state, log_path: Path | None) -> None:
    """The log file's name, and where the work is kept when the command did not finish."""
    if log_path is not None:
        logger.info("Log file: {}", log_path)
    if code != EXIT_OK and state.journal is not None and state.journal.exists():
        logger.warning("Every finished question is in {}; to continue: {}", state.journal, state.continue_command)
    elif code in (EXIT_INTERRUPTED, EXIT_BUDGET, EXIT_JUDGE, EXIT_INCOMPLETE) and state.continue_command:
        logger.warning("To continue this run: {}", state.continue_command)


def _log_unraisable(unraisable) -> None:
    """An exception Python cannot raise (in a ``__del__``, e.g. of an SDK client whose
    construction a signal interrupted) goes to the log file, not as a traceback on the console."""
    logger.opt(exception=(unraisable.exc_type, unraisable.exc_value, unraisable.exc_traceback)).debug(
        "{} ({})", unraisable.err_msg or "Exception ignored", type(unraisable.object).__name__)


def entry(script: str | None = None) -> None:
    """The ``retrieval-benchmark`` console script: ``python benchmark.py`` installed; ``script``: the
    path of ``benchmark.py`` when ``python path/to/benchmark.py`` runs it (not the installed command,
    not ``python -m benchmark``)."""
    # One BLAS thread unless OPENBLAS_NUM_THREADS says otherwise (read when numpy is first imported,
    # which is later): a query's dense scores are one matrix-vector product, which OpenBLAS's thread
    # pool makes 3-10x slower whenever the other core is busy (bench/scale.py; same numbers either way).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.unraisablehook = _log_unraisable
    # A plug-in in the current folder (--strategy my_retriever:make, BENCHMARK_PLUGINS) imports the
    # same whether this is `python benchmark.py` run from anywhere or the installed command: the
    # folder goes last on the import path, so it shadows none of the benchmark's own modules.
    with contextlib.suppress(OSError):
        if os.getcwd() not in sys.path:
            sys.path.append(os.getcwd())
    code = main(sys.argv[1:], dict(os.environ), script=script)
    # The command's work is done and written: a signal from now on changes nothing. Ignored, not
    # handled, because interpreter shutdown resets a Python handler to the default action, which
    # would end the process by the signal (exit -2) after a complete run.
    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), signal.SIG_IGN)
    if any(t.is_alive() for t in threading.enumerate() if t is not threading.main_thread()):
        # A thread is still running: a plug-in's, or a daemon one (a judge call abandoned by Ctrl-C,
        # still waiting on its socket). The results are written, so the process ends now: a plug-in's
        # thread would keep it alive, and interpreter shutdown aborts the process (SIGABRT) when a
        # daemon thread holds the lock of stderr at that moment.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    sys.exit(code)
