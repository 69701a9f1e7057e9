"""Calling Claude over the official ``anthropic`` SDK: the start-up model check and one call.

:class:`AnthropicProvider` is the client object a run builds once (``benchmark.py`` passes it the
settings it read from the environment) and hands to whatever calls a model:

* :meth:`AnthropicProvider.check_model` — the start-up check, before the corpus is loaded: asks
  the Models API (``client.models.retrieve``) what the model accepts and returns the
  :class:`utils.model_settings.ModelSettings` to send (see that module for the rule). 401/403, an
  unknown model (404 while ``models.list()`` answers), a ``retired`` model, or an effort level
  the model lacks raise :class:`InputError` naming the fix (for a retired or unknown model, the
  newest active model of the same line); a gateway without ``/v1/models`` (404/405/501 on the
  listing too) or null ``capabilities`` falls back to the built-in table; ``deprecated`` logs one
  warning with ``retires_at``; an unreachable API raises a fatal :class:`JudgeError`.
* :meth:`AnthropicProvider.model` → a :class:`ModelClient` (the :class:`LLM` protocol):
  ``complete(prompt) -> LLMReply`` with the text blocks joined, ``stop_reason``, the model id
  the reply names, ``request-id`` and token usage.

Bounds: the timeout is a **deadline for the whole attempt**, body included (a watchdog closes a
stalled body at the deadline), and a reply body over :data:`MAX_BODY_BYTES` is a bad response.
The SDK retries 408/409/429/5xx and connection errors ``max_retries`` times; it obeys
``retry-after`` uncapped, so a middleware caps each wait at ``max_retry_wait_s`` (the uncapped value
is kept on the error as ``retry_after`` for the run's retry pass). Every failure becomes a
:class:`JudgeError`, transient or fatal; no message contains the key. The SDK is imported on first
use (it costs ~1 s): an offline run never pays for it.
"""

from __future__ import annotations

import json
import math
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Protocol

from loguru import logger

from utils.errors import InputError, JudgeError
from utils.model_settings import Capabilities, ModelSettings, UnsupportedEffort, choose_settings

MAX_BODY_BYTES = 1_000_000  # a reply body larger than this is a bad response
# Deadline per attempt of a Message Batches transfer (a batch upload or its results can be ~256 MB).
BATCH_TRANSFER_TIMEOUT_S = 600.0
_ORIGINAL_RETRY_AFTER = "x-benchmark-original-retry-after"
TRANSIENT_KINDS = frozenset({"timeout", "rate_limit", "overloaded", "server_error", "connection"})


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
    timeout: float = 30.0  # deadline per attempt, body included
    max_retries: int = 2
    max_retry_wait_s: float = 10.0  # cap on any retry-after the server sends
    max_body_bytes: int = MAX_BODY_BYTES

    def __repr__(self) -> str:  # never show the key
        return (f"ProviderConfig(api_key={'set' if self.api_key else None}, base_url={self.base_url!r}, "
                f"timeout={self.timeout}, max_retries={self.max_retries}, "
                f"max_retry_wait_s={self.max_retry_wait_s}, max_body_bytes={self.max_body_bytes})")


