"""Judge providers: one module per provider, registered here by name.

A provider is how the benchmark reaches a model for a role — ``judge`` (grades; also rates chunk
relevance) or ``rewriter`` (rewrites queries). Everything vendor-specific lives in its module; the
rest of the code asks the registry. A provider class declares:

* ``name`` (what ``BENCHMARK_JUDGE=<name>`` and ``BENCHMARK_JUDGE_MODEL=<name>/<model>`` say) and
  ``label`` (one line for the console: "Claude via the Anthropic API");
* ``variables``: the environment variables it reads, each with its help line. Those marked
  ``secret`` are what every log line and output file redacts (:func:`secrets_in`), so a new
  provider cannot forget them; :meth:`Provider.secrets` may add derived ones (a URL's password);
* ``default_models`` (role → model id) and ``model_variables`` (role → the variable naming it);
* :meth:`Provider.configure`: the settings it reads from the environment, validated (an
  :class:`InputError` naming the variable and the fix);
* on an instance: :meth:`~Provider.check_model` (the start-up check of one role's model →
  :class:`ModelChoice`), :meth:`~Provider.model` (→ an :class:`~components.judges.llm.LLM`),
  :meth:`~Provider.judge` (→ the judge object; the grader over :meth:`model` by default),
  ``prices`` (a :class:`utils.pricing.PriceTable`), ``packages`` (their versions go in ``run.packages``),
  ``supports_batch`` and :meth:`~Provider.batch_api`,
  :meth:`~Provider.count_tokens` (input tokens of prompts, for ``--estimate``; None: cannot count).
  Errors of its calls are :class:`utils.errors.JudgeError` of the common taxonomy.

``offline`` (the lexical judge, no model), ``anthropic`` (the default) and ``openai`` (any
OpenAI-compatible Chat Completions endpoint, chosen only when asked for) are built in; a test or a
plug-in (:mod:`components.core.plugins`: ``BENCHMARK_PLUGINS``, or ``BENCHMARK_PROVIDERS`` as
before) adds one with :func:`register_provider`. The providers that call a vendor SDK over HTTP share
one transport (:mod:`components.judges.providers.transport`: the bounds of an attempt, retry-after,
rate-limit headers, the error taxonomy); :mod:`components.judges.providers.scripted` is a model
that answers from a script, for tests (registered only while its script plays).
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar

from utils.errors import InputError
from utils.pricing import NO_PRICES, PriceTable
from utils.redaction import register_secret_source

if TYPE_CHECKING:
    from components.core import Chunk
    from components.judges.llm import LLM

ROLES = ("judge", "rewriter")
_BUILTIN = {"offline": "components.judges.providers.offline", "anthropic": "components.judges.providers.anthropic",
            "openai": "components.judges.providers.openai", "call_llm": "components.judges.providers.call_llm"}
_REGISTRY: dict[str, type[Provider]] = {}


@dataclass(frozen=True)
class Variable:
    """An environment variable a provider reads."""

    name: str
    help: str
    secret: bool = False


@dataclass(frozen=True)
class ModelChoice:
    """What the start-up check decided for one role: the provider, the model, and the request
    settings in the words of ``run.judge`` (``details``, e.g. thinking, effort, max_tokens)."""

    provider: str
    role: str
    model: str  # the requested model id
    details: dict = field(default_factory=dict)
    native: Any = field(default=None, compare=False, repr=False)  # the provider's own settings object
    summary: str | None = None  # the provider's one-line description of the settings

    def describe(self) -> str:
        if self.summary:
            return self.summary
        shown = ", ".join(f"{k} {v}" for k, v in self.details.items() if v is not None and not isinstance(v, dict))
        return f"{self.model} ({self.provider}{': ' + shown if shown else ''})"


class Provider:
    """Base class of a judge provider (module docstring)."""

    name: ClassVar[str]
    label: ClassVar[str]
    title: ClassVar[str] = "an LLM"  # the judge's short name in sentences ("Sonnet")
    variables: ClassVar[tuple[Variable, ...]] = ()
    default_models: ClassVar[dict[str, str]] = {}
    model_variables: ClassVar[dict[str, str]] = {}
    calls_models: ClassVar[bool] = True  # False: no model, no key, no cost (the offline judge)
    is_default: ClassVar[bool] = False  # the judge when its key is set and BENCHMARK_JUDGE is not
    supports_batch: ClassVar[bool] = False
    prices: ClassVar[PriceTable] = NO_PRICES
    packages: ClassVar[tuple[str, ...]] = ()  # the distributions it calls through (their versions go in run.packages)

    def __init__(self, config: Any, settings: Any) -> None:  # settings: a components.judges.settings.Settings
        self.config, self.settings = config, settings

    # ------------------------------------------------------------------ the environment

    @classmethod
    def secrets(cls, env: Mapping[str, str]) -> list[str]:
        """The values every output redacts: each secret variable as set and stripped. Never raises."""
        found = []
        for var in cls.variables:
            if var.secret:
                value = env.get(var.name) or ""
                found += [v for v in (value, value.strip()) if v]
        return found

    @classmethod
    def configured(cls, env: Mapping[str, str]) -> bool:
        """Whether the environment holds what the provider needs to be called (its key)."""
        return not any(var.secret for var in cls.variables) or any(
            env.get(var.name) for var in cls.variables if var.secret)

    @classmethod
    def configure(cls, env: Mapping[str, str], models: Mapping[str, str]) -> Any:
        """The provider's settings from ``env`` for ``models`` (role → model id), checked;
        raises :class:`InputError` naming the variable and the fix."""
        return None

    @classmethod
    def knows_model(cls, model_id: str) -> bool:
        """Whether ``model_id`` is one of this provider's (in its price table or its defaults): for
        suggesting ``<provider>/<model>`` when a model is named without its provider."""
        return cls.prices.price_for(model_id) is not None or model_id in cls.default_models.values()

    @classmethod
    def missing_key(cls) -> str:
        """What to set so that this provider can be called (for messages)."""
        names = [v.name for v in cls.variables if v.secret]
        return " or ".join(names) if names else "nothing"

    # ------------------------------------------------------------------ calls

    def check_model(self, role: str, model: str, *, effort: str | None = None) -> ModelChoice:
        """The start-up check of ``model`` for ``role``: what it accepts, the request to send."""
        return ModelChoice(self.name, role, model)

    def model(self, choice: ModelChoice) -> LLM:
        raise NotImplementedError(f"the {self.name} provider calls no model")

    def judge(self, choice: ModelChoice | None, chunks: Sequence[Chunk]):
        """The judge for the ``judge`` role: the LLM grader over :meth:`model`."""
        from components.judges.retrieval_grader import RetrievalGrader

        return RetrievalGrader(self.model(choice))

    def describe(self, choice: ModelChoice | None) -> dict:
        """What ``run.judge`` records of the provider and its settings, beyond the common fields."""
        return dict(choice.details) if choice is not None else {}

    def batch_api(self, choice: ModelChoice):
        raise InputError(f"the {self.name} judge has no batch API: run without --judge-batch")

    def count_tokens(self, choice: ModelChoice, prompts: Sequence[str]) -> list[int] | None:
        """The input tokens of each of ``prompts`` sent as one user message with ``choice``'s
        request settings, as the provider counts them without running the model (``--estimate``);
        None when the provider has no way to count (the caller then approximates)."""
        return None


def register_provider(cls: type[Provider]) -> type[Provider]:
    """Add (or replace) a provider class under its ``name``; usable as a decorator."""
    if not getattr(cls, "name", None) or not getattr(cls, "label", None):
        raise ValueError("a provider class needs a name and a label")
    _REGISTRY[cls.name] = cls
    return cls


def unregister_provider(name: str) -> None:
    _REGISTRY.pop(name, None)


def _load_builtin() -> None:
    for name, module in _BUILTIN.items():
        if name not in _REGISTRY:
            importlib.import_module(module)


def providers() -> dict[str, type[Provider]]:
    """Every registered provider class by name (the built-in ones first)."""
    _load_builtin()
    return dict(_REGISTRY)


def default_provider() -> type[Provider] | None:
    """The provider that judges when its key is set and ``BENCHMARK_JUDGE`` is not (None: none is)."""
    return next((cls for cls in providers().values() if cls.is_default), None)


def provider_packages() -> tuple[str, ...]:
    """Every registered provider's packages, once each, in registry order."""
    return tuple(dict.fromkeys(p for cls in providers().values() for p in cls.packages))


