"""The transport shared by the providers that call a vendor SDK over HTTP (``anthropic``, ``openai``).

A vendor module keeps what differs: its request, how it learns what a model accepts, its usage and
prices, its batches. What is the same for every SDK over HTTP is here:

* **Bounds of one attempt.** The judge timeout is a deadline for the whole attempt, from its start
  to the reply's last byte. :func:`start_attempt` sets it for the current thread and
  :func:`http_client` cuts every network operation (connect, TLS handshake, read, write) to the time
  left, for an SDK whose middleware marks each attempt; :func:`attempt_http_client` bounds each
  ``send`` as a whole (:func:`within`), for an SDK without middleware. :func:`bound_reply` wraps the
  reply body in :func:`bounded_stream_class` (a size cap, and a watchdog that closes a stalled body
  at the deadline) and caps its ``retry-after``. A body past its cap or deadline is a
  :class:`BodyLimit`.
* **What is not retried.** A timed-out attempt and a refused connection end the call: the SDK is
  handed an exception it does not retry (:class:`Unretried`, :func:`unretried`), as the same call
  would wait as long again, and no server listens where the connection was refused.
* **Retry-After.** The SDKs retry a 429/5xx answer themselves, waiting what ``retry-after-ms`` or
  ``retry-after`` asks. A wait longer than the run allows (``BENCHMARK_RETRY_WAIT_MAX``) is the run's
  to decide (its retry pass and rate-limit breaker), not the SDK's: :func:`cap_retry_after` shortens
  such a header to the cap, tells the SDK not to retry (``x-should-retry: false``) and keeps the
  server's own figure in :data:`ORIGINAL_HEADER`, which :func:`original_retry_after` reads back when
  the error is classified. An HTTP date counts as an unbounded wait.
* **Rate-limit headers**, read as the concurrency gate wants them (:func:`rate_limit`).
* **The provider's common part** (:class:`SDKProvider`): its settings with the run's timeout, the
  client built once, the secrets of the base URL, redaction (:meth:`SDKProvider.scrub`), the status →
  error-kind mapping (:meth:`SDKProvider.classify_error`), the start-up check's failures, and one
  call's reply read within its bounds (:meth:`SDKProvider.exchange`).

``httpx2`` (the SDKs' HTTP library) is imported on first use: an offline run never pays for it.
"""

from __future__ import annotations

import functools
import json
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass, fields, replace
from typing import TYPE_CHECKING, Any, ClassVar

from loguru import logger

from components.judges.llm import CONTEXT_WINDOW
from components.judges.providers import Provider, context_window
from utils.errors import InputError, JudgeError
from utils.console import escape_control
from utils.settings import masked, url_password

if TYPE_CHECKING:
    from utils.settings import Settings

MAX_BODY_BYTES = 1_000_000  # a reply body larger than this is a bad response
MAX_RETRY_WAIT_S = 10.0  # the SDK's own retries wait at most min(this, the judge timeout)
NO_ENDPOINT = frozenset({404, 405, 501})  # what a server answers for an endpoint it does not have (a gateway)
LATE = "the reply did not finish within the judge timeout"


