"""The ``openai`` judge provider: any OpenAI-compatible Chat Completions endpoint, over the official
``openai`` SDK (an optional extra: ``pip install -e ".[openai]"``).

OpenAI's own API and the servers people run locally — vLLM, llama.cpp's server, Ollama, LM Studio,
a LiteLLM proxy — all speak Chat Completions, so one provider serves them all:
``BENCHMARK_JUDGE_MODEL=openai/<model>``, with ``OPENAI_BASE_URL`` for another endpoint than the
public API and ``OPENAI_API_KEY`` (optional when a base URL is set: a local server is sent a
placeholder key). The judge is the project's :class:`~components.judges.retrieval_grader.RetrievalGrader`
over :class:`ModelClient` (same prompt, same parser, same rows as any other judge); chunk relevance and
the query rewriter use the same client.

* :meth:`OpenAIProvider.check_model` — the start-up check, before the corpus is loaded: asks the
  Models API (``client.models.retrieve``). An unknown model (404 while ``/v1/models`` lists others)
  raises :class:`InputError` naming a few ids the server has; a server that lists the model but
  cannot retrieve it (llama.cpp) is fine; a server without ``/v1/models`` (404/405/501 on the
  listing too) goes on with the built-in table; 401/403 raise :class:`InputError` naming
  ``OPENAI_API_KEY``; an unreachable server raises a fatal :class:`JudgeError`.
* :meth:`OpenAIProvider.model` → a :class:`ModelClient` (the :class:`~components.judges.llm.LLM`
  protocol): ``complete(prompt) -> LLMReply`` with the reply's text, ``finish_reason`` in the words
  the grader reads (``length`` → ``max_tokens``, ``content_filter`` → ``refusal``, ``stop`` →
  ``end_turn``), the model id the reply names, ``x-request-id``, token usage and its price.

**Request shape per model.** Models change under a benchmark, so no request shape is hard-coded
for all of them. The Models API of Chat Completions servers says nothing about what a model
accepts, so the family of the model id (:data:`FAMILIES`, longest prefix of the id's last path
segment) chooses:

1. reasoning models (``o1*``, ``o3*``, ``o4*``, ``gpt-5*``) take ``max_completion_tokens`` =
   :data:`REASONING_MAX_TOKENS` (room to reason, then answer) and no ``temperature``; an effort
   asked for (``BENCHMARK_JUDGE_EFFORT``) is sent as ``reasoning_effort``;
2. other models take ``max_tokens`` (:data:`ANSWER_MAX_TOKENS` for a known family,
   :data:`DEFAULT_MAX_TOKENS` for a model no family names, or ``OPENAI_MAX_TOKENS`` when set; for
   such a model on a server people run, never more than the context window the server says less the
   prompt's estimate: :mod:`~components.judges.providers.context_window`) and ``temperature`` 0;
3. the judge asks for JSON mode (``response_format={"type": "json_object"}``) when the family
   supports it or the family is unknown, with one system line (:data:`JSON_MODE_INSTRUCTION`) so
   that the chunk-relevance prompt's JSON *list* comes back as ``{"scores": [...]}`` (an object is
   all JSON mode allows; the relevance parser reads the list there). The query rewriter asks for
   plain text.

And when a server refuses a part of that shape, the run adapts instead of stopping: a 400 that
names ``response_format`` (or JSON mode) switches that model to plain text; one that says
``max_tokens`` is not supported switches to ``max_completion_tokens``; one that says ``temperature``
is not supported drops it. Each is logged once, the call is tried again once, and the rest of the
run keeps the new shape. ``run.judge`` records the shape the run ended with
(:meth:`OpenAIProvider.describe`): ``json_mode``, ``token_parameter``, ``max_tokens``,
``temperature``, ``reasoning_effort``, ``family``, ``settings_source`` (``models_api`` when the
Models API knows the model, ``builtin_table`` / ``default`` on a server without it, as the family
was or was not in the table), ``fallbacks`` and the base URL's host (never a password).

**Bounds.** The timeout is a deadline for the whole attempt, from sending the request to the reply's
last byte (headers that never come are cut too), and a reply body over ``max_body_bytes`` (default
:data:`~components.judges.providers.transport.MAX_BODY_BYTES`) is a bad response. The SDK retries
408/409/429/5xx and a reset connection ``max_retries`` times, never a timed-out attempt nor a refused
connection (:class:`~components.judges.providers.transport.Unretried`), and obeys ``retry-after`` up to
two minutes; here it waits at most ``max_retry_wait_s``: a longer ``retry-after`` is not retried by the
SDK at all, and its value is kept on the error as ``retry_after`` for the run's retry pass. Every
failure becomes a :class:`JudgeError`, transient or fatal; no message contains the key. The SDK is
imported on first use: a run with another judge never pays for it, nor needs it. The bounds, the
retry-after cap and the error taxonomy are the shared transport's
(:mod:`components.judges.providers.transport`); the SDK has no middleware, so each ``send`` of its
HTTP client is bounded as one attempt.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from loguru import logger

from components.judges.llm import CONTEXT_WINDOW, LLMReply, OutputCap, clean_text, non_negative_int
from components.judges.providers import ModelChoice, Variable, context_window, register_provider
from components.judges.providers.transport import (BodyLimit, SDKProvider, TransportConfig, attempt_http_client,
                                                   rate_limit)
from utils.errors import InputError, JudgeError
from utils.pricing import Price, PriceTable
from utils.settings import check_base_url, check_key, check_model_id

if TYPE_CHECKING:
    from components.judges.settings import Settings

INSTALL_HINT = 'the openai judge needs the openai package: pip install -e ".[openai]"'
PUBLIC_API = "https://api.openai.com/v1"
NO_KEY = "no-key"  # sent to a server reached through OPENAI_BASE_URL when no key is set (the SDK needs one)
DEFAULT_JUDGE_MODEL = "gpt-5.4"
DEFAULT_REWRITER_MODEL = "gpt-5.4-mini"
ANSWER_MAX_TOKENS = 1024  # a grade and a sentence of reasoning, or a list of k scores
DEFAULT_MAX_TOKENS = context_window.DEFAULT_CAP  # a model no family names: within its window (context_window.py)
REASONING_MAX_TOKENS = 16_000  # reasoning tokens count against max_completion_tokens, then the answer
REASONING_EFFORTS = ("low", "medium", "high", "xhigh")  # BENCHMARK_JUDGE_EFFORT levels sent as reasoning_effort
JSON_MODE_INSTRUCTION = ('Reply with one JSON object and nothing else. Where the task asks for a JSON list, reply '
                         'with the object {"scores": <that list>}.')
FINISH_REASONS = {"stop": "end_turn", "length": "max_tokens", "content_filter": "refusal", "tool_calls": "tool_use",
                  "function_call": "tool_use"}
LISTED_IDS_SHOWN = 5

# Standard-tier prices in US dollars per million tokens, from OpenAI's pricing page as reported on
# 2026-06-04 (TokenMix Research Lab, "OpenAI API Cost 2026", verified that day against OpenAI's
# pricing page; the same figures in the api-evangelist/openai plans file of 2026-05-22). Cached input
# costs a tenth of the input price for these models (the pro models have no cached price; they
# report no cached tokens). Only models with a published price are here: any other model (every
# local one) has no price, and the run says so next to ``cost_usd: null``.
PRICES = PriceTable(
    provider="openai", as_of="2026-06-04",
    prices={"gpt-5.5": Price(5.00, 30.00), "gpt-5.5-pro": Price(30.00, 180.00),
            "gpt-5.4": Price(2.50, 15.00), "gpt-5.4-pro": Price(30.00, 180.00),
            "gpt-5.4-mini": Price(0.75, 4.50), "gpt-5.4-nano": Price(0.20, 1.25)},
    cache_read_multiplier=0.10)


@dataclass(frozen=True)
class Family:
    """What a model family accepts, in the two respects the request shape depends on."""

    reasoning: bool  # max_completion_tokens, no temperature, reasoning_effort
    json_mode: bool  # response_format={"type": "json_object"}


# Model family (id prefix) → what it accepts. Longest prefix wins; a model in none is "default".
FAMILIES: dict[str, Family] = {
    "gpt-5": Family(reasoning=True, json_mode=True),
    "o4": Family(reasoning=True, json_mode=True),
    "o3": Family(reasoning=True, json_mode=True),
    "o1": Family(reasoning=True, json_mode=True),
    "o1-mini": Family(reasoning=True, json_mode=False),
    "o1-preview": Family(reasoning=True, json_mode=False),
    "gpt-4.1": Family(reasoning=False, json_mode=True),
    "gpt-4o": Family(reasoning=False, json_mode=True),
    "gpt-4-turbo": Family(reasoning=False, json_mode=True),
    "gpt-4": Family(reasoning=False, json_mode=False),
    "gpt-3.5-turbo": Family(reasoning=False, json_mode=True),
}


def family_of(model_id: str) -> str | None:
    """The :data:`FAMILIES` prefix of ``model_id`` (of its last path segment: ``openai/gpt-4o`` is
    ``gpt-4o``), None when no family names it."""
    name = model_id.rsplit("/", 1)[-1].lower()
    matches = [prefix for prefix in FAMILIES if name.startswith(prefix)]
    return max(matches, key=len) if matches else None


def _max_tokens(raw: str | None) -> int:
    """``OPENAI_MAX_TOKENS``: a whole number of tokens from 1 to :data:`REASONING_MAX_TOKENS`."""
    text = (raw or "").strip()
    if not text:
        return DEFAULT_MAX_TOKENS
    if not text.isdigit() or not 1 <= int(text) <= REASONING_MAX_TOKENS:
        raise InputError(f"OPENAI_MAX_TOKENS={raw!r} is not a number of tokens from 1 to {REASONING_MAX_TOKENS:,}: set "
                         f"it to e.g. {DEFAULT_MAX_TOKENS}, or unset it")
    return int(text)


def _model_variable(role: str) -> str:
    """The variable that names the model of ``role`` (``BENCHMARK_JUDGE_MODEL=openai/<model>``)."""
    return "BENCHMARK_REWRITER_MODEL" if role == "rewriter" else "BENCHMARK_JUDGE_MODEL"


def import_openai():
    """The ``openai`` SDK; :class:`InputError` with the install command when it is missing."""
    try:
        import openai
    except ImportError:
        raise InputError(INSTALL_HINT) from None
    return openai


# --------------------------------------------------------------------------- request shape


@dataclass(frozen=True)
class RequestShape:
    """One model's request for one role, and where it came from (module docstring)."""

    role: str
    model: str  # the model id the run asks for
    token_parameter: str  # "max_tokens" | "max_completion_tokens"
    max_tokens: int
    temperature: float | None  # None: not sent
    json_mode: bool
    reasoning_effort: str | None  # None: not sent
    family: str | None  # the FAMILIES prefix that chose the shape; None: no family names the model
    source: str  # "models_api" | "builtin_table" | "default"
    owned_by: str | None = None  # what the Models API says of the model
    fallbacks: tuple[str, ...] = ()  # the parts of the shape a server refused during the run
    context_window: int | None = None  # the window the server says the model has (a model no family names)
    window_source: str | None = None  # "props" (llama.cpp's GET /props) | "models_api" (vLLM's max_model_len)

    def reply_cap(self, prompt: str) -> int:
        """The reply cap for ``prompt``: :attr:`max_tokens`, never over the window less the prompt's
        estimate. Raises a transient ``context_window_exceeded`` :class:`JudgeError` when the estimate
        alone fills the window (the question costs no call)."""
        system = JSON_MODE_INSTRUCTION if self.json_mode else ""
        estimate = context_window.prompt_estimate(system, prompt)
        cap = context_window.reply_cap(self.max_tokens, self.context_window, estimate)
        if cap is None:
            raise JudgeError(CONTEXT_WINDOW, f"the prompt (about {estimate:,} tokens) does not fit the context window "
                             f"of {self.model} ({self.context_window:,} tokens, as the server says): not sent",
                             fatal=False)
        return cap

    def request_params(self, prompt: str) -> dict:
        """The keyword arguments of ``chat.completions.create`` for ``prompt`` (model included)."""
        messages: list[dict] = []
        if self.json_mode:
            messages.append({"role": "system", "content": JSON_MODE_INSTRUCTION})
        messages.append({"role": "user", "content": prompt})
        params: dict[str, Any] = {"model": self.model, "messages": messages,
                                  self.token_parameter: self.reply_cap(prompt)}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.json_mode:
            params["response_format"] = {"type": "json_object"}
        if self.reasoning_effort is not None:
            params["reasoning_effort"] = self.reasoning_effort
        return params

    def details(self) -> dict:
        """The shape in the words of ``run.judge``."""
        return {"token_parameter": self.token_parameter, "max_tokens": self.max_tokens,
                "temperature": self.temperature, "json_mode": self.json_mode,
                "json_mode_instruction": JSON_MODE_INSTRUCTION if self.json_mode else None,
                "reasoning_effort": self.reasoning_effort, "family": self.family, "settings_source": self.source,
                "owned_by": self.owned_by, "fallbacks": list(self.fallbacks), "context_window": self.context_window,
                "context_window_source": self.window_source}

    def describe(self) -> str:
        text = "JSON mode" if self.json_mode else "plain text"
        extra = f", temperature {self.temperature:g}" if self.temperature is not None else ""
        effort = f", reasoning_effort {self.reasoning_effort}" if self.reasoning_effort else ""
        window = f", context window {self.context_window:,}" if self.context_window else ""
        return (f"{self.model}: {self.token_parameter} {self.max_tokens}{extra}{effort}, {text}{window} "
                f"(family {self.family or 'unknown'}, from {self.source})")


