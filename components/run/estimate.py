"""What a run would cost, before it spends: ``python benchmark.py ... --estimate`` and ``--max-cost``'s check.

:func:`estimate` builds every request the run would send, exactly as the run builds it, without
calling the judge: retrieval runs (it is local), then per question

* **grading**: :func:`~components.judges.retrieval_grader.build_prompt` of the question and its
  retrieved chunks, ``--judge-repeats`` times;
* **relevance**: :func:`~components.judges.chunk_relevance.build_relevance_prompt`, once per
  question with chunks, when chunks are rated (``--chunk-relevance``);
* **order check**: the grading prompt with the chunks reversed, once per question of the
  ``--order-check`` sample with more than one chunk;
* **rewriter**: the query rewriter's prompt, once per question, when the strategy rewrites
  queries (retrieval then uses the question itself: the rewrite is not known before it is made);
* **known answers**: with ``--known-answers N``, the check's two prompts for each of the N questions it
  chooses (:mod:`components.run.known_answers`): 2N calls per judge, never batched.

Rows a ``--resume`` keeps are not counted. The estimate assumes every call is made once: no
retries, no judge failure, and the order check runs for every sampled question (it only runs
for questions the judge graded).

**Input tokens** are counted by the provider's token-counting endpoint where it has one
(:meth:`components.judges.providers.Provider.count_tokens`; the Messages API's
``messages.count_tokens`` for Claude, with the request settings of the run): each distinct prompt
of a role once, up to :data:`COUNT_SAMPLE` of them; beyond that a sample of :data:`COUNT_SAMPLE`
drawn with :data:`COUNT_SEED` is counted and the rest scaled by its tokens per character. A
provider without one, or a failed count, falls back to the documented approximation
``ceil(characters / CHARS_PER_TOKEN)`` per prompt (:data:`CHARS_PER_TOKEN` = 4), and the table
says which was used.

**Output tokens** are assumed, per call: :data:`ASSUMED_OUTPUT_TOKENS` — a grade is a JSON object
with a one- or two-sentence reasoning (~150 tokens), a relevance rating a list of k small integers
(~40), a rewrite one line (~40). A model that thinks before it answers writes more.

**Prices** come from the provider's price table (``provider.prices``): ``$ sequential`` each call
at the standard price, ``$ batch`` what the same run costs with ``--judge-batch``: grading at the
batch price; the rewriter is not batched (standard price); chunk relevance and the order check
cannot be combined with ``--judge-batch`` (shown as "—" and left out of that total); a judge
whose provider has no batch API (``supports_batch``: the openai provider) shows "—" throughout. A judge
that calls no model (the offline judge) makes no calls: its roles count no call and no token, and
the estimate says in one line that it costs nothing (a rewriting strategy's rewriter calls are
still counted and priced); a model missing from the price table has no price ("unknown").

**--max-cost**: before the first judge call of each strategy, the same estimate runs; when the
budget will not grade every question (each call is made only when its worst case, a reply at its
output cap, fits in what is left: :mod:`components.run.calls.budget`), one warning line says so — the
estimate, about how many questions the budget grades, and the budget that would grade them all —
and the run goes on: the budget stops grading before the spend would pass ``--max-cost`` (the
remaining rows are written ungraded, exit 4, ``--resume`` with a higher budget finishes them). The run is
not stopped at the estimate: it is an estimate (the output side is assumed), and the rows graded
within the budget are kept and paid for once.
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field

from loguru import logger

from components.judges.chunk_relevance import build_relevance_prompt
from components.judges.retrieval_grader import build_prompt
from components.run.calls.query_rewriter import rewrite_prompt
from components.run.order_check import reversed_order

ROLES = ("grading", "relevance", "order check", "rewriter")
KNOWN_ANSWERS = "known answers"  # the --known-answers check's role: in an estimate only when asked for
ASSUMED_OUTPUT_TOKENS = {"grading": 150, "relevance": 40, "order check": 150, "rewriter": 40, "known answers": 150}
CHARS_PER_TOKEN = 4.0
COUNT_SAMPLE = 100  # distinct prompts of a role counted by the API; beyond this, a seeded sample is scaled
COUNT_SEED = 0
BATCHED = {"grading": True, "rewriter": False, "relevance": None, "order check": None,  # None: not with --judge-batch
           "known answers": False}  # made one by one before the run, batch or not


@dataclass(frozen=True)
class RoleEstimate:
    role: str
    calls: int
    input_tokens: int
    output_tokens: int
    usd: float | None  # None: no price known
    usd_batch: float | None  # None: no price, or the role is not sent with --judge-batch
    counted: str  # how the input tokens were obtained
    model: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class CostEstimate:
    strategy: str
    questions: int
    provider: str
    model: str | None
    free: bool  # the judge calls no model: nothing to pay
    prices_as_of: str | None
    roles: list[RoleEstimate] = field(default_factory=list)
    supports_batch: bool = True  # the judge's provider takes --judge-batch (else the batch column is "—")

    @property
    def usd(self) -> float | None:
        """The sequential total; None when a role with calls has no price."""
        if self.free:
            return 0.0
        costs = [r.usd for r in self.roles if r.calls]
        return None if any(c is None for c in costs) else sum(costs)

    @property
    def usd_batch(self) -> float | None:
        """The total with --judge-batch; None when a role has no price or the provider has no batch API."""
        if self.free:
            return 0.0
        if not self.supports_batch:
            return None
        costs = [r.usd_batch if BATCHED[r.role] else r.usd for r in self.roles
                 if r.calls and BATCHED[r.role] is not None]
        return None if any(c is None for c in costs) else sum(costs)

    def to_json(self) -> dict:
        return {"strategy": self.strategy, "questions": self.questions, "provider": self.provider, "model": self.model,
                "free": self.free, "prices_as_of": self.prices_as_of, "usd": self.usd, "usd_batch": self.usd_batch,
                "supports_batch": self.supports_batch,
                "assumed_output_tokens": dict(ASSUMED_OUTPUT_TOKENS), "roles": [r.to_json() for r in self.roles]}

    def table(self) -> str:
        judge = f"{self.provider}/{self.model}" if self.model else self.provider
        calls = sum(r.calls for r in self.roles)
        no_calls = f"the {self.provider} judge makes no calls and costs nothing"
        if not calls:  # nothing is sent to any model: no token to count, nothing to pay
            return (f"Cost estimate: strategy {self.strategy}, {self.questions} question(s), judge {judge}: {no_calls} "
                    "($0; it grades here, from the retrieved chunks)\n")

        def money(value: float | None, role: str | None = None) -> str:
            if self.free:
                return "free"
            if role is not None and (not self.supports_batch or (role != "total" and BATCHED[role] is None)):
                return "—"  # not sent with --judge-batch, or no --judge-batch for this provider
            return "unknown" if value is None else f"{value:.4f}"

        prices = f", prices as of {self.prices_as_of}" if self.prices_as_of and not self.free else ""
        lines = [f"Cost estimate: strategy {self.strategy}, {self.questions} question(s), judge {judge}{prices} "
                 "(nothing was sent to the judge)",
                 f"  {'role':<12}{'calls':>8}{'input tokens':>15}{'output tokens':>15}{'$ sequential':>14}"
                 f"{'$ batch':>10}  input counted by"]
        for r in self.roles:
            if not r.calls:
                continue
            batch = r.usd_batch if BATCHED[r.role] else r.usd
            lines.append(f"  {r.role:<12}{r.calls:>8,}{r.input_tokens:>15,}{r.output_tokens:>15,}"
                         f"{money(r.usd):>14}{money(batch, r.role):>10}  {r.counted}")
        lines.append(f"  {'total':<12}{calls:>8,}{sum(r.input_tokens for r in self.roles):>15,}"
                     f"{sum(r.output_tokens for r in self.roles):>15,}{money(self.usd):>14}"
                     f"{money(self.usd_batch, 'total'):>10}")
        if self.model is None:  # the rewriter's calls only
            lines.append(f"  grading: {no_calls}")
        assumed = ", ".join(f"{role} {n}" for role, n in ASSUMED_OUTPUT_TOKENS.items()
                            if role in ROLES or any(r.role == role for r in self.roles))
        if self.supports_batch or self.free:
            lines.append(f"  output tokens assumed per call: {assumed}; $ batch = with --judge-batch (grading at "
                         "the batch price; the rewriter is not batched; — = not sent with --judge-batch)")
        else:
            lines.append(f"  output tokens assumed per call: {assumed}; $ batch: — (the {self.provider} judge has no "
                         "batch API: --judge-batch is not available)")
        return "\n".join(lines) + "\n"


# --------------------------------------------------------------------------- the requests

def requests(retriever, questions: Sequence, k: int, *, repeats: int = 1, order_check: Collection[str] = (),
             relevance: bool = False, rewrites: bool = False, known_answers: int | None = None
             ) -> dict[str, dict[str, int]]:
    """Per role, every distinct prompt the run would send and how many times: ``{role: {prompt: n}}``.
    Retrieval runs here (a retrieval that fails sends no judge call, as in the run). ``known_answers``: the
    ``--known-answers`` check's 2 prompts per question (:func:`known_answer_prompts`)."""
    out: dict[str, dict[str, int]] = {role: {} for role in ROLES}
    if known_answers is not None:  # a role of its own only when asked for
        out[KNOWN_ANSWERS] = known_answer_prompts(retriever, questions, k, known_answers)

    def add(role: str, prompt: str, times: int = 1) -> None:
        out[role][prompt] = out[role].get(prompt, 0) + times

    checked = frozenset(order_check)
    for q in questions:
        if rewrites:
            add("rewriter", rewrite_prompt(q.question))
        try:
            chunks = [getattr(item, "chunk", item) for item in itertools.islice(retriever.retrieve(q.question, k), k)]
        except Exception as err:  # noqa: BLE001 - the run records a retrieval error and sends nothing
            logger.debug("estimate: retrieval of {} failed: {}: {}", q.id, type(err).__name__, err)
            continue
        add("grading", build_prompt(q.question, q.expected_answer, chunks), max(1, repeats))
        if relevance and chunks:
            add("relevance", build_relevance_prompt(q.question, q.expected_answer, chunks))
        flipped = reversed_order(chunks) if q.id in checked else None
        if flipped is not None:
            add("order check", build_prompt(q.question, q.expected_answer, flipped))
    return out


