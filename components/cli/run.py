"""The benchmark run, ``python benchmark.py [--strategy a,b] ...``: its arguments, ``--resume``'s
defaults, and the run itself (:class:`components.run.benchmark_run.BenchmarkRun`) under the
:class:`SignalGuard`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loguru import logger

from components.cli.adaptive import add_arguments as add_adaptive_arguments, gate_exit, request as adaptive_request
from components.cli.common import (SignalGuard, allow_ungraded, chunks_per_question, comma_list, concurrency,
                                   dollars, incomplete_exit, positive_int, timeout_seconds, worst_exit)
from components.run.calls.concurrency import MAX_CONCURRENCY
from components.run.retrieval.deadline import DEFAULT_RETRIEVAL_TIMEOUT_S
from utils.records.audit_file import read_audit
from utils.errors import EXIT_GATE, EXIT_INTERRUPTED, EXIT_OK, InputError, ResultsWriteError
from utils.files.history_index import record_history_folder
from utils.files.output import DEFAULT_OUTPUT_NAME, remove_empty_folders, resolve_output

ROOT = Path(__file__).resolve().parents[2]  # the folder of benchmark.py


def default_questions() -> Path:
    """The built-in corpus's questions: ``questions.json`` beside ``benchmark.py`` in a source
    checkout, else the copy an installed package keeps under ``<prefix>/share/retrieval-benchmark``."""
    here = ROOT / "questions.json"
    return here if here.is_file() else Path(sys.prefix) / "share" / "retrieval-benchmark" / "questions.json"


def add_arguments(p: argparse.ArgumentParser) -> None:
    _add_input_arguments(p)
    # a str, not a Path: Path drops the trailing "/" that says "a folder" (utils.files.output.resolve_output)
    p.add_argument("--output", default=DEFAULT_OUTPUT_NAME,
                   help=f"results JSON file, or a folder (existing, or ending in /) to write {DEFAULT_OUTPUT_NAME} "
                        "in (default: %(default)s); every run is also kept under runs/ beside it")
    p.add_argument("--resume", type=Path, help="continue a run from its results file or journal: graded rows are "
                   "kept without a new judge call, the rest run; the results go to the output that run recorded "
                   "unless --output is given")
    p.add_argument("--max-cost", type=dollars, dest="max_cost", metavar="USD",
                   help="stop grading before the judge's cost would pass USD (exit 4; --resume finishes later); a "
                        "run whose estimated cost is over USD says so before the first judge call")
    p.add_argument("--allow-ungraded", type=allow_ungraded, default=0.0, metavar="FRACTION",
                   help="exit 0 when at most this share of the planned grades is missing by a judge error (default "
                        "0: any missing grade is status incomplete, exit 8; --resume grades them)")
    p.add_argument("--estimate", action="store_true",
                   help="build every request the run would send (retrieval runs, the judge is not called), count "
                        "its tokens and print what it would cost per role, sequentially and as a batch; writes nothing")
    _add_judging_arguments(p)
    add_adaptive_arguments(p)
    p.add_argument("--retrieval-timeout", type=timeout_seconds, default=DEFAULT_RETRIEVAL_TIMEOUT_S,
                   metavar="SECONDS",
                   help="seconds each retrieve() may take (default %(default)g): past it the question is written with "
                        "a retrieval error, its thread abandoned, and the run goes on; 0: no deadline (retrieve() "
                        "then runs in the main thread)")
    p.add_argument("--no-text", action="store_true", help="leave the retrieved chunks' text out of the results")
    p.add_argument("--audit", type=Path, default=None, metavar="FILE",
                   help="a judge audit (benchmark.py audit-judge -o FILE): the summary warns when the judge is "
                        "vulnerable, or is not the judge (model, prompt) the audit was made with")
    p.add_argument("--chunk-relevance", action=argparse.BooleanOptionalAction, default=None,
                   help="rate each retrieved chunk 0-3 (proxy NDCG/precision; one more judge call per question); "
                        "default: on with the offline judge, off with the LLM judge")
    p.add_argument("--targets", metavar="METRIC=VALUE,...",
                   help="values the run should reach, checked after it (e.g. hit@1=0.6,recall@5=0.9): a metric key "
                        "or label, or hit@N / recall@N for N up to k; rates as a share or a percent. Each is printed "
                        "met or missed with its 95%% CI and recorded in the results")
    p.add_argument("--fail-on-targets", action="store_true",
                   help="exit 6 when a --targets value is missed (as compare's gate does)")
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
                   help="registered strategy (baseline, modular-no-llm, modular), package.module:factory, or "
                        "recorded (grade the items each question recorded as retrieved, no retriever run); "
                        "several, comma-separated, run in turn on the same questions and judge, and are compared "
                        "(default: %(default)s)")
    p.add_argument("--suite", metavar="FILE[:NAME]",
                   help="run every configuration of a YAML suite (strategy, chunk_size, chunk_overlap, "
                        "embedding_model, reranker, strategy parameters) in turn on the same questions, then compare "
                        "them; NAME may be left out when FILE holds one suite (examples/suites.yaml)")
    p.add_argument("--quick", action="store_true", help="only the first 5 questions (= --limit 5)")
    p.add_argument("--limit", type=positive_int, help="only the first N questions")
    p.add_argument("--ids", help="only these question ids, comma-separated")
    p.add_argument("--k", type=chunks_per_question, default=5,
                   help="chunks retrieved per question, 1 to 1,000 (default: %(default)s)")
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
    """How the judge grades: a panel, repeats, batch, concurrency, the order check."""
    p.add_argument("--judges", default=None, metavar="SPEC[,SPEC...]|panel.toml",
                   help="a panel of judges instead of one: every judge grades every question and llm_grade is their "
                        "aggregate (each judge's grade kept in grades_by_judge). A spec is offline, <provider> or "
                        "<provider>/<model>; a .toml panel file names several endpoints of one provider. Overrides "
                        "BENCHMARK_JUDGE and BENCHMARK_JUDGE_MODEL (docs/judges.md#a-panel-of-judges)")
    p.add_argument("--panel-aggregate", default=None, choices=("median", "mean"),
                   help="with --judges: the panel's grade of a question is the median (default) or the mean of the "
                        "judges that graded it, rounded half up")
    p.add_argument("--judge-repeats", type=positive_int, default=1, metavar="N",
                   help="grade each question N times; the row keeps every grade and their spread")
    p.add_argument("--repeat-where", default="all", metavar="all|uncertain",
                   help="with --judge-repeats N: repeat every question (all, the default), or only those whose first "
                        "grade is within one grade of a pass mark or whose panel judges disagree (uncertain; "
                        "docs/judge-settings.md#repeats-where-they-matter)")
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
    p.add_argument("--known-answers", default=None, metavar="N",
                   help="before any question is judged, grade the first N questions whose retrieval holds their "
                        "needle twice, with the needle's chunks and with other documents': a judge that cannot tell "
                        "them apart stops the run (status judge_blind, exit 3); 2N calls per judge "
                        "(docs/judges.md#does-the-judge-tell-right-from-wrong)")


def header_details(args: argparse.Namespace) -> dict[str, object]:
    """What the log file's header says the run works on."""
    return {"strategy": f"suite {args.suite}" if args.suite else args.strategy, "corpus": args.corpus or "built-in",
            "questions": args.questions or default_questions()}