@dataclass(frozen=True, kw_only=True)
class TransportConfig:
    """The bounds of every call; a vendor's ``ProviderConfig`` adds its key and endpoint. Its repr
    never shows a secret field (:data:`SECRET_FIELDS`) nor a password in ``base_url``."""

    timeout: float = 30.0  # deadline per attempt, from its start to the reply's last byte
    max_retries: int = 2
    max_retry_wait_s: float = MAX_RETRY_WAIT_S  # cap on any retry-after the server sends
    max_body_bytes: int = MAX_BODY_BYTES

    SECRET_FIELDS: ClassVar[tuple[str, ...]] = ("api_key", "auth_token")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls.__repr__ = TransportConfig.__repr__  # a subclass's @dataclass keeps a __repr__ its class defines

    def __repr__(self) -> str:
        shown = []
        for f in sorted(fields(self), key=lambda f: f.kw_only):  # the vendor's fields first, then the bounds
            value = getattr(self, f.name)
            if f.name in self.SECRET_FIELDS:
                shown.append(f"{f.name}={'set' if value else None}")
            elif f.name == "base_url":
                shown.append(f"{f.name}={masked(value) if value else None!r}")
            else:
                shown.append(f"{f.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)})"


# --------------------------------------------------------------------------- bounds of one attempt


class BodyLimit(Exception):
    """A reply passed its deadline or its size cap (raised while it is read)."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


class Unretried(BodyLimit):
    """An attempt that ran out of time, or a server that refused the connection: raised from inside
    the SDK's retry loop as an exception it does not retry, so the call ends there (a timed-out call
    repeated would wait as long again; a refused connection means no server listens)."""


def unretried(err: BaseException, timeout: float, where: str | None) -> Unretried | None:
    """The :class:`Unretried` end of an attempt that failed with ``err`` (an ``httpx2`` exception,
    possibly wrapped by the SDK): a timeout, or a refused connection; None for anything else (a
    connection reset, say, which the SDK retries)."""
    import httpx2

    chain: list[BaseException] = []
    cause: BaseException | None = err
    while cause is not None and len(chain) < 10:
        chain.append(cause)
        cause = cause.__cause__ or cause.__context__
    if any(isinstance(c, Unretried) for c in chain):
        return next(c for c in chain if isinstance(c, Unretried))
    if any(isinstance(c, httpx2.TimeoutException) or type(c).__name__ == "APITimeoutError" for c in chain):
        return Unretried("timeout", f"no reply within the judge timeout of {timeout:g} s (not retried)")
    if any(isinstance(c, ConnectionRefusedError) or "connection refused" in str(c).lower() for c in chain):
        at = f" at {where}" if where else ""
        return Unretried("connection_refused", f"the judge server{at} refused the connection: is it running? "
                         "(not retried)")
    return None


@functools.cache
def bounded_stream_class() -> type:
    """The class of a bounded reply body (an ``httpx2.SyncByteStream``: built on first use)."""
    import httpx2

    class BoundedStream(httpx2.SyncByteStream):
        """A response stream that stops at ``cap`` bytes or at ``deadline`` (monotonic); a watchdog
        closes the underlying stream at the deadline, so a read that blocks is released."""

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
                        raise BodyLimit("bad_response", f"the reply body passed {self.cap:,} bytes (bad body)")
                    if time.monotonic() > self.deadline:
                        raise BodyLimit("timeout", LATE)
                    yield chunk
            except BodyLimit:
                raise
            except Exception:
                if self.expired or time.monotonic() >= self.deadline:  # closed by the watchdog, or cut at the deadline
                    raise BodyLimit("timeout", LATE) from None
                raise
            finally:
                self._watchdog.cancel()
            if self.expired:
                raise BodyLimit("timeout", LATE)

        def close(self) -> None:
            self._watchdog.cancel()
            self.inner.close()

    return BoundedStream


def bound_reply(http_response: Any, config: TransportConfig, deadline: float) -> None:
    """Bound one attempt's reply: its unread body stops at ``config.max_body_bytes`` or at
    ``deadline``, and a ``retry-after`` longer than ``config.max_retry_wait_s`` is the run's to decide."""
    import httpx2

    if not http_response.is_stream_consumed and isinstance(http_response.stream, httpx2.SyncByteStream):
        http_response.stream = bounded_stream_class()(http_response.stream, config.max_body_bytes, deadline)
    cap_retry_after(http_response.headers, config.max_retry_wait_s)


_ATTEMPT = threading.local()  # .deadline: time.monotonic() by which the current thread's attempt must end


def start_attempt(timeout: float) -> float:
    """Start an attempt in the current thread: its deadline, ``timeout`` from now, which every
    network operation of the thread reads until the next attempt (:func:`http_client`)."""
    _ATTEMPT.deadline = time.monotonic() + timeout
    return _ATTEMPT.deadline