def known_answer_prompts(retriever, questions: Sequence, k: int, n: int | None) -> dict[str, int]:
    """The prompts of the ``--known-answers`` check (:mod:`components.run.known_answers`): per chosen question,
    the needle's chunks and the other documents'. None: no check. Raises :class:`InputError` as the run would."""
    if n is None:
        return {}
    from components.run.known_answers import choose

    def chunks(q) -> list:
        return [getattr(item, "chunk", item) for item in itertools.islice(retriever.retrieve(q.question, k), k)]

    out: dict[str, int] = {}
    for pair in choose(questions, chunks, n):
        for shown in (pair.needle, pair.other):
            prompt = build_prompt(pair.question.question, pair.question.expected_answer, shown)
            out[prompt] = out.get(prompt, 0) + 1
    return out


def approximate_tokens(prompt: str) -> int:
    """The documented approximation: ceil(characters / :data:`CHARS_PER_TOKEN`)."""
    return math.ceil(len(prompt) / CHARS_PER_TOKEN)


def count_input_tokens(provider, choice, prompts: Mapping[str, int]) -> tuple[int, str]:
    """Input tokens of ``prompts`` (prompt → times sent) and how they were counted (module docstring)."""
    distinct = list(prompts)
    if not distinct:
        return 0, "-"
    if choice is not None and provider is not None:
        sample = distinct if len(distinct) <= COUNT_SAMPLE else random.Random(COUNT_SEED).sample(distinct, COUNT_SAMPLE)
        try:
            counts = provider.count_tokens(choice, sample)
        except Exception as err:  # noqa: BLE001 - an estimate falls back, it does not fail
            logger.warning("Token counting failed ({}: {}): input tokens are approximated as characters / {:g}",
                           type(err).__name__, str(err)[:200], CHARS_PER_TOKEN)
            counts = None
        if counts is not None:
            counted = dict(zip(sample, counts, strict=True))
            if len(sample) == len(distinct):
                return (sum(counted[p] * n for p, n in prompts.items()),
                        f"the provider's token counting ({len(sample)} prompts)")
            ratio = sum(counts) / max(1, sum(len(p) for p in sample))
            total = sum(counted[p] * n if p in counted else round(len(p) * ratio) * n for p, n in prompts.items())
            return total, (f"the provider's token counting ({len(sample)} of {len(distinct)} prompts, seed "
                           f"{COUNT_SEED}; the rest scaled by their characters)")
    return (sum(approximate_tokens(p) * n for p, n in prompts.items()),
            f"approximation (characters / {CHARS_PER_TOKEN:g})")


