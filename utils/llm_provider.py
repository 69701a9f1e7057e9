"""One way to call Claude: ``call_llm(prompt, model, timeout) -> str`` over the official SDK.

* The ``anthropic`` SDK is imported on the first call (it costs ~2 s to import): an offline run
  never pays for it.
* Settings come from :func:`configure`, which ``benchmark.py`` calls once with what it read from
  the environment. Unconfigured, the SDK reads ``ANTHROPIC_API_KEY``/``ANTHROPIC_BASE_URL`` itself.
* Requests send no ``temperature`` (Sonnet 5.x answers 400 to a non-default one) and
  ``thinking={"type": "disabled"}``; only ``text`` blocks of the reply are read.
* The SDK retries 408/409/429/5xx and connection errors ``max_retries`` times. It obeys
  ``retry-after`` uncapped, so a middleware caps the wait at ``max_retry_wait_s``.
* Every failure becomes a :class:`utils.errors.JudgeError`: transient (the question loses its
  grade, the run goes on) or fatal (no further calls make sense). Messages never contain the key.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Any, Protocol

from loguru import logger

from utils.errors import JudgeError

DEFAULT_MODELS = {"claude-sonnet": "claude-sonnet-5-5", "claude-haiku": "claude-haiku-4-5"}
MAX_TOKENS = 1024


class LLMCaller(Protocol):
    def __call__(self, prompt: str, model: str = "claude-sonnet", timeout: float = 30) -> str: ...


@dataclass(frozen=True)
class LLMReply:
    """One answered call: the reply's text blocks joined, and what the API said about the call."""

    text: str
    stop_reason: str | None = None
    model: str | None = None  # the model id the reply names
    request_id: str | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class LLM(Protocol):
    """A model to call, its request settings already chosen (see :class:`ModelClient`).

    ``complete`` sends ``prompt`` as one user message and returns the :class:`LLMReply`; every
    failure raises :class:`utils.errors.JudgeError` (``fatal`` or transient). Tests pass scripted
    objects with this shape."""

    model: str  # the model id requested

    def complete(self, prompt: str) -> LLMReply: ...


@dataclass(frozen=True)
class ProviderConfig:
    api_key: str | None = None  # None: the SDK reads ANTHROPIC_API_KEY
    base_url: str | None = None  # None: the SDK reads ANTHROPIC_BASE_URL, else the public API
    models: tuple[tuple[str, str], ...] = tuple(DEFAULT_MODELS.items())
    max_retries: int = 2
    max_retry_wait_s: float = 10.0  # cap on any retry-after the server sends

    def __repr__(self) -> str:  # never show the key
        return (f"ProviderConfig(api_key={'set' if self.api_key else None}, base_url={self.base_url!r}, "
                f"models={dict(self.models)!r}, max_retries={self.max_retries}, "
                f"max_retry_wait_s={self.max_retry_wait_s})")


_config = ProviderConfig()
_client: Any = None
_lock = threading.Lock()


def configure(config: ProviderConfig) -> None:
    """Set the provider's settings (drops any client built with the old ones)."""
    global _config, _client
    with _lock:
        _config, _client = config, None


def resolve_model(model: str) -> str:
    """Alias → model id (``claude-sonnet`` → ``claude-sonnet-5-5``); other names pass through."""
    return dict(_config.models).get(model, model)


def _retry_after_cap_middleware(cap_s: float):
    from anthropic import Middleware

    class CapRetryAfter(Middleware):
        """The SDK sleeps for whatever ``retry-after`` says; never let that exceed ``cap_s``."""

        def handle(self, request, call_next):
            response = call_next(request)
            headers = response.http_response.headers
            for name, per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
                value = headers.get(name)
                if value is None:
                    continue
                try:
                    too_long = float(value) / per_second > cap_s
                except ValueError:  # an HTTP date: could be any distance away
                    too_long = True
                if too_long:
                    headers[name] = f"{cap_s * per_second:g}"
            return response

    return CapRetryAfter()