class _BodyLimit(Exception):
    """A reply body passed its deadline or its size cap (raised while it is read)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class _BoundedStream:
    """Wraps an httpx2 response stream: stops at ``cap`` bytes or at ``deadline`` (monotonic).
    A watchdog closes the underlying stream at the deadline, so a read that blocks is released."""

    def __init__(self, inner: Any, cap: int, deadline: float) -> None:
        self.inner, self.cap, self.deadline = inner, cap, deadline
        self.expired = False
        self._watchdog = threading.Timer(max(0.0, deadline - time.monotonic()), self._expire)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _expire(self) -> None:
        self.expired = True
        try:
            self.inner.close()
        except Exception:  # noqa: BLE001 - closing a half-read socket from another thread
            pass

    def __iter__(self) -> Iterator[bytes]:
        size = 0
        try:
            for chunk in self.inner:
                size += len(chunk)
                if size > self.cap:
                    raise _BodyLimit("bad_response", f"the reply body passed {self.cap:,} bytes (bad body)")
                if time.monotonic() > self.deadline:
                    raise _BodyLimit("timeout", "the reply did not finish within the judge timeout")
                yield chunk
        except _BodyLimit:
            raise
        except Exception as err:
            if self.expired:
                raise _BodyLimit("timeout", "the reply did not finish within the judge timeout") from None
            raise err
        finally:
            self._watchdog.cancel()
        if self.expired:
            raise _BodyLimit("timeout", "the reply did not finish within the judge timeout")

    def close(self) -> None:
        self._watchdog.cancel()
        self.inner.close()


def _middleware(config: ProviderConfig):
    import httpx2
    from anthropic import Middleware

    class Bounds(Middleware):
        """Per attempt: cap ``retry-after`` at ``max_retry_wait_s`` (the uncapped value is kept in
        another header) and bound the body by the attempt's deadline and the size cap."""

        def handle(self, request, call_next):
            deadline = time.monotonic() + config.timeout
            response = call_next(request)
            http = response.http_response
            if not http.is_stream_consumed and isinstance(http.stream, httpx2.SyncByteStream):
                http.stream = _SyncBounded(http.stream, config.max_body_bytes, deadline)
            headers = http.headers
            for name, per_second in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
                value = headers.get(name)
                if value is None:
                    continue
                try:
                    seconds = float(value) / per_second
                except ValueError:  # an HTTP date: could be any distance away
                    seconds = math.inf
                headers[_ORIGINAL_RETRY_AFTER] = f"{seconds:g}"
                if not seconds <= config.max_retry_wait_s:
                    headers[name] = f"{config.max_retry_wait_s * per_second:g}"
            return response

    class _SyncBounded(_BoundedStream, httpx2.SyncByteStream):
        pass

    return Bounds()


