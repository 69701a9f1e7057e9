"""What a run takes from the environment, read once by ``benchmark.py`` and passed in.

Everything is checked here, at start-up, so that a bad value gives one clear line (exit 2) instead
of failed judge calls later: a key with whitespace or control characters, an
``ANTHROPIC_BASE_URL`` that is not an http(s) URL with a host, a timeout that is not a number of
seconds in (0, :data:`MAX_JUDGE_TIMEOUT_S`], an unknown effort, a model id with whitespace. No
message ever shows the key (a base URL is shown with its user and password masked).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from utils.errors import InputError
from utils.model_settings import EFFORT_LEVELS

DEFAULT_JUDGE_TIMEOUT_S = 30.0
MAX_JUDGE_TIMEOUT_S = 600.0  # a deadline beyond ten minutes per judge attempt is a typo, not a wish
MAX_RETRY_WAIT_S = 600.0
DEFAULT_BATCH_POLL_MAX_S = 60.0  # --judge-batch polls a batch at least this often
MAX_BATCH_POLL_S = 3600.0  # BENCHMARK_BATCH_POLL_MAX above this is refused
DEFAULT_SONNET_MODEL = "claude-sonnet-5-5"
DEFAULT_HAIKU_MODEL = "claude-haiku-4-5"
_MIN_PASSWORD_LENGTH = 4  # a shorter base-URL password is not redacted (it would blank ordinary words)


@dataclass(frozen=True)
class Settings:
    """Everything the run takes from the environment, read once here."""

    api_key: str | None = field(repr=False)
    base_url: str | None
    judge: str  # "anthropic" | "offline"
    judge_timeout: float  # seconds, in (0, MAX_JUDGE_TIMEOUT_S]
    sonnet_model: str
    haiku_model: str
    judge_effort: str | None = None  # BENCHMARK_JUDGE_EFFORT: low … max, sent only where supported
    retry_wait_max_s: float = 60.0  # BENCHMARK_RETRY_WAIT_MAX: the retry pass waits at most this
    secrets: tuple[str, ...] = field(default=(), repr=False)  # what every output redacts (secrets_in)
    cache_dir: Path | None = None  # the index cache's default folder (--cache-dir overrides it)
    batch_poll_max_s: float = DEFAULT_BATCH_POLL_MAX_S  # BENCHMARK_BATCH_POLL_MAX

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> Settings:
        api_key = env.get("ANTHROPIC_API_KEY") or None
        judge = (env.get("BENCHMARK_JUDGE") or ("anthropic" if api_key else "offline")).strip().lower()
        if judge not in ("anthropic", "offline"):
            raise InputError(f"BENCHMARK_JUDGE={judge!r} is not a judge: set it to anthropic or offline")
        if judge == "anthropic" and not api_key:
            raise InputError("BENCHMARK_JUDGE=anthropic needs ANTHROPIC_API_KEY: set the key, "
                             "or BENCHMARK_JUDGE=offline for the lexical judge")
        base_url = env.get("ANTHROPIC_BASE_URL") or None
        models = {name: env.get(name) or default for name, default in
                  (("BENCHMARK_SONNET_MODEL", DEFAULT_SONNET_MODEL), ("BENCHMARK_HAIKU_MODEL", DEFAULT_HAIKU_MODEL))}
        if judge == "anthropic":  # only what is sent to the API is checked: an offline run ignores it
            _check_key(api_key or "")
            if base_url is not None:
                _check_base_url(base_url)
            for name, value in models.items():
                _check_model(name, value, DEFAULT_SONNET_MODEL if "SONNET" in name else DEFAULT_HAIKU_MODEL)
        return cls(api_key=api_key, base_url=base_url, judge=judge,
                   judge_timeout=_timeout(env.get("BENCHMARK_JUDGE_TIMEOUT")),
                   sonnet_model=models["BENCHMARK_SONNET_MODEL"], haiku_model=models["BENCHMARK_HAIKU_MODEL"],
                   judge_effort=_effort(env.get("BENCHMARK_JUDGE_EFFORT")),
                   retry_wait_max_s=_retry_wait(env.get("BENCHMARK_RETRY_WAIT_MAX")), secrets=secrets_in(env),
                   batch_poll_max_s=_poll_max(env.get("BENCHMARK_BATCH_POLL_MAX")),
                   cache_dir=default_cache_dir(env))


def default_cache_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/retrieval-benchmark`` (an absolute path), else ``~/.cache/retrieval-benchmark``:
    outside the repository."""
    xdg = env.get("XDG_CACHE_HOME") or ""
    if os.path.isabs(xdg):
        return Path(xdg) / "retrieval-benchmark"
    return Path(env.get("HOME") or Path.home()) / ".cache" / "retrieval-benchmark"