def apply_resume_defaults(args: argparse.Namespace, env: dict[str, str]) -> None:
    """``--resume FILE``: the options not on the command line (``args.argv``) and the judge not set
    in ``env`` are taken from what FILE recorded (:func:`components.run.benchmark_run.recorded_defaults`);
    ``args`` and ``env`` are updated."""
    from components.run.benchmark_run import recorded_defaults
    from components.run.retrieval.suite import first_resume_file

    given = {a.split("=", 1)[0] for a in args.argv if a.startswith("--")} | ({"--strategy"} if args.suite else set())
    defaults = recorded_defaults(first_resume_file(args.resume) if args.suite else args.resume, given, env)
    for name, value in defaults.options.items():
        setattr(args, name, value)
    env.update(defaults.env)
    if "output" in defaults.options:
        logger.info("--resume {}: the results go to {}, the output of the run it continues (give --output to "
                    "write elsewhere)", args.resume, args.output)


def run(args: argparse.Namespace, env: dict[str, str], *, log_path: Path | None, guard: SignalGuard, state) -> int:
    """The run of ``args`` with the judge ``env`` names; its exit code. Raises what the run raises;
    an exception that wraps the guard's interrupt becomes a :class:`KeyboardInterrupt`."""
    from components.judges.panel import panel_file

    suite = _suite(args)  # checked whole before any work
    if args.resume is not None:
        apply_resume_defaults(args, env)
    settings = _settings(args, env)
    if args.questions is None:
        args.questions = default_questions()
    args.output = resolve_output(args.output, questions_path=args.questions, corpus_dir=args.corpus, inputs=[
        ("the --until-decided baseline", args.until_decided), ("the --audit file", args.audit),
        ("the --judges panel file", panel_file(args.judges)), ("the --suite file", suite.path if suite else None)])
    with guard:
        try:
            return _execute(args, settings, log_path, guard, state, suite)
        except (OSError, ResultsWriteError):
            raise  # a failed write stays one, signal or not
        except Exception as err:
            if guard.received is None:
                raise
            # the signal's KeyboardInterrupt, wrapped by the code it interrupted (pydantic-core
            # turns one into a SchemaError; a plug-in may raise its own error instead)
            logger.opt(exception=err).debug("after {}: {}", guard.received, type(err).__name__)
            raise KeyboardInterrupt(guard.received) from err


