"""``--max-cost``: a budget that holds however many calls are in flight, written once, per call.

Every LLM call of a run — each grade and repeat, chunk relevance, ``--order-check``, the retry
pass, the query rewriter; a panel's judges too — goes through one admission point,
:meth:`Budget.complete` (``budget.complete(llm, prompt)`` instead of ``llm.complete(prompt)``;
:func:`through` hands a grader, a relevance judge or a rewriter an ``llm`` that does so):

1. **The call's worst case is reserved** before it is sent: the output cap its request sends
   (``max_tokens`` / ``max_completion_tokens``: the client's ``output_cap``) at the model's output
   price, plus its input — the prompt counted as ``--estimate`` approximates it (characters / 4) —
   at the input price.
2. **It is made** when what was spent, plus the worst cases reserved by the calls in flight, plus
   its own, fits in ``--max-cost``. When it would fit once the calls in flight return, it waits
   for them. When it does not fit even with nothing in flight, it is **refused**
   (:class:`BudgetRefused`, ``grade_error: "budget: …"``) and so is every call after it: the
   budget is spent.
3. **When it returns**, its reservation is released and the reply's cost, as the provider priced it
   from the usage the reply reports, is spent (a reply that reports no usage counts at its worst
   case; a call that failed without a reply costs nothing, as in the results).
4. **A reply past its cap** (a server that reports more output tokens than the cap it was sent) is
   priced as reported. From then on the largest reply seen is the worst case of that model's calls,
   and what the call cost beyond its reservation is the *overrun*: logged, and counted in
   :meth:`Budget.to_json` (``run.budget``). The calls in flight at that moment were reserved at the
   old worst case: the overrun is bounded by them.

5. **A spend past ``--max-cost``** — the server's own usage figures (a reply reporting far more
   output tokens than its cap, or far more prompt tokens than the prompt holds) made the settled calls
   cost more than the budget — is said plainly (one warning naming the figures) and **stops the run**:
   every later call is refused, and the run ends ``budget_exhausted`` (exit 4).

So the spend never passes ``--max-cost`` while every reply keeps to its cap, sequentially or with
``--concurrency`` N, and past it by at most the overruns of replies that did not.
:func:`check_max_cost` refuses, before the first call, a budget that cannot pay for one call.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from loguru import logger

from components.judges.llm import LLM, LLMReply, OutputCap
from components.run.estimate import approximate_tokens
from utils.errors import InputError
from utils.pricing import Price

WAIT_STEP_S = 0.25  # a call waiting for the calls in flight checks for a stop this often


class BudgetRefused(Exception):
    """A call :meth:`Budget.complete` did not make: ``--max-cost`` is spent. ``str()`` is the row's
    ``grade_error`` (``budget: --max-cost $… reached (…)``)."""


@dataclass(frozen=True)
class Reservation:
    """One admitted call: its model, the worst case reserved and the output cap it assumed."""

    model: str
    usd: float
    cap: OutputCap  # as sent
    output_tokens: int  # the output tokens reserved: the cap, or the largest reply seen when larger
    input_tokens: int = 0  # the prompt's tokens as counted (characters / 4)


def _bounds(llm: Any, role: str) -> tuple[Price, OutputCap]:
    """The price and the output cap of ``llm``; :class:`InputError` naming the role when one is unknown."""
    model = getattr(llm, "model", "?")
    price, cap = getattr(llm, "price", None), getattr(llm, "output_cap", None)
    if price is None:
        raise InputError(f"--max-cost needs the price of the {role}'s model {model!r}, which its provider's price "
                         "table does not have: add it there, or run without --max-cost")
    if cap is None:
        raise InputError(f"--max-cost needs the output cap the {role}'s model {model!r} is sent (its client names "
                         "no output_cap): run without --max-cost")
    return price, cap


def worst_usd(llm: Any, input_tokens: int, output_tokens: int | None = None) -> float:
    """What one call of ``llm`` may cost: ``input_tokens`` at the input price plus ``output_tokens``
    (default: its output cap) at the output price."""
    price, cap = _bounds(llm, "run")
    output = cap.tokens if output_tokens is None else output_tokens
    return (input_tokens * price.input_per_mtok + output * price.output_per_mtok) / 1e6


def check_max_cost(max_usd: float, llms: Mapping[str, LLM | None]) -> None:
    """Before the first call: refuse (:class:`InputError`, exit 2) a ``--max-cost`` that cannot be
    enforced — a model the run calls (``llms``: role → the client, None for a role without one) has
    no price or no output cap — or that cannot pay for one call: a reply at the cap, at the output
    price, costs more than ``max_usd``."""
    for role, llm in llms.items():
        if llm is None:
            continue
        price, cap = _bounds(llm, role)
        worst = worst_usd(llm, 0)
        if worst > max_usd:
            raise InputError(
                f"--max-cost ${max_usd:g} cannot pay for one {role} call: {llm.model} is sent {cap.parameter} "
                f"{cap.tokens:,}, and a reply that long costs ${worst:.4f} at ${price.output_per_mtok:g} per million "
                f"output tokens (plus its input): set --max-cost above ${worst:.4f}, or choose a model with a "
                "smaller output cap")


class Budget:
    """``--max-cost`` over every call made through :meth:`complete` (the module docstring's rule).
    Safe to share between threads; ``should_stop()`` is asked while a call waits for room."""

    def __init__(self, max_usd: float, should_stop: Callable[[], bool] = lambda: False) -> None:
        self.max_usd, self.should_stop = max_usd, should_stop
        self.spent = 0.0  # the settled calls, as priced (a reply without usage at its worst case)
        self.reserved = 0.0  # the worst cases of the calls in flight
        self.in_flight = 0  # calls admitted and not returned (a call waiting for room is not one)
        self.peak = 0  # the most calls that were in flight together
        self.calls = 0  # settled calls
        self.overrun_usd = 0.0  # what replies past their cap cost beyond their reservations
        self.overrun_calls = 0
        self.refused: str | None = None  # the reason of the first refusal: every later call is refused
        self.passed = False  # the settled calls cost more than max_usd (the server's usage past the reservations)
        self._largest: dict[str, int] = {}  # model → the most output tokens a reply of it reported
        self._cond = threading.Condition()

    # ------------------------------------------------------------------ the admission point

    def complete(self, llm: LLM, prompt: str) -> LLMReply:
        """``llm.complete(prompt)`` within the budget: reserve, call, settle (module docstring).
        Raises :class:`BudgetRefused` for a call that is not made (and KeyboardInterrupt when a
        stop is asked while it waits for room); the call's own errors pass through."""
        reservation = self.reserve(llm, prompt)
        reply = None
        try:
            reply = llm.complete(prompt)
            return reply
        finally:
            self.settle(reservation, reply)

    def worst_case(self, llm: LLM, prompt: str) -> Reservation:
        """What a call of ``llm`` with ``prompt`` may cost at most (not reserved)."""
        _, cap = _bounds(llm, "run")
        with self._cond:
            output = max(cap.tokens, self._largest.get(llm.model, 0))
        counted = approximate_tokens(prompt)
        return Reservation(llm.model, worst_usd(llm, counted, output), cap, output, counted)

    def reserve(self, llm: LLM, prompt: str) -> Reservation:
        """Reserve the call's worst case, waiting for the calls in flight when only they are in the
        way; :class:`BudgetRefused` when it does not fit in what is left."""
        want = self.worst_case(llm, prompt)
        with self._cond:
            while True:
                if self.refused is None and self.spent + want.usd > self.max_usd:
                    self.refused = self._reason(want.usd)
                    logger.warning("Grading stops: {}", self.refused)
                if self.refused is not None:
                    raise BudgetRefused(self.refused)
                if self.spent + self.reserved + want.usd <= self.max_usd:
                    self.reserved += want.usd
                    self.in_flight += 1
                    self.peak = max(self.peak, self.in_flight)
                    return want
                if self.should_stop():
                    raise KeyboardInterrupt("stop requested")
                self._cond.wait(WAIT_STEP_S)  # the calls in flight hold the room this one needs

    def settle(self, reservation: Reservation, reply: LLMReply | None) -> None:
        """The call returned (``reply`` None: it failed): release its reservation, spend its cost,
        learn a reply past its cap."""
        cost = 0.0 if reply is None else reply.cost_usd if reply.cost_usd is not None else reservation.usd
        output = (reply.output_tokens or 0) if reply is not None else 0
        with self._cond:
            self.reserved = max(0.0, self.reserved - reservation.usd)
            self.in_flight -= 1
            self.spent += cost
            self.calls += reply is not None
            if output > self._largest.get(reservation.model, 0):
                self._largest[reservation.model] = output
            over = cost - reservation.usd
            if over > 1e-12:
                self.overrun_usd += over
                self.overrun_calls += 1
            passed = self.spent > self.max_usd + 1e-12 and not self.passed
            if passed:
                self.passed = True
                self.refused = (f"budget: --max-cost ${self.max_usd:g} passed (spent ${self.spent:.4f} in {self.calls} "
                                "calls): the server reported more tokens than its calls reserved")
            self._cond.notify_all()
        if passed:
            logger.error("--max-cost ${:g} passed: spent ${:.4f}, because the server's own usage figures were past "
                         "what its calls reserved (the last reply: {:,} prompt tokens for a prompt of about {:,}, {:,} "
                         "output tokens against a cap of {:,}): the run stops; check the server's usage reports",
                         self.max_usd, self.spent, (reply.input_tokens or 0) if reply is not None else 0,
                         reservation.input_tokens, output, reservation.cap.tokens)
        if output > reservation.cap.tokens:
            logger.warning("A reply of {} reported {:,} output tokens, over the {} {:,} it was sent: priced as "
                           "reported (${:.4f}, ${:.4f} over what was reserved); its calls now reserve {:,} output "
                           "tokens", reservation.model, output, reservation.cap.parameter, reservation.cap.tokens,
                           cost, max(0.0, over), max(output, reservation.output_tokens))

    # ------------------------------------------------------------------ what it says

    def _reason(self, worst: float) -> str:
        return (f"budget: --max-cost ${self.max_usd:g} reached (spent ${self.spent:.4f} in {self.calls} calls; the "
                f"next call may cost up to ${worst:.4f})")

    def report(self) -> None:
        """Log the overrun, when a reply passed its cap (the end of a run)."""
        if self.overrun_calls:
            logger.warning("--max-cost ${:g}: {} repl{} passed the output cap {} sent and cost ${:.4f} more than "
                           "was reserved: spent ${:.4f}", self.max_usd, self.overrun_calls,
                           "y" if self.overrun_calls == 1 else "ies", "its request" if self.overrun_calls == 1
                           else "their requests", self.overrun_usd, self.spent)

    def to_json(self) -> dict:
        """``run.budget``: what the budget spent, whether it refused, and any overrun."""
        with self._cond:
            return {"spent_usd": round(self.spent, 6), "calls": self.calls, "refused": self.refused,
                    "overrun_usd": round(self.overrun_usd, 6), "overrun_calls": self.overrun_calls}


class BudgetedLLM:
    """``llm`` with every call through ``budget`` (:meth:`Budget.complete`); anything else is ``llm``'s."""

    def __init__(self, llm: LLM, budget: Budget) -> None:
        self.llm, self.budget = llm, budget

    def complete(self, prompt: str) -> LLMReply:
        return self.budget.complete(self.llm, prompt)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.llm, name)


def through(budget: Budget | None, caller: Any) -> Any:
    """``caller`` — a grader, a relevance judge, a query rewriter: an object whose ``llm`` makes its
    calls — as a copy whose calls go through ``budget``. Unchanged without a budget, or when it has
    no ``llm`` (the offline judge calls no model)."""
    llm = getattr(caller, "llm", None)
    if budget is None or llm is None:
        return caller
    twin = copy.copy(caller)
    twin.llm = BudgetedLLM(llm, budget)
    return twin