def choose_shape(role: str, model_id: str, *, models_api: bool, effort: str | None = None,
                 owned_by: str | None = None, default_cap: int = DEFAULT_MAX_TOKENS) -> RequestShape:
    """The request for ``model_id`` in ``role`` (rules of the module docstring). ``models_api``:
    the server's Models API knows the model. Raises :class:`InputError` for an effort the model
    does not take."""
    family = family_of(model_id)
    spec = FAMILIES.get(family) if family else None
    source = "models_api" if models_api else ("builtin_table" if spec is not None else "default")
    if effort is not None:
        if spec is None or not spec.reasoning:
            raise InputError(f"BENCHMARK_JUDGE_EFFORT={effort}: model {model_id} takes no reasoning effort (the "
                             "o-series and gpt-5 models do): unset BENCHMARK_JUDGE_EFFORT")
        if effort not in REASONING_EFFORTS:
            raise InputError(f"BENCHMARK_JUDGE_EFFORT={effort}: model {model_id} takes the reasoning efforts "
                             f"{', '.join(REASONING_EFFORTS)}: set one of those, or unset it")
    json_mode = role == "judge" and (spec is None or spec.json_mode)
    if spec is not None and spec.reasoning:
        return RequestShape(role, model_id, "max_completion_tokens", REASONING_MAX_TOKENS, None, json_mode, effort,
                            family, source, owned_by)
    max_tokens = ANSWER_MAX_TOKENS if spec is not None else default_cap
    return RequestShape(role, model_id, "max_tokens", max_tokens, 0.0, json_mode, None, family, source, owned_by)


