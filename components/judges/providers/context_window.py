"""A model's context window on a server people run themselves (llama.cpp, vLLM): what the server says
the window is, the reply cap that fits in it, and the error reply that says a prompt did not fit.

* **The window.** llama.cpp's server says it in ``GET /props`` (``default_generation_settings.n_ctx``,
  or ``n_ctx`` at the top in older builds), vLLM in each model of ``GET /v1/models``
  (``max_model_len``). :func:`window_from_props` and :func:`window_from_model` read them; anything
  else (no such field, not a positive whole number) is no window.
* **The reply cap.** A model the project does not know is asked for at most :data:`DEFAULT_CAP`
  tokens, and never more than the window less the prompt's estimate (:func:`reply_cap`): a reply cap
  the size of the window made a small model loop in nested JSON for minutes, and a cap past what is
  left of the window is refused outright by some servers. The prompt's estimate is the project's
  approximation, one token per :data:`CHARS_PER_TOKEN` characters, rounded up.
* **The refusal.** :func:`is_refusal` recognises the ways servers say a prompt passed the window:
  llama.cpp's ``exceed_context_size_error``, OpenAI's ``context_length_exceeded``, vLLM's 400 "This
  model's maximum context length is N tokens" and Anthropic's 400 "prompt is too long: N tokens > M
  maximum". Such a prompt costs its own question only
  (``grade_error`` ``context_window_exceeded: …``), never the run.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping

DEFAULT_CAP = 1024  # the reply cap of a model the project does not know (a grade and a sentence of reasoning)
CHARS_PER_TOKEN = 4.0  # the project's approximation of a prompt's tokens (components/run/estimate.py)
REFUSAL_CODES = frozenset({"exceed_context_size_error", "context_length_exceeded"})
_VLLM = re.compile(r"maximum context length is \d[\d,]* tokens", re.IGNORECASE)
_LLAMA_CPP = re.compile(r"exceeds the available context size", re.IGNORECASE)
_ANTHROPIC = re.compile(r"prompt is too long: \d+ tokens > \d+ maximum", re.IGNORECASE)


def _whole(value: object) -> int | None:
    """``value`` when it is a positive whole number of tokens, else None."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value if value > 0 else None


def window_from_props(doc: object) -> int | None:
    """The window a llama.cpp ``GET /props`` body gives (``default_generation_settings.n_ctx``, else
    ``n_ctx``), or None when it gives none."""
    if not isinstance(doc, Mapping):
        return None
    settings = doc.get("default_generation_settings")
    if isinstance(settings, Mapping) and (window := _whole(settings.get("n_ctx"))) is not None:
        return window
    return _whole(doc.get("n_ctx"))


def window_from_model(record: object) -> int | None:
    """The window a model record of ``GET /v1/models`` gives (vLLM's ``max_model_len``), or None."""
    if isinstance(record, Mapping):
        return _whole(record.get("max_model_len"))
    extra = getattr(record, "model_extra", None)  # the SDK keeps a field it does not know here
    if isinstance(extra, Mapping):
        return _whole(extra.get("max_model_len"))
    return _whole(getattr(record, "max_model_len", None))


def props_url(base_url: str) -> str:
    """The address of llama.cpp's ``/props`` for a base URL such as ``http://127.0.0.1:8097/v1`` (the
    server's root, not its ``/v1``)."""
    return f"{base_url.rstrip('/').removesuffix('/v1')}/props"


def prompt_estimate(*texts: str) -> int:
    """The tokens of a prompt made of ``texts``: ceil(characters / :data:`CHARS_PER_TOKEN`)."""
    return math.ceil(sum(len(t) for t in texts) / CHARS_PER_TOKEN)


ESTIMATE_MARGIN = 1.25  # the prompt's estimate may fall short of the server's count (code, other languages)
MIN_REPLY = 64  # the margin never cuts the cap below this (a grade and a short reason)


def reply_cap(cap: int, window: int | None, estimate: int) -> int | None:
    """The reply cap for a prompt of ``estimate`` tokens: ``cap``, never over what the window leaves once
    the estimate is taken :data:`ESTIMATE_MARGIN` times (a server such as vLLM refuses a prompt whose
    tokens plus the cap pass the window, and characters / 4 may count too few), nor below :data:`MIN_REPLY`
    where the window leaves that much; None when the estimate alone fills the window (the prompt does not
    fit). No window: ``cap``."""
    if window is None:
        return cap
    left = window - estimate
    if left <= 0:
        return None
    with_margin = window - math.ceil(estimate * ESTIMATE_MARGIN)
    return min(cap, max(with_margin, min(MIN_REPLY, left)))


def is_refusal(status: int, body: object, message: str) -> bool:
    """Whether an error reply (``status``, its decoded ``body``, the server's ``message``) says the
    prompt passed the model's context window (module docstring)."""
    if not 400 <= status < 500:
        return False
    data = body.get("error", body) if isinstance(body, Mapping) else None
    if isinstance(data, Mapping) and {str(data.get("type")), str(data.get("code"))} & REFUSAL_CODES:
        return True
    text = message or ""
    return any(code in text for code in REFUSAL_CODES) or any(p.search(text) for p in (_VLLM, _LLAMA_CPP, _ANTHROPIC))