def _left(timeout: float | None, expired: type[Exception]) -> float | None:
    """``timeout`` (seconds, of one network operation) cut to the time left before the current
    thread's attempt deadline; raises ``expired`` when none is left."""
    deadline = getattr(_ATTEMPT, "deadline", None)
    if deadline is None:
        return timeout
    left = deadline - time.monotonic()
    if left <= 0:
        raise expired("the reply did not come within the judge timeout")
    return left if timeout is None else min(timeout, left)


def _bounded_transports(http_client: Any) -> int:
    """Wrap the network backend of every transport of ``http_client`` (the default one and the proxy
    mounts) so that each connect, TLS handshake, read and write of an attempt waits at most until
    the attempt's deadline (:func:`start_attempt`); an operation with no time left raises the HTTP
    client's own timeout, which the SDK treats as any timeout. Returns how many were wrapped."""
    import httpx2

    class Stream:  # the transport's network stream, each operation's timeout cut to the time left
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return self._inner.read(max_bytes, _left(timeout, httpx2.ReadTimeout))

        def write(self, buffer: bytes, timeout: float | None = None) -> None:
            self._inner.write(buffer, _left(timeout, httpx2.WriteTimeout))

        def close(self) -> None:
            self._inner.close()

        def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                      timeout: float | None = None) -> Stream:
            return Stream(self._inner.start_tls(ssl_context, server_hostname, _left(timeout, httpx2.ConnectTimeout)))

        def get_extra_info(self, info: str) -> Any:
            return self._inner.get_extra_info(info)

    class Backend:  # the transport's network backend, its streams wrapped
        def __init__(self, inner: Any) -> None:
            self._inner = inner

        def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                        socket_options: Any = None) -> Stream:
            return Stream(self._inner.connect_tcp(host, port, _left(timeout, httpx2.ConnectTimeout), local_address,
                                                  socket_options))

        def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: Any = None) -> Stream:
            return Stream(self._inner.connect_unix_socket(path, _left(timeout, httpx2.ConnectTimeout), socket_options))

        def sleep(self, seconds: float) -> None:
            self._inner.sleep(seconds)

    wrapped = 0
    transports = [getattr(http_client, "_transport", None), *getattr(http_client, "_mounts", {}).values()]
    for transport in transports:
        pool = getattr(transport, "_pool", None)
        backend = getattr(pool, "_network_backend", None)
        if backend is not None and not isinstance(backend, Backend):
            pool._network_backend = Backend(backend)
            wrapped += 1
    return wrapped


def http_client(sdk_client_class: type):
    """The SDK's own HTTP client (``sdk_client_class()``: its defaults, proxies from the
    environment), every transport bounded by the current attempt's deadline (:func:`start_attempt`,
    which the SDK's middleware calls at the start of each attempt)."""
    client = sdk_client_class(follow_redirects=False)  # a redirect is reported, not followed (status_error)
    if not _bounded_transports(client):
        logger.debug("the HTTP client's transports could not be bounded: only the reply body has a deadline")
    return client


def within(deadline: float, call: Callable[[], Any], request: Any) -> Any:
    """``call()`` (which sends ``request`` and returns a response whose body is still unread), or
    ``httpx2.ReadTimeout`` when it has not returned by ``deadline``: the request then finishes in
    its thread, by itself, and its response is closed unread."""
    import httpx2

    box: dict[str, Any] = {}
    lock = threading.Lock()
    done = threading.Event()

    def work() -> None:
        try:
            result = call()
        except BaseException as err:  # noqa: BLE001 - handed to the caller's thread
            with lock:
                box["error"] = err
        else:
            with lock:
                if box.get("abandoned"):
                    result.close()
                    return
                box["response"] = result
        finally:
            done.set()

    threading.Thread(target=work, name="judge-request", daemon=True).start()
    done.wait(max(0.0, deadline - time.monotonic()))
    with lock:
        if "response" in box:
            return box["response"]
        if "error" in box:
            raise box["error"]
        box["abandoned"] = True
    raise httpx2.ReadTimeout("no reply within the judge timeout", request=request)


