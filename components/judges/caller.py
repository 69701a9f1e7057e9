"""A ``call_llm`` function as the judge's model: the POC's own way of calling an LLM.

The user's POC calls its models through one function, ``call_llm(prompt, model="claude-sonnet",
timeout=30)`` (its ``QueryRewriter`` does). :class:`CallerLLM` makes such a function an
:class:`~components.judges.llm.LLM`: each :meth:`~CallerLLM.complete` is exactly one call
``fn(prompt, model=<model>, timeout=int(<timeout>))``, never retried. What the function returns is
the reply: a ``str``, or an object with ``.text`` (a string) or ``.content[0].text`` (the shape of
an Anthropic SDK message). Anything else is :class:`CallerReplyError`, whose message is
``call_llm returned <type>``; an exception the function raises is a transient
:class:`~utils.errors.JudgeError` (a ``TimeoutError`` of kind ``timeout``, any other of kind
``error``), so the grade is null with the reason and the caller goes on.

:func:`load_call_llm` resolves ``package.module:function`` (``BENCHMARK_CALL_LLM``); the run
bounds each call by the judge timeout (:class:`components.judges.bounded.BoundedLLM`). The cost of
such a call is unknown: its reply carries no usage and no price.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any

from components.judges.llm import LLMReply, OutputCap, clean_text
from utils.errors import InputError, JudgeError
from utils.pricing import Price

class CallerReplyError(JudgeError):
    """``call_llm`` returned something that is not a reply; the grade's ``error`` is the message
    alone (``call_llm returned <type>``), as the plan words it."""

    plain = True  # components.judges.retrieval_grader: the error is str(err), without the kind

    def __init__(self, value: object) -> None:
        super().__init__("bad_response", f"call_llm returned {type(value).__name__}", fatal=False)


def reply_text(value: object) -> str:
    """The text of what ``call_llm`` returned: a ``str``, ``.text``, or ``.content[0].text``;
    raises :class:`CallerReplyError` for anything else."""
    if isinstance(value, str):
        return value
    text = getattr(value, "text", None)
    if isinstance(text, str):
        return text
    content = getattr(value, "content", None)
    if isinstance(content, (list, tuple)) and content:
        text = getattr(content[0], "text", None)
        if isinstance(text, str):
            return text
    raise CallerReplyError(value)


class CallerLLM:
    """An :class:`~components.judges.llm.LLM` over a ``call_llm`` function (module docstring).
    ``name`` says where the function came from (``package.module:function``), for the record."""

    output_cap: OutputCap | None = None  # no token cap is known: the call is not bounded by --max-cost
    price: Price | None = None  # the cost is unknown

    def __init__(self, fn: Callable[..., Any], model: str, timeout: float = 30.0,
                 name: str | None = None) -> None:
        self.fn, self.model, self.timeout = fn, model, timeout
        self.name = name or _name_of(fn)

    def complete(self, prompt: str) -> LLMReply:
        try:
            value = self.fn(prompt, model=self.model, timeout=int(self.timeout))
        except TimeoutError as err:
            raise JudgeError("timeout", f"call_llm raised TimeoutError{_detail(err)}", fatal=False) from None
        except Exception as err:  # noqa: BLE001 - whatever the caller raises costs this grade only
            raise JudgeError("error", f"call_llm raised {type(err).__name__}{_detail(err)}", fatal=False) from None
        return LLMReply(clean_text(reply_text(value)), model=self.model)


def _detail(err: BaseException) -> str:
    text = str(err).strip()
    return f": {text[:300]}" if text else ""


def _name_of(fn: Callable[..., Any]) -> str:
    module = getattr(fn, "__module__", None) or "?"
    return f"{module}:{getattr(fn, '__qualname__', None) or type(fn).__name__}"


def load_call_llm(spec: str, variable: str = "BENCHMARK_CALL_LLM") -> Callable[..., Any]:
    """The function ``package.module:function`` names; raises :class:`InputError` (one line naming
    ``variable`` and the fix) when the module cannot be imported or the name is not a callable."""
    module_name, colon, attr = spec.strip().partition(":")
    if not colon or not module_name.strip() or not attr.strip():
        raise InputError(f"{variable}={spec!r} is not package.module:function: write it as e.g. "
                         "my_poc.llm:call_llm")
    try:
        module = importlib.import_module(module_name.strip())
    except Exception as err:  # noqa: BLE001 - ImportError, or the module raising while importing
        raise InputError(f"{variable}={spec!r}: cannot import module {module_name.strip()!r} ({type(err).__name__}: "
                         f"{str(err)[:200]}): check the module path and that it is importable from the current "
                         "folder") from None
    fn = module
    for part in attr.strip().split("."):
        fn = getattr(fn, part, None)
        if fn is None:
            break
    if fn is None or not callable(fn):
        what = "missing" if fn is None else f"a {type(fn).__name__}, not a function"
        raise InputError(f"{variable}={spec!r}: {attr.strip()!r} in {module_name.strip()} is {what}: name a function "
                         "call_llm(prompt, model=..., timeout=...) that returns the reply")
    return fn
