"""The one plug-in route: modules whose import registers a metric, a judge provider, an input
reader, a retrieval strategy or a judge-audit attack.

A plug-in module calls the registry it adds to, once, when imported:

* a metric: :func:`utils.metrics.register_metric` (docs/metrics.md, "Add a metric");
* a judge provider: :func:`components.judges.providers.register_provider` (docs/judges.md);
* an input format: :func:`components.readers.register_reader` (docs/formats.md, "Add an input format");
* a strategy: :func:`components.core.strategies.register_strategy`;
* an audit attack: :func:`components.audit.attacks.register_attack` (docs/judges.md, "Auditing the judge").

Two ways name the modules to import (docs/plugins.md):

* :data:`VARIABLE`, ``BENCHMARK_PLUGINS=package.module[,package.module...]``; ``BENCHMARK_PROVIDERS``,
  the older variable for judge providers, is read the same way (:data:`ALIASES`);
* the entry-point group :data:`GROUP` of an installed distribution, each entry point naming a module
  (``my_metrics = "my_package.metrics"``).

:func:`load_plugins` imports them: the command line calls it once at start-up
(:func:`components.cli.main`), the API when it reads the environment
(:meth:`components.judges.settings.Settings.from_env`, :mod:`components.api`). It is cheap when nothing
is named: the installed distributions' entry points are read the first time only, with
``importlib.metadata`` only when one of them declares the group, and a module already imported is
not imported again.

The routes that name one object of a module (``--strategy package.module:factory``, a suite's
``reranker``) import that module through :func:`import_plugin`, as this route does.
"""

from __future__ import annotations

import functools
import importlib
import os
import sys
from collections.abc import Mapping
from types import ModuleType

from utils.console import escape_control
from utils.errors import InputError

VARIABLE = "BENCHMARK_PLUGINS"
ALIASES = ("BENCHMARK_PROVIDERS",)  # read as VARIABLE is (judge providers, before there was one route)
GROUP = "retrieval_benchmark.plugins"
_FIX = "check the module path and that it is importable (in the current folder, installed, or on PYTHONPATH)"


def import_plugin(module: str, where: str) -> ModuleType:
    """The module ``module`` (``package.module``), imported; its import registers what it adds.
    Raises :class:`InputError` starting with ``where`` (what named it) when it cannot be imported or
    raises (or exits) while importing."""
    try:
        return importlib.import_module(module)
    except (Exception, SystemExit) as err:  # ImportError, or the module raising (or exiting) while importing
        raise InputError(f"{where}: cannot import {module!r} ({type(err).__name__}: "
                         f"{escape_control(str(err)[:200])}): {_FIX}") from err


def named_modules(env: Mapping[str, str]) -> list[tuple[str, str]]:
    """``(variable, module)`` for every module :data:`VARIABLE` and its :data:`ALIASES` name, in order."""
    return [(variable, name.strip()) for variable in (VARIABLE, *ALIASES)
            for name in (env.get(variable) or "").split(",") if name.strip()]


def _declared() -> bool:
    """Whether a distribution on the import path declares :data:`GROUP` in its ``entry_points.txt``:
    a look at the files, so that ``importlib.metadata`` (tens of milliseconds to import) is imported
    only when there is an entry point to read."""
    marker = f"[{GROUP}]"
    for entry in sys.path:
        try:
            with os.scandir(entry or ".") as found:
                folders = [e.path for e in found if e.name.endswith((".dist-info", ".egg-info"))]
        except OSError:  # not a folder (a zip file), or gone
            continue
        for folder in folders:
            try:
                with open(os.path.join(folder, "entry_points.txt"), encoding="utf-8", errors="replace") as fh:
                    if marker in fh.read():
                        return True
            except OSError:  # a distribution without entry points
                continue
    return False


@functools.cache
def entry_points() -> tuple[tuple[str, str, str], ...]:
    """``(name, module, distribution)`` of every entry point of :data:`GROUP` installed, read once."""
    if not _declared():
        return ()
    from importlib.metadata import entry_points as installed

    return tuple((ep.name, ep.value, ep.dist.name if ep.dist is not None else "?")
                 for ep in installed(group=GROUP))


def load_plugins(env: Mapping[str, str]) -> list[str]:
    """Import every plug-in module: those the environment names (:func:`named_modules`), then the
    installed entry points of :data:`GROUP`. Returns their names. Raises :class:`InputError` naming
    the variable or the entry point when one cannot be imported."""
    loaded = []
    for variable, module in named_modules(env):
        import_plugin(module, f"{variable}={module}")
        loaded.append(module)
    for name, value, dist in entry_points():
        module = value.partition(":")[0].strip()
        import_plugin(module, f"entry point {name!r} of {GROUP} (package {dist}; uninstall it if it is not wanted)")
        loaded.append(module)
    return loaded