def _suite(args: argparse.Namespace):
    """``--suite``'s :class:`components.run.retrieval.suite.Suite`, or None; it names the strategies itself."""
    if not args.suite:
        return None
    if any(a == "--strategy" or a.startswith("--strategy=") for a in args.argv):
        raise InputError("--suite names the strategy of each configuration: drop --strategy")
    from components.run.retrieval.suite import load_suite

    return load_suite(args.suite)


def _settings(args: argparse.Namespace, env: dict[str, str]):
    """The run's settings: the environment's judge, or the panel of ``--judges`` (which overrides
    ``BENCHMARK_JUDGE`` and ``BENCHMARK_JUDGE_MODEL``)."""
    from components.judges.panel import panel_settings, parse_judges
    from components.judges.settings import Settings

    if args.judges is None:
        if args.panel_aggregate is not None:
            raise InputError("--panel-aggregate applies to a panel of judges: add --judges, or leave it out")
        return Settings.from_env(env)
    specs = args.judges if isinstance(args.judges, list) else parse_judges(args.judges)  # --resume gives specs
    return panel_settings(specs, env)


def run_options(args: argparse.Namespace, settings, log_path: Path | None, suite=None):
    """The :class:`components.run.benchmark_run.RunOptions` of the parsed arguments (raises
    :class:`InputError` for a bad ``--targets``)."""
    from components.analysis.targets import parse_targets
    from components.run.benchmark_run import RunOptions
    from components.run.known_answers import parse_count
    from components.run.repeat_where import pass_marks
    from components.run.spec import RunSpec

    if args.fail_on_targets and args.targets is None:
        raise InputError("--fail-on-targets needs --targets METRIC=VALUE,... (e.g. hit@1=0.6,recall@5=0.9)")
    targets = parse_targets(args.targets, args.k) if args.targets is not None else []
    spec = RunSpec(
        k=args.k, judge_repeats=args.judge_repeats, repeat_where=args.repeat_where, pass_marks=pass_marks(targets),
        chunk_relevance=args.chunk_relevance, max_cost_usd=args.max_cost,
        group_by=tuple(args.group_by) if args.group_by else None, keep_text=not args.no_text,
        cache_dir=None if args.no_cache else (args.cache_dir or settings.cache_dir),
        judge_batch=args.judge_batch, concurrency=args.concurrency,
        order_check=(args.order_check_sample or True) if args.order_check else None,
        retrieval_timeout=args.retrieval_timeout or None, panel_aggregate=args.panel_aggregate or "median",
        known_answers=parse_count(args.known_answers),
        adaptive=adaptive_request(args, len(suite.strategies) if suite is not None else len(comma_list(args.strategy))))
    return RunOptions(
        strategies=comma_list(args.strategy) or [args.strategy],
        questions=args.questions, qrels=args.qrels, split=args.split, corpus=args.corpus, output=args.output, spec=spec,
        limit=5 if args.quick and args.limit is None else args.limit,
        ids=comma_list(args.ids) if args.ids else None, resume=args.resume, log_file=log_path,
        argv=list(args.argv), estimate=args.estimate, targets=targets, suite=suite,
        audit=read_audit(args.audit) if args.audit else None)


def _execute(args: argparse.Namespace, settings, log_path: Path | None, guard: SignalGuard, state, suite) -> int:
    from components.run.benchmark_run import BenchmarkRun

    runner = BenchmarkRun(run_options(args, settings, log_path, suite), settings,
                          should_stop=lambda: guard.received is not None, deferred_signals=guard.deferred, state=state)
    try:
        results = runner.execute()
    finally:  # a run that wrote nothing leaves no empty folder behind; one that did is found by its id
        remove_empty_folders(runner.created_folders)
        if state.written:
            record_history_folder(settings.state_dir, state.written[0].parent)
    if guard.received:
        return EXIT_INTERRUPTED
    if any(r.run.status == "judge_blind" for r in results):  # --known-answers: resuming with that judge stops again
        state.continue_command = None
    code = worst_exit([incomplete_exit(r, args.allow_ungraded) for r in results])
    code = gate_exit(args, results, code)
    return targets_exit(results, code) if args.fail_on_targets else code


def targets_exit(results, code: int) -> int:
    """``--fail-on-targets``: exit 6 when a run that completed missed a target; another exit code stays."""
    from components.analysis.targets import missed

    names = missed(results)
    if code != EXIT_OK or not names:
        return code
    logger.error("Targets missed: {}: exit {}", ", ".join(names), EXIT_GATE)
    return EXIT_GATE
