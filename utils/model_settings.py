"""Request settings per model, chosen once at start-up from what the model accepts.

Models change under a benchmark: Claude Sonnet 5.5 answers 400 to ``thinking: {"type": "disabled"}``
(its lowest setting is ``between_tools``), Claude Opus 5.5 only thinks adaptively, Claude Haiku 4.5
has no adaptive thinking. So no request shape is hard-coded: the Models API says per model what it
accepts (``capabilities.thinking.types.*.supported``, ``capabilities.effort.*.supported``,
``max_tokens``), and :func:`choose_settings` turns that into the request.

The rule (:func:`choose_settings`):

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
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")  # lowest first
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