def estimate(retriever, questions: Sequence, k: int, setup, *, strategy: str = "?", repeats: int = 1,
             order_check: Collection[str] = (), relevance: bool = False, rewrites: bool = False,
             wanted: Mapping[str, Mapping[str, int]] | None = None, known_answers: int | None = None) -> CostEstimate:
    """The :class:`CostEstimate` of running ``questions`` (module docstring); ``setup`` is the run's
    :class:`~components.judges.setup.JudgeSetup`; ``wanted``: the requests (:func:`requests`) when
    already built (a panel prices the same requests for each judge). No judge call is made."""
    if wanted is None:
        wanted = requests(retriever, questions, k, repeats=repeats, order_check=order_check, relevance=relevance,
                          rewrites=rewrites and setup.rewriter is not None, known_answers=known_answers)
    judge_provider, judge = setup.judge_provider, setup.judge
    free = judge is None and not wanted["rewriter"]
    priced = judge_provider if judge is not None else setup.rewriter_provider  # whose prices the table uses
    result = CostEstimate(strategy, len(questions), judge_provider.name, judge.model if judge is not None else None,
                          free, None if free else priced.prices.as_of,
                          supports_batch=judge_provider.supports_batch)
    for role in (r for r in (*ROLES, KNOWN_ANSWERS) if r in wanted):
        prompts = wanted[role]
        provider, choice = (setup.rewriter_provider, setup.rewriter) if role == "rewriter" else (judge_provider, judge)
        if choice is None:  # no model serves the role (the offline judge): no call, no token
            result.roles.append(RoleEstimate(role, 0, 0, 0, 0.0, 0.0, "no model called"))
            continue
        calls = sum(prompts.values())
        input_tokens, how = count_input_tokens(provider, choice, prompts)
        output_tokens = calls * ASSUMED_OUTPUT_TOKENS[role]
        usd = usd_batch = None
        model = choice.model
        if calls:
            usd = provider.prices.cost_usd(model, input_tokens, output_tokens)
            usd_batch = provider.prices.cost_usd(model, input_tokens, output_tokens, batch=True) \
                if BATCHED[role] and result.supports_batch else None
        result.roles.append(RoleEstimate(role, calls, input_tokens, output_tokens, usd, usd_batch, how, model))
    return result


