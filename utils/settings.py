"""What a run takes from the environment, read once by ``benchmark.py`` and passed in."""

from __future__ import annotations

from dataclasses import dataclass

from utils.errors import InputError
from utils.model_settings import EFFORT_LEVELS


@dataclass(frozen=True)
class Settings:
    """Everything the run takes from the environment, read once here."""

    api_key: str | None
    base_url: str | None
    judge: str  # "anthropic" | "offline"
    judge_timeout: float
    sonnet_model: str
    haiku_model: str
    judge_effort: str | None = None  # BENCHMARK_JUDGE_EFFORT: low … max, sent only where supported
    retry_wait_max_s: float = 60.0  # BENCHMARK_RETRY_WAIT_MAX: the retry pass waits at most this
    batch_poll_max_s: float = 60.0  # BENCHMARK_BATCH_POLL_MAX: --judge-batch polls at least this often

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
        effort = (env.get("BENCHMARK_JUDGE_EFFORT") or "").strip().lower() or None
        if effort is not None and effort not in EFFORT_LEVELS:
            raise InputError(f"BENCHMARK_JUDGE_EFFORT={effort!r} is not an effort level: set it to one of "
                             f"{', '.join(EFFORT_LEVELS)}, or unset it")
        raw_wait = env.get("BENCHMARK_RETRY_WAIT_MAX") or "60"
        try:
            retry_wait = float(raw_wait)
        except ValueError:
            retry_wait = -1.0
        if not 0 <= retry_wait <= 600:
            raise InputError(f"BENCHMARK_RETRY_WAIT_MAX={raw_wait!r} is not a number of seconds from 0 to 600: "
                             "set it to e.g. 60")
        raw_poll = env.get("BENCHMARK_BATCH_POLL_MAX") or "60"
        try:
            poll_max = float(raw_poll)
        except ValueError:
            poll_max = -1.0
        if not 0.01 <= poll_max <= 3600:
            raise InputError(f"BENCHMARK_BATCH_POLL_MAX={raw_poll!r} is not a number of seconds from 0.01 to 3600: "
                             "set it to e.g. 60")
        return cls(api_key=api_key, base_url=env.get("ANTHROPIC_BASE_URL") or None, judge=judge,
                   judge_effort=effort, retry_wait_max_s=retry_wait, batch_poll_max_s=poll_max,
                   judge_timeout=timeout,
                   sonnet_model=env.get("BENCHMARK_SONNET_MODEL") or "claude-sonnet-5-5",
                   haiku_model=env.get("BENCHMARK_HAIKU_MODEL") or "claude-haiku-4-5")