def _refused(text: str, *names: str) -> bool:
    return any(n in text for n in names) and any(
        w in text for w in ("unsupported", "not supported", "does not support", "only the default"))


def adapted_shape(shape: RequestShape, status: int, text: str) -> tuple[RequestShape, str, str] | None:
    """After a 400 (or 422) whose message is ``text`` (lower case): the shape to try again with,
    what the server refused and what is sent instead; None when the error is not about a part of
    the shape that can be changed."""
    if status not in (400, 422):
        return None
    if shape.json_mode and any(n in text for n in ("response_format", "json_object", "json mode", "json_mode")):
        return (replace(shape, json_mode=False, fallbacks=(*shape.fallbacks, "json_mode")),
                "refused JSON mode (response_format)", "plain text from now on")
    if shape.token_parameter == "max_tokens" and _refused(text, "max_tokens"):
        return (replace(shape, token_parameter="max_completion_tokens", max_tokens=REASONING_MAX_TOKENS,
                        fallbacks=(*shape.fallbacks, "max_tokens")),
                "does not take max_tokens", f"max_completion_tokens {REASONING_MAX_TOKENS} from now on")
    if shape.token_parameter == "max_completion_tokens" and _refused(text, "max_completion_tokens"):
        return (replace(shape, token_parameter="max_tokens", fallbacks=(*shape.fallbacks, "max_completion_tokens")),
                "does not take max_completion_tokens", "max_tokens from now on")
    if shape.temperature is not None and _refused(text, "temperature"):
        return (replace(shape, temperature=None, fallbacks=(*shape.fallbacks, "temperature")),
                f"does not take temperature {shape.temperature:g}", "the server's default from now on")
    return None


