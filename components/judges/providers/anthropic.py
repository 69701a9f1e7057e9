"""The ``anthropic`` judge provider: Claude over the official ``anthropic`` SDK.

Everything that knows about Anthropic is here: its environment variables (the key, the auth
token and the base URL's password are secrets), the start-up model check, the request settings
per model, one call, the error taxonomy, the prices, and the Message Batches transport of
``--judge-batch``.

* :meth:`AnthropicProvider.check_model` — the start-up check, before the corpus is loaded: asks
  the Models API (``client.models.retrieve``) what the model accepts and chooses the request
  settings (:func:`choose_settings`). 401/403, an unknown model (404 while ``models.list()``
  answers), a ``retired`` model, or an effort level the model lacks raise :class:`InputError`
  naming the fix (for a retired or unknown model, the newest active model of the same line); a
  gateway without ``/v1/models`` (404/405/501 on the listing too) or null ``capabilities`` falls
  back to the built-in table; ``deprecated`` logs one warning with ``retires_at``; an unreachable
  API raises a fatal :class:`JudgeError`.
* :meth:`AnthropicProvider.model` → a :class:`ModelClient` (the :class:`~components.judges.llm.LLM`
  protocol): ``complete(prompt) -> LLMReply`` with the text blocks joined, ``stop_reason``, the
  model id the reply names, ``request-id``, token usage and its price.

**Request settings per model.** Models change under a benchmark: Claude Sonnet 5.5 answers 400 to
``thinking: {"type": "disabled"}`` (its lowest setting is ``between_tools``), Claude Opus 5.5 only
thinks adaptively, Claude Haiku 4.5 has no adaptive thinking. So no request shape is hard-coded:
the Models API says per model what it accepts (``capabilities.thinking.types.*.supported``,
``capabilities.effort.*.supported``, ``max_tokens``), and :func:`choose_settings` turns it into the
request:

1. thinking ``{"type": "disabled"}`` if the model supports it, else ``{"type": "between_tools"}``,
   else no ``thinking`` field at all (the model thinks adaptively) with the lowest effort level it
   supports and ``max_tokens`` large enough for thinking plus the answer
   (:data:`THINKING_MAX_TOKENS`, within the model's own ``max_tokens``);
2. without thinking, ``max_tokens`` is :data:`ANSWER_MAX_TOKENS` (a grade and a sentence of reasoning);
3. an effort asked for (``BENCHMARK_JUDGE_EFFORT``) is sent as ``output_config.effort`` only when the
   model supports that level; otherwise :class:`UnsupportedEffort` names the levels it has;
4. when the Models API cannot say (a gateway without ``/v1/models``, or ``capabilities`` null), the
   small :data:`BUILTIN_TABLE` per model family stands in, and the settings say so
   (``source: "builtin_table"``); a model in neither gets no ``thinking`` field and the large
   ``max_tokens`` (``source: "default"``).

**Bounds.** The timeout is a deadline for the whole attempt, from its start: connect, status line,
headers and body (every network operation of the attempt waits at most until the deadline, so a
server that trickles its status line or sends headers without end is cut off there; a watchdog also
closes a stalled body at the deadline), and a reply body over ``max_body_bytes`` (default
:data:`~components.judges.providers.transport.MAX_BODY_BYTES`) is a bad response. The SDK retries
408/409/429/5xx and a reset connection ``max_retries`` times, never a timed-out attempt nor a refused
connection (the middleware ends the call there:
:class:`~components.judges.providers.transport.Unretried`); it obeys ``retry-after`` uncapped, so a
middleware caps each wait at ``max_retry_wait_s`` (the uncapped value is kept on the error as
``retry_after`` for the run's retry pass). Every failure becomes a :class:`JudgeError`, transient or
fatal; no message contains the key. The SDK is imported on first use (it costs ~1 s): an offline
run never pays for it. The bounds, the retry-after cap and the error taxonomy are the shared
transport's (:mod:`components.judges.providers.transport`); this module's middleware marks where
each attempt starts.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from loguru import logger

from components.judges.batch import (RESULTS_BUDGET_SLACK_LINES, BatchEntry, BatchStatus, CreateFailed, Skipped,
                                     result_lines)
from components.judges.llm import LLMReply, OutputCap, clean_text, non_negative_int
from components.judges.providers import ModelChoice, Variable, register_provider
from components.judges.providers.transport import (NO_ENDPOINT, SDKProvider, TransportConfig, bound_reply,
                                                   Unretried, http_client, rate_limit, start_attempt, unretried)
from utils.errors import InputError, JudgeError
from utils.pricing import Price, PriceTable
from utils.settings import EFFORT_LEVELS, check_base_url, check_key, check_model_id

# Deadline per attempt of a Message Batches transfer (a batch upload or its results can be ~256 MB).
BATCH_TRANSFER_TIMEOUT_S = 600.0
COUNT_WORKERS = 8  # token-counting calls in flight at once (--estimate)
DEFAULT_JUDGE_MODEL = "claude-sonnet-5-5"
DEFAULT_REWRITER_MODEL = "claude-haiku-4-5"

# Prices in US dollars per million tokens, as published on ``as_of``; cache writes cost 1.25 × the
# input price and cache reads 0.1 × (the API's standard multipliers); Message Batches half of everything.
PRICES = PriceTable(
    provider="anthropic", as_of="2026-11-01",
    prices={"claude-sonnet-5-5": Price(2.0, 10.0), "claude-haiku-4-5": Price(1.0, 5.0)},
    cache_write_multiplier=1.25, cache_read_multiplier=0.10, batch_discount=0.5)


@dataclass(frozen=True)
class ProviderConfig(TransportConfig):
    """The key, the endpoint and the bounds of every call (:class:`TransportConfig`)."""

    api_key: str | None = None  # None: the SDK reads ANTHROPIC_API_KEY
    auth_token: str | None = None  # a bearer token instead of the key (ANTHROPIC_AUTH_TOKEN)
    base_url: str | None = None  # None: the SDK reads ANTHROPIC_BASE_URL, else the public API


def _middleware(config: ProviderConfig):
    from anthropic import APIConnectionError, APITimeoutError, Middleware

    class Bounds(Middleware):
        """Per attempt: a deadline ``config.timeout`` from its start, for connect, status line,
        headers and body alike (every network operation waits at most until then; a watchdog closes
        a stalled body at the deadline); the body's size cap; ``retry-after`` capped at
        ``max_retry_wait_s`` (the uncapped value is kept in another header)."""

        def handle(self, request, call_next):
            deadline = start_attempt(config.timeout)  # read by this thread's network operations until the next attempt
            try:
                response = call_next(request)
            except (APITimeoutError, APIConnectionError) as err:
                # a timed-out attempt, or a refused connection, ends the call: raised as an error the SDK does not retry
                if (end := unretried(err, config.timeout, None)) is None:
                    raise
                raise end from None
            bound_reply(response.http_response, config, deadline)
            return response

    return Bounds()


def parse_message(data: object, request_id: str | None = None, *, cost: Any = None) -> LLMReply:
    """An :class:`LLMReply` from a Messages API response body (already decoded JSON), priced by
    ``cost`` (a function of the reply's usage, or None). Raises a transient ``bad_response``
    :class:`JudgeError` when it is not a message."""
    if not isinstance(data, dict) or not isinstance(data.get("content"), list):
        raise JudgeError("bad_response", "the judge API sent a reply that is not a message (bad body)", fatal=False)
    text = "".join(block["text"] for block in data["content"]
                   if isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str))
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    stop = data.get("stop_reason")
    model = data.get("model")
    reply = LLMReply(
        text=clean_text(text), stop_reason=stop if isinstance(stop, str) else None,
        model=model if isinstance(model, str) else None, request_id=request_id,
        input_tokens=non_negative_int(usage.get("input_tokens")),
        output_tokens=non_negative_int(usage.get("output_tokens")),
        cache_creation_input_tokens=non_negative_int(usage.get("cache_creation_input_tokens")),
        cache_read_input_tokens=non_negative_int(usage.get("cache_read_input_tokens")))
    return replace(reply, cost_usd=cost(reply)) if cost is not None else reply

def rate_limit_headers(headers: Mapping[str, str], reply: LLMReply) -> dict | None:
    """The ``anthropic-ratelimit-*`` headers of a reply as the concurrency gate reads them
    (:func:`~components.judges.providers.transport.rate_limit`); the requests' limit resets at an
    RFC 3339 time. None when the reply has none."""
    reset = None
    stamp = headers.get("anthropic-ratelimit-requests-reset")
    if stamp:
        from datetime import datetime, timezone

        try:
            reset = max(0.0, (datetime.fromisoformat(stamp.replace("Z", "+00:00")) - datetime.now(timezone.utc))
                        .total_seconds())
        except ValueError:
            reset = None
    return rate_limit(headers, "anthropic-ratelimit-requests-remaining", "anthropic-ratelimit-tokens-remaining",
                      call_tokens=(reply.input_tokens or 0) + (reply.output_tokens or 0), reset_s=reset)


def _line(model_id: str) -> str | None:
    """The model line of an id (``claude-sonnet-5-5`` → ``sonnet``), for suggesting a newer model."""
    parts = model_id.split("-")
    return parts[1] if len(parts) > 1 and parts[0] == "claude" else None


@register_provider
class AnthropicProvider(SDKProvider):
    """The SDK client, built once per run from :class:`ProviderConfig` (module docstring)."""

    name = "anthropic"
    label = "Claude via the Anthropic API"
    title = "Sonnet"
    variables = (
        Variable("ANTHROPIC_API_KEY", "the judge's key (never written anywhere)", secret=True),
        Variable("ANTHROPIC_AUTH_TOKEN", "a bearer token instead of the key", secret=True),
        Variable("ANTHROPIC_BASE_URL", "another Messages API endpoint (its password, if any, is a secret)"),
        Variable("BENCHMARK_SONNET_MODEL", f"the judge model (default {DEFAULT_JUDGE_MODEL})"),
        Variable("BENCHMARK_HAIKU_MODEL", f"the query rewriter's model (default {DEFAULT_REWRITER_MODEL})"),
    )
    default_models = {"judge": DEFAULT_JUDGE_MODEL, "rewriter": DEFAULT_REWRITER_MODEL}
    model_variables = {"judge": "BENCHMARK_SONNET_MODEL", "rewriter": "BENCHMARK_HAIKU_MODEL"}
    is_default = True
    supports_batch = True
    prices = PRICES
    packages = ("anthropic",)
    key_variable = "ANTHROPIC_API_KEY"
    base_url_variable = "ANTHROPIC_BASE_URL"
    public_endpoint = "the Anthropic API"
    transient_statuses = {**SDKProvider.transient_statuses, 529: ("overloaded", "overloaded (529)")}

    # ------------------------------------------------------------------ the environment

    @classmethod
    def configured(cls, env: Mapping[str, str]) -> bool:
        return bool(env.get("ANTHROPIC_API_KEY") or env.get("ANTHROPIC_AUTH_TOKEN"))

    @classmethod
    def configure(cls, env: Mapping[str, str], models: Mapping[str, str]) -> ProviderConfig:
        key = env.get("ANTHROPIC_API_KEY") or None
        token = env.get("ANTHROPIC_AUTH_TOKEN") or None
        if not key and not token:
            raise InputError("the anthropic judge needs ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN): set the "
                             "key, or BENCHMARK_JUDGE=offline for the lexical judge")
        for name, value in (("ANTHROPIC_API_KEY", key), ("ANTHROPIC_AUTH_TOKEN", token)):
            if value:
                check_key(name, value)
        base_url = env.get("ANTHROPIC_BASE_URL") or None
        if base_url is not None:
            check_base_url("ANTHROPIC_BASE_URL", base_url, "https://api.anthropic.com")
        for role, variable in cls.model_variables.items():
            value = env.get(variable)
            if value:
                check_model_id(variable, value, cls.default_models[role])
        for role, model in models.items():
            check_model_id(cls.model_variables.get(role, "BENCHMARK_JUDGE_MODEL"), model, cls.default_models[role])
        return ProviderConfig(api_key=key, auth_token=token if not key else None, base_url=base_url)

    @classmethod
    def missing_key(cls) -> str:
        return "ANTHROPIC_API_KEY"

    @classmethod
    def knows_model(cls, model_id: str) -> bool:
        return builtin_capabilities(model_id) is not None or super().knows_model(model_id)

    # ------------------------------------------------------------------ the SDK client

    def sdk(self):
        import anthropic  # lazy: ~1 s

        return anthropic

    def make_client(self):
        anthropic = self.sdk()
        return anthropic.Anthropic(
            api_key=self.config.api_key, auth_token=self.config.auth_token, base_url=self.config.base_url,
            max_retries=self.config.max_retries, timeout=self.config.timeout,
            middleware=[_middleware(self.config)], http_client=http_client(anthropic.DefaultHttpxClient))

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

    # ------------------------------------------------------------------ errors

    @staticmethod
    def server_message(err: Any) -> str:
        return str(err.api_message or err.type or "")

    def unknown_model_fix(self, role: str) -> str:
        return "BENCHMARK_SONNET_MODEL (judge) or BENCHMARK_HAIKU_MODEL (rewriter) to a current model id"

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

    def check_model_settings(self, model_id: str, *, effort: str | None = None, line: str | None = None,
                    env_var: str = "BENCHMARK_SONNET_MODEL") -> ModelSettings:
        """The start-up check (module docstring). ``line`` is the model line to suggest from when
        the model is unknown (the API does not name the line of a model it does not know)."""
        def missing(err: Any) -> None:  # 404/405/501: an unknown model, or a gateway without the Models API
            if self.list_models(lambda: self.client().models.list(limit=1)) is None:
                logger.info("The Models API is not available at this endpoint: request settings for {} come "
                            "from the built-in table", model_id)
                return
            if err.status_code != 404:
                raise err
            newest = self._newest_active(line)
            hint = f" (the newest active {line} model is {newest})" if newest else ""
            raise InputError(f"model {model_id!r} is unknown to the API (404): set {env_var} to a "
                             f"current model id{hint}") from None

        info = self.retrieve_model(model_id, missing)
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
                                   model_max_tokens=non_negative_int(getattr(info, "max_tokens", None)),
                                   lifecycle=lifecycle,
                                   retires_at=retires, display_name=getattr(info, "display_name", None))
        except UnsupportedEffort as err:
            raise InputError(f"BENCHMARK_JUDGE_EFFORT: {err}: set it to one of those, or unset it") from None

    def check_model(self, role: str, model: str, *, effort: str | None = None) -> ModelChoice:
        """The start-up check of ``model`` for ``role`` (module docstring)."""
        variable = self.model_variables.get(role, "BENCHMARK_JUDGE_MODEL")
        settings = self.check_model_settings(model, effort=effort, line=_line(model), env_var=variable)
        return self.choice(role, settings)

    def choice(self, role: str, settings: ModelSettings) -> ModelChoice:
        details = {"thinking": settings.thinking, "effort": settings.effort, "max_tokens": settings.max_tokens,
                   "settings_source": settings.source, "lifecycle": settings.lifecycle,
                   "retires_at": settings.retires_at}
        return ModelChoice(self.name, role, settings.requested, details, native=settings, summary=settings.describe())

    def describe(self, choice: ModelChoice | None) -> dict:
        details = super().describe(choice)
        if choice is not None:
            details["anthropic_version"] = self.anthropic_version
        return details

    # ------------------------------------------------------------------ calls

    def model(self, choice: ModelChoice | ModelSettings) -> ModelClient:
        settings = choice.native if isinstance(choice, ModelChoice) else choice
        return ModelClient(self, settings)

    def cost(self, model: str, *, batch: bool = False):
        """The function pricing a reply of ``model`` (at batch prices with ``batch``)."""
        return lambda r: self.prices.cost_usd(model, r.input_tokens, r.output_tokens, r.cache_creation_input_tokens,
                                              r.cache_read_input_tokens, batch=batch)

    def complete(self, settings: ModelSettings, prompt: str) -> LLMReply:
        try:
            headers, data = self.exchange(self.client().messages.with_streaming_response.create,
                                          messages=[{"role": "user", "content": prompt}], **settings.request_params())
        except Exception as err:  # SDK errors, our body bounds, bad JSON, and transport errors it did not wrap
            raise self.classify_error(err, settings.requested) from None
        reply = parse_message(data, headers.get("request-id"), cost=self.cost(settings.requested))
        return replace(reply, rate_limit=rate_limit_headers(headers, reply))

    def batch_api(self, choice: ModelChoice) -> MessageBatches:
        return MessageBatches(self, choice.native)

    def count_tokens(self, choice: ModelChoice | ModelSettings, prompts: Sequence[str]) -> list[int] | None:
        """Input tokens of each prompt by the Messages API's token counting (``messages.count_tokens``,
        free, no model run), with the request settings of a real call; :data:`COUNT_WORKERS` calls in
        flight. None when the endpoint has no token counting (404/405/501); any other failure is a
        :class:`JudgeError`."""
        import anthropic
        from concurrent.futures import ThreadPoolExecutor

        settings = choice.native if isinstance(choice, ModelChoice) else choice
        params = settings.request_params()
        params.pop("max_tokens", None)
        client = self.client()

        def one(prompt: str) -> int:
            reply = client.messages.count_tokens(messages=[{"role": "user", "content": prompt}], **params)
            return int(reply.input_tokens)

        try:
            with ThreadPoolExecutor(max_workers=COUNT_WORKERS, thread_name_prefix="count-tokens") as pool:
                return list(pool.map(one, prompts))
        except anthropic.APIStatusError as err:
            if err.status_code in NO_ENDPOINT:
                logger.info("The endpoint has no token counting ({}): input tokens are approximated", err.status_code)
                return None
            raise self.classify_error(err, settings.requested) from None
        except Exception as err:  # noqa: BLE001 - every failure becomes a JudgeError
            raise self.classify_error(err, settings.requested) from None


class ModelClient:
    """One model with its settings: the :class:`~components.judges.llm.LLM` the grader and the
    rewriter are given."""

    def __init__(self, provider: AnthropicProvider, settings: ModelSettings) -> None:
        self.provider, self.settings = provider, settings
        self.model = settings.requested

    @property
    def output_cap(self) -> OutputCap:
        return OutputCap("max_tokens", self.settings.max_tokens)

    @property
    def price(self) -> Price | None:
        return self.provider.prices.price_for(self.model)

    def complete(self, prompt: str) -> LLMReply:
        return self.provider.complete(self.settings, prompt)


# --------------------------------------------------------------------------- request settings per model

THINKING_TYPES = ("disabled", "between_tools", "adaptive", "enabled")
ANSWER_MAX_TOKENS = 1024
# Room for adaptive thinking plus the answer. Under the SDK's non-streaming ceiling (~21k tokens
# for a request without an explicit timeout; every request here gives one anyway).
THINKING_MAX_TOKENS = 16_000


class UnsupportedEffort(ValueError):
    """The effort level asked for is not one the model supports."""

    def __init__(self, model: str, effort: str, supported: tuple[str, ...]) -> None:
        have = ", ".join(supported) if supported else "none (the model takes no effort setting)"
        super().__init__(f"model {model} does not support effort {effort!r}; it supports: {have}")
        self.supported = supported


@dataclass(frozen=True)
class Capabilities:
    """What a model accepts, in the few fields the benchmark reads."""

    thinking: frozenset[str]  # supported thinking types
    effort: tuple[str, ...]  # supported effort levels, lowest first; () = no effort setting

    @classmethod
    def from_api(cls, caps: Any) -> Capabilities | None:
        """From the Models API's ``capabilities`` (SDK object or dict); None when it is null or
        lacks the thinking types."""
        if caps is None:
            return None
        data = caps if isinstance(caps, dict) else caps.model_dump()
        types = ((data.get("thinking") or {}).get("types")) or {}
        if not isinstance(types, dict) or not types:
            return None
        thinking = frozenset(t for t in THINKING_TYPES if (types.get(t) or {}).get("supported"))
        effort_caps = data.get("effort") or {}
        effort = tuple(level for level in EFFORT_LEVELS if effort_caps.get("supported")
                       and (effort_caps.get(level) or {}).get("supported"))
        return cls(thinking=thinking, effort=effort)


_ALL_EFFORT = ("low", "medium", "high", "max")
# Model family (id prefix) → capabilities, for gateways without the Models API. Longest prefix wins.
BUILTIN_TABLE: dict[str, Capabilities] = {
    "claude-opus-5": Capabilities(frozenset({"adaptive"}), _ALL_EFFORT + ("xhigh",)),
    "claude-sonnet-5": Capabilities(frozenset({"between_tools", "adaptive"}), _ALL_EFFORT),
    "claude-opus-4-6": Capabilities(frozenset({"disabled", "adaptive", "enabled"}), _ALL_EFFORT),
    "claude-sonnet-4-6": Capabilities(frozenset({"disabled", "adaptive", "enabled"}), _ALL_EFFORT),
    "claude-haiku-4-5": Capabilities(frozenset({"disabled", "enabled"}), ()),
    "claude-sonnet-4": Capabilities(frozenset({"disabled", "enabled"}), ()),
    "claude-opus-4": Capabilities(frozenset({"disabled", "enabled"}), ()),
}


def builtin_capabilities(model_id: str) -> Capabilities | None:
    matches = [prefix for prefix in BUILTIN_TABLE if model_id.startswith(prefix)]
    return BUILTIN_TABLE[max(matches, key=len)] if matches else None


@dataclass(frozen=True)
class ModelSettings:
    """One model's request settings and what the start-up check learnt about it."""

    requested: str  # the model id the run asks for
    thinking: dict | None  # sent as ``thinking``; None = the field is left out
    effort: str | None  # sent as ``output_config.effort``; None = not sent
    max_tokens: int
    source: str  # "models_api" | "builtin_table" | "default"
    lifecycle: str | None = None  # "active" | "deprecated" | "retired" (None: the API did not say)
    retires_at: str | None = None
    display_name: str | None = None
    model_max_tokens: int | None = None
    capabilities: dict = field(default_factory=dict)  # {"thinking": [...], "effort": [...]} as used

    def request_params(self) -> dict:
        """The keyword arguments of ``messages.create`` these settings add (model included)."""
        params: dict[str, Any] = {"model": self.requested, "max_tokens": self.max_tokens}
        if self.thinking is not None:
            params["thinking"] = dict(self.thinking)
        if self.effort is not None:
            params["output_config"] = {"effort": self.effort}
        return params

    def describe(self) -> str:
        thinking = self.thinking["type"] if self.thinking else "left out (adaptive)"
        return (f"{self.requested}: thinking {thinking}, effort {self.effort or 'not sent'}, "
                f"max_tokens {self.max_tokens} (from {self.source})")

    def to_json(self) -> dict:
        return asdict(self)


