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

A suite (``--suite``, :mod:`components.run.retrieval.suite`) is several strategies made of its configurations
(each with its own chunking): the same steps, with one ``--max-cost`` budget for them all and
``--resume`` taking one file per configuration. ``--strategy recorded`` grades the question set's
recorded retrievals (:mod:`components.run.retrieval.recorded`).

:class:`RunState` tells the edge, whatever happens, which journal holds the work and the command
that continues it. Exit statuses are mapped to exit codes by the command line (:mod:`components.cli`).
"""

from __future__ import annotations

import os
import shlex
import sys
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
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
from components.readers import load_questions
from components.run import repeat_where
from components.run import adaptive as adaptive_run
from components.run.evaluation import (Judging, RunContext, check_budget, evaluate, judges_kind, prepare,
                                       selected_questions)
from components.run.file_names import strategy_file_names, strategy_results_path
from components.run.journal import Journal, read_rows
from components.run.retrieval.recorded import RECORDED, RECORDED_SOURCE, recorded_strategy, source_for
from components.run.retrieval.suite import resume_files
from components.run.run_state import RunState
from components.run.spec import RunSpec
from components.run.calls.judge_batch import (BatchJudge, PollSchedule, check_resume_repeats,
                                        finished as batch_finished, warn_uncollected)
from utils.records.audit_file import AuditFile, audit_notes
from utils.console import Progress, escape_control, question_line, summary_table
from utils.errors import InputError
from utils.metrics import METRICS
from utils.files.output import DEFAULT_OUTPUT_NAME, check_writable, make_folders, write_json_atomic
from utils.results import QuestionResult, RunResult

RUNS_FOLDER = "runs"
# The fields --resume must find unchanged: (identity key, what the user changes to fix it).
RESUME_FIELDS = (("questions_sha256", "questions file"), ("corpus_sha256", "corpus"),
                 ("strategy", "--strategy"), ("k", "--k"), ("judge_model", "judge model"),
                 ("prompt_sha256", "grading prompt"), ("relevance_prompt_sha256", "chunk-relevance prompt"),
                 ("configuration", "suite configuration"), ("repeat_where", "--repeat-where"),
                 ("adaptive", "adaptive judging (--until-decided or --target-ci, and its --fail-on/--margin)"))
LEGEND = "legend: R3 ~ = needle at rank 3 (✓ rank 1, ✗ not retrieved); G8 = grade 8; T6.8 = total score (✓ ≥ 7)"


@dataclass(frozen=True)
class RunOptions:
    """The command line's run: its options (``spec``: every option of each strategy's run,
    :class:`~components.run.spec.RunSpec`) and what only a command has — files, strategies, selection."""

    strategies: list[str]
    questions: Path
    corpus: Path | None
    output: Path
    spec: RunSpec = field(default_factory=RunSpec)
    qrels: Path | None = None  # BEIR queries: their qrels (default: the folder's qrels/<split>.tsv)
    split: str | None = None  # BEIR folder: qrels/<split>.tsv
    limit: int | None = None
    ids: list[str] | None = None
    resume: Path | None = None
    estimate: bool = False  # --estimate: print what the run would cost, grade nothing (components/run/estimate.py)
    targets: list = field(default_factory=list)  # --targets (components.analysis.targets.Target), checked after the run
    suite: Any = None  # --suite: a components.run.retrieval.suite.Suite (its configurations run instead)
    audit: AuditFile | None = None  # --audit: a judge audit, its warnings after the summary (utils.records.audit_file)
    log_file: Path | None = None
    argv: list[str] = field(default_factory=list)  # as given, for the "to continue" command


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
            "prompt_sha256": judge.get("prompt_sha256"),
            "relevance_prompt_sha256": judge.get("relevance_prompt_sha256"),
            "questions_file": run.get("questions_file"), "qrels_file": run.get("qrels_file"),
            "corpus": corpus.get("source"), "output": run.get("output"),
            "judge_provider": judge.get("provider"), "repeats": judge.get("repeats"),
            "repeat_where": repeat_where.recorded_rule(judge),
            "selection": run.get("selection") or {}, "configuration": run.get("configuration"),
            **({"panel": judge.get("judges"), "aggregate": judge.get("aggregate")} if judge.get("judges") else {}),
            **({"adaptive": run["adaptive"]} if isinstance(run.get("adaptive"), dict) else {})}


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
    return shlex.join([*_invocation(), *args, "--resume", str(path)])


def _invocation() -> list[str]:
    """How the user started this run, for a command to paste: ``retrieval-benchmark`` (the installed
    command), ``python <the script as given>`` (``python ../tool/benchmark.py`` from another folder), or
    ``python benchmark.py`` (the API, a test)."""
    started = sys.argv[0] if sys.argv else ""
    if os.path.basename(started) == "retrieval-benchmark":
        return ["retrieval-benchmark"]
    if os.path.basename(started) == "benchmark.py":
        return ["python", started]
    return ["python", "benchmark.py"]


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
    if "--judges" not in given and isinstance(recorded.get("panel"), list):  # the same panel of judges
        options["judges"] = _recorded_panel(recorded["panel"])
        if "--panel-aggregate" not in given and recorded.get("aggregate") in ("median", "mean"):
            options["panel_aggregate"] = recorded["aggregate"]
    if not given & {"--quick", "--limit", "--ids"}:  # the same questions as the run continued
        if isinstance(selection.get("limit"), int):
            options["limit"] = selection["limit"]
        if isinstance(selection.get("ids"), list) and all(isinstance(i, str) for i in selection["ids"]):
            options["ids"] = ",".join(selection["ids"])
    if "--output" not in given:
        options["output"] = resumed_output(resume, recorded.get("output"))
    options.update(adaptive_run.resume_options(recorded.get("adaptive"), given))
    return ResumeDefaults(options, _recorded_judge(recorded, env))


def _recorded_panel(judges: list) -> list:
    """The panel a run recorded (``run.judge.judges``), as the specs ``--judges`` gives."""
    from components.judges.panel import FIELDS, parse_judges

    return parse_judges([{k: j.get(k) for k in FIELDS} for j in judges if isinstance(j, dict)], "--resume: the panel")


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

    if recorded.get("panel"):  # a panel: --judges comes from the file (recorded_defaults)
        return {}

    cls = providers().get(provider) if provider else None
    judge_vars = ["BENCHMARK_JUDGE", "BENCHMARK_JUDGE_MODEL", *(cls.model_variables.values() if cls else ())]
    if cls is None or any(env.get(name) for name in judge_vars):  # a judge setting given: it stays
        return {}
    if not cls.calls_models:
        return {"BENCHMARK_JUDGE": provider}
    return {"BENCHMARK_JUDGE_MODEL": f"{provider}/{model}"} if model else {}


def _print_summary(result: RunResult, audit: AuditFile | None = None) -> None:
    """The run's METRIC log lines, then its summary table on stdout (a panel's lines after it, then
    what ``--audit``'s judge audit says of the judge)."""
    from components.analysis.adaptive import lines as adaptive_lines
    from components.analysis.panel import summary_lines

    log_metrics(result)
    logger.info("Summary ({} judge: {}) follows on stdout", result.run.judge.provider, result.run.judge.model)
    sys.stdout.write(summary_table(result, proxy=is_proxy_judge(result.run.judge.provider)))
    sys.stdout.write("".join(line + "\n" for line in summary_lines(result.panel)))
    sys.stdout.write("".join(f"warning: {escape_control(line)}\n" for line in audit_notes(audit, result.run.judge))
                     if audit is not None else "")
    sys.stdout.write("".join(line + "\n" for line in adaptive_lines(result)))
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
        self._suite_written: list[Path] = []  # a suite's configurations written so far (their runs/ files)
        self.created_folders: list[Path] = []  # made for the run (runs/ and above): removed if left empty

    # ------------------------------------------------------------------ start-up checks

    def _prepare(self):
        o, settings = self.o, self.settings
        if not o.estimate:  # an estimate writes nothing
            check_writable(o.output)
        o.spec.check(settings)  # every option, before any work
        named = o.suite.strategies if o.suite is not None else \
            [None if name == RECORDED else resolve_strategy(name) for name in o.strategies]  # None: recorded
        recorded = None in named
        if recorded and len(named) > 1 and o.corpus is None:
            raise InputError("--strategy recorded without --corpus grades the recorded items alone: give --corpus to "
                             "run other strategies beside it")
        source = o.questions if o.qrels is None and o.split is None and not recorded else \
            load_questions(o.questions, qrels=o.qrels, split=o.split, reader=RECORDED if recorded else None)
        qset, questions = selected_questions(source, o.limit, o.ids)
        strategies = [s or recorded_strategy(qset) for s in named]
        if o.suite is not None:
            previous = resume_files(o.resume, strategies)
        elif o.resume and len(strategies) > 1:
            raise InputError("--resume continues one run: give the one --strategy it was run with")
        else:
            previous = {strategies[0].name: (o.resume, read_rows(o.resume))} if o.resume else {}
        kind = judges_kind(settings)
        setups = kind.check(settings, rewrites_queries=any(s.rewrites_queries for s in strategies))
        # --until-decided's baseline, before any work (components/run/adaptive.py)
        adaptive_run.check_baseline(o.spec.adaptive, [q.id for q in questions], o.spec.k,
                                    kind.judges_now(settings, setups))
        if o.spec.max_cost_usd is not None:  # a budget that cannot pay for one call is refused before any work
            check_budget(o.spec.max_cost_usd, setups, rewrites=any(s.rewrites_queries for s in strategies),
                         names=kind.budget_names(settings))
        return strategies, qset, questions, previous, setups

    # ------------------------------------------------------------------ the whole command

    def execute(self) -> list[RunResult]:
        strategies, qset, questions, previous, setups = self._prepare()
        setup = setups[0]
        for line in judges_kind(self.settings).console_lines(self.settings, setups, self.o.spec.panel_aggregate):
            logger.info("{}", line)
        labels = unique_labels([s.name for s in strategies])
        file_names = dict(zip(labels, strategy_file_names(labels), strict=True))
        results: list[RunResult] = []
        judging, judged = None, None
        for strategy, label in zip(strategies, labels, strict=True):
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            prepared = self._index(strategy, qset)
            logger.info("Corpus {}: {} documents, {} chunks (loaded+chunked in {:.2f}s, indexed in {:.2f}s; "
                        "index cache {})", prepared.source, prepared.documents, len(prepared.chunks), prepared.load_s,
                        prepared.index_s, prepared.cache)
            if judged != (prepared.sha256, strategy.chunking):  # one judge and diagnoser per set of chunks
                judging, judged = Judging.build(self.settings, setup, prepared.chunks, self.o.spec.chunk_relevance,
                                                diagnose=prepared.source != RECORDED_SOURCE, setups=setups), \
                    (prepared.sha256, strategy.chunking)
            resume = previous.get(label)
            if self.o.estimate:
                sys.stdout.write(self._estimate(strategy, label, prepared, judging, questions, resume).table())
                sys.stdout.write(repeat_where.estimate_note(self.o.spec.repeat_where, self.o.spec.judge_repeats))
                sys.stdout.flush()
                continue
            results.append(self._run_strategy(strategy, label, prepared, judging, qset, questions, resume,
                                              several=len(strategies) > 1, max_cost=self._budget_left(results),
                                              file_name=file_names[label]))
            if results[-1].run.status == "interrupted" or \
                    (self.o.suite is not None and results[-1].run.status == "budget_exhausted"):
                break  # a suite's one budget is spent: the configurations left would grade nothing
        if len(results) > 1 and results[-1].run.status != "interrupted":
            self._compare(results, labels[:len(results)])
        return results

    def _budget_left(self, results: list[RunResult]) -> float | None:
        """``--max-cost`` for the next strategy: the whole budget, or in a suite what the
        configurations run so far left of it (one budget for the suite)."""
        if self.o.spec.max_cost_usd is None or self.o.suite is None:
            return self.o.spec.max_cost_usd
        return max(0.0, self.o.spec.max_cost_usd - sum(r.run.cost_usd or 0.0 for r in results))

    def _compare(self, results: list[RunResult], labels: list[str]) -> None:
        from components.analysis.compare import compare_runs, format_comparison

        comparison = compare_runs(results, labels)
        sys.stdout.write("\n" + format_comparison(comparison, bold=sys.stdout.isatty()))
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
            prepared, _ = prepare(source_for(strategy, qset, self.o.corpus), self.o.corpus,
                                  cache_dir=self.o.spec.cache_dir,
                                  check_ids=lambda ids, source: check_needles(qset, ids, source))
        return prepared

    def _estimate(self, strategy: Strategy, label: str, prepared, judging: Judging, questions: list, previous):
        """The cost estimate of this strategy's run (components/run/estimate.py): its requests built,
        nothing sent to the judge; the rows ``--resume`` keeps are left out."""
        from components.run.evaluation import order_check_sample

        kept = set(self._kept(previous[1][1])[0]) if previous else set()
        todo = [q for q in questions if q.id not in kept]
        return judging.kind.estimate(prepared.retriever, todo, self.o.spec.k, judging, strategy=label,
                                     repeats=self.o.spec.judge_repeats,
                                     order_check=order_check_sample(questions, self.o.spec.order_check),
                                     relevance=judging.relevance is not None, rewrites=strategy.rewrites_queries,
                                     known_answers=self.o.spec.known_answers)

    def _run_strategy(self, strategy: Strategy, label: str, prepared, judging: Judging, qset: QuestionSet,
                      questions: list, previous, *, several: bool, max_cost: float | None,
                      file_name: str) -> RunResult:
        """``previous``: ``(--resume file, what it holds)`` of this strategy, or None."""
        o = self.o
        if max_cost is not None and any(j.setup.calls_models for j in judging.seats):
            # before the first judge call
            self._check_budget(strategy, label, prepared, judging, questions, previous, max_cost)
        runs_dir = o.output.parent / RUNS_FOLDER
        self.created_folders += make_folders(runs_dir)
        run_id = new_run_id(file_name, runs_dir)
        judge_model = getattr(judging.judge, "model", judging.setup.judge_provider.name)
        identity = {"run_id": run_id, "questions_sha256": qset.sha256, "corpus_sha256": prepared.sha256,
                    "strategy": strategy.name, "k": o.spec.k, "judge_model": judge_model,
                    "prompt_sha256": PROMPT_SHA256,
                    "relevance_prompt_sha256": RELEVANCE_PROMPT_SHA256 if judging.relevance is not None else None,
                    "questions_file": qset.path, "qrels_file": qset.qrels, "corpus": prepared.source,
                    "judge_provider": judging.setup.judge_provider.name,
                    "repeats": o.spec.judge_repeats, "repeat_where": o.spec.repeat_where,
                    "selection": {"limit": o.limit, "ids": o.ids},
                    "configuration": strategy.configuration, "output": os.path.abspath(o.output),
                    **judging.kind.identity(self.settings, o.spec.panel_aggregate),
                    **o.spec.adaptive.journal()}
        done, previous_batches = self._resumed(identity, previous, questions)
        journal_path = runs_dir / f"{run_id}.journal.jsonl"
        journal = Journal(journal_path, identity, self.secrets)
        self.state.journal = journal_path
        self.state.continue_command = _continue_command(o.argv, self._resume_list(journal_path))
        if several:
            sys.stdout.write(f"== {escape_control(label)} ==\n")
            sys.stdout.flush()
        progress = Progress(label, len(questions), sys.stderr, unit="q")
        batch = None
        if o.spec.judge_batch:
            def engine(setup, name=None) -> BatchJudge:
                return BatchJudge(setup.judge_provider.batch_api(setup.judge), should_stop=self.should_stop,
                                  record=journal.append, deferred=self.deferred_signals,
                                  schedule=PollSchedule(max_s=self.settings.batch_poll_max_s), judge=name)
            batch = judging.kind.batch(judging, self.settings, engine)  # a panel: each judge's own batches
        context = RunContext(
            id=run_id, record=journal.append, journal=str(journal_path), runs_dir=str(runs_dir),
            output=os.path.abspath(o.output), done=done,
            resumed_from=str(previous[0]) if previous else None, batch=batch, previous_batches=previous_batches,
            grouped=journal.grouped, questions_file=str(o.questions), quick=o.limit == 5 and not o.ids,
            panel_kept=self._kept(previous[1][1])[1] if previous else {},
            selection={"limit": o.limit, "ids": o.ids,
                       **({"order_check": {"sample": o.spec.order_check, "seed": 0}} if o.spec.order_check else {})},
            log_file=str(o.log_file) if o.log_file else None, configuration=strategy.configuration, checked=True)
        try:
            with progress:
                result = evaluate(prepared, (qset, questions), spec=replace(o.spec, max_cost_usd=max_cost),
                                  judging=judging, settings=self.settings, name=strategy.name,
                                  rewrites_queries=strategy.rewrites_queries, on_row=_row_printer(progress),
                                  should_stop=self.should_stop, context=context)
        except InputError:  # refused before any row (e.g. --known-answers N over what retrieval found)
            if journal.rows == 0 and not done:  # exit 2 writes nothing: no journal, no command to continue
                journal.remove()
                self.state.journal = self.state.continue_command = None
            raise
        if o.targets:
            from components.analysis.targets import check_targets

            result.targets = check_targets(result, o.targets)
        _print_summary(result, o.audit)
        finished = len(result.rows)
        if batch is not None and not batch.all_records:  # no batch to record: rows not submitted are no work
            finished = sum(1 for r in result.rows if batch_finished(r))
        extra = [strategy_results_path(o.output, file_name)] if several else []
        self._write(result, runs_dir / f"{run_id}.json", journal, n_rows=finished, extra=extra)
        return result

    def _check_budget(self, strategy: Strategy, label: str, prepared, judging: Judging, questions: list,
                      previous, max_cost: float) -> None:
        """With ``--max-cost``: the run's estimated cost, said before the first judge call (a warning
        when the budget will not grade every question; the budget still stops grading when it is spent)."""
        from components.run.calls.budget import worst_usd
        from components.run.estimate import over_budget

        est = self._estimate(strategy, label, prepared, judging, questions, previous)
        calls = sum(r.calls for r in est.roles)
        prompt = sum(r.input_tokens for r in est.roles) // calls if calls else 0
        worst = [worst_usd(s.judge_provider.model(s.judge), prompt)  # the dearest judge's call, a panel's too
                 for s in [j.setup for j in judging.seats] if s.judge is not None]
        reserve = max(worst) if calls and worst else None
        warning = over_budget(est, max_cost, reserve)
        if warning:
            logger.warning("{}", warning)
        else:
            cost = "unknown (a model without a price)" if est.usd is None else f"${est.usd:.4f}"
            logger.info("Estimated cost of this run: {} (--max-cost ${:g})", cost, max_cost)

    def _kept(self, rows: dict) -> tuple[dict, dict]:
        """``--resume``: the rows taken over as they are (graded; in a panel, by every judge) and, in a
        panel, the grades kept of the others (:meth:`components.run.panel.judges.Panel.kept`)."""
        return judges_kind(self.settings).kept(rows, self.settings)

    def _resumed(self, identity: dict, previous, questions: list) -> tuple[dict[str, QuestionResult], list]:
        """With ``--resume``: the rows kept (the graded ones) and the batches recorded, once the file
        is checked against this run's identity; without it, nothing."""
        if previous is None:
            return {}, []
        o = self.o
        path, (prev_run, prev_rows) = previous
        _check_resume(identity, identity_of(prev_run), path)
        warn_uncollected(prev_run, o.spec.judge_batch)
        done, kept = self._kept(prev_rows)
        if kept:
            logger.info("Resuming {}: {} more row(s) keep the grades of the judges that graded them; the other judges "
                        "grade them now", path, len(kept))
        if o.spec.repeat_where == repeat_where.UNCERTAIN:  # its rows hold 1 or N grades: the recorded N is checked
            repeat_where.check_resumed(identity_of(prev_run), o.spec.judge_repeats, path)
        else:
            check_resume_repeats(prev_run, done, o.spec.judge_repeats, path)
        logger.info("Resuming {}: {} graded row(s) kept as they are, {} question(s) to run", path, len(done),
                    sum(1 for q in questions if q.id not in done))
        return done, prev_run.get("judge_batch") or []

    def _resume_list(self, path: Path) -> str:
        """What ``--resume`` takes to continue from ``path``: with a suite, the files of the
        configurations written before it too (comma-separated)."""
        return ",".join(str(p) for p in (*self._suite_written, path))

    def _write(self, result: RunResult, run_path: Path, journal: Journal, n_rows: int, extra: list[Path]) -> None:
        if n_rows == 0:
            journal.remove()
            self.state.journal = self.state.continue_command = None  # nothing to continue: the journal is gone
            logger.warning("No question finished: nothing written (an earlier {} is kept)", self.o.output)
            return
        with self.deferred_signals():
            content = result.strict_json(self.secrets)  # cleaned once for every file
            for path in (run_path, *extra, self.o.output):
                write_json_atomic(path, content)
                self.state.written.append(path)
            journal.remove()
        self.state.journal = None
        self.state.continue_command = _continue_command(self.o.argv, self._resume_list(run_path))
        if self.o.suite is not None:
            self._suite_written.append(run_path)
        also = ", ".join(str(p) for p in (run_path, *extra))
        logger.info("Results written to {} (and {})", self.o.output, also)


def log_metrics(result: RunResult) -> None:
    """One ``METRIC key=value unit`` line per metric of the run (the registry's order)."""
    from utils.logger import get_logger

    log = get_logger()
    for key, value in result.metrics.items():
        metric = METRICS.get(key)
        log.metric(key, value, "%" if metric is not None and metric.unit == "percent" else "")
