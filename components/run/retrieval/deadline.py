"""The retrieval deadline: a ``retrieve()`` that never returns does not hold up the run.

Each retrieval of a run (``retrieve(query, k)`` and the reading of what it returns, cut at k) runs in
a worker thread of its own — one thread, reused from question to question, named ``retrieval-1``,
``retrieval-2`` … — and the run waits for it at most ``timeout_s`` (``retrieval_timeout`` in the API,
``--retrieval-timeout`` on the command line, default :data:`DEFAULT_RETRIEVAL_TIMEOUT_S`):

* past the deadline, the question gets a ``retrieval_error: timeout: …`` row (``--resume`` runs it
  again, as any retrieval error) and the run moves on with a new worker thread;
* the stuck thread is **abandoned**: Python cannot stop a thread, so it runs on until ``retrieve()``
  returns (its result is dropped) or the process ends (it is a daemon thread: it does not keep the
  process alive). The log names it. It is not a judge call: it takes no ``--concurrency`` slot;
* a stop (Ctrl-C) is seen while waiting.

``timeout_s`` None (``--retrieval-timeout 0``): no deadline, and ``retrieve()`` runs in the calling
thread, as it did before there was one — for a plug-in that must be called from the thread that
called its ``index()``.

What a plug-in must not do, since a retrieval may be abandoned mid-call: rely on being called from
the thread that built it, or from the same thread every time; hold a lock that the next call
needs while it may block (the next question's ``retrieve()`` starts while the abandoned one may
still run); or leave shared state half-updated when it blocks.
"""

from __future__ import annotations

import itertools
import queue
import threading
import time
from collections.abc import Callable
from typing import Any, TypeVar

from loguru import logger

from utils.errors import InputError

T = TypeVar("T")
DEFAULT_RETRIEVAL_TIMEOUT_S = 60.0
MAX_RETRIEVAL_TIMEOUT_S = 86_400.0
WAIT_STEP_S = 0.2  # the wait for a retrieval checks for a stop this often


class RetrievalTimeout(Exception):
    """A retrieval passed its deadline; ``str()`` says which thread was abandoned."""


def check_retrieval_timeout(value: object) -> float | None:
    """``retrieval_timeout`` as seconds (None or 0: no deadline); :class:`InputError` for anything
    but a number from 0 to a day."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= MAX_RETRIEVAL_TIMEOUT_S:
        raise InputError(f"retrieval timeout {value!r} is not a number of seconds from 0 to "
                         f"{MAX_RETRIEVAL_TIMEOUT_S:g}: give e.g. {DEFAULT_RETRIEVAL_TIMEOUT_S:g} (0: no deadline)")
    return float(value) or None


class _Worker:
    """One daemon thread running the jobs put to it, in order."""

    def __init__(self, name: str) -> None:
        self.jobs: queue.SimpleQueue = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name=name, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while (job := self.jobs.get()) is not None:
            job()


class RetrievalDeadline:
    """Runs each retrieval within ``timeout_s`` (module docstring); ``should_stop()`` is asked while
    waiting. Used from one thread at a time (the run's retrievals are in question order)."""

    def __init__(self, timeout_s: float | None = DEFAULT_RETRIEVAL_TIMEOUT_S,
                 should_stop: Callable[[], bool] = lambda: False) -> None:
        self.timeout_s, self.should_stop = check_retrieval_timeout(timeout_s), should_stop
        self.abandoned: list[str] = []  # the names of the threads left running past their deadline
        self._names = (f"retrieval-{n}" for n in itertools.count(1))
        self._worker: _Worker | None = None

    def call(self, fn: Callable[[], T], what: str) -> T:
        """``fn()`` (``what`` it does, for the log), within the deadline: its result, or what it
        raised; :class:`RetrievalTimeout` past the deadline."""
        if self.timeout_s is None:
            return fn()
        worker = self._worker = self._worker or _Worker(next(self._names))
        done = threading.Event()
        box: dict[str, Any] = {}

        def job() -> None:
            try:
                box["result"] = fn()
            except BaseException as err:  # noqa: BLE001 - handed to the waiting thread
                box["error"] = err
            finally:
                done.set()

        worker.jobs.put(job)
        deadline = time.monotonic() + self.timeout_s
        while not done.wait(max(0.0, min(WAIT_STEP_S, deadline - time.monotonic()))):
            if self.should_stop():
                raise KeyboardInterrupt("stop requested")
            if time.monotonic() >= deadline:
                return self._abandon(worker, what)
        if "error" in box:
            raise box["error"]
        return box["result"]

    def _abandon(self, worker: _Worker, what: str) -> Any:
        self._worker = None  # the next retrieval gets a new thread
        worker.jobs.put(None)  # the thread ends once the stuck call returns, if it ever does
        name = worker.thread.name
        self.abandoned.append(name)
        logger.error("{} did not return within {:g} s: thread {} is abandoned (it runs on, its result will be "
                     "dropped; it holds no --concurrency slot); the run goes on", what, self.timeout_s, name)
        raise RetrievalTimeout(f"retrieve() did not return within {self.timeout_s:g} s (thread {name} abandoned)")
