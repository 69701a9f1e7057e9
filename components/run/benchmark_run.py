"""A benchmark run: what ``python benchmark.py [--strategy a,b] ...`` does, start to finish.

1. Check everything that can be checked before any work: the output path, the strategies, the
   questions (and the selection ``--limit``/``--ids``), ``--resume``'s file, and — before the
   corpus is loaded — every model the run will call (:func:`components.judges.setup.check_models`).
2. Load and chunk the corpus once; check the needles against it.
3. For each strategy in turn: build and index its retriever (a plug-in whose factory or
   ``index()`` fails stops here with an :class:`InputError` naming it), run the question loop with
   a journal (``runs/<run id>.journal.jsonl``), give transient failures one more pass, aggregate,
   and write ``runs/<run id>.json`` and the ``--output`` file (atomically, signals deferred while
   writing). The journal is deleted once both are written.
4. With several strategies, compare them (``components.analysis.compare``).

:class:`RunState` tells the edge, whatever happens, which journal holds the work and the command
that continues it. Exit statuses are mapped to exit codes by ``benchmark.py``.
"""

from __future__ import annotations

import re
import shlex
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime, timezone
from pathlib import Path
import platform

from loguru import logger

from components.run.benchmark_loop import BenchmarkLoop
from components.run.journal import Journal, read_rows
from components.judges.chunk_relevance import RELEVANCE_PROMPT_SHA256
from components.judges.providers import ModelChoice
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from components.judges.setup import JudgeSetup, check_models, make_judge, relevance_judge
from components.run.judge_batch import (BatchJudge, PollSchedule, check_batch_options, run_batch,
                                        warn_uncollected, finished as batch_finished)
from poc.strategies import Strategy, resolve_strategy
from components.analysis.diagnosis import count_tags
from utils.console import Progress, summary_table
from utils.errors import InputError
from utils.metrics import RetrievalMetrics as M
from utils.questions import Question, QuestionSet, check_needles, load_questions
from utils.results import CorpusInfo, JudgeInfo, RunInfo, aggregate, build_report
from utils.output import check_writable
                           write_json_atomic)
from utils.settings import Settings
from utils.versions import package_versions

PACKAGES = ("anthropic", "bm25s", "wordllama", "numpy", "loguru", "PyStemmer", "PyYAML")
RUNS_FOLDER = "runs"
# The fields --resume must find unchanged: (identity key, what the user changes to fix it).
RESUME_FIELDS = (("questions_sha256", "the questions file"), ("corpus_sha256", "the corpus"),
                 ("strategy", "--strategy"), ("k", "--k"), ("judge_model", "the judge model"),
                 ("prompt_sha256", "the grading prompt"))


@dataclass(frozen=True)
class RunOptions:
    strategies: list[str]
    questions: Path
    corpus: Path | None
    output: Path
    k: int = 5
    limit: int | None = None
    ids: list[str] | None = None
    resume: Path | None = None
    max_cost_usd: float | None = None
    judge_repeats: int = 1
    keep_text: bool = True
    chunk_relevance: bool | None = None  # None: on with the offline judge (free), off with the LLM judge
    group_by: list[str] | None = None
    cache_dir: Path | None = None  # the index cache; None = --no-cache
    judge_batch: bool = False  # grade through the Message Batches API (components/run/judge_batch.py)
    log_file: Path | None = None
    argv: list[str] = field(default_factory=list)  # as given, for the "to continue" command


@dataclass
class RunState:
    """What the edge needs when a run ends badly: the journal holding the work, and the command
    that continues it."""

    journal: Path | None = None
    continue_command: str | None = None
    written: list[Path] = field(default_factory=list)


