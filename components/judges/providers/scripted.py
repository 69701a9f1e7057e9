"""The ``scripted`` provider: a model that calls no network and answers from a script given in Python.

Like inspect_ai's ``mockllm``, it is for tests: a judge (or query rewriter) whose every reply is
written in advance. A script is a sequence of steps, played one per call in order, or one function
of the prompt that returns a step. A step is:

* a string: the reply's text (stop reason ``end_turn``, no usage);
* :func:`reply`: text with a stop reason, token usage, a cost, rate-limit figures and a delay (a
  reply with usage and no cost is priced at the script's ``price``, when it has one);
* :func:`fail`: a :class:`~utils.errors.JudgeError` of the taxonomy (``fail("rate_limit",
  retry_after=3)``), after a delay if asked; any exception is raised as it is;
* an :class:`~components.judges.llm.LLMReply`, returned as it is.

:class:`Script` is itself an :class:`~components.judges.llm.LLM` (hand it to a grader, a relevance
judge or the rewriter), and keeps the prompts it was sent. :func:`play` registers the provider
for the length of a ``with`` block, playing one script, so that a run with ``BENCHMARK_JUDGE=scripted``
(``judge="scripted"`` in the API) goes through the same setup as any provider's::

    with play('{"grade": 8, "reasoning": "all there"}', fail("overloaded"), then='{"grade": 5}') as script:
        result = api.evaluate(retriever, questions, docs, judge="scripted")
    script.prompts  # what the judge was sent, in order

The provider is registered only while a script plays: it is not among the judges a user chooses
from, and a run that asks for it with no script playing stops at start-up (:class:`InputError`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from components.judges.llm import TRANSIENT_KINDS, LLMReply, OutputCap
from components.judges.providers import Provider, providers, register_provider, unregister_provider
from utils.errors import InputError, JudgeError
from utils.pricing import Price

MODEL = "scripted-1"  # the model id of a script that names none


@dataclass(frozen=True)
class Step:
    """One scripted call: after ``delay_s`` seconds, ``outcome`` is returned (a reply) or raised."""

    outcome: LLMReply | BaseException
    delay_s: float = 0.0


Item = str | LLMReply | BaseException | Step  # a step as a script may write it


def reply(text: str, *, stop_reason: str | None = "end_turn", input_tokens: int | None = None,
          output_tokens: int | None = None, cache_read_input_tokens: int | None = None,
          cost_usd: float | None = None, rate_limit: dict | None = None, request_id: str | None = None,
          model: str | None = None, delay_s: float = 0.0) -> Step:
    """A reply with its text and what the API would say of the call (``model`` None: the script's)."""
    return Step(LLMReply(text, stop_reason, model, request_id, input_tokens, output_tokens,
                         cache_read_input_tokens=cache_read_input_tokens, cost_usd=cost_usd,
                         rate_limit=rate_limit), delay_s)


def fail(kind: str, message: str | None = None, *, fatal: bool | None = None, retry_after: float | None = None,
         delay_s: float = 0.0) -> Step:
    """A failed call: a :class:`JudgeError` of ``kind``, fatal unless ``kind`` is transient
    (:data:`~components.judges.llm.TRANSIENT_KINDS`) when ``fatal`` is not given."""
    fatal = kind not in TRANSIENT_KINDS if fatal is None else fatal
    return Step(JudgeError(kind, message or f"scripted {kind}", fatal=fatal, retry_after=retry_after), delay_s)


class Script:
    """An :class:`~components.judges.llm.LLM` that plays ``steps`` one per call, in order (or calls
    ``steps[0]`` with the prompt when it is the one step and a function), then ``then`` for every
    call after the last (a step, or a function of the prompt). Safe to call from several threads.

    ``prompts`` holds every prompt sent, in order. A call past the script with no ``then`` raises
    :class:`LookupError` (the test wrote too few steps)."""

    def __init__(self, *steps: Item | Callable[[str], Item], then: Item | Callable[[str], Item] | None = None,
                 model: str = MODEL, output_cap: int | None = None, price: Price | None = None) -> None:
        if len(steps) == 1 and callable(steps[0]) and then is None:  # one function answers every call
            steps, then = (), steps[0]
        self.model = model
        # what --max-cost reads (components.run.calls.budget): the max_tokens a real request would send, the price
        self.output_cap = OutputCap("max_tokens", output_cap) if output_cap is not None else None
        self.price = price
        self.steps, self.then = list(steps), then
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def complete(self, prompt: str) -> LLMReply:
        with self._lock:
            self.prompts.append(prompt)
            call = len(self.prompts)
            if call <= len(self.steps):
                item = self.steps[call - 1]
            elif self.then is not None:
                item = self.then
            else:
                raise LookupError(f"the script has no step for call {call} ({len(self.steps)} scripted, no then=)")
        return self._play(item(prompt) if callable(item) else item)

    def _play(self, item: Item) -> LLMReply:
        step = item if isinstance(item, Step) else Step(LLMReply(item, "end_turn") if isinstance(item, str) else item)
        if step.delay_s:
            time.sleep(step.delay_s)
        if isinstance(step.outcome, BaseException):
            raise step.outcome
        out = step.outcome if step.outcome.model else replace(step.outcome, model=self.model)
        if out.cost_usd is None and self.price is not None and out.input_tokens is not None \
                and out.output_tokens is not None:  # priced as a provider prices a reply that reports its usage
            out = replace(out, cost_usd=(out.input_tokens * self.price.input_per_mtok
                                         + out.output_tokens * self.price.output_per_mtok) / 1e6)
        return out


# --------------------------------------------------------------------------- the provider

_PLAYING: list[Script] = []  # the scripts of the play() blocks in force, innermost last


class ScriptedProvider(Provider):
    """The provider whose every model is the script playing (registered by :func:`play`)."""

    name = "scripted"
    label = "a scripted model (no network: its replies come from a script given in Python)"
    title = "a scripted model"
    default_models = {"judge": MODEL, "rewriter": MODEL}

    @classmethod
    def configure(cls, env: Mapping[str, str], models: Mapping[str, str]) -> Script:
        if not _PLAYING:
            raise InputError("the scripted judge answers from a script given in Python, and none is playing: "
                             "run it inside components.judges.providers.scripted.play(...), or choose another judge")
        return _PLAYING[-1]

    def model(self, choice: Any) -> Script:
        return self.config


@contextmanager
def play(*steps: Item | Callable[[str], Item], then: Item | Callable[[str], Item] | None = None,
         model: str = MODEL, output_cap: int | None = None, price: Price | None = None) -> Iterator[Script]:
    """Register the ``scripted`` provider and play ``Script(*steps, then=then, model=model,
    output_cap=output_cap, price=price)`` for the block; afterwards the registry is as it was."""
    script = Script(*steps, then=then, model=model, output_cap=output_cap, price=price)
    before = providers().get(ScriptedProvider.name)
    register_provider(ScriptedProvider)
    _PLAYING.append(script)
    try:
        yield script
    finally:
        _PLAYING.remove(script)
        if before is None:
            unregister_provider(ScriptedProvider.name)
        else:
            register_provider(before)
