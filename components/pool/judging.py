"""Labelling the pool: each pair's label by each judge, from the judgment store or from one call.

:func:`plan_judging` reads the store (no call): a pair whose judgment the store holds is served
from it; the others are grouped by content (a chunk of the same text retrieved under two ids is one
judgment, the second pair served by the same call) and then, per question, into calls of at most
:data:`CHUNKS_PER_CALL` chunks. The calls are **blind**: each chunk is shown with its document and
chunk ids hidden, in an order shuffled with a fixed seed (:data:`SHUFFLE_SEED`, recorded in
``pool.json``), so a judge cannot favour the needle by its id or its rank.

:func:`run_judging` makes the calls (``concurrency`` at a time), each through ``--max-cost``'s
budget, and commits each label to the store as it arrives. A reply that cannot be read leaves its
pairs unlabelled (the reason and the raw reply kept; a later ``pool`` asks again). A judge that
becomes unusable, a spent budget or Ctrl-C stops the calls; what was answered is kept.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from datetime import datetime, timezone

from loguru import logger

from components.judges.chunk_relevance import build_relevance_prompt
from components.pool.judges import PoolJudge
from components.core.chunk import TextChunk
from components.pool.runs import Pair, PoolQuestion
from components.pool.store import JudgmentStore, judgment_key, pair_key
from components.run.calls.budget import Budget, BudgetRefused, through
from utils.errors import JudgeError

CHUNKS_PER_CALL = 10
SHUFFLE_SEED = 0
HIDDEN = "hidden"


@dataclass(frozen=True)
class Vote:
    """One judge's label of one pair: whether it came from the store, and when it was made."""

    label: int
    from_store: bool
    created_at: str


@dataclass(frozen=True)
class Call:
    """One call to make: a judge, a question, and the distinct judgments it asks (store key, pair
    key, text), in the shuffled order shown."""

    judge: PoolJudge
    question: PoolQuestion
    entries: tuple[tuple[str, str, str], ...]

    def prompt(self) -> str:
        chunks = [TextChunk(HIDDEN, HIDDEN, text) for _, _, text in self.entries]
        return build_relevance_prompt(self.question.question, self.question.expected_answer, chunks)


@dataclass
class JudgePlan:
    """What one judge does: each pair's store key, the votes the store serves, the calls to make,
    and the judgments skipped because the store holds them under another prompt."""

    judge: PoolJudge
    keys: list[str]
    served: dict[str, Vote]
    calls: list[Call]
    skipped_other_prompt: int = 0


@dataclass
class JudgeTally:
    """What one judge's calls did: calls made, their costs, labels made (by store key)."""

    calls: int = 0
    costs: list = field(default_factory=list)
    made: dict[str, Vote] = field(default_factory=dict)

    def cost_usd(self, calls_models: bool) -> float | None:
        if not calls_models or not self.costs:
            return 0.0
        return None if any(c is None for c in self.costs) else round(sum(self.costs), 6)


@dataclass(frozen=True)
class Failure:
    """A call that gave no labels: the judge, the question, why, and the raw reply (None: no reply)."""

    judge: str
    question_id: str
    pairs: int
    error: str
    raw: str | None

    def to_json(self) -> dict:
        return {"judge": self.judge, "question_id": self.question_id, "pairs": self.pairs, "error": self.error,
                "raw_reply": self.raw}


@dataclass
class Outcome:
    """The judging's result: per judge its tally, the failures, and why it stopped early (None: it did not)."""

    tallies: dict[str, JudgeTally]
    failures: list[Failure]
    status: str = "completed"
    stopped: str | None = None


def now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def plan_judging(pairs: Sequence[Pair], judges: Sequence[PoolJudge], store: JudgmentStore,
                 seed: int = SHUFFLE_SEED) -> list[JudgePlan]:
    """Per judge: the store's votes and the calls left to make (module docstring). No call."""
    plans = []
    for judge in judges:
        stored = store.judgments_of(judge.key("reference"))
        variants = {True: judge.key("reference"), False: judge.key(None)}  # with an expected answer, or without
        keys, served, pending = [], {}, {}
        for pair in pairs:
            q = pair.question
            jk = variants[bool(q.expected_answer)]
            key = judgment_key(q.question, q.expected_answer, pair.item.index_text, jk)
            keys.append(key)
            if key in stored:
                served[key] = Vote(stored[key].label, True, stored[key].created_at)
            elif key not in pending:
                pending[key] = (q, pair_key(q.question, q.expected_answer, pair.item.index_text, jk),
                                pair.item.index_text)
        skipped = store.other_prompt(judge.key("reference"), [(p, judge.prompt_sha256(q.expected_answer))
                                                              for q, p, _ in pending.values()])
        plans.append(JudgePlan(judge, keys, served, _calls(judge, pending, seed), skipped))
    return plans


