"""The benchmark as a library: evaluate a retriever, compare runs, render a report.

::

    from components.api import evaluate, compare, report

    result = evaluate(my_retriever, "questions.json")          # the built-in corpus, the offline judge
    print(result.metrics["mrr"], result.ci95["mrr"])
    result.save("runs/mine.json")
    print(compare(["runs/baseline.json", result]))             # the table; .to_json() for the data
    gate = compare(["runs/baseline.json", result]).gate(worse=["mrr"], margins={"ndcg_at_k": 0.02})
    assert gate.passed, str(gate)                              # the CI gate of ``compare --fail-on``
    export_trec(result, "run.trec", "qrels.txt")               # TREC files for trec_eval, ranx, ir_measures
    html = report([result])
    audit = audit_judge("runs/mine.json", sample=20)           # can the judge be fooled? (docs/judges.md)

Nothing here writes a file or prints unless asked (``save``, a callback). Log records go through
loguru under the ``components``, ``utils`` and ``poc`` names; they are off until you enable them
(``from loguru import logger; logger.enable("components")``). The command line
(``python benchmark.py``) is a client of these functions.

A retriever is any object with ``index(chunks)`` and ``retrieve(query, k) -> list[ScoredChunk]``
(:class:`Retriever`); a corpus a folder of Markdown files (doc id = file stem), a BEIR folder or
``corpus.jsonl``, a list of :class:`Document`, or None (the built-in Python reference); questions a
questions JSON file, a BEIR folder or ``queries.jsonl`` (qrels from the folder's ``qrels/test.tsv``;
others through ``load_queries(path, qrels=..., split=...)``), or a list of question dicts (``id``,
``question``, ``expected_answer``, ``needle_doc_id`` or graded ``needles``). The judge
is a provider name (``"offline"``, ``"anthropic"``), ``"<provider>/<model>"``, or None: the
environment's judge (the default provider when its key is set, else the offline lexical judge).
A panel of judges is ``judges=[...]`` (specs, panel-file entries as dicts, or a panel file's path;
exclusive with ``judge``): every judge grades every question and ``llm_grade`` is their aggregate.
Metrics and judge providers have registries: :func:`register_metric`, :func:`register_provider`.
Each function first imports the plug-in modules the environment names (``BENCHMARK_PLUGINS``) and
the installed ones (:mod:`components.core.plugins`; each once per process).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from loguru import logger

from components.analysis.compare import ComparedRuns as Comparison, compare_runs
from components.analysis.export_run import export_trec
from components.analysis.gate import GateResult, check_gate
from components.core import Chunk, Corpus, Document, Question, Retriever, ScoredChunk
from components.judges.providers import ModelChoice, Provider, Variable, providers, register_provider
from components.judges.settings import Settings
from components.core.plugins import load_plugins
from components.readers import load_questions as load_queries  # any questions format, BEIR's with qrels=/split=
from components.run.adaptive import request as adaptive_request
from components.run.evaluation import evaluate as _evaluate
from components.run.retrieval.deadline import DEFAULT_RETRIEVAL_TIMEOUT_S
from utils.records.audit_file import AuditFile, read_audit
from utils.errors import BenchmarkError, InputError, JudgeError
from utils.metrics import Metric, metrics, register_metric
from utils.results import QuestionResult, RunInfo, RunResult, load_run

__all__ = [
    "evaluate", "compare", "report", "load_run", "check_gate", "export_trec", "load_queries",
    "audit_judge", "read_audit", "AuditFile", "pool",
    "RunResult", "RunInfo", "QuestionResult", "Comparison", "GateResult",
    "Retriever", "ScoredChunk", "Chunk", "Document", "Corpus", "Question",
    "Metric", "metrics", "register_metric",
    "Provider", "Variable", "ModelChoice", "providers", "register_provider",
    "Settings", "BenchmarkError", "InputError", "JudgeError",
]

for _name in ("components", "utils", "poc"):  # a library is quiet until the application says otherwise
    logger.disable(_name)


def _plugins() -> None:
    """The plug-in modules of the environment and the installed entry points, imported (once each)."""
    load_plugins(os.environ)


def _settings(judge: str | None, settings: Settings | None, judges=None) -> Settings:
    """The settings for ``judge``: ``settings`` (or the environment, read here once) with the judge
    named by ``judge`` (a provider name, or ``provider/model``); for a panel, ``judges`` (read with
    the environment's keys: :func:`components.judges.panel.panel_settings`)."""
    if judges is not None:
        from components.judges.panel import panel_settings, parse_judges

        if judge is not None or settings is not None:
            raise InputError("evaluate: judges= is a panel of judges: give it without judge= and settings=")
        return panel_settings(parse_judges(judges, "judges"), dict(os.environ))
    if settings is not None and judge is None:
        return settings
    env = dict(os.environ)
    if judge is not None:
        env.pop("BENCHMARK_JUDGE", None)
        env.pop("BENCHMARK_JUDGE_MODEL", None)
        if "/" in judge:
            env["BENCHMARK_JUDGE_MODEL"] = judge
        else:
            env["BENCHMARK_JUDGE"] = judge
    return Settings.from_env(env)


def evaluate(retriever: Retriever | str, questions: str | os.PathLike | Sequence[Mapping | Question],
             corpus: str | os.PathLike | Sequence[Document] | Corpus | None = None, *, k: int = 5,
             judge: str | None = None, settings: Settings | None = None, name: str | None = None,
             judge_repeats: int = 1, chunk_relevance: bool | None = None, max_cost_usd: float | None = None,
             group_by: Sequence[str] | None = None, keep_text: bool = True, cache_dir: str | os.PathLike | None = None,
             concurrency: int = 1, order_check: int | bool | None = None,
             retrieval_timeout: float | None = DEFAULT_RETRIEVAL_TIMEOUT_S,
             on_row: Callable[[QuestionResult, int, int], None] | None = None,
             should_stop: Callable[[], bool] | None = None, judges: Sequence[str | Mapping] | str | None = None,
             panel_aggregate: str = "median", repeat_where: str = "all",
             until_decided: RunResult | str | os.PathLike | Mapping | None = None,
             fail_on: str | Sequence[str] | bool | None = None, margins: Mapping[str, float] | None = None,
             target_ci: float | str | Mapping[str, float] | None = None, known_answers: int | None = None) -> RunResult:
    """Evaluate ``retriever`` on ``questions`` over ``corpus`` and return the typed result.

    - ``retriever``: an object with ``index(chunks)`` and ``retrieve(query, k)``, or a strategy name
      (``"baseline"``, ``"modular-no-llm"``, ``"package.module:factory"``);
    - ``questions``: a questions JSON file, or a list of question dicts / :class:`Question`;
    - ``corpus``: a folder of Markdown files, a list of :class:`Document`, a :class:`Corpus`, or
      None for the built-in corpus;
    - ``judge``: ``"offline"``, ``"anthropic"``, ``"<provider>/<model>"``, or None for the
      environment's judge (``settings`` overrides the environment entirely);
    - ``judges``: a panel of judges instead (``["offline", "openai/gpt-4.1"]``, panel-file entries
      as dicts, or a ``panel.toml`` path; exclusive with ``judge`` and ``settings``): every judge
      grades every question, ``llm_grade`` is their ``panel_aggregate`` (``"median"`` or ``"mean"``),
      rounded half up, and each row keeps every judge's grade in ``grades_by_judge``;
    - ``k`` chunks per question; ``judge_repeats`` grades per question, on every question
      (``repeat_where="all"``) or only where the first grade is near the pass mark or a panel's
      judges disagree (``"uncertain"``: :mod:`components.run.repeat_where`); ``chunk_relevance`` rate
      each chunk 0-3 (None: only with the offline judge, which does it for free);
      ``max_cost_usd`` stop grading before the LLM calls' cost could pass it (each call made only when
      its worst case, a reply at its output cap, fits: :mod:`components.run.calls.budget`; an
      :class:`InputError` when one call's worst case is over it); ``group_by`` question
      fields to aggregate by; ``keep_text`` keep the chunks' text in the rows; ``cache_dir`` an index
      cache folder (None: no cache);
    - ``retrieval_timeout``: seconds each ``retrieve()`` may take (default 60): past it the question
      gets a ``retrieval_error: timeout: …`` row, its thread is abandoned (named in the log) and the
      run goes on; None or 0: no deadline, ``retrieve()`` called in this thread
      (:mod:`components.run.retrieval.deadline`, which says what a retriever must not do);
    - ``on_row(row, i, n)`` is called after each question, in order; ``should_stop()`` is asked
      before each retrieval and each judge call (return True to end the run ``interrupted``);
    - ``until_decided``: a baseline (a results file, a :class:`RunResult`) fully graded by the same
      judge on the same questions: the judge is called in a seeded random order, in blocks, only
      until every gated metric that uses grades is decided against it (``fail_on`` ``"worse"`` or
      ``"worse:grade,pass7"``, ``margins`` {metric: non-inferiority margin}: as for ``compare``;
      default: the primary metric, the mean grade, alone); ``target_ci``: without a
      baseline, judge until the mean grade's anytime-valid 95% interval is at most that wide on either
      side (or ``{"grade": 0.3, "pass7": 5}``). Rows not judged have ``grade_error`` ``"not judged:
      decided after N"``; ``result.adaptive`` records the looks, the verdicts and the calls saved
      (:mod:`components.run.adaptive`; docs/compare.md).
    - ``known_answers``: before any question is judged, grade the first N questions whose retrieval holds their
      needle with the needle's chunks and with other documents'; a blind judge stops the run (status
      ``judge_blind``, every row ungraded; ``run.known_answers``: :mod:`components.run.known_answers`).

    Returns a :class:`RunResult`: ``metrics``, ``ci95``, ``groups``, ``rows``, ``run``; it writes
    nothing (``result.save(path)`` does). Raises :class:`InputError` for bad input and
    :class:`JudgeError` when the judge cannot be reached at start-up."""
    from components.run.spec import RunSpec

    _plugins()
    judges_settings = _settings(judge, settings, judges)
    spec = RunSpec(k=k, judge_repeats=judge_repeats, repeat_where=repeat_where, chunk_relevance=chunk_relevance,
                   max_cost_usd=max_cost_usd, group_by=tuple(group_by) if group_by is not None else None,
                   keep_text=keep_text, cache_dir=Path(cache_dir) if cache_dir else None, concurrency=concurrency,
                   order_check=order_check, retrieval_timeout=retrieval_timeout, panel_aggregate=panel_aggregate,
                   adaptive=adaptive_request(until_decided, fail_on=fail_on, margins=margins, target_ci=target_ci),
                   known_answers=known_answers)
    return _evaluate(retriever, questions, corpus, spec=spec, settings=judges_settings, name=name, on_row=on_row,
                     should_stop=should_stop)


def _as_result(run: RunResult | str | os.PathLike | Mapping) -> RunResult:
    if isinstance(run, RunResult):
        return run
    if isinstance(run, Mapping):
        return RunResult.from_json(run)
    return load_run(run)


def compare(runs: Sequence[RunResult | str | os.PathLike], *, labels: Sequence[str] | None = None,
            alpha: float = 0.05, power: float = 0.8, seed: int | None = None,
            metrics: Sequence[str] | None = None) -> Comparison:
    """Compare runs (results, or results files) question by question; the first is the baseline.
    ``str()`` of the :class:`Comparison` is the table the command line prints, ``to_json()`` its
    data: per metric the means, Δ with its paired bootstrap CI, the sign-flip p (Holm-adjusted
    across several runs), a verdict at ``alpha``, and how many questions a change needs to be
    detected at ``power``. ``seed`` changes the resampling seeds (recorded in ``to_json()``).
    ``.gate(worse=..., margins=..., regressions=...)`` on the result is ``compare --fail-on``'s CI
    gate (:func:`check_gate`): its ``passed`` says whether the build should pass."""
    _plugins()
    results = [_as_result(r) for r in runs]
    sources = [str(r) if not isinstance(r, (RunResult, Mapping)) else (r.source if isinstance(r, RunResult)
                                                                        else None) or f"run #{i + 1}"
               for i, r in enumerate(runs)]
    return compare_runs(results, labels, sources=sources, alpha=alpha, power=power, seed=seed, metrics=metrics)


def report(runs: Sequence[RunResult | str | os.PathLike]) -> str:
    """One self-contained HTML page of ``runs`` (with their comparison when there are several)."""
    from components.analysis.compare import default_labels
    from components.report.page import render_report, run_label

    _plugins()
    results = [_as_result(r) for r in runs]
    labels = [run_label(r, r.source or f"run {i + 1}") for i, r in enumerate(results)]
    comparison = None
    if len(results) > 1:
        labels = default_labels(results, labels)
        comparison = compare_runs(results, labels).to_json()
    return render_report(results, labels, comparison)



def audit_judge(run: RunResult | str | os.PathLike, *, sample: int | None = None, seed: int = 0,
                attacks: str | Sequence[str] | None = None, judge: str | None = None, settings: Settings | None = None,
                judges: Sequence[str | Mapping] | str | None = None, max_cost_usd: float | None = None,
                corpus: str | os.PathLike | None = None) -> AuditFile:
    """Can a retrieval fool the judge that graded ``run`` (a result, or a results file with the chunks'
    text)? A sample of its rows (``sample``: default min(40, rows); ``seed``) is graded unedited and
    once per attack (``attacks``: default all; names in docs/judges.md, "Auditing the judge") by the
    run's judge — ``judge``/``settings`` as for :func:`evaluate` must resolve to it — or by the panel
    ``judges``. ``max_cost_usd`` bounds the calls; when it stops them, a judge becomes unusable or the
    audit is interrupted, what was graded is returned (``status`` and ``stopped`` say why). Returns the
    :class:`AuditFile`: per judge and attack the mean grade change with its 95% CI, the flips and a
    verdict; ``.save(path)`` writes it. Raises :class:`InputError` for bad input, before any call."""
    from components.audit.judge_audit import audit_judge as _audit_judge

    _plugins()
    return _audit_judge(_as_result(run), sample=sample, seed=seed, attacks=attacks, judges=judges,
                        env=dict(os.environ), settings=_settings(judge, settings) if judges is None else None,
                        max_cost_usd=max_cost_usd, corpus=corpus)


def pool(runs: Sequence[str | os.PathLike], output: str | os.PathLike, *, depth: int = 10,
         judge: str | None = None, judges: Sequence[str | Mapping] | str | None = None,
         store: str | os.PathLike | None = None, corpus: str | os.PathLike | None = None,
         questions: str | os.PathLike | None = None, max_cost_usd: float | None = None,
         accept_false_negatives: bool = False):
    """Relevance labels for the union of the top ``depth`` items of ``runs`` (results files, or TREC
    runs with ``corpus``), each (question, chunk) judged once by ``judge`` or the panel ``judges``
    and kept in the judgment ``store`` (default: the state folder's); writes ``output``/qrels.tsv,
    qrels.chunks.tsv, provenance.jsonl and pool.json (docs/pool.md). Returns the
    :class:`~components.pool.pool.PoolResult`: ``summary`` (pool.json's figures and review), ``folder``.
    Raises :class:`InputError` for bad input, before any call."""
    from components.pool.pool import PoolRequest, run_pool

    request = PoolRequest(runs=list(runs), output=output, depth=depth, judges=judges, store=store, corpus=corpus,
                          questions=questions, max_cost_usd=max_cost_usd,
                          accept_false_negatives=accept_false_negatives)
    return run_pool(request, _settings(judge, None), dict(os.environ))
