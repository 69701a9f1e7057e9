"""The command line's run: what ``python benchmark.py [--strategy a,b] ...`` does, start to finish.

A thin client of :func:`components.run.evaluation.evaluate` (the Python API's engine): this
module adds what only a command line has — the journal, the console, signals, the files.

1. Check everything that can be checked before any work: the output path, the strategies, the
   questions (and the selection ``--limit``/``--ids``), ``--resume``'s file, and — before the
   corpus is loaded — every model the run will call (:func:`components.judges.setup.check_models`).
2. For each strategy in turn: load, chunk and index through the index cache (a plug-in whose
   factory or ``index()`` fails stops here with an :class:`InputError` naming it), then
   ``evaluate`` with the journal (``runs/<run id>.journal.jsonl``) as its ``record`` and the
   console line as its ``on_row``; write ``runs/<run id>.json`` and the ``--output`` file
   (atomically, signals deferred while writing). The journal is deleted once both are written.
3. With several strategies, compare them (``components.analysis.compare``) and write one
   results file per strategy beside ``--output`` as well.

:class:`RunState` tells the edge, whatever happens, which journal holds the work and the command
that continues it. Exit statuses are mapped to exit codes by the command line (:mod:`components.cli`).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from loguru import logger

from components.core import QuestionSet, Strategy, resolve_strategy
from components.core.questions import check_needles
from components.judges.chunk_relevance import RELEVANCE_PROMPT_SHA256
from components.judges.providers import is_proxy_judge
from components.judges.retrieval_grader import PROMPT_SHA256
from components.judges.settings import Settings
from components.judges.setup import check_models
from components.readers import load_questions
from components.run.evaluation import Judging, RunContext, evaluate, prepare, selected_questions
from components.run.file_names import strategy_file_names, strategy_results_path
from components.run.journal import Journal, read_rows
from components.run.judge_batch import (BatchJudge, PollSchedule, check_batch_options, check_resume_repeats,
                                        finished as batch_finished, warn_uncollected)
from utils.console import Progress, escape_control, question_line, summary_table
from utils.errors import InputError
from utils.metrics import METRICS
from utils.output import DEFAULT_OUTPUT_NAME, check_writable, make_folders, write_json_atomic
from utils.results import QuestionResult, RunResult

RUNS_FOLDER = "runs"
# The fields --resume must find unchanged: (identity key, what the user changes to fix it).
RESUME_FIELDS = (("questions_sha256", "questions file"), ("corpus_sha256", "corpus"),
                 ("strategy", "--strategy"), ("k", "--k"), ("judge_model", "judge model"),
                 ("prompt_sha256", "grading prompt"), ("relevance_prompt_sha256", "chunk-relevance prompt"))
LEGEND = "legend: R3 ~ = needle at rank 3 (✓ rank 1, ✗ not retrieved); G8 = grade 8; T6.8 = total score (✓ ≥ 7)"


@dataclass(frozen=True)
class RunOptions:
    strategies: list[str]
    questions: Path
    corpus: Path | None
    output: Path
    qrels: Path | None = None  # BEIR queries: their qrels (default: the folder's qrels/<split>.tsv)
    split: str | None = None  # BEIR folder: qrels/<split>.tsv
    k: int = 5
    limit: int | None = None
    ids: list[str] | None = None
    resume: Path | None = None
    max_cost_usd: float | None = None
    judge_repeats: int = 1
    keep_text: bool = True
    chunk_relevance: bool | None = None  # None: on with a judge that calls no model (free), off with an LLM judge
    group_by: list[str] | None = None
    cache_dir: Path | None = None  # the index cache; None = --no-cache
    judge_batch: bool = False  # grade through the provider's batch API (components/run/judge_batch.py)
    concurrency: int = 1  # judge calls in flight at once (1: the sequential loop)
    order_check: int | bool | None = None  # --order-check: True (all), a sample size, or None
    estimate: bool = False  # --estimate: print what the run would cost, grade nothing (components/run/estimate.py)
    log_file: Path | None = None
    argv: list[str] = field(default_factory=list)  # as given, for the "to continue" command


@dataclass
class RunState:
    """What the edge needs when a run ends badly: the journal holding the work, and the command
    that continues it."""

    journal: Path | None = None
    continue_command: str | None = None
    written: list[Path] = field(default_factory=list)


def new_run_id(file_name: str, runs_dir: Path) -> str:
    """``<UTC time>_<strategy's file name>`` (:mod:`components.run.file_names`), made unique in
    ``runs_dir`` (never overwrite a run)."""
    stamp = datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    base = f"{stamp}_{file_name}"
    run_id, n = base, 1
    while (runs_dir / f"{run_id}.json").exists() or (runs_dir / f"{run_id}.journal.jsonl").exists():
        n += 1
        run_id = f"{base}-{n}"
    return run_id


def unique_labels(names: Sequence[str]) -> list[str]:
    """Each name, the second and later of the same name numbered: ``baseline, baseline-2``."""
    seen: dict[str, int] = {}
    labels = []
    for name in names:
        seen[name] = seen.get(name, 0) + 1
        labels.append(name if seen[name] == 1 else f"{name}-{seen[name]}")
    return labels


def identity_of(run: dict) -> dict:
    """The resume identity of a results file's ``run`` (a journal's header already is one)."""
    if "corpus_sha256" in run:
        return run
    judge = run.get("judge") or {}
    corpus = run.get("corpus") or {}
    return {"questions_sha256": run.get("questions_sha256"), "corpus_sha256": corpus.get("sha256"),
            "strategy": run.get("strategy"), "k": run.get("k"), "judge_model": judge.get("model"),
            "prompt_sha256": judge.get("prompt_sha256"), "relevance_prompt_sha256": judge.get("relevance_prompt_sha256"),
            "questions_file": run.get("questions_file"), "qrels_file": run.get("qrels_file"),
            "corpus": corpus.get("source"), "output": run.get("output"),
            "judge_provider": judge.get("provider"), "repeats": judge.get("repeats"),
            "selection": run.get("selection") or {}}


def _check_resume(identity: dict, previous: dict, path: Path) -> None:
    shown = {"questions_sha256": "questions_file", "corpus_sha256": "corpus"}
    for key, what in RESUME_FIELDS:
        if key not in previous or previous.get(key) == identity.get(key):
            continue
        if key in shown and previous.get(shown[key]):  # name the files, not only their hashes
            then, now = previous.get(shown[key]), identity.get(shown[key])
            detail = (f"the recorded {what} {then} had sha256 {str(previous[key])[:12]}…, now {now} has "
                      f"{str(identity.get(key))[:12]}…")
        else:
            detail = f"{previous.get(key)!r} there, {identity.get(key)!r} now"
        raise InputError(f"--resume {path}: the {what} differs ({key} differs: {escape_control(detail)}): run with "
                         f"the same {what} as the run you continue")


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


@dataclass(frozen=True)
class ResumeDefaults:
    """What ``--resume FILE`` fills in (:func:`recorded_defaults`): ``options``, the run's option
    values by their name (``questions``, ``qrels``, ``split``, ``corpus``, ``strategy``, ``k``,
    ``limit``, ``ids`` as the command line spells them); ``env``, the judge's variables."""

    options: dict[str, Any] = field(default_factory=dict)
    env: dict[str, str] = field(default_factory=dict)