def _calls(judge: PoolJudge, pending: dict, seed: int) -> list[Call]:
    by_question: dict[str, tuple[PoolQuestion, list]] = {}
    for key, (q, pkey, text) in pending.items():
        by_question.setdefault(q.id, (q, []))[1].append((key, pkey, text))
    calls = []
    for qid, (q, entries) in by_question.items():
        random.Random(f"{seed}:{qid}").shuffle(entries)
        calls += [Call(judge, q, tuple(entries[i:i + CHUNKS_PER_CALL]))
                  for i in range(0, len(entries), CHUNKS_PER_CALL)]
    return calls


# --------------------------------------------------------------------------- the calls

class _Stop(Exception):
    def __init__(self, status: str, reason: str) -> None:
        super().__init__(reason)
        self.status, self.reason = status, reason


def _make(call: Call, rater, store: JudgmentStore, tally: JudgeTally, failures: list[Failure],
          lock: threading.Lock) -> None:
    """One call: its labels committed to the store and kept in ``tally``, or its failure recorded."""
    chunks = [TextChunk(HIDDEN, HIDDEN, text) for _, _, text in call.entries]
    q = call.question
    try:
        result = rater.relevance(q.question, q.expected_answer, chunks)
    except BudgetRefused as refusal:
        raise _Stop("budget_exhausted", str(refusal)) from None
    except JudgeError as err:  # a fatal one: a transient one is a result without scores
        raise _Stop("judge_failed", f"judge {call.judge.name} became unusable ({err.kind}): {err}") from None
    made = now()
    with lock:
        if call.judge.calls_models:
            tally.calls += 1
            tally.costs.append(getattr(result.reply, "cost_usd", None))
    if result.scores is None:
        with lock:
            failures.append(Failure(call.judge.name, q.id, len(call.entries), result.error or "unscored", result.raw))
        return
    labelled = [(key, pkey, label) for (key, pkey, _), label in zip(call.entries, result.scores, strict=True)]
    store.put(call.judge.key(q.expected_answer), labelled, made)
    with lock:
        tally.made.update((key, Vote(label, False, made)) for key, _, label in labelled)


def run_judging(plans: Sequence[JudgePlan], store: JudgmentStore, *, budget: Budget | None = None,
                concurrency: int = 1, on_call: Callable[[], None] = lambda: None) -> Outcome:
    """Make every planned call (module docstring); stops at a fatal judge error, a spent budget or
    Ctrl-C, keeping what was answered."""
    outcome = Outcome({p.judge.name: JudgeTally() for p in plans}, [])
    lock, stop = threading.Lock(), threading.Event()
    jobs = [(call, through(budget, plan.judge.relevance), outcome.tallies[plan.judge.name])
            for plan in plans for call in plan.calls]

    def work(job) -> None:
        if stop.is_set():
            return
        call, rater, tally = job
        try:
            _make(call, rater, store, tally, outcome.failures, lock)
        finally:
            on_call()

    pool = ThreadPoolExecutor(max_workers=max(1, concurrency), thread_name_prefix="pool-judge")
    try:
        pending = {pool.submit(work, job) for job in jobs[:max(1, concurrency)]}
        queued = iter(jobs[len(pending):])
        while pending:
            done, pending = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                future.result()
                nxt = next(queued, None)
                if nxt is not None and not stop.is_set():
                    pending.add(pool.submit(work, nxt))
    except _Stop as halt:
        stop.set()
        outcome.status, outcome.stopped = halt.status, halt.reason
        logger.error("{}: what was labelled is kept in the store; pool again to finish", halt.reason)
    except KeyboardInterrupt:
        stop.set()
        outcome.status, outcome.stopped = "interrupted", "interrupted"
        logger.warning("Interrupted: the labels answered so far are kept in the store")
    finally:
        pool.shutdown(wait=outcome.status != "interrupted", cancel_futures=True)
    return outcome
