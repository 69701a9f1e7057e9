"""Reading the environment: the checks and defaults shared by everything that reads a variable.

The run's own settings (:class:`components.judges.settings.Settings`) and every judge provider's
variables are checked with these, at start-up, so that a bad value gives one clear line (exit 2)
naming the variable and the fix, and no message ever shows a secret: :func:`check_key`,
:func:`check_base_url`, :func:`check_model_id`, :func:`seconds`; :func:`masked` and
:func:`url_password` for what a URL may hide; :func:`default_cache_dir` for the index cache,
:func:`default_state_dir` for the index of recent history folders.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from pathlib import Path
from urllib.parse import urlsplit

from utils.errors import InputError

DEFAULT_JUDGE_TIMEOUT_S = 30.0
LOOPBACK_JUDGE_TIMEOUT_S = 300.0  # the default for a judge server on this machine (a CPU model is slow)
MAX_JUDGE_TIMEOUT_S = 600.0  # a deadline beyond ten minutes per judge attempt is a typo, not a wish
MAX_RETRY_WAIT_S = 600.0
DEFAULT_BATCH_POLL_MAX_S = 60.0  # --judge-batch polls a batch at least this often
MAX_BATCH_POLL_S = 3600.0  # BENCHMARK_BATCH_POLL_MAX above this is refused
EFFORT_LEVELS = ("low", "medium", "high", "xhigh", "max")  # lowest first
MIN_PASSWORD_LENGTH = 4  # a shorter base-URL password is not redacted (it would blank ordinary words)


def default_cache_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_CACHE_HOME/retrieval-benchmark`` (an absolute path), else ``~/.cache/retrieval-benchmark``:
    outside the repository."""
    xdg = env.get("XDG_CACHE_HOME") or ""
    if os.path.isabs(xdg):
        return Path(xdg) / "retrieval-benchmark"
    return Path(env.get("HOME") or Path.home()) / ".cache" / "retrieval-benchmark"


def default_state_dir(env: Mapping[str, str]) -> Path:
    """``$XDG_STATE_HOME/retrieval-benchmark`` (an absolute path), else ``~/.local/state/retrieval-benchmark``:
    where the index of recent history folders lives (:mod:`utils.files.history_index`)."""
    xdg = env.get("XDG_STATE_HOME") or ""
    if os.path.isabs(xdg):
        return Path(xdg) / "retrieval-benchmark"
    return Path(env.get("HOME") or Path.home()) / ".local" / "state" / "retrieval-benchmark"


def url_password(url: str | None) -> str | None:
    """The password of ``user:password@`` in ``url`` when long enough to redact safely; never raises."""
    try:
        password = urlsplit(url or "").password
    except ValueError:
        return None
    return password if password and len(password) >= MIN_PASSWORD_LENGTH else None


def check_key(name: str, key: str) -> None:
    """A key must be printable ASCII without whitespace; the message never shows it."""
    fix = "set it to the key alone (copy it again from the console)"
    if key != key.strip():
        raise InputError(f"{name} has leading or trailing whitespace (a newline from the file it was "
                         f"read from?): {fix}")
    for i, char in enumerate(key):
        if not char.isprintable():
            raise InputError(f"{name} has a control character at position {i + 1}: {fix}")
        if char.isspace():
            raise InputError(f"{name} has whitespace at position {i + 1}: {fix}")
        if not char.isascii():
            raise InputError(f"{name} has a character that is not ASCII at position {i + 1}: {fix}")


def masked(url: str) -> str:
    """``url`` with any ``user:password@`` shown as ``***@``."""
    return re.sub(r"//[^/@]*@", "//***@", url)


def check_base_url(name: str, url: str, example: str) -> None:
    """``url`` must be an http(s) URL with a host (``example`` is shown in the fix)."""
    shown = masked(url)
    fix = f"set it like {example} or http://127.0.0.1:8080, or unset it"
    if url != url.strip() or any(c.isspace() or not c.isprintable() for c in url):
        raise InputError(f"{name}={shown!r} contains whitespace or control characters: {fix}")
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError for a port that is not a number in 0-65535
    except ValueError as err:
        raise InputError(f"{name}={shown!r} is not an http(s) URL with a host ({err}): {fix}") from None
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname:
        raise InputError(f"{name}={shown!r} is not an http(s) URL with a host: {fix}")
    if parts.netloc.endswith(":"):  # urlsplit reads "host:" as no port at all; the client would fail later
        raise InputError(f"{name}={shown!r} has an empty port (nothing after the ':'): give the port, or drop the "
                         f"':': {fix}")


def check_model_id(name: str, value: str, example: str) -> None:
    if value != value.strip() or any(c.isspace() or not c.isprintable() for c in value):
        raise InputError(f"{name}={value!r} contains whitespace or control characters: set it to a model id "
                         f"such as {example}")


def seconds(name: str, raw: str | None, default: float, low: float, high: float, above_low: bool = False) -> float:
    """``raw`` (the variable ``name``; empty: ``default``) as seconds in ``[low, high]`` (``(low, high]``
    with ``above_low``)."""
    raw = raw or f"{default:g}"
    try:
        value = float(raw)
    except ValueError:
        value = math.nan
    if not (low < value if above_low else low <= value) or not value <= high:  # also refuses nan and inf
        span = f"above {low:g} and at most {high:g}" if above_low else f"from {low:g} to {high:g}"
        raise InputError(f"{name}={raw!r} is not a number of seconds {span}: set it to e.g. {default:g}")
    return value
