"""The ``call_llm`` judge provider: the POC's own ``call_llm`` function grades a whole run.

``BENCHMARK_CALL_LLM=package.module:function`` names the function (imported from the current
folder, as a ``--strategy`` plug-in is); it is called once per judge call as
``fn(prompt, model=<model>, timeout=int(<judge timeout>))``, the way the plan's grader and the
POC's ``QueryRewriter`` call it (:class:`components.judges.caller.CallerLLM`), and each call is held
to the judge timeout (:class:`components.judges.bounded.BoundedLLM`). The model string is
``claude-sonnet`` for the judge and ``claude-haiku`` for the query rewriter unless
``BENCHMARK_CALL_LLM_MODEL`` (or ``BENCHMARK_JUDGE_MODEL=call_llm/<model>``) says otherwise.

When ``BENCHMARK_CALL_LLM`` is set and ``BENCHMARK_JUDGE`` is not, this is the judge
(:mod:`components.judges.settings`). The results record it as provider ``call_llm``, the model
string, and the function (``call_llm``); its cost is unknown (``cost: "unknown"``): no price, no
token counts. A module that cannot be imported, or a name that is not a function, stops the run at
start-up with exit 2.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from components.judges.providers import ModelChoice, Provider, Variable, register_provider
from utils.errors import InputError

DEFAULT_MODEL = "claude-sonnet"  # the model string the plan's grader passes to call_llm
VARIABLE = "BENCHMARK_CALL_LLM"
MODEL_VARIABLE = "BENCHMARK_CALL_LLM_MODEL"


@dataclass(frozen=True)
class CallerConfig:
    """The function ``BENCHMARK_CALL_LLM`` names, resolved, and how it was named."""

    spec: str
    fn: Callable[..., Any]


@register_provider
class CallLLMProvider(Provider):
    name = "call_llm"
    label = "the POC's own call_llm function (BENCHMARK_CALL_LLM)"
    title = "the POC's call_llm"
    variables = (Variable(VARIABLE, "package.module:function: grade with your own call_llm(prompt, model=..., "
                                    "timeout=...) (docs/judges.md#your-own-call_llm)"),
                 Variable(MODEL_VARIABLE, "the model string call_llm receives (default claude-sonnet; claude-haiku "
                                          "for the query rewriter)"))
    default_models = {"judge": DEFAULT_MODEL, "rewriter": "claude-haiku"}
    model_variables = {"judge": MODEL_VARIABLE, "rewriter": MODEL_VARIABLE}

    @classmethod
    def configured(cls, env: Mapping[str, str]) -> bool:
        return bool((env.get(VARIABLE) or "").strip())

    @classmethod
    def missing_key(cls) -> str:
        return VARIABLE

    @classmethod
    def configure(cls, env: Mapping[str, str], models: Mapping[str, str]) -> CallerConfig:
        from components.judges.caller import load_call_llm

        spec = (env.get(VARIABLE) or "").strip()
        if not spec:
            raise InputError(f"the call_llm judge needs {VARIABLE}=package.module:function: set it, or choose "
                             "another judge")
        return CallerConfig(spec, load_call_llm(spec, VARIABLE))

    @classmethod
    def knows_model(cls, model_id: str) -> bool:
        return False  # any model string is passed through: none is suggested for another provider's

    @classmethod
    def note(cls) -> str:
        return "LLM judge: the POC's own call_llm function (BENCHMARK_CALL_LLM); cost unknown"

    def check_model(self, role: str, model: str, *, effort: str | None = None) -> ModelChoice:
        return ModelChoice(self.name, role, model, {"call_llm": self.config.spec, "cost": "unknown"},
                           summary=f"{model} (passed to {self.config.spec}; cost unknown)")

    def model(self, choice: ModelChoice):
        from components.judges.bounded import BoundedLLM
        from components.judges.caller import CallerLLM

        timeout = self.settings.judge_timeout
        return BoundedLLM(CallerLLM(self.config.fn, choice.model, timeout, name=self.config.spec), timeout)
