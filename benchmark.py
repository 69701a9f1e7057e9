"""Retrieval benchmark: rank the needle, grade the chunks with a judge, score, write results.

    python benchmark.py --strategy modular-no-llm --quick

Exit codes: 0 done; 2 bad usage or input (nothing written); 3 the judge became unusable (results
written, remaining grades null); 130 interrupted (results of the finished questions written).
This is the only module that reads the environment, adds log sinks, or turns exceptions into
console lines and exit codes.
"""

from __future__ import annotations

import argparse
import os
import platform
import signal
import sys
from datetime import datetime, timezone
from importlib import metadata
from pathlib import Path

from loguru import logger

from components.run.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from utils.errors import InputError
from utils.logger import add_sinks, get_logger
from utils.results import check_writable
from utils.settings import Settings

ROOT = Path(__file__).resolve().parent
PACKAGES = ("anthropic", "bm25s", "wordllama", "numpy", "loguru", "PyStemmer", "PyYAML")
EXIT_OK, EXIT_INPUT, EXIT_JUDGE, EXIT_INTERRUPTED = 0, 2, 3, 130
OFFLINE_NOTE = "offline lexical judge: grades are a lexical proxy (IDF-weighted key-term overlap), not Sonnet"


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="LLM-graded retrieval benchmark.")
    p.add_argument("--strategy", default="modular-no-llm",
                   help="registered strategy (baseline, modular-no-llm, modular) or package.module:factory")
    p.add_argument("--quick", action="store_true", help="only the first 5 questions")
    p.add_argument("--questions", type=Path, default=ROOT / "questions.json", help="questions JSON file")
    p.add_argument("--corpus", type=Path, default=None,
                   help="folder of Markdown files, one document each (default: built-in Python reference)")
    p.add_argument("--output", type=Path, default=ROOT / "benchmark_results.json", help="results JSON file")
    p.add_argument("--cache-dir", type=Path, default=None,
                   help="index cache folder (default: $XDG_CACHE_HOME/retrieval-benchmark, else "
                        "~/.cache/retrieval-benchmark)")
    p.add_argument("--no-cache", action="store_true", help="build the index without reading or writing the cache")
    p.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR"], help="console log level")
    p.add_argument("--k", type=int, default=5, help=argparse.SUPPRESS)
    return p.parse_args(argv)


class SignalGuard:
    """First SIGINT/SIGTERM: KeyboardInterrupt in the main thread (the current question is
    abandoned) and ``received`` set, which the question loop also checks: an extension module
    can swallow the KeyboardInterrupt. A second one exits at once with 130."""

    def __init__(self) -> None:
        self.received: str | None = None
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, _frame: object) -> None:
        if self.received is not None:
            os._exit(EXIT_INTERRUPTED)
        self.received = signal.Signals(signum).name
        raise KeyboardInterrupt(self.received)

    def __enter__(self) -> SignalGuard:
        for sig in (signal.SIGINT, signal.SIGTERM):
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)


def _versions() -> dict[str, str]:
    out = {}
    for name in PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def _summary(agg, status: str) -> str:
    def pct(x):
        return f"{x:6.1f}%"

    def num(x, fmt="{:.2f}"):
        return "   -" if x is None else fmt.format(x)

    lines = [
        f"{'status':<18}{status}",
        f"{'questions':<18}{agg.question_count}  (graded {agg.graded_count}, ungraded {agg.ungraded_count})",
        f"{'hit@1 / hit@5':<18}{pct(agg.hit_at_1_rate)} / {pct(agg.hit_at_5_rate)}",
        f"{'MRR':<18}{agg.mrr:.3f}",
        f"{'avg grade / total':<18}{num(agg.avg_llm_grade)} / {num(agg.avg_total_score)}",
        f"{'pass 8 / 7 / 6.5':<18}{pct(agg.pass_rate_8)} / {pct(agg.pass_rate_7)} / {pct(agg.pass_rate_6_5)}",
    ]
    if agg.grade_errors:
        lines.append(f"{'ungraded because':<18}" + ", ".join(f"{k} x{v}" for k, v in agg.grade_errors.items()))
    return "\n".join(lines)


