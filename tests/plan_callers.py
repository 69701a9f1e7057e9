"""``call_llm`` functions in the POC's shape, for ``BENCHMARK_CALL_LLM=tests.plan_callers:NAME``.

Each records what it was called with in :data:`CALLS` (prompt length, model, timeout)."""

from __future__ import annotations

CALLS: list[dict] = []
NOT_A_FUNCTION = 42


def call_llm(prompt: str, model: str = "claude-sonnet", timeout: int = 30) -> str:
    """Grades every question 7, as the POC's caller returns a reply: a string."""
    CALLS.append({"prompt": prompt, "model": model, "timeout": timeout})
    return '{"grade": 7, "reasoning": "ok"}'


def call_llm_that_times_out(prompt: str, model: str = "claude-sonnet", timeout: int = 30) -> str:
    CALLS.append({"prompt": prompt, "model": model, "timeout": timeout})
    raise TimeoutError(f"no reply within {timeout}s")