def attempt_http_client(sdk_client_class: type, config: TransportConfig):
    """The SDK's own HTTP client for an SDK without middleware: each ``send`` is one attempt, from
    sending to the reply's last byte within ``config.timeout`` (:func:`within`, :func:`bound_reply`).
    Proxies from the environment work as usual."""

    import httpx2

    class BoundedClient(sdk_client_class):
        def send(self, request, *, stream: bool = False, **kwargs):
            deadline = time.monotonic() + config.timeout
            send = super().send
            try:
                response = within(deadline, lambda: send(request, stream=True, **kwargs), request)
            except (httpx2.TimeoutException, httpx2.ConnectError) as err:
                # not an exception the SDK retries: a timed-out call, or a refused connection, ends the call
                if (end := unretried(err, config.timeout, request.url.netloc.decode("ascii", "replace"))) is None:
                    raise
                raise end from None
            bound_reply(response, config, deadline)
            if not stream:
                try:
                    response.read()
                except BaseException:
                    response.close()
                    raise
            return response

    return BoundedClient(follow_redirects=False)  # a redirect is reported, not followed (status_error)


# --------------------------------------------------------------------------- retry-after

ORIGINAL_HEADER = "x-benchmark-original-retry-after"
_RETRY_HEADERS = (("retry-after-ms", 1000.0), ("retry-after", 1.0))  # name, units per second


def cap_retry_after(headers: MutableMapping[str, str], max_wait_s: float) -> None:
    """Record the server's wait in seconds under :data:`ORIGINAL_HEADER` and cap each retry-after
    header at ``max_wait_s`` (a longer wait: capped, and the SDK told not to retry)."""
    for name, per_second in _RETRY_HEADERS:
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


# --------------------------------------------------------------------------- rate-limit headers


