"""What a run takes from the environment, read once by ``benchmark.py`` and passed in."""

from __future__ import annotations

from dataclasses import dataclass

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
                   haiku_model=env.get("BENCHMARK_HAIKU_MODEL") or "claude-haiku-4-5")