def over_budget(est: CostEstimate, max_cost_usd: float, reserve_usd: float | None = None) -> str | None:
    """The warning line when the budget will not grade every question of ``est``; None when it will
    (or there is no price). Each call is made only when its worst case (``reserve_usd``, one call at
    its output cap: :mod:`components.run.calls.budget`; default the mean cost of a question) fits in what
    is left, so the last question needs that much room."""
    total = est.usd
    if total is None or not est.questions:
        return None
    mean = total / est.questions
    reserve = mean if reserve_usd is None else reserve_usd
    if total - mean + reserve <= max_cost_usd:
        return None
    # the question after n graded ones is graded while n × mean + reserve fits (total > 0 here)
    fits = 0 if max_cost_usd < reserve else min(est.questions, math.floor(
        est.questions * (max_cost_usd - reserve) / total + 1e-9) + 1)
    need = total - mean + reserve
    return (f"the estimated cost of this run is ${total:.4f} ({sum(r.calls for r in est.roles):,} judge calls), over "
            f"--max-cost ${max_cost_usd:g}: grading will stop at the budget after about {fits} of {est.questions} "
            f"question(s) (exit 4; --resume finishes them); to grade them all, set --max-cost to at least "
            f"${math.ceil(need * 100) / 100:.2f}")
