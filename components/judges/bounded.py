"""A model object held to a deadline: :class:`BoundedLLM`.

A provider's client bounds each call itself (its transport's deadline). A model object the caller
supplies — ``RetrievalGrader(llm)``, a ``call_llm`` function — may not: its ``complete()`` could
block for as long as it likes. :class:`BoundedLLM` runs each ``complete()`` in a daemon thread and
waits ``timeout`` seconds for it; past that the call is a transient
:class:`~utils.errors.JudgeError` of kind ``timeout`` (a null grade, never retried here) and the
thread is abandoned: it cannot be stopped, and being a daemon it does not keep the process alive.
"""

from __future__ import annotations

import threading
from typing import Any

from components.judges.llm import LLM, LLMReply
from utils.errors import JudgeError


class BoundedLLM:
    """``inner`` (an :class:`~components.judges.llm.LLM`) whose every call returns or fails within
    ``timeout`` seconds (module docstring). ``model``, ``output_cap`` and ``price`` are the inner's."""

    def __init__(self, inner: LLM, timeout: float) -> None:
        self.inner, self.timeout = inner, timeout
        self.model = inner.model
        self.output_cap = getattr(inner, "output_cap", None)
        self.price = getattr(inner, "price", None)

    def complete(self, prompt: str) -> LLMReply:
        outcome: dict[str, Any] = {}

        def call() -> None:
            try:
                outcome["reply"] = self.inner.complete(prompt)
            except BaseException as err:  # noqa: BLE001 - handed to the waiting thread, raised there
                outcome["error"] = err

        worker = threading.Thread(target=call, name="bounded-llm-call", daemon=True)
        worker.start()
        worker.join(self.timeout)
        if worker.is_alive():
            raise JudgeError("timeout", f"the model did not answer within {self.timeout:g}s (the call is abandoned)",
                             fatal=False)
        if "error" in outcome:
            raise outcome["error"]
        return outcome["reply"]