# --------------------------------------------------------------------------- the reply


def parse_completion(data: object, request_id: str | None = None, *,
                     cost: Callable[[LLMReply], float | None] | None = None) -> LLMReply:
    """An :class:`LLMReply` from a Chat Completions response body (already decoded JSON), priced by
    ``cost`` when the reply counts its tokens. Raises a transient ``bad_response``
    :class:`JudgeError` when it is not a chat completion."""
    choices = data.get("choices") if isinstance(data, dict) else None
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, dict) else None
    if not isinstance(message, dict):
        raise JudgeError("bad_response", "the judge API sent a reply that is not a chat completion (bad body)",
                         fatal=False)
    content = message.get("content")
    if isinstance(content, list):  # content parts, as some servers send them
        text = "".join(part["text"] for part in content if isinstance(part, dict) and part.get("type") == "text"
                       and isinstance(part.get("text"), str))
    else:
        text = content if isinstance(content, str) else ""
    finish = first.get("finish_reason")
    stop = FINISH_REASONS.get(finish, finish) if isinstance(finish, str) else None
    refusal = message.get("refusal")
    if isinstance(refusal, str) and refusal.strip():
        stop, text = "refusal", text or refusal
    usage = data.get("usage") if isinstance(data.get("usage"), dict) else {}
    prompt_tokens = non_negative_int(usage.get("prompt_tokens"))
    details = usage.get("prompt_tokens_details") if isinstance(usage.get("prompt_tokens_details"), dict) else {}
    cached = non_negative_int(details.get("cached_tokens"))
    timings = data.get("timings") if isinstance(data.get("timings"), dict) else {}
    fresh, from_cache = non_negative_int(timings.get("prompt_n")), non_negative_int(timings.get("cache_n"))
    if fresh is not None and from_cache is not None:  # llama.cpp's own count: evaluated, and read from its cache
        input_tokens, cached = fresh, from_cache or None
    elif prompt_tokens is None or cached is None:
        input_tokens, cached = prompt_tokens, None
    elif cached <= prompt_tokens:
        input_tokens = prompt_tokens - cached  # prompt_tokens counts the cached ones too
    else:  # a server whose prompt_tokens counts only what was not in its cache
        input_tokens = prompt_tokens
    model = data.get("model")
    reply = LLMReply(text=clean_text(text), stop_reason=stop, model=model if isinstance(model, str) else None,
                     request_id=request_id, input_tokens=input_tokens,
                     output_tokens=non_negative_int(usage.get("completion_tokens")), cache_read_input_tokens=cached)
    if cost is None or reply.input_tokens is None or reply.output_tokens is None:
        return reply  # no usage block, no cost
    return replace(reply, cost_usd=cost(reply))