def provider_class(name: str, variable: str = "BENCHMARK_JUDGE") -> type[Provider]:
    """The provider called ``name``; raises :class:`InputError` (naming ``variable``) when none is."""
    known = providers()
    if name not in known:
        raise InputError(f"{variable}={name!r} is not a judge: set it to {_choices(known)}")
    return known[name]


def _choices(known: Mapping[str, object]) -> str:
    names = list(known)
    return " or ".join(names) if len(names) < 3 else ", ".join(names[:-1]) + " or " + names[-1]


def default_judge(env: Mapping[str, str]) -> str:
    """The judge when the environment names none: the default provider when its key is set,
    else the first one that calls no model (the offline judge)."""
    known = providers()
    for name, cls in known.items():
        if cls.is_default and cls.configured(env):
            return name
    return next(name for name, cls in known.items() if not cls.calls_models)


def secrets_in(env: Mapping[str, str]) -> tuple[str, ...]:
    """Every secret of every registered provider in ``env`` (see :meth:`Provider.secrets`): what
    no log line or output file may contain. Safe on any environment (never raises)."""
    found: list[str] = []
    for cls in providers().values():
        try:
            found += cls.secrets(env)
        except Exception:  # noqa: BLE001 - a provider's own parsing must not stop redaction
            continue
    return tuple(dict.fromkeys(s for s in found if s))


def variables() -> list[tuple[str, Variable]]:
    """(provider name, variable) for every variable every provider reads (for ``--help``)."""
    return [(name, var) for name, cls in providers().items() for var in cls.variables]


def is_proxy_judge(provider: str) -> bool:
    """Whether the judge ``provider`` calls no model (its grades are the lexical proxy's)."""
    cls = providers().get(provider)
    return cls is not None and not cls.calls_models


register_secret_source(secrets_in)  # what every writer redacts (utils.redaction.environment_secrets)
