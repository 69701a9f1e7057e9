"""What a run takes from the environment, read once by ``benchmark.py`` and passed in."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from utils.errors import InputError


@dataclass(frozen=True)
class Settings:
    """Everything the run takes from the environment, read once here."""

    api_key: str | None
    base_url: str | None
    judge: str  # "anthropic" | "offline"
    judge_timeout: float
    sonnet_model: str
    haiku_model: str
    cache_dir: Path | None = None  # the index cache's default folder (--cache-dir overrides it)

    @classmethod
    def from_env(cls, env: dict[str, str]) -> Settings:
        api_key = env.get("ANTHROPIC_API_KEY") or None
        judge = (env.get("BENCHMARK_JUDGE") or ("anthropic" if api_key else "offline")).strip().lower()
        if judge not in ("anthropic", "offline"):
            raise InputError(f"BENCHMARK_JUDGE={judge!r} is not a judge: set it to anthropic or offline")
        if judge == "anthropic" and not api_key:
            raise InputError("BENCHMARK_JUDGE=anthropic needs ANTHROPIC_API_KEY: set the key, "
                             "or BENCHMARK_JUDGE=offline for the lexical judge")
        raw_timeout = env.get("BENCHMARK_JUDGE_TIMEOUT") or "30"
        try:
            timeout = float(raw_timeout)
        except ValueError:
            timeout = -1.0
        if not timeout > 0:
            raise InputError(f"BENCHMARK_JUDGE_TIMEOUT={raw_timeout!r} is not a positive number of seconds: "
                             "set it to e.g. 30")
        return cls(api_key=api_key, base_url=env.get("ANTHROPIC_BASE_URL") or None, judge=judge,
                   judge_timeout=timeout,
                   sonnet_model=env.get("BENCHMARK_SONNET_MODEL") or "claude-sonnet-5-5",
                   haiku_model=env.get("BENCHMARK_HAIKU_MODEL") or "claude-haiku-4-5",
                   cache_dir=default_cache_dir(env))


def default_cache_dir(env: dict[str, str]) -> Path:
    """``$XDG_CACHE_HOME/retrieval-benchmark`` (an absolute path), else ``~/.cache/retrieval-benchmark``:
    outside the repository."""
    xdg = env.get("XDG_CACHE_HOME") or ""
    if os.path.isabs(xdg):
        return Path(xdg) / "retrieval-benchmark"
    return Path(env.get("HOME") or Path.home()) / ".cache" / "retrieval-benchmark"