_DURATION = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_UNIT_SECONDS = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}


def _duration_s(text: str | None) -> float | None:
    """Seconds of a duration as OpenAI writes it (``20ms``, ``1s``, ``6m0s``, ``1h2m3.5s``); None
    when it is not one."""
    if not text or not re.fullmatch(r"(?:\d+(?:\.\d+)?(?:ms|h|m|s))+", text.strip()):
        return None
    return sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(text.strip()))


def rate_limit_headers(headers: Mapping[str, str], reply: LLMReply) -> dict | None:
    """What the ``x-ratelimit-*`` headers of a reply say is left of the server's rate limits, in the
    words of the anthropic provider's (:func:`~components.judges.providers.transport.rate_limit`;
    the requests' limit resets after a duration). None when the reply has none (local servers send none)."""
    size = (reply.input_tokens or 0) + (reply.cache_read_input_tokens or 0) + (reply.output_tokens or 0)
    return rate_limit(headers, "x-ratelimit-remaining-requests", "x-ratelimit-remaining-tokens", call_tokens=size,
                      reset_s=_duration_s(headers.get("x-ratelimit-reset-requests")))


# --------------------------------------------------------------------------- the provider


@dataclass(frozen=True)
class ProviderConfig(TransportConfig):
    """The key, the endpoint and the bounds of every call (:class:`TransportConfig`)."""

    api_key: str | None = None  # None: a server reached through base_url that needs no key
    base_url: str | None = None  # None: the public OpenAI API
    max_tokens: int = DEFAULT_MAX_TOKENS  # OPENAI_MAX_TOKENS: the reply cap of a model no family names

    @property
    def host(self) -> str:
        """The endpoint's host (and port), for messages and ``run.judge``: never a password."""
        parts = urlsplit(self.base_url or PUBLIC_API)
        try:
            port = parts.port
        except ValueError:
            port = None
        host = parts.hostname or "?"
        host = f"[{host}]" if ":" in host else host  # an IPv6 address
        return f"{host}:{port}" if port else host


