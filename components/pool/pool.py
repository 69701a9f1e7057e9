"""``pool``: relevance labels for the union of the runs' top items, judged once, kept in a store.

1. **The pool** (:mod:`components.pool.runs`): the distinct (question, doc, chunk) of the runs' top
   ``depth`` items.
2. **The judges** (:mod:`components.pool.judges`): the environment's judge or ``--judges``, each
   rating chunks 0-3 with the per-chunk relevance prompt.
3. **The store** (:mod:`components.pool.store`) serves every judgment it holds; the rest are asked
   in blind calls (:mod:`components.pool.judging`), through ``--max-cost``'s budget, each label
   committed as it arrives.
4. **The labels** (:mod:`components.pool.labels`: a panel's lowest vote; a document's best chunk's)
   and **the review** (:mod:`components.pool.review`: false-negative and gold-error candidates).
5. **The files** (:mod:`components.pool.files`): qrels, chunk qrels, provenance, ``pool.json``.

A stop (a spent budget, a judge that became unusable, Ctrl-C) still writes the files of what was
labelled, with ``status`` and ``stopped`` saying why.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from components.judges.settings import Settings
from components.pool import files, review
from components.pool.estimate import estimate_pool, estimate_table, total_usd
from components.pool.judges import PoolJudge, pool_judges
from components.pool.judging import CHUNKS_PER_CALL, HIDDEN, SHUFFLE_SEED, Outcome, now, plan_judging, run_judging
from components.pool.labels import counts, document_labels, pair_labels
from components.pool.runs import RESULTS, build_pool, check_depth, fingerprint_of, load_runs, pool_questions
from components.pool.store import JudgmentStore, default_store
from utils.errors import InputError
from utils.results import BUILTIN_PREFIX

DEFAULT_DEPTH = 10


@dataclass
class PoolRequest:
    """What ``pool`` is asked (the command line's options, the API's arguments)."""

    runs: Sequence[str | Path]
    output: str | Path | None
    depth: int = DEFAULT_DEPTH
    judges: str | Sequence | None = None
    store: str | Path | None = None  # None: the default store under the state folder
    corpus: str | Path | None = None
    questions: str | Path | None = None
    max_cost_usd: float | None = None
    concurrency: int = 1
    accept_false_negatives: bool = False
    estimate: bool = False
    inputs: list = field(default_factory=list)  # more (what, path) an output may not overwrite (a panel file)


@dataclass
class PoolResult:
    """The pool's figures (``pool.json``), the folder written (None: an estimate), and the estimate's table."""

    summary: dict
    folder: Path | None
    estimate: str | None = None

    @property
    def status(self) -> str:
        return self.summary.get("status", "completed")


def _corpus_chunks(corpus: str | Path | None, recorded: str | None) -> Callable[[], tuple[list, str]]:
    """The offline judge's corpus chunks (``--corpus``, else the corpus the first results file
    recorded) and their fingerprint, read when asked."""
    def load() -> tuple[list, str]:
        from components.core.chunking import Chunking, chunk_corpus
        from components.readers import load_corpus

        source = corpus if corpus is not None else recorded
        if source is not None and not str(source).startswith(BUILTIN_PREFIX) and not Path(source).exists():
            raise InputError(f"the offline judge weighs terms over the runs' corpus, {source}, which is not there: "
                             "give its folder with --corpus")
        folder = None if source is None or str(source).startswith(BUILTIN_PREFIX) else source
        chunks = chunk_corpus(load_corpus(folder).documents, Chunking())
        return chunks, fingerprint_of([c.index_text for c in chunks])
    return load


def _outputs(request: PoolRequest, settings: Settings, recorded: list[str]) -> Path | None:
    from utils.files.output import check_output

    if request.estimate:
        return None
    if request.output is None:
        raise InputError("pool needs an output folder: -o DIR")
    inputs = [*(("a run", p) for p in request.runs), *request.inputs]
    if request.questions is not None:
        inputs.append(("the questions", request.questions))
    names = [files.QRELS, files.CHUNK_QRELS, files.PROVENANCE, files.POOL_JSON, files.REVIEWED]
    checked = [check_output(Path(request.output) / name, option="-o", example=name, inputs=inputs,
                            corpus=request.corpus, recorded_corpora=recorded) for name in names]
    return checked[0].parent


def _budget(request: PoolRequest, judges: Sequence[PoolJudge]):
    if request.max_cost_usd is None:
        return None
    from components.run.calls.budget import Budget, check_max_cost

    check_max_cost(request.max_cost_usd, {f"judge {j.name}": j.relevance.llm for j in judges if j.calls_models})
    return Budget(request.max_cost_usd)


def run_pool(request: PoolRequest, settings: Settings, env: Mapping[str, str], *, secrets: Sequence[str] = (),
             on_call: Callable[[], None] = lambda: None,
             progress: Callable[[int], object] | None = None) -> PoolResult:
    """The pool of ``request`` (module docstring). Raises :class:`InputError` before any call."""
    depth = check_depth(request.depth)
    runs = load_runs(request.runs, corpus=request.corpus)
    questions = pool_questions(runs, request.questions)
    pairs = build_pool(runs, questions, depth)
    recorded = [r.corpus for r in runs if r.corpus and not r.corpus.startswith(BUILTIN_PREFIX)]
    folder = _outputs(request, settings, recorded)
    judges = pool_judges(settings, env, request.judges,
                         _corpus_chunks(request.corpus, next((r.corpus for r in runs if r.kind == RESULTS), None)))
    store_path = Path(request.store) if request.store is not None else default_store(settings.state_dir)
    if request.estimate and not store_path.exists():
        store_path = Path(":memory:")  # an estimate creates nothing
    with JudgmentStore(store_path) as store:
        plans = plan_judging(pairs, judges, store)
        estimates = estimate_pool(plans)
        if request.estimate:
            return PoolResult({"pairs": len(pairs)}, None, estimate_table(len(pairs), estimates))
        outcome = _judge(request, plans, estimates, store, store_path, judges, on_call, progress)
    labels = pair_labels(pairs, plans, outcome)
    found = review.false_negatives(labels)
    summary = _summary(runs, questions, judges, plans, outcome, labels, found, store_path, depth)
    files.write_pool(folder, labels, questions, judges, summary, secrets,
                     accepted=found if request.accept_false_negatives else None)
    _log(summary, folder)
    return PoolResult(summary, folder)


def _judge(request: PoolRequest, plans, estimates, store: JudgmentStore, store_path: Path, judges, on_call,
           progress) -> Outcome:
    """The calls of ``plans``: the skipped judgments said, the budget checked, a progress line."""
    for plan in plans:
        if plan.skipped_other_prompt:
            logger.warning("{}: {} judgment(s) by {} written with another prompt{} are not reused", store_path,
                           plan.skipped_other_prompt, plan.judge.name,
                           "" if plan.judge.calls_models else " or over another corpus")
    budget = _budget(request, judges)
    _warn_over_budget(request, estimates)
    total = sum(len(p.calls) for p in plans)
    bar = progress(total) if progress is not None and total else None
    with bar if bar is not None else nullcontext():
        return run_judging(plans, store, budget=budget, concurrency=request.concurrency,
                           on_call=(lambda: (on_call(), bar.advance())) if bar is not None else on_call)


def _warn_over_budget(request: PoolRequest, estimates) -> None:
    usd = total_usd(estimates)
    if request.max_cost_usd is not None and usd is not None and usd > request.max_cost_usd:
        logger.warning("The pool's calls are estimated at ${:.4f}, above --max-cost ${:g}: the budget stops the calls "
                       "before it is passed (exit 4); pool again with a higher --max-cost to finish (the store keeps "
                       "what was labelled)", usd, request.max_cost_usd)


def _summary(runs, questions, judges, plans, outcome, labels, found, store_path: Path, depth: int) -> dict:
    figures = counts(labels)
    costs = [outcome.tallies[j.name].cost_usd(j.calls_models) for j in judges]
    lenient = review.lenient_judges(labels)
    by_doc = document_labels(labels)
    given = Counter(x.label for x in labels)
    return {
        **figures,
        "judge_calls": sum(t.calls for t in outcome.tallies.values()),
        "cost_usd": None if any(c is None for c in costs) else round(sum(costs), 6),
        "false_negative_candidates": [c.to_json() for c in found],
        "gold_error_candidates": [c.to_json() for c in review.gold_errors(labels)],
        "status": _status(outcome.status, figures), "stopped": outcome.stopped, "created_at": now(),
        "depth": depth, "questions": len(questions),
        "documents": sum(len(d) for d in by_doc.values()),
        "labels": {str(g): given.get(g, 0) for g in range(4)},
        "runs": [{"source": r.source, "kind": r.kind} for r in runs],
        "judges": [{**j.to_json(), "calls": outcome.tallies[j.name].calls,
                    "labelled": len(outcome.tallies[j.name].made), "from_store": len(p.served),
                    "skipped_other_prompt": p.skipped_other_prompt,
                    "labels_everything_relevant": j.name in lenient} for j, p in zip(judges, plans, strict=True)],
        "label_rule": "one judge: its label; a panel: the lowest vote; a document: its best chunk's",
        "blind": {"doc_ids": HIDDEN, "shuffle_seed": SHUFFLE_SEED, "chunks_per_call": CHUNKS_PER_CALL},
        "store": str(store_path),
        "needles_not_pooled": review.needles_not_pooled(labels, questions),
        "lenient_judges": {name: {"relevant": r, "labels": n} for name, (r, n) in lenient.items()},
        "failures": [f.to_json() for f in outcome.failures],
    }


def _status(status: str, figures: dict) -> str:
    """``incomplete`` (exit 8, as a run) when every call was made but a pair has no label (a call failed or
    answered nothing readable): its documents would count as unjudged; else the calls' own status."""
    return "incomplete" if status == "completed" and figures.get("unlabelled") else status


def _log(summary: dict, folder: Path) -> None:
    logger.info("Pool: {} pair(s) of {} question(s) at depth {}: {} judged ({} call(s)), {} from the store, {} "
                "unlabelled", summary["pairs"], summary["questions"], summary["depth"], summary["judged"],
                summary["judge_calls"], summary["from_store"], summary["unlabelled"])
    for name, figures in summary["lenient_judges"].items():
        logger.warning("Judge {} labels everything relevant ({} of {} labels are 2 or 3): its false-negative "
                       "candidates say little; check it with a panel (--judges) or against human labels", name,
                       figures["relevant"], figures["labels"])
    logger.info("Labels written to {}", folder)
    if summary["status"] == "incomplete":
        logger.error("Incomplete: {} pair(s) have no label (a judge call failed or its reply named no label; see "
                     "pool.json's failures): pool again to label them (the store keeps the others); exit 8",
                     summary["unlabelled"])
