"""The strategy registry: a name → a factory returning a fresh retriever.

The built-in strategies (``baseline``, ``modular-no-llm``, ``modular``) belong to the system under
test: its module ``poc.strategies`` registers them with :func:`register_strategy`, and the registry
imports that module by its name (``importlib``) the first time it is asked, so the harness holds no
static import of the pipeline it measures. A plug-in registers its own strategy the same way
(:mod:`components.core.plugins`: ``BENCHMARK_PLUGINS``, or an entry point); a user's own
retriever also loads with ``package.module:factory`` (``factory()`` returns an object with
``index`` and ``retrieve``), its module imported by that route's
:func:`~components.core.plugins.import_plugin`. A factory may take keyword parameters (a suite
configuration passes them: :mod:`components.run.retrieval.suite`).
"""

from __future__ import annotations

import difflib
import functools
import importlib
from collections.abc import Callable
from dataclasses import dataclass, field

from components.core.chunking import Chunking
from components.core.retriever import Retriever
from components.core.plugins import import_plugin
from utils.errors import InputError

StrategyFactory = Callable[..., Retriever]
BUILTIN_MODULES = ("poc.strategies",)  # imported by name: their import registers the built-in strategies


@dataclass(frozen=True)
class Strategy:
    """A named retrieval strategy: ``factory()`` returns a fresh retriever; ``rewrites_queries``
    says the benchmark loop rewrites each question with an LLM (Claude Haiku) before retrieving;
    ``chunking``, the chunker's sizes for its index; ``configuration``, what a suite configuration
    set (recorded in the results as ``run.configuration``; None outside a suite)."""

    name: str
    factory: StrategyFactory
    rewrites_queries: bool = False
    chunking: Chunking = Chunking()
    configuration: dict | None = field(default=None, compare=False)


_REGISTRY: dict[str, Strategy] = {}


def register_strategy(strategy: Strategy) -> Strategy:
    """Add (or replace) ``strategy`` under its name."""
    _REGISTRY[strategy.name] = strategy
    return strategy


def unregister_strategy(name: str) -> None:
    _REGISTRY.pop(name, None)


def strategies() -> dict[str, Strategy]:
    """Every registered strategy by name (the built-in ones loaded first)."""
    for module in BUILTIN_MODULES:
        importlib.import_module(module)
    return dict(_REGISTRY)


def resolve_strategy(name: str) -> Strategy:
    """A registered name, or ``package.module:factory``. Raises :class:`InputError` naming the fix."""
    registered = strategies()
    if name in registered:
        return registered[name]
    if ":" not in name:
        raise InputError(f"unknown strategy {name!r}: {_suggestion(name, registered)}")
    module_name, _, attr = name.partition(":")
    module = import_plugin(module_name, f"strategy {name!r}")  # the plug-in route's import
    factory = getattr(module, attr, None)
    if not callable(factory):
        raise InputError(f"strategy {name!r}: {module_name} has no callable {attr!r}: "
                         "name a function that returns a retriever")

    @functools.wraps(factory)  # its signature is the factory's: a suite checks its parameters against it
    def user_factory(**params: object) -> Retriever:
        retriever = factory(**params)
        if not isinstance(retriever, Retriever):
            raise InputError(f"strategy {name!r}: {attr}() returned {type(retriever).__name__}, which lacks "
                             "index(chunks) and retrieve(query, k): implement components.core.Retriever")
        return retriever

    return Strategy(name, user_factory)


def _suggestion(name: str, known: dict[str, Strategy]) -> str:
    """The fix for a strategy name that is neither registered nor ``package.module:factory``: a close
    registered name, or the colon form of a dotted name whose module imports and has that attribute."""
    registered = ", ".join(sorted(known))
    close = difflib.get_close_matches(name, known, n=2, cutoff=0.6)
    if close:
        return f"did you mean {' or '.join(repr(c) for c in close)}? (registered: {registered})"
    module_name, dot, attr = name.rpartition(".")
    if dot and module_name and attr.isidentifier():
        try:
            module = importlib.import_module(module_name)
        except (Exception, SystemExit):  # noqa: BLE001 - any failure (an exit too): no suggestion, the generic fix
            module = None
        if module is not None and hasattr(module, attr):
            return f"did you mean {module_name + ':' + attr!r}? (your own retriever is package.module:factory)"
    return f"use one of {registered}, or package.module:factory for your own retriever"