def recorded_defaults(resume: Path, given: Collection[str], env: Mapping[str, str]) -> ResumeDefaults:
    """``--resume FILE`` without ``--questions`` (and BEIR's ``--qrels``/``--split``), ``--corpus``,
    ``--strategy``, ``--k``, a selection (``--quick``/``--limit``/``--ids``), ``--output`` or a judge
    setting in ``env``: what FILE recorded for them (the output: :func:`resumed_output`). ``given``:
    the options on the command line (their values stay, and :func:`_check_resume` refuses a real
    conflict later)."""
    from components.core.corpus import BUILTIN_SOURCE
    from components.readers.questions_json import STDIN_NAME

    run, _ = read_rows(resume)
    recorded = identity_of(run)
    given = set(given)
    options: dict[str, Any] = {}
    if "--questions" not in given and recorded.get("questions_file") not in (None, STDIN_NAME):
        options["questions"] = Path(recorded["questions_file"])
    if not given & {"--questions", "--qrels", "--split"} and recorded.get("qrels_file"):
        options["qrels"], options["split"] = Path(recorded["qrels_file"]), None  # BEIR queries: the same judgments
    if "--corpus" not in given and recorded.get("corpus"):
        options["corpus"] = None if recorded["corpus"] == BUILTIN_SOURCE else Path(recorded["corpus"])
    if "--strategy" not in given and recorded.get("strategy"):
        options["strategy"] = recorded["strategy"]
    if "--k" not in given and isinstance(recorded.get("k"), int):
        options["k"] = recorded["k"]
    selection = recorded.get("selection") if isinstance(recorded.get("selection"), dict) else {}
    if not given & {"--quick", "--limit", "--ids"}:  # the same questions as the run continued
        if isinstance(selection.get("limit"), int):
            options["limit"] = selection["limit"]
        if isinstance(selection.get("ids"), list) and all(isinstance(i, str) for i in selection["ids"]):
            options["ids"] = ",".join(selection["ids"])
    if "--output" not in given:
        options["output"] = resumed_output(resume, recorded.get("output"))
    return ResumeDefaults(options, _recorded_judge(recorded, env))