def _int(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= 0 else None


def _clean_text(text: str) -> str:
    """Lone surrogates (a reply may carry ``"\\ud800"``) become U+FFFD, so any text can be written."""
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def parse_message(data: object, request_id: str | None = None) -> LLMReply:
    """An :class:`LLMReply` from a Messages API response body (already decoded JSON).
    Raises a transient ``bad_response`` :class:`JudgeError` when it is not a message."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise JudgeError("bad_response", "the judge API sent a reply that is not a message (bad body)", fatal=False)
    text = "".join(block["text"] for block in data["content"]
                   if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str))
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    stop = data.get("stop_reason")
    model = data.get("model")
    return LLMReply(
        text=_clean_text(text), stop_reason=stop if isinstance(stop, str) else None,
        model=model if isinstance(model, str) else None, request_id=request_id,
        input_tokens=_int(usage.get("input_tokens")), output_tokens=_int(usage.get("output_tokens")),
        cache_creation_input_tokens=_int(usage.get("cache_creation_input_tokens")),
        cache_read_input_tokens=_int(usage.get("cache_read_input_tokens")))


class AnthropicProvider:
    """The SDK client, built once per run from :class:`ProviderConfig`."""

    def __init__(self, config: ProviderConfig) -> None:
        self.config = config
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self):
        with self._lock:
            if self._client is None:
                import anthropic  # lazy: ~1 s

                self._client = anthropic.Anthropic(
                    api_key=self.config.api_key, base_url=self.config.base_url,
                    max_retries=self.config.max_retries, timeout=self.config.timeout,
                    middleware=[_middleware(self.config)])
            return self._client

    def batch_client(self, max_body_bytes: int | None = None, max_retries: int | None = None):
        """The SDK client for the Message Batches API: the same key, endpoint, retries and
        ``retry-after`` cap, but a deadline per attempt of at least :data:`BATCH_TRANSFER_TIMEOUT_S`
        (a batch upload, or its results, can be hundreds of MB), a body cap of ``max_body_bytes``
        (default: the one reply cap) and ``max_retries`` (default: the judge's; 0 for a create,
        which the SDK would otherwise repeat after a timeout that may have created the batch)."""
        config = replace(self.config, timeout=max(self.config.timeout, BATCH_TRANSFER_TIMEOUT_S),
                         max_body_bytes=max_body_bytes or self.config.max_body_bytes)
        return self.client().copy(timeout=config.timeout, middleware=[_middleware(config)],
                                  max_retries=self.config.max_retries if max_retries is None else max_retries)

    @property
    def anthropic_version(self) -> str | None:
        return self.client().default_headers.get("anthropic-version")

    def _scrub(self, text: str) -> str:
        key = self.config.api_key
        return text.replace(key, "[REDACTED]") if key else text

    # ------------------------------------------------------------------ errors

    def classify_error(self, err: BaseException, model: str) -> JudgeError:
        """Map an SDK (or decoding) exception onto the judge error taxonomy."""
        import anthropic

        attempts = self.config.max_retries + 1
        cause: BaseException | None = err
        while cause is not None:  # our body bounds, possibly wrapped by the SDK
            if isinstance(cause, _BodyLimit):
                return JudgeError(cause.kind, str(cause), fatal=False)
            cause = cause.__cause__ or cause.__context__
        if isinstance(err, anthropic.APITimeoutError):
            return JudgeError("timeout", f"judge timed out ({attempts} attempts)", fatal=False)
        if isinstance(err, anthropic.APIConnectionError):
            return JudgeError("connection", f"could not reach the judge API ({attempts} attempts)", fatal=False)
        if isinstance(err, anthropic.APIStatusError):
            status = err.status_code
            detail = self._scrub(str(err.api_message or err.type or "")[:300])
            detail = f": {detail}" if detail else ""
            retry_after = None
            original = err.response.headers.get(_ORIGINAL_RETRY_AFTER)
            if original is not None:
                try:
                    retry_after = float(original)
                except ValueError:
                    retry_after = None
            if status in (401, 403):
                return JudgeError("auth", f"the API refused the credentials ({status}{detail}); "
                                  "set a valid ANTHROPIC_API_KEY, or run with BENCHMARK_JUDGE=offline", fatal=True)
            if status == 404:
                return JudgeError("not_found", f"the API does not know model {model!r} (404{detail}): set "
                                  "BENCHMARK_SONNET_MODEL (judge) or BENCHMARK_HAIKU_MODEL (rewriter) to a current "
                                  "model id", fatal=True)
            if status == 400:  # quote the API; do not guess the cause
                return JudgeError("bad_request", f"the API rejected the request for {model} (400{detail})",
                                  fatal=True)
            transient = {429: ("rate_limit", "rate-limited (429)"), 529: ("overloaded", "overloaded (529)"),
                         408: ("timeout", "request timed out (408)")}
            if status in transient or status >= 500:
                kind, what = transient.get(status, ("server_error", f"server error ({status})"))
                return JudgeError(kind, f"judge {what} after {attempts} attempts", fatal=False,
                                  retry_after=retry_after)
            return JudgeError("client_error", f"judge API answered {status}{detail}", fatal=False)
        if isinstance(err, (ValueError, RecursionError, anthropic.APIResponseValidationError)):
            return JudgeError("bad_response", "the judge API sent a reply that is not valid JSON (bad body)",
                              fatal=False)
        return JudgeError("error", self._scrub(f"judge call failed: {type(err).__name__}: {err}")[:300], fatal=False)

    # ------------------------------------------------------------------ start-up check

    def _newest_active(self, line: str | None) -> str | None:
        """The newest active model of ``line`` from ``models.list()``; None when there is none."""
        if not line:
            return None
        try:
            models = [m for m in self.client().models.list(limit=100)
                      if getattr(m, "lifecycle", None) == "active" and getattr(m, "line", None) == line]
        except Exception as err:  # noqa: BLE001 - a suggestion is optional
            logger.debug("models.list() for a suggestion failed: {}", type(err).__name__)
            return None
        return max(models, key=lambda m: str(m.created_at)).id if models else None

    def _models_api_available(self) -> bool:
        """Whether ``GET /v1/models`` answers: tells an unknown model (404 with a listing) from a
        gateway without the Models API (no listing either)."""
        import anthropic

        try:
            self.client().models.list(limit=1)
        except anthropic.APIStatusError as err:
            if err.status_code in (404, 405, 501):
                return False
            raise
        return True

    def check_model(self, model_id: str, *, effort: str | None = None, line: str | None = None,
                    env_var: str = "BENCHMARK_SONNET_MODEL") -> ModelSettings:
        """The start-up check (module docstring). ``line`` is the model line to suggest from when
        the model is unknown (the API does not name the line of a model it does not know)."""
        import anthropic

        client = self.client()
        info = None
        try:
            try:
                info = client.models.retrieve(model_id)
            except anthropic.APIStatusError as err:
                if err.status_code not in (404, 405, 501):
                    raise
                if self._models_api_available():
                    if err.status_code != 404:
                        raise
                    newest = self._newest_active(line)
                    hint = f" (the newest active {line} model is {newest})" if newest else ""
                    raise InputError(f"model {model_id!r} is unknown to the API (404): set {env_var} to a "
                                     f"current model id{hint}") from None
                logger.info("The Models API is not available at this endpoint: request settings for {} come "
                            "from the built-in table", model_id)
        except InputError:
            raise
        except anthropic.APIStatusError as err:
            if err.status_code in (401, 403):
                raise InputError(f"the API refused the credentials ({err.status_code}) while checking model "
                                 f"{model_id}: set a valid ANTHROPIC_API_KEY, or run with BENCHMARK_JUDGE=offline"
                                 ) from None
            raise self._startup_failure(err, model_id) from None
        except anthropic.AnthropicError as err:
            raise self._startup_failure(err, model_id) from None
        try:
            if info is None:
                return choose_settings(model_id, None, source="builtin_table", effort=effort)
            lifecycle = getattr(info, "lifecycle", None)
            retires_at = getattr(info, "retires_at", None)
            retires = retires_at.isoformat() if hasattr(retires_at, "isoformat") else retires_at
            if lifecycle == "retired":
                newest = self._newest_active(getattr(info, "line", None))
                hint = f"; the newest active {info.line} model is {newest}" if newest else ""
                raise InputError(f"model {model_id} is retired: set {env_var} to a current model id{hint}")
            if lifecycle == "deprecated":
                logger.warning("model {} is deprecated and retires {}: move {} to a newer model", model_id,
                               retires or "soon (no date given)", env_var)
            caps = Capabilities.from_api(getattr(info, "capabilities", None))
            if caps is None:
                logger.info("The Models API gave no capabilities for {}: request settings come from the "
                            "built-in table", model_id)
            return choose_settings(model_id, caps, source="models_api", effort=effort,
                                   model_max_tokens=_int(getattr(info, "max_tokens", None)), lifecycle=lifecycle,
                                   retires_at=retires, display_name=getattr(info, "display_name", None))
        except UnsupportedEffort as err:
            raise InputError(f"BENCHMARK_JUDGE_EFFORT: {err}: set it to one of those, or unset it") from None

    def _startup_failure(self, err: BaseException, model_id: str) -> JudgeError:
        judge_err = self.classify_error(err, model_id)
        where = self.config.base_url or "the Anthropic API"
        return JudgeError(judge_err.kind, f"could not check model {model_id} at start-up ({judge_err}); "
                          f"check ANTHROPIC_BASE_URL ({where}) and the network, then run again", fatal=True)

    # ------------------------------------------------------------------ calls

    def model(self, settings: ModelSettings) -> ModelClient:
        return ModelClient(self, settings)

    def complete(self, settings: ModelSettings, prompt: str) -> LLMReply:
        client = self.client()
        try:
            with client.messages.with_streaming_response.create(
                    messages=[{"role": "user", "content": prompt}], **settings.request_params()) as response:
                request_id = response.headers.get("request-id")
                body = b"".join(response.iter_bytes())
            if len(body) > self.config.max_body_bytes:  # decoded size (a compressed body can grow)
                raise _BodyLimit("bad_response", f"the reply body passed {self.config.max_body_bytes:,} bytes")
            data = json.loads(body)
        except Exception as err:  # SDK errors, our body bounds, bad JSON, and transport errors it did not wrap
            raise self.classify_error(err, settings.requested) from None
        return parse_message(data, request_id)


class ModelClient:
    """One model with its settings: the :class:`LLM` the grader and the rewriter are given."""

    def __init__(self, provider: AnthropicProvider, settings: ModelSettings) -> None:
        self.provider, self.settings = provider, settings
        self.model = settings.requested

    def complete(self, prompt: str) -> LLMReply:
        return self.provider.complete(self.settings, prompt)