def _get_client():
    global _client
    with _lock:
        if _client is None:
            import anthropic  # lazy: ~2 s

            _client = anthropic.Anthropic(
                api_key=_config.api_key,
                base_url=_config.base_url,
                max_retries=_config.max_retries,
                middleware=[_retry_after_cap_middleware(_config.max_retry_wait_s)],
            )
        return _client


def _scrub(text: str) -> str:
    key = _config.api_key
    return text.replace(key, "[REDACTED]") if key else text


def classify_error(err: BaseException, model: str) -> JudgeError:
    """Map an SDK (or decoding) exception onto the judge error taxonomy."""
    import anthropic

    attempts = _config.max_retries + 1
    if isinstance(err, anthropic.APITimeoutError):
        return JudgeError("timeout", f"judge timed out ({attempts} attempts)", fatal=False)
    if isinstance(err, anthropic.APIConnectionError):
        return JudgeError("connection", f"could not reach the judge API ({attempts} attempts)", fatal=False)
    if isinstance(err, anthropic.APIStatusError):
        status = err.status_code
        detail = _scrub(str(err.api_message or err.type or "")[:200])
        detail = f": {detail}" if detail else ""
        if status in (401, 403):
            return JudgeError("auth", f"the judge API refused the credentials ({status}{detail}); "
                              "set a valid ANTHROPIC_API_KEY, or run with BENCHMARK_JUDGE=offline", fatal=True)
        if status == 404:
            return JudgeError("not_found", f"the judge API does not know model {model!r} (404{detail}); "
                              "set BENCHMARK_SONNET_MODEL to a current model id", fatal=True)
        if status == 400:
            return JudgeError("bad_request", f"the judge API rejected the request (400{detail}); "
                              "check the model id in BENCHMARK_SONNET_MODEL and the SDK version", fatal=True)
        if status == 429:
            return JudgeError("rate_limit", f"judge rate-limited (429) after {attempts} attempts", fatal=False)
        if status == 529:
            return JudgeError("overloaded", f"judge overloaded (529) after {attempts} attempts", fatal=False)
        if status == 408:
            return JudgeError("timeout", f"judge request timed out (408) after {attempts} attempts", fatal=False)
        if status >= 500:
            return JudgeError("server_error", f"judge server error ({status}) after {attempts} attempts",
                              fatal=False)
        return JudgeError("client_error", f"judge API answered {status}{detail}", fatal=False)
    if isinstance(err, (json.JSONDecodeError, anthropic.APIResponseValidationError)):
        return JudgeError("bad_response", "the judge API sent a reply that is not a valid message (bad body)",
                          fatal=False)
    return JudgeError("error", _scrub(f"judge call failed: {type(err).__name__}: {err}")[:300], fatal=False)


def call_llm(prompt: str, model: str = "claude-sonnet", timeout: float = 30) -> str:
    """Send ``prompt`` as one user message; return the reply's text blocks joined.

    Raises :class:`JudgeError` for every failure (see the module docstring).
    """
    model_id = resolve_model(model)
    client = _get_client()
    import anthropic

    try:
        message = client.messages.create(
            model=model_id,
            max_tokens=MAX_TOKENS,
            messages=[{"role": "user", "content": prompt}],
            thinking={"type": "disabled"},
            timeout=timeout,
        )
    except (anthropic.AnthropicError, json.JSONDecodeError) as err:
        raise classify_error(err, model_id) from None
    content = getattr(message, "content", None)
    if not isinstance(content, list):
        raise JudgeError("bad_response", "the judge API sent a message without content (bad body)", fatal=False)
    stop_reason = getattr(message, "stop_reason", None)
    text = "".join(getattr(block, "text", "") or "" for block in content if getattr(block, "type", None) == "text")
    if stop_reason == "refusal" and not text.strip():
        raise JudgeError("refusal", "the judge declined to answer (stop_reason=refusal)", fatal=False)
    if stop_reason == "max_tokens":
        logger.debug("[llm-provider] reply cut at max_tokens={} ({} chars)", MAX_TOKENS, len(text))
    return text