def versions() -> dict[str, str]:
    return package_versions(PACKAGES)


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def new_run_id(strategy: str, runs_dir: Path) -> str:
    """``<UTC time>_<strategy>``, made unique in ``runs_dir`` (never overwrite a run)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}_{re.sub(r'[^A-Za-z0-9._-]+', '-', strategy).strip('-') or 'strategy'}"
    run_id, n = base, 1
    while (runs_dir / f"{run_id}.json").exists() or (runs_dir / f"{run_id}.journal.jsonl").exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def select_questions(qset: QuestionSet, limit: int | None, ids: Sequence[str] | None) -> list[Question]:
    """``--ids`` (in the file's order) then ``--limit`` (the first N)."""
    questions = qset.questions
    if ids:
        known = {q.id for q in questions}
        unknown = [i for i in ids if i not in known]
        if unknown:
            raise InputError(f"--ids: {', '.join(repr(i) for i in unknown[:5])} not in {qset.path}: "
                             "give ids of that file (its \"id\" fields)")
        wanted = set(ids)
        questions = [q for q in questions if q.id in wanted]
    if limit is not None:
        questions = questions[:limit]
    return questions


def _judge_info(settings: Settings, setup: JudgeSetup, role: str, repeats: int, relevance: bool = False) -> JudgeInfo:
    """``run.judge`` (role ``judge``) or ``run.rewriter`` (role ``rewriter``) of a run."""
    provider = setup.judge_provider if role == "judge" else setup.rewriter_provider
    choice: ModelChoice | None = setup.judge if role == "judge" else setup.rewriter
    relevance_sha = RELEVANCE_PROMPT_SHA256 if relevance else None
    if choice is None:
        from components.judges.lexical_judge import LexicalJudge

        return JudgeInfo(provider.name, LexicalJudge.model, PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256, None,
                         setup.note(), repeats=repeats, relevance_prompt_sha256=relevance_sha)
    note = setup.note() if role == "judge" else f"query rewriter: {type(provider).label}"
    return JudgeInfo(provider.name, choice.model, PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256, settings.judge_timeout,
                     note, requested_model=choice.model, repeats=repeats, relevance_prompt_sha256=relevance_sha,
                     details=provider.describe(choice))


def _check_resume(identity: dict, previous: dict, path: Path) -> None:
    for key, what in RESUME_FIELDS:
        if key in previous and previous.get(key) != identity.get(key):
            raise InputError(f"--resume {path}: {key} differs ({previous.get(key)!r} there, {identity.get(key)!r} "
                             f"now): run with the same {what} as the run you continue")


def _identity_of(run: dict) -> dict:
    """The resume identity of a results file's ``run`` (a journal's header already is one)."""
    if "corpus_sha256" in run:
        return run
    judge = run.get("judge") or {}
    return {"questions_sha256": run.get("questions_sha256"), "corpus_sha256": (run.get("corpus") or {}).get("sha256"),
            "strategy": run.get("strategy"), "k": run.get("k"), "judge_model": judge.get("model"),
            "prompt_sha256": judge.get("prompt_sha256")}


def _continue_command(argv: list[str], path: Path) -> str:
    args, skip = [], False
    for a in argv:
        if skip:
            skip = False
            continue
        if a == "--resume":
            skip = True
            continue
        if a.startswith("--resume="):
            continue
        args.append(a)
    return shlex.join(["python", "benchmark.py", *args, "--resume", str(path)])


class BenchmarkRun:
    def __init__(self, options: RunOptions, settings: Settings, *, should_stop: Callable[[], bool],
                 deferred_signals: Callable[[], object], state: RunState) -> None:
        self.o, self.settings, self.state = options, settings, state
        self.should_stop = should_stop
        self.deferred_signals = deferred_signals  # a context manager factory: signals wait while writing
        self.secrets = settings.secrets  # the key, the auth token, the base URL password (utils.settings.secrets_in)

    # ------------------------------------------------------------------ start-up checks

    def _prepare(self):
        o, settings = self.o, self.settings
        check_writable(o.output)
        check_batch_options(judge=settings.judge, judge_batch=o.judge_batch, max_cost_usd=o.max_cost_usd,
                            chunk_relevance=o.chunk_relevance)
        strategies = [resolve_strategy(name) for name in o.strategies]
        qset = load_questions(o.questions)
        questions = select_questions(qset, o.limit, o.ids)
        previous = read_rows(o.resume) if o.resume else None
        if previous is not None and len(strategies) > 1:
            raise InputError("--resume continues one run: give the one --strategy it was run with")
        setup = check_models(settings, rewrites_queries=any(s.rewrites_queries for s in strategies))
        if o.max_cost_usd is not None and setup.judge is not None \
                and setup.judge_provider.prices.price_for(setup.judge.model) is None:
            raise InputError(f"--max-cost needs the price of {setup.judge.model}, which the {setup.judge_provider.name} "
                             "provider's price table does not have: add it there, or run without --max-cost")
        return strategies, qset, questions, previous, setup

    # ------------------------------------------------------------------ the whole command

    def execute(self) -> list[dict]:
        strategies, qset, questions, previous, setup = self._prepare()
        logger.info("{}", setup.console_line(self.settings))
        reports: list[dict] = []
        judge = None
        for strategy in strategies:
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            prepared = self._index(strategy, qset)
            chunks = prepared.chunks
            logger.info("Corpus {}: {} documents, {} chunks (loaded+chunked in {:.2f}s, indexed in {:.2f}s; index cache "
                        "{})", prepared.source, prepared.documents, len(chunks), prepared.load_s, prepared.index_s,
                        prepared.cache)
            if judge is None:  # one judge and one diagnoser for every strategy: the chunks are the same
                judge = make_judge(self.settings, chunks, setup)
                self.relevance_judge = self._relevance_judge(judge, setup)
                from components.analysis.diagnosis import Diagnoser

                self.diagnoser = Diagnoser(chunks, stats=getattr(judge, "stats", None))
            corpus_info = CorpusInfo(prepared.source, prepared.documents, len(chunks), prepared.sha256)
            reports.append(self._run_strategy(strategy, prepared.retriever, judge, setup, qset, questions, previous,
                                              corpus_info, prepared.index_s, prepared.index_info))
            if reports[-1]["run"]["status"] == "interrupted":
                break
        if len(reports) > 1 and reports[-1]["run"]["status"] != "interrupted":
            self._compare(reports)
        return reports

    def _relevance_judge(self, judge, setup: JudgeSetup):
        """Per-chunk relevance: on by default when the judge calls no model (free)."""
        wanted = self.o.chunk_relevance if self.o.chunk_relevance is not None else not setup.calls_models
        return relevance_judge(setup, judge) if wanted else None

    def _annotate(self, q: Question, chunks, row) -> dict:
        """What the diagnosis adds to a row: where the answer lived, and why a miss missed."""
        best = self.diagnoser.needle_best_chunk(q.expected_answer or q.question, q.needle_doc_ids)
        diagnosis = self.diagnoser.diagnose(q.question, q.expected_answer, q.needle_doc_ids, chunks, row.rank,
                                            row.llm_grade, row.total_score)
        return {"needle_best_chunk": best.to_json() if best else None,
                "diagnosis": diagnosis.to_json() if diagnosis else None}

    def _compare(self, reports: list[dict]) -> None:
        from components.analysis.compare import compare_runs, format_comparison

        comparison = compare_runs(reports, [r["run"]["strategy"] for r in reports])
        sys.stdout.write(format_comparison(comparison) + "\n")
        sys.stdout.flush()
        runs_dir = self.o.output.parent / RUNS_FOLDER
        path = runs_dir / f"{reports[0]['run']['id']}_comparison.json"
        with self.deferred_signals():
            write_json_atomic(path, comparison.to_json(), secrets=self.secrets)
        logger.info("Comparison written to {}", path)

    def _index(self, strategy: Strategy, qset: QuestionSet):
        """Load, chunk and index through the index cache (``components/run/index_cache.py``); the
        needles are checked before anything is chunked. A retriever whose factory or ``index()``
        fails stops the run with an :class:`InputError` naming it."""
        from components.run.index_cache import prepare_index

        def build():
            try:
                return strategy.factory()
            except InputError:
                raise
            except (Exception, SystemExit) as err:
                logger.opt(exception=err).debug("retriever factory failed")
                raise _RetrieverFailed("building the retriever", err) from None

        try:
            with Progress("indexing", None, sys.stderr, delay=2.0) as bar, bar.heartbeat():
                return prepare_index(self.o.corpus, strategy.name, build, self.o.cache_dir,
                                     check_ids=lambda ids, source: check_needles(qset, ids, source))
        except _RetrieverFailed as err:
            raise InputError(f"strategy {strategy.name!r}: {err.what} failed ({type(err.cause).__name__}: "
                             f"{str(err.cause)[:200]}): fix the retriever (traceback in the log file)") from None
        except (InputError, KeyboardInterrupt):
            raise
        except (Exception, SystemExit) as err:
            logger.opt(exception=err).debug("indexing failed")
            raise InputError(f"strategy {strategy.name!r}: index() failed ({type(err).__name__}: {str(err)[:200]}): "
                             "fix the retriever's index() (traceback in the log file)") from None

    def _run_strategy(self, strategy: Strategy, retriever, judge, setup: JudgeSetup, qset: QuestionSet,
                      questions: list[Question], previous, corpus: CorpusInfo, index_s: float,
                      index_info: dict | None = None) -> dict:
        o, settings = self.o, self.settings
        runs_dir = o.output.parent / RUNS_FOLDER
        runs_dir.mkdir(parents=True, exist_ok=True)
        run_id = new_run_id(strategy.name, runs_dir)
        judge_model = judge.model  # the LLM judge's: its ModelSettings.requested
        identity = {"run_id": run_id, "questions_sha256": qset.sha256, "corpus_sha256": corpus.sha256,
                    "strategy": strategy.name, "k": o.k, "judge_model": judge_model, "prompt_sha256": PROMPT_SHA256}
        done: dict[str, dict] = {}
        if previous is not None:
            prev_run, prev_rows = previous
            _check_resume(identity, _identity_of(prev_run), o.resume)
            warn_uncollected(prev_run, o.judge_batch)
            done = {qid: row for qid, row in prev_rows.items() if row.get("llm_grade") is not None}
            logger.info("Resuming {}: {} graded row(s) kept as they are, {} question(s) to run", o.resume, len(done),
                        sum(1 for q in questions if q.id not in done))
        journal_path = runs_dir / f"{run_id}.journal.jsonl"
        journal = Journal(journal_path, identity, self.secrets)
        self.state.journal = journal_path
        self.state.continue_command = _continue_command(o.argv, journal_path)
        rewriter = None
        if strategy.rewrites_queries and setup.rewriter is not None:
            from components.run.query_rewriter import QueryRewriter

            rewriter = QueryRewriter(setup.rewriter_provider.model(setup.rewriter))
        progress = Progress(f"{strategy.name}", len(questions), sys.stderr, unit="q")
        loop = BenchmarkLoop(retriever, judge, k=o.k, rewriter=rewriter, should_stop=self.should_stop,
                             record=journal.append, annotate=self._annotate, relevance_judge=self.relevance_judge,
                             repeats=o.judge_repeats, max_cost_usd=o.max_cost_usd, keep_text=o.keep_text,
                             retry_wait_max_s=settings.retry_wait_max_s, on_row=progress.advance)
        batch_judge = self._batch_judge(setup, journal) if o.judge_batch else None
        started = _now()
        status = "completed"
        try:
            with progress:
                if batch_judge is not None:
                    run_batch(loop, questions, done, batch_judge, (previous[0].get("judge_batch") or [])
                              if previous is not None else [], grouped=journal.grouped)
                else:
                    loop.run(questions, done)
            if not self.should_stop() and batch_judge is None:
                loop.retry_transient()
        except KeyboardInterrupt:
            status = "interrupted"
        if self.should_stop():
            status = "interrupted"
        if status == "interrupted":
            logger.warning("Interrupted after {} of {} questions: writing what is done", len(loop.results),
                           len(questions))
        elif loop.judge_failure is not None or loop.rewriter_failure is not None:
            status = "judge_failed"
        elif loop.budget_exhausted:
            status = "budget_exhausted"
        results = loop.results
        agg = aggregate(results, round(index_s, 3), k=o.k, group_by=o.group_by)
        judge_info = _judge_info(settings, setup, "judge", o.judge_repeats, self.relevance_judge is not None)
        judge_info = _with_reply_models(judge_info, loop.judge_usage.models)
        if batch_judge is not None:
            judge_info = replace(judge_info, mode="batch")
        rewriter_info = None
        if rewriter is not None:
            rewriter_info = _with_reply_models(_judge_info(settings, setup, "rewriter", 1), loop.rewriter_usage.models)
        usage = {"judge": loop.judge_usage.to_json()}
        if rewriter is not None:
            usage["rewriter"] = loop.rewriter_usage.to_json()
        costs = [u["cost_usd"] for u in usage.values()]
        priced = all(c is not None for c in costs)
        cost_note = None if priced else "; ".join(
            n for n in (setup.judge_provider.prices.note(judge_model) if setup.calls_models else None,
                        setup.rewriter_provider.prices.note(setup.rewriter.model) if rewriter is not None else None)
            if n)
        failure = loop.judge_failure or loop.rewriter_failure
        run_info = RunInfo(
            started_at=started, finished_at=_now(), status=status, strategy=strategy.name, k=o.k,
            quick=o.limit == 5 and not o.ids, questions_file=str(o.questions), questions_sha256=qset.sha256,
            corpus=corpus, judge=judge_info, python=platform.python_version(), packages=versions(),
            judge_failure=f"{failure.kind}: {failure}" if failure else None,
            log_file=str(o.log_file) if o.log_file else None, id=run_id, rewriter=rewriter_info, usage=usage,
            cost_usd=sum(costs) if priced else None, cost_note=cost_note or None, max_cost_usd=o.max_cost_usd,
            recovered=loop.recovered, resumed_from=str(o.resume) if o.resume else None, resumed_rows=len(done),
            journal=str(journal_path), selection={"limit": o.limit, "ids": o.ids}, index=index_info,
            judge_batch=[r.to_json() for r in batch_judge.all_records] if batch_judge is not None else None)
        report = build_report(run_info, agg, results)
        report["diagnosis_counts"] = count_tags(report["results"])
        if self.relevance_judge is not None:
            report.update(M.relevance_aggregates(report["results"]))
        log_metrics(report)
        logger.info("Summary ({} judge: {}) follows on stdout", judge_info.provider, judge_info.model)
        sys.stdout.write(summary_table(report))
        sys.stdout.flush()
        if loop.recovered:
            logger.info("The retry pass recovered {} grade(s)", loop.recovered)
        finished = len(results)
        if batch_judge is not None and not batch_judge.all_records:  # no batch to record: rows not submitted are no work
            finished = sum(1 for r in results if batch_finished(r))
        self._write(report, runs_dir / f"{run_id}.json", journal, n_rows=finished)
        if failure is not None:
            logger.error("The {} became unusable: {} — fix it and run again", "judge" if loop.judge_failure else
                         "query rewriter", failure)
        return report

    def _batch_judge(self, setup: JudgeSetup, journal: Journal):
        """The batch client of ``--judge-batch`` (its batch lines go to the journal)."""
        return BatchJudge(setup.judge_provider.batch_api(setup.judge), should_stop=self.should_stop, record=journal.append,
                          deferred=self.deferred_signals, schedule=PollSchedule(max_s=self.settings.batch_poll_max_s))

    def _write(self, report: dict, run_path: Path, journal: Journal, n_rows: int) -> None:
        if n_rows == 0:
            journal.remove()
            logger.warning("No question finished: nothing written (an earlier {} is kept)", self.o.output)
            return
        with self.deferred_signals():
            write_json_atomic(run_path, report, secrets=self.secrets)
            self.state.written.append(run_path)
            write_json_atomic(self.o.output, report, secrets=self.secrets)
            self.state.written.append(self.o.output)
            journal.remove()
        self.state.journal = None
        self.state.continue_command = _continue_command(self.o.argv, run_path)
        logger.info("Results written to {} (and {})", self.o.output, run_path)


class _RetrieverFailed(Exception):
    def __init__(self, what: str, cause: BaseException) -> None:
        super().__init__(what)
        self.what, self.cause = what, cause


def _with_reply_models(info: JudgeInfo, models: list[str]) -> JudgeInfo:
    return replace(info, reply_models=list(models))


METRICS = (("hit_at_1_rate", "%"), ("hit_at_5_rate", "%"), ("mrr", ""), ("avg_llm_grade", ""),
           ("avg_total_score", ""), ("pass_rate_8", "%"), ("pass_rate_7", "%"), ("pass_rate_6_5", "%"))


def log_metrics(report: dict) -> None:
    """One ``METRIC name=value unit`` line per headline aggregate."""
    from utils.logger import get_logger

    log = get_logger()
    for name, unit in METRICS:
        if name in report:
            log.metric(name, report[name], unit)
