"""What a run takes from the environment (:class:`Settings`), read once by the edge (``benchmark.py``)
and passed in.

Everything is checked here, at start-up, so that a bad value gives one clear line (exit 2) instead
of failed judge calls later: a judge that is not a provider, a timeout that is not a number of
seconds in (0, :data:`~utils.settings.MAX_JUDGE_TIMEOUT_S`], an unknown effort, and — through the
judge provider's :meth:`~components.judges.providers.Provider.configure` — its key, endpoint and
model ids. No message ever shows a secret. The generic checks (:func:`utils.settings.check_key`,
:func:`~utils.settings.check_base_url`, :func:`~utils.settings.check_model_id`) are for providers'
own variables.

Which provider and model serve each role:

* judge: ``BENCHMARK_JUDGE`` (a provider name), or the provider of ``BENCHMARK_JUDGE_MODEL=<provider>/<model>``;
  unset, the default provider when its key is set, else the offline judge. The model:
  ``BENCHMARK_JUDGE_MODEL``'s, else the provider's own variable for the role, else its default.
* providers of your own: ``BENCHMARK_PLUGINS=package.module[,...]`` (or ``BENCHMARK_PROVIDERS``, as
  before) imports modules that register one (``components.judges.providers.register_provider``;
  :mod:`components.core.plugins`).
* rewriter (strategies that rewrite queries): ``BENCHMARK_REWRITER_MODEL=<provider>/<model>``, else
  the judge's provider when it calls models, else the default provider when its key is set.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from components.judges.providers import default_judge, provider_class, providers, secrets_in
from components.core.plugins import load_plugins
from utils.errors import InputError
from utils.settings import (DEFAULT_BATCH_POLL_MAX_S, DEFAULT_JUDGE_TIMEOUT_S, EFFORT_LEVELS, LOOPBACK_JUDGE_TIMEOUT_S,
                            MAX_BATCH_POLL_S, MAX_JUDGE_TIMEOUT_S, MAX_RETRY_WAIT_S, default_cache_dir,
                            default_state_dir, seconds)


@dataclass(frozen=True)
class Settings:
    """Everything the run takes from the environment, read once here."""

    judge: str  # the judge's provider ("offline", "anthropic", ...)
    judge_model: str | None  # None: a provider that calls no model
    judge_timeout: float  # seconds, in (0, MAX_JUDGE_TIMEOUT_S]
    rewriter: str | None = None  # the query rewriter's provider; None: none can be called
    rewriter_model: str | None = None
    judge_effort: str | None = None  # BENCHMARK_JUDGE_EFFORT: low … max, sent only where supported
    retry_wait_max_s: float = 60.0  # BENCHMARK_RETRY_WAIT_MAX: the retry pass waits at most this
    secrets: tuple[str, ...] = field(default=(), repr=False)  # what every output redacts (secrets_in)
    cache_dir: Path | None = None  # the index cache's default folder (--cache-dir overrides it)
    state_dir: Path | None = None  # the index of recent history folders (utils.files.history_index)
    batch_poll_max_s: float = DEFAULT_BATCH_POLL_MAX_S  # BENCHMARK_BATCH_POLL_MAX
    env: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)  # the providers' variables
    judge_config: Any = field(default=None, repr=False, compare=False)  # the judge provider's, checked
    # --judges: every judge of the panel (components.judges.panel.PanelMember), the first one's settings
    # being these; empty: the run's one judge
    panel: tuple = ()
    # where judge_timeout comes from, as messages name it: "BENCHMARK_JUDGE_TIMEOUT", "default", "loopback
    # default" (a base URL on this machine, neither set), or "timeout" (a panel judge's own)
    timeout_source: str = "default"

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        env = dict(env)
        load_plugins(env)  # a plug-in's provider, metric, reader, strategy or attack (BENCHMARK_PLUGINS, entry points)
        judge_spec = (env.get("BENCHMARK_JUDGE_MODEL") or "").strip()
        named = (env.get("BENCHMARK_JUDGE") or "").strip().lower()
        spec_provider, spec_model = _split_model(judge_spec)
        if named and spec_provider and named != spec_provider:
            raise InputError(f"BENCHMARK_JUDGE={named!r} and BENCHMARK_JUDGE_MODEL={judge_spec!r} name different "
                             "providers: set one of them, or make them agree")
        judge = named or spec_provider or _caller_judge(env) or default_judge(env)
        judge_cls = provider_class(judge)
        if _caller_judge(env) and judge != "call_llm":
            raise InputError(f"BENCHMARK_CALL_LLM is set, but the judge is {judge} (BENCHMARK_JUDGE or "
                             "BENCHMARK_JUDGE_MODEL): unset BENCHMARK_CALL_LLM, or the variable naming the other judge")
        if judge_spec and not judge_cls.calls_models:  # the model would be dropped without a word
            raise InputError(_unused_model(judge_spec, judge, named, env))
        if not named and not judge_cls.calls_models:  # so would a provider's judge model, with no key for it
            if (problem := _unused_model_variable(judge, env)) is not None:
                raise InputError(problem)
        judge_model = _role_model(judge_cls, "judge", spec_model, env)
        rewriter, rewriter_model = _rewriter(env, judge_cls)
        declared = {v.name for c in providers().values() for v in c.variables}
        declared |= {var for c in providers().values() for var in c.model_variables.values()}
        config = None
        if judge_cls.calls_models:  # only what is sent is checked: an offline run ignores a stale key
            models = {"judge": judge_model}
            if rewriter == judge and rewriter_model:
                models["rewriter"] = rewriter_model
            config = judge_cls.configure(env, models)
        timeout, timeout_source = _judge_timeout(env, config)
        return cls(judge=judge, judge_model=judge_model, judge_timeout=timeout, timeout_source=timeout_source,
                   rewriter=rewriter, rewriter_model=rewriter_model,
                   judge_effort=_effort(env.get("BENCHMARK_JUDGE_EFFORT")),
                   retry_wait_max_s=_retry_wait(env.get("BENCHMARK_RETRY_WAIT_MAX")), secrets=secrets_in(env),
                   batch_poll_max_s=_poll_max(env.get("BENCHMARK_BATCH_POLL_MAX")),
                   cache_dir=default_cache_dir(env), state_dir=default_state_dir(env),
                   env={k: env[k] for k in declared if k in env},
                   judge_config=config)

    def provider_config(self, name: str, models: Mapping[str, str]) -> Any:
        """The checked settings of provider ``name`` for ``models`` (the judge's are kept from start-up)."""
        if name == self.judge and self.judge_config is not None and set(models) <= {"judge", "rewriter"} \
                and all(models[r] == (self.judge_model if r == "judge" else self.rewriter_model) for r in models):
            return self.judge_config
        return provider_class(name).configure(self.env, models)


def _caller_judge(env: Mapping[str, str]) -> str | None:
    """``call_llm`` when ``BENCHMARK_CALL_LLM`` names the POC's own function (and no judge is named),
    else None (:mod:`components.judges.providers.call_llm`)."""
    return "call_llm" if (env.get("BENCHMARK_CALL_LLM") or "").strip() else None


def _unused_model(spec: str, judge: str, named: str, env: Mapping[str, str]) -> str:
    """The message for ``BENCHMARK_JUDGE_MODEL=spec`` when the judge it leaves (``judge``) calls no
    model: why that judge, and the ``<provider>/<model>`` it probably meant."""
    known = providers()
    default = next((cls for cls in known.values() if cls.is_default), None)
    if named:
        why = f"BENCHMARK_JUDGE={named}"
    else:
        why = f"no {default.missing_key()}" if default is not None and not default.configured(env) else "no key"
    _, model = _split_model(spec)
    owners = [cls for cls in known.values() if cls.calls_models and model and cls.knows_model(model)]
    if owners:
        fix = _did_you_mean(owners[0], model, env)
    else:
        fix = f"write it as <provider>/<model> ({' or '.join(sorted(n for n, c in known.items() if c.calls_models))})"
    if named:
        fix = f"unset BENCHMARK_JUDGE_MODEL, or unset BENCHMARK_JUDGE: {fix}"
    return (f"BENCHMARK_JUDGE_MODEL={spec!r} cannot be used: it names no provider, and the judge is then the {judge} "
            f"judge ({why}), which calls no model: {fix}")


def _unused_model_variable(judge: str, env: Mapping[str, str]) -> str | None:
    """The message for a provider's judge-model variable (``BENCHMARK_SONNET_MODEL``) that is set
    while the judge, chosen because no key is set, is ``judge``, which calls no model; None if none is."""
    known = providers()
    for cls in known.values():
        variable = cls.model_variables.get("judge")
        model = (env.get(variable) or "").strip() if variable else ""
        if not model or cls.configured(env):
            continue
        owners = [c for c in known.values() if c.calls_models and c is not cls and c.knows_model(model)]
        fix = _did_you_mean(owners[0], model, env) if owners and not cls.knows_model(model) else \
            f"set {cls.missing_key()} for the {cls.name} judge, or unset {variable}"
        return (f"{variable}={model!r} cannot be used: the judge is the {judge} judge (no {cls.missing_key()}), "
                f"which calls no model: {fix}")
    return None


def _did_you_mean(owner, model: str, env: Mapping[str, str]) -> str:
    """``BENCHMARK_JUDGE_MODEL=<provider>/<model>``, the setting that would use ``model`` with ``owner``."""
    key = "" if owner.configured(env) else f", with {owner.missing_key()} set"
    return f"did you mean BENCHMARK_JUDGE_MODEL={owner.name}/{model}{key}?"


def _split_model(spec: str) -> tuple[str | None, str | None]:
    """``provider/model`` → (provider, model); ``model`` alone → (None, model); empty → (None, None)."""
    if not spec:
        return None, None
    provider, sep, model = spec.partition("/")
    if not sep:
        return None, spec
    return provider.strip().lower() or None, model.strip() or None


def _role_model(cls, role: str, given: str | None, env: Mapping[str, str]) -> str | None:
    if not cls.calls_models:
        return None
    variable = cls.model_variables.get(role)
    return given or (env.get(variable) if variable else None) or cls.default_models.get(role)


def _rewriter(env: Mapping[str, str], judge_cls) -> tuple[str | None, str | None]:
    spec = (env.get("BENCHMARK_REWRITER_MODEL") or "").strip()
    provider, model = _split_model(spec)
    if provider:
        return provider, _role_model(provider_class(provider, "BENCHMARK_REWRITER_MODEL"), "rewriter", model, env)
    if judge_cls.calls_models:
        return judge_cls.name, _role_model(judge_cls, "rewriter", model, env)
    for name, cls in providers().items():
        if cls.is_default and cls.configured(env):
            return name, _role_model(cls, "rewriter", model, env)
    return None, None


def _timeout(raw: str | None) -> float:
    return seconds("BENCHMARK_JUDGE_TIMEOUT", raw, DEFAULT_JUDGE_TIMEOUT_S, 0.0, MAX_JUDGE_TIMEOUT_S, above_low=True)


def _judge_timeout(env: Mapping[str, str], config: Any) -> tuple[float, str]:
    """The judge timeout and where it comes from: ``BENCHMARK_JUDGE_TIMEOUT`` when set (it always
    wins), else :data:`~utils.settings.LOOPBACK_JUDGE_TIMEOUT_S` for a judge whose base URL is on this
    machine (a model on its CPU takes minutes where an API takes seconds), else the default."""
    raw = (env.get("BENCHMARK_JUDGE_TIMEOUT") or "").strip()
    if raw:
        return _timeout(raw), "BENCHMARK_JUDGE_TIMEOUT"
    if is_loopback(getattr(config, "base_url", None)):
        return LOOPBACK_JUDGE_TIMEOUT_S, "loopback default"
    return DEFAULT_JUDGE_TIMEOUT_S, "default"


def is_loopback(url: str | None) -> bool:
    """Whether ``url`` names this machine (``localhost``, ``127.0.0.0/8``, ``::1``); never raises."""
    import ipaddress
    from urllib.parse import urlsplit

    try:
        host = urlsplit(url or "").hostname
    except ValueError:
        return False
    if not host:
        return False
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _effort(raw: str | None) -> str | None:
    effort = (raw or "").strip().lower()
    if not effort:
        return None
    if effort not in EFFORT_LEVELS:
        raise InputError(f"BENCHMARK_JUDGE_EFFORT={raw!r} is not an effort level: set it to one of "
                         f"{', '.join(EFFORT_LEVELS)}, or unset it")
    return effort


def _retry_wait(raw: str | None) -> float:
    return seconds("BENCHMARK_RETRY_WAIT_MAX", raw, 60.0, 0.0, MAX_RETRY_WAIT_S)


def _poll_max(raw: str | None) -> float:
    return seconds("BENCHMARK_BATCH_POLL_MAX", raw, DEFAULT_BATCH_POLL_MAX_S, 0.01, MAX_BATCH_POLL_S)