def run(args: argparse.Namespace, settings: Settings, log_path: Path, guard: SignalGuard) -> int:
    log = get_logger()
    started = _now()
    # ---- validate everything before the first retrieval or judge call
    check_writable(args.output)
    from poc.strategies import resolve_strategy
    from utils.questions import check_needles, load_questions

    factory = resolve_strategy(args.strategy)
    qset = load_questions(args.questions)
    questions = qset.questions[:5] if args.quick else qset.questions
    if settings.judge == "anthropic":
        from utils import llm_provider

        llm_provider.configure(llm_provider.ProviderConfig(
            api_key=settings.api_key, base_url=settings.base_url,
            models=(("claude-sonnet", settings.sonnet_model), ("claude-haiku", settings.haiku_model)),
            max_retry_wait_s=min(10.0, settings.judge_timeout)))
        log.info("Judge: Claude via the Anthropic API, model {} (timeout {:g}s)",
                 llm_provider.resolve_model("claude-sonnet"), settings.judge_timeout)
    else:
        log.info("Judge: {} (no ANTHROPIC_API_KEY, or BENCHMARK_JUDGE=offline)", OFFLINE_NOTE)

    # ---- load, chunk and index, through the index cache (the needles are checked before indexing)
    from components.run.index_cache import prepare_index

    prepared = prepare_index(args.corpus, args.strategy, lambda: factory(llm_available=settings.judge == "anthropic"),
                             None if args.no_cache else (args.cache_dir or settings.cache_dir),
                             check_ids=lambda ids, source: check_needles(qset, ids, source))
    retriever, chunks, index_s = prepared.retriever, prepared.chunks, prepared.index_s
    log.info("Corpus {}: {} documents, {} chunks (loaded+chunked in {:.2f}s, indexed in {:.2f}s; index cache {})",
             prepared.source, prepared.documents, len(chunks), prepared.load_s, index_s, prepared.cache)

    from components.run.benchmark_loop import BenchmarkLoop
    from utils.results import CorpusInfo, JudgeInfo, RunInfo, aggregate, build_report, write_json_atomic

    if settings.judge == "anthropic":
        from components.run.retrieval_grader import RetrievalGrader

        judge = RetrievalGrader(timeout=settings.judge_timeout)
        judge_info = JudgeInfo("anthropic", llm_provider.resolve_model("claude-sonnet"), PROMPT_SHA256,
                               REFERENCE_FREE_PROMPT_SHA256, settings.judge_timeout,
                               "LLM judge (Claude) via the Anthropic Messages API")
    else:
        from components.run.lexical_judge import LexicalJudge

        judge = LexicalJudge(chunks)
        judge_info = JudgeInfo("offline", LexicalJudge.model, PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256, None,
                               OFFLINE_NOTE)

    # ---- the loop
    if guard.received:  # a signal whose KeyboardInterrupt an extension swallowed
        raise KeyboardInterrupt(guard.received)
    loop = BenchmarkLoop(retriever, judge, k=args.k, should_stop=lambda: guard.received is not None)
    status = "completed"
    try:
        loop.run(questions)
    except KeyboardInterrupt:
        guard.received = guard.received or "SIGINT"
    if guard.received:
        status = "interrupted"
        log.warning("Interrupted ({}) after {} of {} questions: writing what is done",
                    guard.received, len(loop.results), len(questions))
    guard.received = guard.received or "done"  # from here on, any signal exits at once
    if status == "completed" and loop.judge_failure is not None:
        status = "judge_failed"

    results = loop.results
    agg = aggregate(results, round(index_s, 3), k=args.k)
    run_info = RunInfo(
        started_at=started, finished_at=_now(), status=status, strategy=args.strategy, k=args.k,
        quick=args.quick, questions_file=str(args.questions), questions_sha256=qset.sha256,
        corpus=CorpusInfo(prepared.source, prepared.documents, len(chunks), prepared.sha256), judge=judge_info,
        python=platform.python_version(), packages=_versions(),
        judge_failure=f"{loop.judge_failure.kind}: {loop.judge_failure}" if loop.judge_failure else None,
        log_file=str(log_path), index=prepared.index_info)
    for name in ("hit_at_1_rate", "hit_at_5_rate"):
        log.metric(name, getattr(agg, name), "%")
    log.metric("mrr", agg.mrr)
    log.metric("avg_llm_grade", agg.avg_llm_grade)
    log.metric("avg_total_score", agg.avg_total_score)
    for name in ("pass_rate_8", "pass_rate_7", "pass_rate_6_5"):
        log.metric(name, getattr(agg, name), "%")
    log.info("Summary ({} judge: {})\n{}", judge_info.provider, judge_info.model, _summary(agg, status))
    write_json_atomic(args.output, build_report(run_info, agg, results), secrets=[settings.api_key or ""])
    log.info("Results written to {}", args.output)
    if loop.judge_failure is not None:
        log.error("The judge became unusable: {} — fix it and run again", loop.judge_failure)
        return EXIT_INTERRUPTED if status == "interrupted" else EXIT_JUDGE
    return EXIT_INTERRUPTED if status == "interrupted" else EXIT_OK


# Commands beside the run: ``python benchmark.py NAME ...``. Each module named here exposes
# ``add_arguments(parser)`` and ``run(args, settings) -> int`` (exit code); it raises
# :class:`utils.errors.InputError` for bad input, which this edge turns into one line and exit 2.
COMMANDS: dict[str, tuple[str, str]] = {
    # name: (module, one-line help)
}


def _command_parser(name: str, module) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"benchmark.py {name}", description=COMMANDS[name][1])
    module.add_arguments(p)
    p.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR"], help="console log level")
    return p


def main(argv: list[str] | None = None, env: dict[str, str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    command = None
    if argv and argv[0] in COMMANDS:
        import importlib

        command = importlib.import_module(COMMANDS[argv[0]][0])
        args = _command_parser(argv[0], command).parse_args(argv[1:])
    else:
        args = parse_args(argv)
    env = dict(os.environ if env is None else env)
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    log_path = ROOT / "logs" / f"benchmark_{stamp}_{os.getpid()}.log"
    handle = add_sinks(args.log_level, log_path, secrets=[env.get("ANTHROPIC_API_KEY") or ""])
    code = EXIT_OK
    try:
        settings = Settings.from_env(env)
        if command is not None:
            code = command.run(args, settings)
        else:
            with SignalGuard() as guard:
                code = run(args, settings, log_path, guard)
    except InputError as err:
        logger.opt(exception=err).debug("input error")
        logger.error("error: {}", err)
        code = EXIT_INPUT
    except KeyboardInterrupt:
        logger.error("interrupted before any question was graded: nothing written")
        code = EXIT_INTERRUPTED
    except Exception as err:
        logger.opt(exception=err).debug("unexpected error")
        logger.error("internal error: {}: {} (traceback in {})", type(err).__name__, err, log_path)
        code = 1
    logger.info("Log file: {}", log_path)
    logger.remove()
    handle.close()
    return code


if __name__ == "__main__":
    # One BLAS thread unless OPENBLAS_NUM_THREADS says otherwise (read when numpy is first imported,
    # which is later): a query's dense scores are one matrix-vector product, which OpenBLAS's thread
    # pool makes 3-10x slower whenever the other core is busy (bench/scale.py; same numbers either way).
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    sys.exit(main())