def choose_settings(model_id: str, caps: Capabilities | None, *, source: str, effort: str | None = None,
                    model_max_tokens: int | None = None, **info: Any) -> ModelSettings:
    """Apply the rule of the module docstring. ``caps`` None → :data:`BUILTIN_TABLE`, else defaults.

    Raises :class:`UnsupportedEffort` when ``effort`` is not a level the model supports."""
    if caps is None:
        caps = builtin_capabilities(model_id)
        source = "builtin_table" if caps is not None else "default"
    ceiling = model_max_tokens or THINKING_MAX_TOKENS
    if caps is None:
        if effort is not None:  # nothing says which levels it takes: do not guess
            raise UnsupportedEffort(model_id, effort, ())
        thinking, chosen_effort = None, None
        max_tokens = min(THINKING_MAX_TOKENS, ceiling)
    else:
        if effort is not None and effort not in caps.effort:
            raise UnsupportedEffort(model_id, effort, caps.effort)
        if "disabled" in caps.thinking:
            thinking = {"type": "disabled"}
        elif "between_tools" in caps.thinking:
            thinking = {"type": "between_tools"}
        else:
            thinking = None
        if thinking is None:
            chosen_effort = effort or (caps.effort[0] if caps.effort else None)
            max_tokens = min(THINKING_MAX_TOKENS, ceiling)
        else:
            chosen_effort = effort
            max_tokens = min(ANSWER_MAX_TOKENS, ceiling)
    used = {"thinking": sorted(caps.thinking), "effort": list(caps.effort)} if caps is not None else {}
    return ModelSettings(requested=model_id, thinking=thinking, effort=chosen_effort, max_tokens=max_tokens,
                         source=source, model_max_tokens=model_max_tokens, capabilities=used, **info)