def resumed_output(resume: Path, recorded: object) -> str:
    """Where ``--resume FILE`` without ``--output`` writes: the output the interrupted run recorded;
    for a file written before outputs were recorded, FILE itself, or — for a journal or a file of a
    run's history folder (``runs/``) — ``benchmark_results.json`` beside that folder."""
    if isinstance(recorded, str) and recorded:
        return recorded
    resume = Path(resume)
    if resume.parent.name == RUNS_FOLDER:
        return str(resume.parent.parent / DEFAULT_OUTPUT_NAME)
    return str(resume)


def _recorded_judge(recorded: dict, env: Mapping[str, str]) -> dict[str, str]:
    """The judge variables that name the recorded judge, when ``env`` sets none of its own."""
    provider, model = recorded.get("judge_provider"), recorded.get("judge_model")
    from components.judges.providers import providers

    cls = providers().get(provider) if provider else None
    judge_vars = ["BENCHMARK_JUDGE", "BENCHMARK_JUDGE_MODEL", *(cls.model_variables.values() if cls else ())]
    if cls is None or any(env.get(name) for name in judge_vars):  # a judge setting given: it stays
        return {}
    if not cls.calls_models:
        return {"BENCHMARK_JUDGE": provider}
    return {"BENCHMARK_JUDGE_MODEL": f"{provider}/{model}"} if model else {}


def _print_summary(result: RunResult) -> None:
    """The run's METRIC log lines, then its summary table on stdout."""
    log_metrics(result)
    logger.info("Summary ({} judge: {}) follows on stdout", result.run.judge.provider, result.run.judge.model)
    sys.stdout.write(summary_table(result, proxy=is_proxy_judge(result.run.judge.provider)))
    sys.stdout.flush()
    if result.run.recovered:
        logger.info("The retry pass recovered {} grade(s)", result.run.recovered)


def _row_printer(progress: Progress) -> Callable[[QuestionResult, int, int], None]:
    """The ``on_row`` of a command-line run: each question's line, the legend under the first one,
    and a step of the progress bar."""
    shown_legend = []

    def on_row(row: QuestionResult, i: int, n: int) -> None:
        logger.info("{}", question_line(i, n, row.rank, row.llm_grade, row.total_score, row.latency_ms or 0.0,
                                        row.question))
        if not shown_legend:
            shown_legend.append(True)
            logger.info("{}", LEGEND)
        progress.advance()

    return on_row


