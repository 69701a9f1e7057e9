"""A server's ``retry-after``, for the providers that call an SDK over HTTP.

The SDKs retry a 429/5xx answer themselves, waiting what ``retry-after-ms`` or ``retry-after``
asks. A wait longer than the run allows (``BENCHMARK_RETRY_WAIT_MAX``) is the run's to decide (its
retry pass and rate-limit breaker), not the SDK's: :func:`cap_retry_after` shortens such a header to
the cap, tells the SDK not to retry (``x-should-retry: false``) and keeps the server's own figure in
:data:`ORIGINAL_HEADER`, which :func:`original_retry_after` reads back when the error is classified.
An HTTP date counts as an unbounded wait.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, MutableMapping

ORIGINAL_HEADER = "x-benchmark-original-retry-after"
_HEADERS = (("retry-after-ms", 1000.0), ("retry-after", 1.0))  # name, units per second


def cap_retry_after(headers: MutableMapping[str, str], max_wait_s: float) -> None:
    """Record the server's wait in seconds under :data:`ORIGINAL_HEADER` and cap each retry-after
    header at ``max_wait_s`` (a longer wait: capped, and the SDK told not to retry)."""
    for name, per_second in _HEADERS:
        value = headers.get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / per_second
        except ValueError:  # an HTTP date: could be any distance away
            seconds = math.inf
        headers[ORIGINAL_HEADER] = f"{seconds:g}"
        if not seconds <= max_wait_s:
            headers[name] = f"{max_wait_s * per_second:g}"
            headers["x-should-retry"] = "false"


def original_retry_after(headers: Mapping[str, str]) -> float | None:
    """The wait the server asked for, in seconds (``inf`` for a date), or None when it named none."""
    original = headers.get(ORIGINAL_HEADER)
    if original is None:
        return None
    try:
        return float(original)
    except ValueError:
        return None