# --------------------------------------------------------------------------- the Message Batches API

_NOT_CREATED = frozenset({429, 503, 529})  # a create answered so created nothing: it may be tried again
# An errored entry with one of these error types is worth re-submitting once (name → the judge error kind).
TRANSIENT_BATCH_ERRORS = {"overloaded_error": "overloaded", "api_error": "server_error",
                          "rate_limit_error": "rate_limit", "timeout_error": "timeout"}


class MessageBatches:
    """``--judge-batch``'s transport (:class:`components.run.calls.judge_batch.BatchAPI`) over the
    Message Batches API: the same request settings as a sequential call, half price."""

    def __init__(self, provider: AnthropicProvider, settings: ModelSettings) -> None:
        self.provider, self.settings = provider, settings
        self.model = settings.requested
        self.max_line_bytes = provider.config.max_body_bytes

    def request(self, custom_id: str, prompt: str) -> dict:
        """One batch entry: the same request as a sequential call (:meth:`AnthropicProvider.complete`)."""
        return {"custom_id": custom_id, "params": {**self.settings.request_params(),
                                                   "messages": [{"role": "user", "content": prompt}]}}

    def _error(self, err: BaseException, what: str) -> JudgeError:
        import anthropic

        if isinstance(err, JudgeError):
            return err
        if isinstance(err, anthropic.APIStatusError) and err.status_code in NO_ENDPOINT and what == "create":
            return JudgeError("not_found", f"the endpoint has no Message Batches API ({err.status_code} on "
                              "/v1/messages/batches): run without --judge-batch", fatal=True)
        judge_err = self.provider.classify_error(err, self.model)
        if isinstance(err, anthropic.APIStatusError) and err.status_code == 404:
            judge_err = JudgeError("not_found", "the Message Batches API does not know this batch (404): it was "
                                   "deleted, or belongs to another key or workspace", fatal=True)
        return judge_err

    @staticmethod
    def _status(batch: Any) -> BatchStatus:
        return BatchStatus(batch.id, batch.processing_status, batch.request_counts.model_dump(),
                           batch.processing_status == "ended")

    def create(self, requests: list[dict]) -> BatchStatus:
        """Create one batch. The SDK does not retry it (a timeout may have created the batch):
        raises :class:`CreateFailed` with ``retryable`` when the API answered that nothing was created."""
        import anthropic

        client = self.provider.batch_client(max_retries=0)
        try:
            return self._status(client.messages.batches.create(requests=requests))
        except (anthropic.APITimeoutError, anthropic.APIConnectionError, Unretried) as err:
            timed_out = isinstance(err, anthropic.APITimeoutError) or getattr(err, "kind", None) == "timeout"
            kind = "timeout" if timed_out else "connection"
            raise CreateFailed(kind, "the create call of a batch got no answer; the API may have created the batch "
                               "all the same (it is not created again: see the Batches page of the Console before "
                               "--resume submits these questions anew)", fatal=False) from None
        except Exception as err:  # noqa: BLE001 - every failure becomes a JudgeError
            judge_err = self._error(err, "create")
            raise CreateFailed(judge_err.kind, str(judge_err), fatal=judge_err.fatal,
                               retry_after=judge_err.retry_after,
                               retryable=getattr(err, "status_code", None) in _NOT_CREATED) from None

    def retrieve(self, batch_id: str) -> BatchStatus:
        try:
            return self._status(self.provider.client().messages.batches.retrieve(batch_id))
        except Exception as err:  # noqa: BLE001
            raise self._error(err, "retrieve") from None

    def results(self, batch_id: str, expected: int) -> Iterator[bytes | Skipped]:
        """The raw result lines of an ended batch (:func:`~components.run.calls.judge_batch.result_lines`):
        a line over the one-reply cap is discarded, and the reading stops past a budget of
        ``2 x expected + RESULTS_BUDGET_SLACK_LINES`` line caps (decoded bytes; the transfer's own
        cap is one line cap above it, so the budget is what stops a stream that does not end)."""
        cap = self.max_line_bytes
        budget = (2 * expected + RESULTS_BUDGET_SLACK_LINES) * cap
        client = self.provider.batch_client(max_body_bytes=budget + cap)
        try:
            with client.messages.batches.with_streaming_response.results(batch_id) as response:
                yield from result_lines(response.iter_bytes(), cap, budget)
        except JudgeError:
            raise
        except Exception as err:  # noqa: BLE001
            raise self._error(err, "results") from None

    def entry(self, batch_id: str, line: object) -> BatchEntry | None:
        """A :class:`BatchEntry` from one decoded results line; None when it names no custom id."""
        if not isinstance(line, dict) or not isinstance(line.get("custom_id"), str):
            return None
        cid = line["custom_id"]
        result = line.get("result") if isinstance(line.get("result"), dict) else {}
        kind = result.get("type")
        if kind == "succeeded":
            try:
                reply = parse_message(result.get("message"), request_id=f"{batch_id}:{cid}",
                                      cost=self.provider.cost(self.model, batch=True))
            except JudgeError as err:
                return BatchEntry("errored", batch_id, cid, error_type=err.kind, message=str(err))
            return BatchEntry("succeeded", batch_id, cid, reply=reply)
        if kind == "errored":
            outer = result.get("error") if isinstance(result.get("error"), dict) else {}
            inner = outer.get("error") if isinstance(outer.get("error"), dict) else outer
            error_type = str(inner.get("type") or "error")[:100]
            return BatchEntry("errored", batch_id, cid, error_type=error_type,
                              message=str(inner.get("message") or "")[:300],
                              transient=error_type in TRANSIENT_BATCH_ERRORS)
        if kind in ("expired", "canceled"):
            return BatchEntry(kind, batch_id, cid)
        return BatchEntry("errored", batch_id, cid, error_type="bad_response",
                          message=f"a result of unknown type {str(kind)[:50]!r}")