@register_provider
class OpenAIProvider(SDKProvider):
    """The SDK client, built once per run from :class:`ProviderConfig` (module docstring)."""

    name = "openai"
    label = "a model via an OpenAI-compatible Chat Completions API"
    title = "an OpenAI-compatible judge"
    variables = (
        Variable("OPENAI_API_KEY", "the openai judge's key (never written anywhere); optional with OPENAI_BASE_URL",
                 secret=True),
        Variable("OPENAI_BASE_URL", "an OpenAI-compatible endpoint such as a local server, e.g. "
                 "http://127.0.0.1:8000/v1 (default: the OpenAI API; its password, if any, is a secret)"),
        Variable("OPENAI_MAX_TOKENS", f"the reply cap, in tokens, of a model no family names (default "
                 f"{DEFAULT_MAX_TOKENS}); never over the context window the server says, less the prompt"),
    )
    default_models = {"judge": DEFAULT_JUDGE_MODEL, "rewriter": DEFAULT_REWRITER_MODEL}
    is_default = False  # never the judge unless asked for
    prices = PRICES
    packages = ("openai",)
    key_variable = "OPENAI_API_KEY"
    base_url_variable = "OPENAI_BASE_URL"
    public_endpoint = PUBLIC_API
    refused_statuses = (400, 422)
    says_unretried_wait = False  # its message names the attempts, as it always has

    def __init__(self, config: ProviderConfig, settings: Settings | None = None) -> None:
        super().__init__(config, settings)
        self._shapes: dict[tuple[str, str], RequestShape] = {}  # (role, model) → the shape in use
        self._listed_windows: dict[str, int] = {}  # model id → max_model_len, as GET /v1/models gave it
        self._window_said = False  # a server that does not say its window is said once

    # ------------------------------------------------------------------ the environment

    @classmethod
    def configured(cls, env: Mapping[str, str]) -> bool:
        return bool(env.get("OPENAI_API_KEY") or env.get("OPENAI_BASE_URL"))

    @classmethod
    def missing_key(cls) -> str:
        return "OPENAI_API_KEY (or OPENAI_BASE_URL for a local server)"

    @classmethod
    def knows_model(cls, model_id: str) -> bool:
        return family_of(model_id) is not None or super().knows_model(model_id)

    @classmethod
    def configure(cls, env: Mapping[str, str], models: Mapping[str, str]) -> ProviderConfig:
        key = env.get("OPENAI_API_KEY") or None
        base_url = env.get("OPENAI_BASE_URL") or None
        if key is None and base_url is None:
            raise InputError("the openai judge needs OPENAI_API_KEY for the OpenAI API, or OPENAI_BASE_URL for "
                             "another OpenAI-compatible server (e.g. http://127.0.0.1:8000/v1): set one, or "
                             "BENCHMARK_JUDGE=offline for the lexical judge")
        if key is not None:
            check_key("OPENAI_API_KEY", key)
        if base_url is not None:
            check_base_url("OPENAI_BASE_URL", base_url, PUBLIC_API)
        max_tokens = _max_tokens(env.get("OPENAI_MAX_TOKENS"))
        for role, model in models.items():
            check_model_id(_model_variable(role), model, f"openai/{cls.default_models[role]}")
        try:
            installed = importlib.util.find_spec("openai") is not None
        except (ImportError, ValueError):  # a module without a spec stands in its place
            installed = False
        if not installed:
            raise InputError(INSTALL_HINT)
        return ProviderConfig(api_key=key, base_url=base_url, max_tokens=max_tokens)

    # ------------------------------------------------------------------ the SDK client

    def sdk(self):
        return import_openai()  # lazy: only a run with this judge needs the SDK

    def make_client(self):
        openai = self.sdk()
        return openai.OpenAI(api_key=self.config.api_key or NO_KEY, base_url=self.config.base_url or PUBLIC_API,
                             max_retries=self.config.max_retries, timeout=self.config.timeout,
                             http_client=attempt_http_client(openai.DefaultHttpxClient, self.config))

    @property
    def host(self) -> str:
        return self.config.host

    @staticmethod
    def server_message(err: Any) -> str:
        """What the server said in an error reply, as it said it."""
        body = getattr(err, "body", None)
        data = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(data, dict) and isinstance(data.get("message"), str):
            return data["message"]
        if isinstance(data, str):
            return data
        return SDKProvider.server_message(err)

    # ------------------------------------------------------------------ errors

    def unknown_model_fix(self, role: str) -> str:
        return f"{_model_variable(role)}=openai/<model> to a model the server has"

    def status_error(self, err: Any, status: int, detail: str, model: str, role: str) -> JudgeError:
        body = {"type": getattr(err, "type", None), "code": getattr(err, "code", None)}
        if context_window.is_refusal(status, getattr(err, "body", None), detail) or \
                context_window.is_refusal(status, body, ""):
            return JudgeError(CONTEXT_WINDOW, f"the prompt passed the context window of {model} ({status}{detail})",
                              fatal=False)
        return super().status_error(err, status, detail, model, role)

    # ------------------------------------------------------------------ start-up check

    def _listed_models(self) -> list[str] | None:
        """The ids ``GET /v1/models`` lists; None when the server has no Models API. The windows the
        listing gives (vLLM's ``max_model_len``) are kept for :meth:`_server_window`."""
        def ids() -> list[str]:
            found = []
            for item in self.client().models.list():
                if isinstance(getattr(item, "id", None), str):
                    found.append(item.id)
                    if (window := context_window.window_from_model(item)) is not None:
                        self._listed_windows[item.id] = window
                if len(found) >= 1000:
                    break
            return found

        return self.list_models(ids)

    def _props_window(self) -> tuple[int | None, str]:
        """The window llama.cpp's ``GET /props`` gives, and what was found when it gives none."""
        import httpx2

        openai = self.sdk()
        url = context_window.props_url(self.config.base_url or PUBLIC_API)
        headers = {"authorization": f"Bearer {self.config.api_key}"} if self.config.api_key else {}
        client = attempt_http_client(openai.DefaultHttpxClient, self.config)
        try:
            response = client.get(url, headers=headers)
            if response.status_code != 200:
                return None, f"GET /props answered {response.status_code}"
            window = context_window.window_from_props(response.json())
            return window, "" if window is not None else "GET /props gives no n_ctx"
        except (httpx2.HTTPError, ValueError, BodyLimit) as err:
            return None, f"GET /props failed: {type(err).__name__}"
        finally:
            client.close()

    def _server_window(self, model_id: str, record: Any) -> tuple[int | None, str | None]:
        """The context window of ``model_id`` as the server says it (the model's record or the listing:
        ``max_model_len``; else llama.cpp's ``/props``), and where it was read; said once when the
        server does not say."""
        window = context_window.window_from_model(record) or self._listed_windows.get(model_id)
        if window is not None:
            return window, "models_api"
        window, problem = self._props_window()
        if window is not None:
            return window, "props"
        with self._lock:
            said, self._window_said = self._window_said, True
        if not said:
            logger.info("The server at {} does not say the context window of {} ({}): replies are capped at {} "
                        "tokens", self.config.host, model_id, problem, self.config.max_tokens)
        return None, None

    def check_shape(self, role: str, model_id: str, *, effort: str | None = None) -> RequestShape:
        """The start-up check of ``model_id`` for ``role`` (module docstring)."""
        models_api = True

        def missing(err: Any) -> None:  # 404/405/501: a server that lists the model but cannot retrieve it is fine
            nonlocal models_api
            listed = self._listed_models()
            if listed is None:
                models_api = False
                logger.info("The server at {} has no Models API: the request for {} follows the built-in "
                            "table", self.config.host, model_id)
            elif model_id not in listed:
                shown = ", ".join(i[:100] for i in listed[:LISTED_IDS_SHOWN]) or "none"
                more = f" (and {len(listed) - LISTED_IDS_SHOWN} more)" if len(listed) > LISTED_IDS_SHOWN else ""
                raise InputError(f"model {model_id!r} is unknown to the server at {self.config.host} "
                                 f"({err.status_code}): set {_model_variable(role)}=openai/<model> to one it has: "
                                 f"{shown}{more}") from None

        record = self.retrieve_model(model_id, missing)
        owned = getattr(record, "owned_by", None)
        owned_by = owned[:100] if isinstance(owned, str) else None
        shape = choose_shape(role, model_id, models_api=models_api, effort=effort, owned_by=owned_by,
                             default_cap=self.config.max_tokens)
        if shape.family is None and self.config.base_url is not None:  # a server people run: its window
            window, source = self._server_window(model_id, record)
            if window is not None:
                shape = replace(shape, max_tokens=min(shape.max_tokens, window), context_window=window,
                                window_source=source)
        with self._lock:
            self._shapes[(role, model_id)] = shape
        return shape

    def check_model(self, role: str, model: str, *, effort: str | None = None) -> ModelChoice:
        shape = self.check_shape(role, model, effort=effort)
        return ModelChoice(self.name, role, model, self._details(shape), native=shape, summary=shape.describe())

    def _details(self, shape: RequestShape) -> dict:
        return {**shape.details(), "base_url_host": self.config.host}

    def describe(self, choice: ModelChoice | None) -> dict:
        """``run.judge``'s details: the request shape the run ended with (after any fallback)."""
        if choice is None:
            return {}
        shape = self.shape(choice.role, choice.model) or choice.native
        return self._details(shape) if isinstance(shape, RequestShape) else dict(choice.details)

    # ------------------------------------------------------------------ calls

    def shape(self, role: str, model: str) -> RequestShape | None:
        with self._lock:
            return self._shapes.get((role, model))

    def model(self, choice: ModelChoice | RequestShape) -> ModelClient:
        shape = choice.native if isinstance(choice, ModelChoice) else choice
        with self._lock:
            self._shapes.setdefault((shape.role, shape.model), shape)
        return ModelClient(self, shape.role, shape.model)

    def cost(self, model: str):
        """The function pricing a reply of ``model``."""
        return lambda r: self.prices.cost_usd(model, r.input_tokens, r.output_tokens, None, r.cache_read_input_tokens)

    def _adapt(self, shape: RequestShape, err: BaseException) -> bool:
        """After a refused request: whether the shape changed (then the call is tried again)."""
        openai = import_openai()
        if not isinstance(err, openai.APIStatusError):
            return False
        text = f"{self.server_message(err)} {getattr(err, 'param', '') or ''} {getattr(err, 'code', '') or ''}"
        change = adapted_shape(shape, err.status_code, text.lower())
        if change is None:
            return False
        new, refused, instead = change
        key = (shape.role, shape.model)
        with self._lock:
            if self._shapes.get(key) == shape:
                self._shapes[key] = new
                logger.warning("The server at {} {} for model {} ({}): {}", self.config.host, refused, shape.model,
                               err.status_code, instead)
        return True

    def complete(self, role: str, model: str, prompt: str) -> LLMReply:
        for _ in range(4):  # the first try, and one more after each kind of fallback
            shape = self.shape(role, model) or choose_shape(role, model, models_api=False,
                                                            default_cap=self.config.max_tokens)
            try:  # x-request-id; x-ratelimit-* (rate_limit_headers)
                headers, data = self.exchange(self.client().chat.completions.with_streaming_response.create,
                                              **shape.request_params(prompt))
            except JudgeError:  # the prompt does not fit the window the server says (RequestShape.reply_cap)
                raise
            except Exception as err:  # SDK errors, our bounds, bad JSON, and transport errors it did not wrap
                judged = self.classify_error(err, model, role)
                if judged.kind != CONTEXT_WINDOW and self._adapt(shape, err):
                    continue
                raise judged from None
            reply = parse_completion(data, headers.get("x-request-id"), cost=self.cost(model))
            return replace(reply, rate_limit=rate_limit_headers(headers, reply))
        raise JudgeError("bad_request", f"the API kept refusing the request for {model}", fatal=True)


class ModelClient:
    """One model in one role: the :class:`~components.judges.llm.LLM` the grader, the chunk-relevance
    judge and the rewriter are given. Its request shape lives in the provider, so a fallback learnt
    by one call holds for the next."""

    def __init__(self, provider: OpenAIProvider, role: str, model: str) -> None:
        self.provider, self.role, self.model = provider, role, model

    @property
    def shape(self) -> RequestShape | None:
        return self.provider.shape(self.role, self.model)

    @property
    def output_cap(self) -> OutputCap | None:
        """The cap the next request sends (a fallback learnt during the run may change it)."""
        shape = self.shape
        return OutputCap(shape.token_parameter, shape.max_tokens) if shape is not None else None

    @property
    def price(self) -> Price | None:
        return self.provider.prices.price_for(self.model)

    def complete(self, prompt: str) -> LLMReply:
        return self.provider.complete(self.role, self.model, prompt)