class BenchmarkRun:
    def __init__(self, options: RunOptions, settings: Settings, *, should_stop: Callable[[], bool],
                 deferred_signals: Callable[[], object], state: RunState) -> None:
        self.o, self.settings, self.state = options, settings, state
        self.should_stop = should_stop
        self.deferred_signals = deferred_signals  # a context manager factory: signals wait while writing
        self.secrets = settings.secrets  # every provider's secrets (components.judges.providers.secrets_in)
        self.created_folders: list[Path] = []  # made for the run (runs/ and above): removed if left empty

    # ------------------------------------------------------------------ start-up checks

    def _prepare(self):
        o, settings = self.o, self.settings
        if not o.estimate:  # an estimate writes nothing
            check_writable(o.output)
        check_batch_options(judge=settings.judge, judge_batch=o.judge_batch, max_cost_usd=o.max_cost_usd,
                            chunk_relevance=o.chunk_relevance)
        if o.judge_batch and o.order_check:
            raise InputError("--order-check is not sent through --judge-batch: run without one of them")
        if o.judge_batch and o.concurrency > 1:
            raise InputError("--concurrency does not apply to --judge-batch (the batch API grades in parallel "
                             "itself): run without one of them")
        strategies = [resolve_strategy(name) for name in o.strategies]
        source = o.questions if o.qrels is None and o.split is None else \
            load_questions(o.questions, qrels=o.qrels, split=o.split)
        qset, questions = selected_questions(source, o.limit, o.ids)
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

    def execute(self) -> list[RunResult]:
        strategies, qset, questions, previous, setup = self._prepare()
        logger.info("{}", setup.console_line(self.settings))
        labels = unique_labels([s.name for s in strategies])
        file_names = dict(zip(labels, strategy_file_names(labels), strict=True))
        results: list[RunResult] = []
        judging = None
        for strategy, label in zip(strategies, labels, strict=True):
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            prepared = self._index(strategy, qset)
            logger.info("Corpus {}: {} documents, {} chunks (loaded+chunked in {:.2f}s, indexed in {:.2f}s; index cache "
                        "{})", prepared.source, prepared.documents, len(prepared.chunks), prepared.load_s,
                        prepared.index_s, prepared.cache)
            if judging is None:  # one judge and one diagnoser for every strategy: the chunks are the same
                judging = Judging.build(self.settings, setup, prepared.chunks, self.o.chunk_relevance)
            if self.o.estimate:
                sys.stdout.write(self._estimate(strategy, label, prepared, judging, questions, previous).table())
                sys.stdout.flush()
                continue
            results.append(self._run_strategy(strategy, label, prepared, judging, qset, questions, previous,
                                              several=len(strategies) > 1, file_name=file_names[label]))
            if results[-1].run.status == "interrupted":
                break
        if len(results) > 1 and results[-1].run.status != "interrupted":
            self._compare(results, labels[:len(results)])
        return results

    def _compare(self, results: list[RunResult], labels: list[str]) -> None:
        from components.analysis.compare import compare_runs

        comparison = compare_runs(results, labels)
        sys.stdout.write("\n" + str(comparison))
        sys.stdout.flush()
        path = Path(results[0].run.runs_dir or self.o.output.parent / RUNS_FOLDER) / \
            f"{results[0].run.id}_comparison.json"
        with self.deferred_signals():
            write_json_atomic(path, comparison.to_json(), secrets=self.secrets)
        logger.info("Comparison written to {}", path)

    def _index(self, strategy: Strategy, qset: QuestionSet):
        """Load, chunk and index through the index cache; the needles are checked before anything
        is chunked. Progress is drawn on a terminal while it takes more than 2 s."""
        with Progress("indexing", None, sys.stderr, delay=2.0) as bar, bar.heartbeat():
            prepared, _ = prepare(strategy, self.o.corpus, cache_dir=self.o.cache_dir,
                                  check_ids=lambda ids, source: check_needles(qset, ids, source))
        return prepared

    def _estimate(self, strategy: Strategy, label: str, prepared, judging: Judging, questions: list, previous):
        """The cost estimate of this strategy's run (components/run/estimate.py): its requests built,
        nothing sent to the judge; the rows ``--resume`` keeps are left out."""
        from components.run.estimate import estimate
        from components.run.evaluation import order_check_sample

        kept = {qid for qid, row in previous[1].items() if row.llm_grade is not None} if previous else set()
        todo = [q for q in questions if q.id not in kept]
        return estimate(prepared.retriever, todo, self.o.k, judging.setup, strategy=label,
                        repeats=self.o.judge_repeats, order_check=order_check_sample(questions, self.o.order_check),
                        relevance=judging.relevance is not None, rewrites=strategy.rewrites_queries)

    def _run_strategy(self, strategy: Strategy, label: str, prepared, judging: Judging, qset: QuestionSet,
                      questions: list, previous, *, several: bool, file_name: str) -> RunResult:
        o = self.o
        if o.max_cost_usd is not None and judging.setup.calls_models:  # before the first judge call
            self._check_budget(strategy, label, prepared, judging, questions, previous)
        runs_dir = o.output.parent / RUNS_FOLDER
        self.created_folders += make_folders(runs_dir)
        run_id = new_run_id(file_name, runs_dir)
        judge_model = getattr(judging.judge, "model", judging.setup.judge_provider.name)
        identity = {"run_id": run_id, "questions_sha256": qset.sha256, "corpus_sha256": prepared.sha256,
                    "strategy": strategy.name, "k": o.k, "judge_model": judge_model, "prompt_sha256": PROMPT_SHA256,
                    "relevance_prompt_sha256": RELEVANCE_PROMPT_SHA256 if judging.relevance is not None else None,
                    "questions_file": qset.path, "qrels_file": qset.qrels, "corpus": prepared.source,
                    "judge_provider": judging.setup.judge_provider.name,
                    "repeats": o.judge_repeats, "selection": {"limit": o.limit, "ids": o.ids},
                    "output": os.path.abspath(o.output)}
        done, previous_batches = self._resumed(identity, previous, questions)
        journal_path = runs_dir / f"{run_id}.journal.jsonl"
        journal = Journal(journal_path, identity, self.secrets)
        self.state.journal = journal_path
        self.state.continue_command = _continue_command(o.argv, journal_path)
        if several:
            sys.stdout.write(f"== {label} ==\n")
            sys.stdout.flush()
        progress = Progress(label, len(questions), sys.stderr, unit="q")
        batch = None
        if o.judge_batch:
            batch = BatchJudge(judging.setup.judge_provider.batch_api(judging.setup.judge),
                               should_stop=self.should_stop, record=journal.append, deferred=self.deferred_signals,
                               schedule=PollSchedule(max_s=self.settings.batch_poll_max_s))
        context = RunContext(
            id=run_id, record=journal.append, journal=str(journal_path), runs_dir=str(runs_dir),
            output=os.path.abspath(o.output), done=done,
            resumed_from=str(o.resume) if o.resume else None, batch=batch, previous_batches=previous_batches,
            grouped=journal.grouped, questions_file=str(o.questions), quick=o.limit == 5 and not o.ids,
            selection={"limit": o.limit, "ids": o.ids,
                       **({"order_check": {"sample": o.order_check, "seed": 0}} if o.order_check else {})},
            log_file=str(o.log_file) if o.log_file else None)
        with progress:
            result = evaluate(prepared, (qset, questions), k=o.k, judging=judging, settings=self.settings,
                              name=strategy.name, judge_repeats=o.judge_repeats, max_cost_usd=o.max_cost_usd,
                              group_by=o.group_by, keep_text=o.keep_text, rewrites_queries=strategy.rewrites_queries,
                              concurrency=o.concurrency, order_check=o.order_check, on_row=_row_printer(progress),
                              should_stop=self.should_stop, context=context)
        _print_summary(result)
        finished = len(result.rows)
        if batch is not None and not batch.all_records:  # no batch to record: rows not submitted are no work
            finished = sum(1 for r in result.rows if batch_finished(r))
        extra = [strategy_results_path(o.output, file_name)] if several else []
        self._write(result, runs_dir / f"{run_id}.json", journal, n_rows=finished, extra=extra)
        return result

    def _check_budget(self, strategy: Strategy, label: str, prepared, judging: Judging, questions: list,
                      previous) -> None:
        """With ``--max-cost``: the run's estimated cost, said before the first judge call (a warning
        when it is over the budget; the budget still stops grading when it is spent)."""
        from components.run.estimate import over_budget

        est = self._estimate(strategy, label, prepared, judging, questions, previous)
        warning = over_budget(est, self.o.max_cost_usd)
        if warning:
            logger.warning("{}", warning)
        else:
            cost = "unknown (a model without a price)" if est.usd is None else f"${est.usd:.4f}"
            logger.info("Estimated cost of this run: {} (--max-cost ${:g})", cost, self.o.max_cost_usd)

    def _resumed(self, identity: dict, previous, questions: list) -> tuple[dict[str, QuestionResult], list]:
        """With ``--resume``: the rows kept (the graded ones) and the batches recorded, once the file
        is checked against this run's identity; without it, nothing."""
        if previous is None:
            return {}, []
        o = self.o
        prev_run, prev_rows = previous
        _check_resume(identity, identity_of(prev_run), o.resume)
        warn_uncollected(prev_run, o.judge_batch)
        done = {qid: row for qid, row in prev_rows.items() if row.llm_grade is not None}
        check_resume_repeats(prev_run, done, o.judge_repeats, o.resume)
        logger.info("Resuming {}: {} graded row(s) kept as they are, {} question(s) to run", o.resume, len(done),
                    sum(1 for q in questions if q.id not in done))
        return done, prev_run.get("judge_batch") or []

    def _write(self, result: RunResult, run_path: Path, journal: Journal, n_rows: int, extra: list[Path]) -> None:
        if n_rows == 0:
            journal.remove()
            self.state.journal = self.state.continue_command = None  # nothing to continue: the journal is gone
            logger.warning("No question finished: nothing written (an earlier {} is kept)", self.o.output)
            return
        with self.deferred_signals():
            for path in (run_path, *extra, self.o.output):
                result.save(path, secrets=self.secrets)
                self.state.written.append(path)
            journal.remove()
        self.state.journal = None
        self.state.continue_command = _continue_command(self.o.argv, run_path)
        also = ", ".join(str(p) for p in (run_path, *extra))
        logger.info("Results written to {} (and {})", self.o.output, also)


def log_metrics(result: RunResult) -> None:
    """One ``METRIC key=value unit`` line per metric of the run (the registry's order)."""
    from utils.logger import get_logger

    log = get_logger()
    for key, value in result.metrics.items():
        metric = METRICS.get(key)
        log.metric(key, value, "%" if metric is not None and metric.unit == "percent" else "")