def rate_limit(headers: Mapping[str, str], requests_header: str, tokens_header: str, *, call_tokens: int,
               reset_s: float | None) -> dict | None:
    """What a reply's headers say is left of the server's rate limits, as the concurrency gate reads
    it: requests left (``requests_header``), the tokens left (``tokens_header``) counted in calls of
    ``call_tokens`` tokens, and ``reset_s``, the seconds until the requests' limit resets. None when
    the reply has neither header."""
    def number(name: str) -> float | None:
        try:
            return float(headers[name])
        except (KeyError, ValueError, TypeError):
            return None

    requests, tokens = number(requests_header), number(tokens_header)
    if requests is None and tokens is None:
        return None
    return {"requests_remaining": requests, "reset_s": reset_s,
            "tokens_remaining_calls": (tokens // call_tokens) if tokens is not None and call_tokens else None}


# --------------------------------------------------------------------------- the provider's common part


class SDKProvider(Provider):
    """A provider that calls a vendor SDK over HTTP with a :class:`TransportConfig`-based config
    (``api_key``, ``base_url`` and the bounds). A subclass names its SDK (:meth:`sdk`), its variables,
    and what its server says in an error reply (:meth:`server_message`)."""

    key_variable: ClassVar[str]  # what to set when the credentials are refused
    base_url_variable: ClassVar[str]  # the variable naming another endpoint (its password is a secret)
    public_endpoint: ClassVar[str]  # the endpoint when that variable is unset, in messages
    # status → (error kind, what the message says), besides 5xx (server_error)
    transient_statuses: ClassVar[dict[int, tuple[str, str]]] = {
        429: ("rate_limit", "rate-limited (429)"), 408: ("timeout", "request timed out (408)")}
    refused_statuses: ClassVar[tuple[int, ...]] = (400,)  # a request the API rejected (bad_request, fatal)
    says_unretried_wait: ClassVar[bool] = True  # a transient error names a retry-after the SDK did not wait

    def __init__(self, config: Any, settings: Settings | None = None) -> None:
        if settings is not None:
            config = replace(config, timeout=settings.judge_timeout,
                             max_retry_wait_s=min(MAX_RETRY_WAIT_S, settings.judge_timeout))
        super().__init__(config, settings)
        self._client: Any = None
        self._lock = threading.Lock()

    @classmethod
    def secrets(cls, env: Mapping[str, str]) -> list[str]:
        found = super().secrets(env)
        password = url_password(env.get(cls.base_url_variable))
        return found + ([password] if password else [])

    def sdk(self):
        """The vendor's SDK module (imported on first use)."""
        raise NotImplementedError

    def make_client(self):
        """A new SDK client from the config (:meth:`client` builds it once)."""
        raise NotImplementedError

    def client(self):
        """The SDK client, built on first use and shared by every call of the run."""
        with self._lock:
            if self._client is None:
                self._client = self.make_client()
            return self._client

    @property
    def host(self) -> str | None:
        """The endpoint's host as messages name it; None: messages say "the API"."""
        return None

    @staticmethod
    def server_message(err: Any) -> str:
        """What the server said in an error reply."""
        return str(getattr(err, "message", "") or "")

    def scrub(self, text: str) -> str:
        """``text`` without the config's secrets (the key, a token, the base URL's password)."""
        secrets = [getattr(self.config, name, None) for name in self.config.SECRET_FIELDS]
        for secret in (*secrets, url_password(getattr(self.config, "base_url", None))):
            if secret:
                text = text.replace(secret, "[REDACTED]")
        return text

    # ------------------------------------------------------------------ errors

    def classify_error(self, err: BaseException, model: str, role: str = "judge") -> JudgeError:
        """Map an SDK (or decoding) exception onto the judge error taxonomy."""
        sdk = self.sdk()
        import httpx2

        attempts = self.config.max_retries + 1
        cause: BaseException | None = err
        while cause is not None:  # our bounds (an unretried end among them), possibly wrapped by the SDK
            if isinstance(cause, BodyLimit):
                return JudgeError(cause.kind, str(cause), fatal=False)
            cause = cause.__cause__ or cause.__context__
        if isinstance(err, JudgeError):
            return err
        if isinstance(err, sdk.APITimeoutError):
            return JudgeError("timeout", f"judge timed out ({attempts} attempts)", fatal=False)
        if isinstance(err, httpx2.TimeoutException):  # a body read cut at the deadline, outside the SDK's retries
            return JudgeError("timeout", LATE, fatal=False)
        if isinstance(err, sdk.APIConnectionError):
            at = f" at {self.host}" if self.host else ""
            return JudgeError("connection", f"could not reach the judge API{at} ({attempts} attempts)", fatal=False)
        if isinstance(err, sdk.APIStatusError):
            detail = self.scrub(self.server_message(err)[:300])
            return self.status_error(err, err.status_code, f": {detail}" if detail else "", model, role)
        if isinstance(err, (ValueError, RecursionError, sdk.APIResponseValidationError)):
            return JudgeError("bad_response", "the judge API sent a reply that is not valid JSON (bad body)",
                              fatal=False)
        return JudgeError("error", self.scrub(f"judge call failed: {type(err).__name__}: {err}")[:300], fatal=False)

    def unknown_model_fix(self, role: str) -> str:
        """What to set when the API does not know the model (the end of a message)."""
        raise NotImplementedError

    def status_error(self, err: Any, status: int, detail: str, model: str, role: str) -> JudgeError:
        """The error of an HTTP error reply ``status``; ``detail`` quotes the server (scrubbed)."""
        if 300 <= status < 400:  # the client follows no redirect: a login page, a proxy, http → https
            where = (err.response.headers.get("location") or "").strip()
            to = f" to {escape_control(self.scrub(masked(where))[:200])}" if where else " (no Location given)"
            at = f"the server at {self.host}" if self.host else "the judge API"
            return JudgeError("redirect", f"{at} redirected the request ({status}){to}: set {self.base_url_variable} "
                              "to the API's own address (the redirect is not followed)", fatal=True)
        if status in (401, 403):
            return JudgeError("auth", f"the API refused the credentials ({status}{detail}); set a valid "
                              f"{self.key_variable}, or run with BENCHMARK_JUDGE=offline", fatal=True)
        if status == 404:
            return JudgeError("not_found", f"the API does not know model {model!r} (404{detail}): set "
                              f"{self.unknown_model_fix(role)}", fatal=True)
        if context_window.is_refusal(status, getattr(err, "body", None), detail):  # that question only
            return JudgeError(CONTEXT_WINDOW, f"the prompt passed the context window of {model} ({status}{detail})",
                              fatal=False)
        if status in self.refused_statuses:  # quote the server; do not guess the cause
            return JudgeError("bad_request", f"the API rejected the request for {model} ({status}{detail})", fatal=True)
        if status in self.transient_statuses or status >= 500:
            kind, what = self.transient_statuses.get(status, ("server_error", f"server error ({status})"))
            retry_after = original_retry_after(err.response.headers)
            attempts = self.config.max_retries + 1
            if self.says_unretried_wait and retry_after is not None and not retry_after <= self.config.max_retry_wait_s:
                how = f"with retry-after {retry_after:g} s (longer than the SDK waits: not retried)"
            else:
                how = f"after {attempts} attempts"
            return JudgeError(kind, f"judge {what} {how}", fatal=False, retry_after=retry_after)
        return JudgeError("client_error", f"judge API answered {status}{detail}", fatal=False)

    # ------------------------------------------------------------------ the start-up check

    def retrieve_model(self, model_id: str, missing: Callable[[Any], None]) -> Any:
        """``client.models.retrieve(model_id)``: the model's record, or None when the server answered
        404/405/501 and ``missing(err)`` returned (it raises :class:`InputError` for a model the server
        does not have). Refused credentials raise :class:`InputError`; any other failure a fatal
        :class:`JudgeError` naming the endpoint."""
        sdk = self.sdk()
        try:
            try:
                return self.client().models.retrieve(model_id)
            except sdk.APIStatusError as err:
                if err.status_code not in NO_ENDPOINT:
                    raise
                missing(err)
                return None
        except InputError:
            raise
        except sdk.APIStatusError as err:
            if err.status_code in (401, 403):
                who = f"the server at {self.host}" if self.host else "the API"
                raise InputError(f"{who} refused the credentials ({err.status_code}) while checking model "
                                 f"{model_id}: set a valid {self.key_variable}, or run with BENCHMARK_JUDGE=offline"
                                 ) from None
            raise self._startup_failure(err, model_id) from None
        except Exception as err:  # noqa: BLE001 - unreachable, timed out, a body that is not a model
            raise self._startup_failure(err, model_id) from None

    def list_models(self, listing: Callable[[], Any]) -> Any:
        """``listing()`` (a call of ``GET /v1/models``), or None when the server has no Models API."""
        try:
            return listing()
        except self.sdk().APIStatusError as err:
            if err.status_code in NO_ENDPOINT:
                return None
            raise

    def _startup_failure(self, err: BaseException, model_id: str) -> JudgeError:
        judge_err = self.classify_error(err, model_id)
        if judge_err.kind == "redirect":  # it names the variable to set already
            return JudgeError(judge_err.kind, f"could not check model {model_id} at start-up: {judge_err}", fatal=True)
        where = masked(self.config.base_url) if self.config.base_url else self.public_endpoint
        return JudgeError(judge_err.kind, f"could not check model {model_id} at start-up ({judge_err}); check "
                          f"{self.base_url_variable} ({where}) and the network, then run again", fatal=True)

    # ------------------------------------------------------------------ one call

    def exchange(self, create: Callable[..., Any], **params: Any) -> tuple[Mapping[str, str], object]:
        """One call through the SDK's streaming response ``create(**params)``: the reply's headers and
        its body decoded, the body within :attr:`TransportConfig.max_body_bytes` once decoded (a
        compressed body can grow). Raises what the call raised (SDK errors, :class:`BodyLimit`, bad
        JSON): the caller classifies it."""
        with create(**params) as response:
            headers = response.headers
            body = b"".join(response.iter_bytes())
        if len(body) > self.config.max_body_bytes:
            raise BodyLimit("bad_response", f"the reply body passed {self.config.max_body_bytes:,} bytes")
        return headers, json.loads(body)