def secrets_in(env: Mapping[str, str]) -> tuple[str, ...]:
    """The strings no log line or results file may contain: ``ANTHROPIC_API_KEY`` and
    ``ANTHROPIC_AUTH_TOKEN`` (as set, and stripped of surrounding whitespace) and the password of
    ``ANTHROPIC_BASE_URL``. Safe on any environment (never raises), so the edge can give it to the
    log sinks before the settings are checked."""
    found: list[str] = []
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN"):
        value = env.get(name) or ""
        found += [v for v in (value, value.strip()) if v]
    try:
        password = urlsplit(env.get("ANTHROPIC_BASE_URL") or "").password
    except ValueError:
        password = None
    if password and len(password) >= _MIN_PASSWORD_LENGTH:
        found.append(password)
    return tuple(dict.fromkeys(found))


def _check_key(key: str) -> None:
    fix = "set it to the key alone (copy it again from the console)"
    if key != key.strip():
        raise InputError("ANTHROPIC_API_KEY has leading or trailing whitespace (a newline from the file it was "
                         f"read from?): {fix}")
    for i, char in enumerate(key):
        if not char.isprintable():
            raise InputError(f"ANTHROPIC_API_KEY has a control character at position {i + 1}: {fix}")
        if char.isspace():
            raise InputError(f"ANTHROPIC_API_KEY has whitespace at position {i + 1}: {fix}")
        if not char.isascii():
            raise InputError(f"ANTHROPIC_API_KEY has a character that is not ASCII at position {i + 1}: {fix}")


def _masked(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``***@``."""
    return re.sub(r"//[^/@]*@", "//***@", url)


def _check_base_url(url: str) -> None:
    shown = _masked(url)
    fix = "set it like https://api.anthropic.com or http://127.0.0.1:8080, or unset it"
    if url != url.strip() or any(c.isspace() or not c.isprintable() for c in url):
        raise InputError(f"ANTHROPIC_BASE_URL={shown!r} contains whitespace or control characters: {fix}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as err:
        raise InputError(f"ANTHROPIC_BASE_URL={shown!r} is not an http(s) URL with a host ({err}): {fix}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError(f"ANTHROPIC_BASE_URL={shown!r} is not an http(s) URL with a host: {fix}")


def _check_model(name: str, value: str, example: str) -> None:
    if value != value.strip() or any(c.isspace() or not c.isprintable() for c in value):
        raise InputError(f"{name}={value!r} contains whitespace or control characters: set it to a model id "
                         f"such as {example}")


def _timeout(raw: str | None) -> float:
    return _seconds("BENCHMARK_JUDGE_TIMEOUT", raw, DEFAULT_JUDGE_TIMEOUT_S, 0.0, MAX_JUDGE_TIMEOUT_S, above_low=True)


def _effort(raw: str | None) -> str | None:
    effort = (raw or "").strip().lower()
    if not effort:
        return None
    if effort not in EFFORT_LEVELS:
        raise InputError(f"BENCHMARK_JUDGE_EFFORT={raw!r} is not an effort level: set it to one of "
                         f"{', '.join(EFFORT_LEVELS)}, or unset it")
    return effort


def _seconds(name: str, raw: str | None, default: float, low: float, high: float, above_low: bool = False) -> float:
    """``raw`` (the variable ``name``; empty: ``default``) as seconds in ``[low, high]`` (``(low, high]``
    with ``above_low``)."""
    raw = raw or f"{default:g}"
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (low < value if above_low else low <= value) or not value <= high:  # also refuses nan and inf
        span = f"above {low:g} and at most {high:g}" if above_low else f"from {low:g} to {high:g}"
        raise InputError(f"{name}={raw!r} is not a number of seconds {span}: set it to e.g. {default:g}")
    return value


def _retry_wait(raw: str | None) -> float:
    return _seconds("BENCHMARK_RETRY_WAIT_MAX", raw, 60.0, 0.0, MAX_RETRY_WAIT_S)


def _poll_max(raw: str | None) -> float:
    return _seconds("BENCHMARK_BATCH_POLL_MAX", raw, DEFAULT_BATCH_POLL_MAX_S, 0.01, MAX_BATCH_POLL_S)
