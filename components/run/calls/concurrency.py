"""How many judge calls may be in flight at once: an adaptive gate (``--concurrency N``).

Every LLM call of a concurrent run (grading, chunk relevance, repeats, the query rewriter) passes
through one :class:`Gate`. It admits at most ``limit`` calls at a time, starting at N:

* **AIMD**, like TCP: a call that ends rate-limited or overloaded (429/529) halves the limit
  (at least 1); each call that succeeds raises it by one, back up to N;
* a ``retry-after`` the server sent holds every new call until it has passed, when it is at most
  ``max_wait_s`` (the retry pass's cap); a longer one holds nothing: as in a sequential run, it is
  the circuit breaker's business, which stops the calls after a few in a row (a pool that waited
  for it would stall the run the breaker is there to end);
* the provider's rate-limit headers, when a reply carries them (``requests_remaining``,
  ``tokens_remaining``, ``reset_s``), keep the limit below what the server says is left, and hold
  new calls until the reset when nothing is left;
* ``should_stop()`` is asked while waiting: a stop admits nothing more (KeyboardInterrupt).

``peak`` is the most calls that were ever in flight together (recorded in ``run.judge.concurrency``).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from contextlib import contextmanager
from typing import Iterator

from utils.errors import InputError

RATE_LIMITED = frozenset({"rate_limit", "overloaded"})
# The most judge calls a run may keep in flight: one worker thread each, and far above what a
# provider's rate limits admit for one client (comparable tools default to 8-20).
MAX_CONCURRENCY = 256


def check_concurrency(n: object) -> int:
    """``n`` as the number of calls in flight: a whole number from 1 to :data:`MAX_CONCURRENCY`;
    raises :class:`InputError` naming the range otherwise."""
    if isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= MAX_CONCURRENCY:
        raise InputError(f"concurrency {n!r} is not a whole number from 1 to {MAX_CONCURRENCY}: give one (the judge "
                         "calls in flight at once; 1 = one question after the other)")
    return n


class Gate:
    def __init__(self, n: int, *, max_wait_s: float = 60.0, should_stop: Callable[[], bool] = lambda: False,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if n < 1:
            raise ValueError("a gate admits at least one call")
        self.n, self.limit, self.max_wait_s = n, n, max_wait_s
        self.should_stop, self.clock = should_stop, clock
        self.in_flight = 0
        self.peak = 0
        self.lowered = 0  # how many times the limit was halved
        self.hold_until = 0.0
        self._cond = threading.Condition()

    def _open(self) -> bool:
        return self.in_flight < self.limit and self.clock() >= self.hold_until

    def acquire(self) -> None:
        """Wait for a slot (and for any hold to pass); raises KeyboardInterrupt once a stop is asked."""
        with self._cond:
            while not self._open():
                if self.should_stop():
                    raise KeyboardInterrupt("stop requested")
                wait = max(0.0, self.hold_until - self.clock()) if self.in_flight < self.limit else 0.25
                self._cond.wait(timeout=min(max(wait, 0.01), 0.25))
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)

    def release(self, kind: str | None = None, retry_after: float | None = None,
                rate_limit: dict | None = None) -> None:
        """One call ended: ``kind`` is its error kind (None: it succeeded), ``retry_after`` the
        wait the server asked for, ``rate_limit`` the provider's rate-limit headers of the reply."""
        with self._cond:
            self.in_flight -= 1
            now = self.clock()
            if kind in RATE_LIMITED:
                self.limit = max(1, self.limit // 2)
                self.lowered += 1
                if retry_after is not None and retry_after <= self.max_wait_s:
                    self.hold_until = max(self.hold_until, now + retry_after)
            elif kind is None:
                self.limit = min(self.n, self.limit + 1)
                self._follow(rate_limit or {}, now)
            self._cond.notify_all()

    def _follow(self, headers: dict, now: float) -> None:
        """Stay below what the server says is left of its limits."""
        left = [v for v in (headers.get("requests_remaining"), headers.get("tokens_remaining_calls")) if v is not None]
        if not left:
            return
        remaining = min(left)
        if remaining <= 0:
            reset = headers.get("reset_s")
            self.limit = 1
            self.hold_until = max(self.hold_until, now + min(reset if reset is not None else 1.0, self.max_wait_s))
        else:
            self.limit = max(1, min(self.limit, int(remaining)))

    @contextmanager
    def call(self) -> Iterator[Callable[..., None]]:
        """``with gate.call() as done: ...; done(kind, retry_after, rate_limit)`` — a slot for one
        call; a call that raises (a fatal error, an interrupt) counts as neither success nor limit."""
        self.acquire()
        outcome: list = []
        try:
            yield lambda kind=None, retry_after=None, rate_limit=None: outcome.append((kind, retry_after, rate_limit))
        finally:
            if outcome:
                self.release(*outcome[-1])
            else:
                with self._cond:
                    self.in_flight -= 1
                    self._cond.notify_all()

    def to_json(self) -> dict:
        return {"requested": self.n, "peak": self.peak, "final_limit": self.limit, "lowered": self.lowered}
