"""A scripted Anthropic API server on 127.0.0.1, for driving the real SDK in tests.

Each request to ``POST /v1/messages`` takes the next :class:`Reply` from the script (a list, or a
function of the request number and body); when a list runs out, ``default`` answers. Every request
is recorded (headers and JSON body) for assertions on what the SDK sent.

The Models API: ``GET /v1/models/{id}`` and ``GET /v1/models`` serve ``models`` (a dict of
:class:`ModelSpec`, default :data:`MODELS`) in the SDK's shape, capabilities included; with
``models=None`` the server is a gateway without the Models API (404 on both). In validating mode
(``validate=True``, the default when models are served) a message request that the served
capabilities say the model does not accept — a thinking type or effort level it lacks, a
``max_tokens`` over its limit, a retired or unknown model — is refused with the real API's kind of
400/404 error, before the script is consulted.

A batch's results body can be replaced (``batch_results``, a function of the :class:`LoopbackBatch`:
the raw bytes to send, or a :class:`Reply` such as a ``trickle`` of lines without end) to serve
hostile results: unknown or repeated custom ids, oversize lines, a stream that never ends.

The Message Batches API (:class:`BatchAPI`, additive): ``POST /v1/messages/batches`` creates a
batch (the envelope checked as the real API does: 1-100,000 requests, unique ``custom_id`` of
1-64 characters ``[A-Za-z0-9_-]``); ``GET /v1/messages/batches/{id}`` answers ``in_progress`` for
the first ``batch_polls`` retrieves of that batch, then ``ended`` with ``request_counts`` and
``results_url``; ``GET /v1/messages/batches/{id}/results`` streams JSON lines (``custom_id``,
``result``), in reverse request order (the real API promises no order). Each request's entry is
decided at create time: in validating mode a request the model does not accept is an ``errored``
entry carrying the refusal (``invalid_request_error``…); else ``batch_script`` (per custom id: a
:class:`Reply` — 200 → ``succeeded`` with that message, another status → ``errored`` with its error
body — or ``"expired"`` / ``"canceled"``; a list answers successive submissions of that custom id),
else the message script as for ``POST /v1/messages``. ``batch_create_faults`` answers the first
create calls with a fault: an error status without creating, or (a 200 with ``delay``/``drop``) a
batch created whose answer comes late or never — the create the client cannot know succeeded.

Token counting (``--estimate``): ``POST /v1/messages/count_tokens`` answers ``{"input_tokens": n}``
with n = ``count_tokens(body)`` (default :func:`count_tokens_rule`), validated against the served
models like a message request; ``token_counting=False`` is a gateway without it (404). Each body
is kept in ``count_requests``; a count is never a message request (``requests`` stays empty).
"""

from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


@dataclass
class Reply:
    text: str | None = '{"grade": 8, "reasoning": "all key facts present"}'
    status: int = 200
    json_body: dict | None = None  # overrides the message built from ``text``
    raw_body: bytes | None = None  # sent as-is (e.g. a non-JSON 200)
    headers: dict = field(default_factory=dict)
    delay: float = 0.0
    drop: bool = False  # close the connection without answering
    stop_reason: str = "end_turn"
    content: list | None = None  # explicit content blocks
    usage: dict = field(default_factory=lambda: {"input_tokens": 10, "output_tokens": 5})
    trickle: Iterable[bytes] | None = None  # body pieces sent chunked, trickle_gap seconds apart
    trickle_gap: float = 0.0
    trickle_for: float = 30.0  # the server gives up sending after this long


def error(status: int, kind: str, message: str = "scripted error", **headers: str) -> Reply:
    return Reply(status=status, json_body={"type": "error", "error": {"type": kind, "message": message}},
                 headers=headers)


@dataclass
class ModelSpec:
    """One model as the Models API describes it."""

    line: str | None
    thinking: frozenset[str]  # supported thinking types
    effort: tuple[str, ...] = ()  # supported effort levels
    lifecycle: str = "active"
    retires_at: str | None = None
    max_tokens: int = 64_000
    created_at: str = "2026-01-01T00:00:00Z"
    capabilities_null: bool = False

    def info(self, model_id: str) -> dict:
        def support(flag: bool) -> dict:
            return {"supported": flag}

        caps = None if self.capabilities_null else {
            "batch": support(True), "citations": support(True), "code_execution": support(False),
            "context_management": {"supported": False}, "image_input": support(True), "pdf_input": support(True),
            "server_tools": {"supported": False}, "structured_outputs": support(True),
            "thinking": {"supported": bool(self.thinking - {"disabled"}),
                         "types": {t: support(t in self.thinking)
                                   for t in ("adaptive", "between_tools", "disabled", "enabled")}},
            "effort": {"supported": bool(self.effort),
                       **{lvl: support(lvl in self.effort) for lvl in ("low", "medium", "high", "xhigh", "max")}},
        }
        return {"type": "model", "id": model_id, "display_name": model_id.replace("-", " ").title(),
                "created_at": self.created_at, "lifecycle": self.lifecycle, "line": self.line,
                "deprecated_at": "2026-06-01T00:00:00Z" if self.lifecycle != "active" else None,
                "retires_at": self.retires_at, "max_tokens": self.max_tokens, "max_input_tokens": 200_000,
                "capabilities": caps}


_EFFORT = ("low", "medium", "high", "max")
# The test matrix: today's models and their quirks.
MODELS: dict[str, ModelSpec] = {
    "claude-sonnet-5-5": ModelSpec("sonnet", frozenset({"between_tools", "adaptive"}), _EFFORT,
                                   created_at="2026-09-01T00:00:00Z"),
    "claude-opus-5-5": ModelSpec("opus", frozenset({"adaptive"}), _EFFORT + ("xhigh",), max_tokens=128_000,
                                 created_at="2026-09-01T00:00:00Z"),
    "claude-haiku-4-5": ModelSpec("haiku", frozenset({"disabled", "enabled"}), (), created_at="2025-10-01T00:00:00Z"),
    "claude-sonnet-4-6": ModelSpec("sonnet", frozenset({"disabled", "adaptive", "enabled"}), _EFFORT,
                                   created_at="2026-02-01T00:00:00Z"),
    "claude-sonnet-4-5": ModelSpec("sonnet", frozenset({"disabled", "enabled"}), (), lifecycle="deprecated",
                                   retires_at="2027-03-01T00:00:00Z", created_at="2025-09-01T00:00:00Z"),
    "claude-sonnet-4-0": ModelSpec("sonnet", frozenset({"disabled", "enabled"}), (), lifecycle="retired",
                                   created_at="2025-05-01T00:00:00Z"),
    "claude-mystery-1": ModelSpec(None, frozenset(), capabilities_null=True, created_at="2026-03-01T00:00:00Z"),
}


def _refusal(model: str, body: dict, spec: ModelSpec | None) -> Reply | None:
    """The error the real API gives a request that ``spec`` does not accept; None when it is fine."""
    if spec is None:
        return error(404, "not_found_error", f"model: {model}")
    if spec.lifecycle == "retired":
        return error(404, "not_found_error", f"model: {model} has been retired")
    thinking = (body.get("thinking") or {}).get("type")
    if thinking is not None and spec.capabilities_null is False and thinking not in spec.thinking:
        allowed = ", ".join(sorted(spec.thinking)) or "none"
        return error(400, "invalid_request_error",
                     f"thinking.type: '{thinking}' is not supported by this model. Supported: {allowed}")
    effort = (body.get("output_config") or {}).get("effort")
    if effort is not None and effort not in spec.effort:
        return error(400, "invalid_request_error", f"output_config.effort: '{effort}' is not supported by this model")
    if int(body.get("max_tokens") or 0) > spec.max_tokens:
        return error(400, "invalid_request_error",
                     f"max_tokens: {body.get('max_tokens')} > {spec.max_tokens}, the maximum for {model}")
    return None

def count_tokens_rule(body: dict) -> int:
    """The loopback's token count of a ``count_tokens`` body: 3 per message plus one per 4 characters
    of its text (rounded up), a rule a test can compute by hand."""
    total = 0
    for message in body.get("messages") or []:
        content = message.get("content") if isinstance(message, dict) else None
        text = content if isinstance(content, str) else json.dumps(content)
        total += 3 + -(-len(text) // 4)
    return total


def message_doc(reply: Reply, model: str, n: int) -> dict:
    """The Messages API body ``reply`` stands for (``json_body`` wins)."""
    if reply.json_body is not None:
        return reply.json_body
    return {"id": f"msg_{n}", "type": "message", "role": "assistant", "model": model,
            "content": reply.content if reply.content is not None else [{"type": "text", "text": reply.text or ""}],
            "stop_reason": reply.stop_reason, "stop_sequence": None, "usage": reply.usage}


EXPIRED, CANCELED = "expired", "canceled"
BatchAnswer = Reply | str  # a Reply (succeeded / errored by its status), or EXPIRED / CANCELED
CUSTOM_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
MAX_BATCH_REQUESTS = 100_000


@dataclass
class LoopbackBatch:
    """One created batch: its requests' results (decided at create time) and how often it was polled."""

    id: str
    results: list[dict]  # {"custom_id", "result"} in request order
    created_at: str = "2026-11-01T00:00:00Z"
    polls: int = 0
    ended: bool = False  # a retrieve answered "ended": the results can be read

    def counts(self, ended: bool) -> dict:
        counts = {"processing": 0 if ended else len(self.results), "succeeded": 0, "errored": 0, "canceled": 0,
                  "expired": 0}
        if ended:
            for r in self.results:
                counts[r["result"]["type"]] += 1
        return counts


def _entry(answer: BatchAnswer, model: str, n: int) -> dict:
    """A batch result (``result`` of one JSONL line) from a scripted answer."""
    if answer in (EXPIRED, CANCELED):
        return {"type": answer}
    if not isinstance(answer, Reply):
        raise TypeError(f"a batch answer is a Reply, {EXPIRED!r} or {CANCELED!r}, not {answer!r}")
    if answer.status != 200:
        body = answer.json_body or {"type": "error", "error": {"type": "api_error", "message": "scripted error"}}
        return {"type": "errored", "error": {"type": "error", "error": body.get("error"), "request_id": None}}
    return {"type": "succeeded", "message": message_doc(answer, model, n)}


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict | None


def wait_or_drop(handler: BaseHTTPRequestHandler, reply) -> bool:
    """Wait ``reply.delay`` seconds; then, for a reply that ``drop``s, close the connection without
    answering and return False (nothing more to send)."""
    if reply.delay:
        time.sleep(reply.delay)
    if not reply.drop:
        return True
    handler.close_connection = True
    try:
        handler.connection.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    return False


def send_body(handler: BaseHTTPRequestHandler, reply, payload: bytes) -> None:
    """End the headers and send ``payload``; or, for a reply with a ``trickle``, its pieces chunked, ``trickle_gap``
    seconds apart, for at most ``trickle_for`` seconds (a body that takes its time, or never ends)."""
    if reply.trickle is None:
        handler.end_headers()
        handler.wfile.write(payload)
        return
    handler.send_header("transfer-encoding", "chunked")
    handler.end_headers()
    deadline = time.monotonic() + reply.trickle_for
    for piece in reply.trickle:
        if time.monotonic() > deadline:
            break
        handler.wfile.write(f"{len(piece):x}\r\n".encode() + piece + b"\r\n")
        handler.wfile.flush()
        time.sleep(reply.trickle_gap)
    else:
        handler.wfile.write(b"0\r\n\r\n")
    handler.close_connection = True


class ScriptedHandler(BaseHTTPRequestHandler):
    """What both scripted servers' HTTP sides share: HTTP/1.1, no access log, the request's JSON body."""

    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as real servers set it: a reply is two writes (headers, then body), and without it the body
    # waits for the client's delayed ACK of the headers, 40 ms on every call
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def answer(self, reply, payload: bytes, headers: dict) -> None:
        """Send ``reply``'s status, ``headers`` (a JSON content type unless they give one; the length unless
        the body trickles) and ``payload`` (:func:`send_body`); a client that went away is not an error."""
        try:
            self.send_response(reply.status)
            if "content-type" not in headers:
                self.send_header("content-type", "application/json")
            if reply.trickle is None:
                self.send_header("content-length", str(len(payload)))
            for k, v in headers.items():
                self.send_header(k, v)
            send_body(self, reply, payload)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass

    def json_body(self) -> object:
        """The request's body as JSON (None when it is not JSON)."""
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        try:
            return json.loads(raw)
        except ValueError:
            return None


class _Handler(ScriptedHandler):
    """The scripted API's HTTP side: it answers from its server's :class:`LoopbackServer` (``self.server.loopback``)."""

    def do_GET(self) -> None:  # noqa: N802
        server = self.server.loopback
        path = self.path.split("?", 1)[0]
        if path.startswith("/v1/messages/batches"):
            if not server.batch_api:
                return self._send(error(404, "not_found_error", f"Not Found: {path}"))
            return self._batch_get(path)
        with server._lock:
            server.model_requests.append(self.path)
        if server.models is None or not path.startswith("/v1/models"):
            return self._send(error(404, "not_found_error", f"Not Found: {path}"))
        if path.rstrip("/") == "/v1/models":
            data = sorted((spec.info(mid) for mid, spec in server.models.items()),
                          key=lambda m: m["created_at"], reverse=True)
            return self._send(Reply(json_body={"data": data, "has_more": False, "first_id": data[0]["id"],
                                               "last_id": data[-1]["id"]}))
        model_id = path[len("/v1/models/"):]
        spec = server.models.get(model_id)
        if spec is None:
            return self._send(error(404, "not_found_error", f"model: {model_id}"))
        return self._send(Reply(json_body=spec.info(model_id)))

    def do_POST(self) -> None:  # noqa: N802
        server = self.server.loopback
        body = self.json_body()
        if self.path.split("?", 1)[0].rstrip("/") == "/v1/messages/count_tokens":
            return self._count_tokens(body)
        if self.path.split("?", 1)[0].rstrip("/") == "/v1/messages/batches":
            if not server.batch_api:
                return self._send(error(404, "not_found_error", "Not Found: /v1/messages/batches"))
            with server._lock:
                server.batch_create_calls += 1
                fault = server.batch_create_faults.pop(0) if server.batch_create_faults else None
            if fault is not None and fault.status != 200:
                return self._send(fault)
            created = server._create_batch(body)
            if fault is not None:
                created = replace(created, delay=fault.delay, drop=fault.drop)
            return self._send(created)
        with server._lock:
            n = len(server.requests)
            server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        reply = None
        if server.validate and server.models is not None:
            model = (body or {}).get("model", "")
            reply = _refusal(model, body or {}, server.models.get(model))
        if reply is None:
            reply = server._next(n, body or {})
        self._send(reply, body)

    def _count_tokens(self, body: dict | None) -> None:
        server = self.server.loopback
        with server._lock:
            server.count_requests.append(body)
        if server.count_tokens is None:
            return self._send(error(404, "not_found_error", "Not Found: /v1/messages/count_tokens"))
        if server.validate and server.models is not None:
            model = (body or {}).get("model", "")
            refusal = _refusal(model, {**(body or {}), "max_tokens": 0}, server.models.get(model))
            if refusal is not None:
                return self._send(refusal)
        return self._send(Reply(json_body={"input_tokens": server.count_tokens(body or {})}))

    def _batch_get(self, path: str) -> None:
        server = self.server.loopback
        with server._lock:
            server.batch_gets.append(self.path)
        m = re.fullmatch(r"/v1/messages/batches/([^/]+)(/results)?/?", path)
        batch = server.batches.get(m.group(1)) if m else None
        if batch is None:
            return self._send(error(404, "not_found_error", f"batch not found: {path}"))
        if m.group(2):
            if not batch.ended:
                return self._send(error(400, "invalid_request_error", f"batch {batch.id} is still processing"))
            if server.batch_results is not None:
                body = server.batch_results(batch)
                if isinstance(body, Reply):
                    return self._send(body)
                return self._send(Reply(raw_body=body, headers={"content-type": "application/binary"}))
            lines = "".join(json.dumps(r) + "\n" for r in reversed(batch.results))
            return self._send(Reply(raw_body=lines.encode(), headers={"content-type": "application/binary"}))
        with server._lock:
            ended = batch.ended = batch.ended or batch.polls >= server.batch_polls
            batch.polls += 1
        return self._send(Reply(json_body=server._batch_json(batch, ended)))

    def _send(self, reply: Reply, body: dict | None = None) -> None:
        server = self.server.loopback
        n = len(server.requests)
        if not wait_or_drop(self, reply):
            return
        if reply.raw_body is not None:
            payload = reply.raw_body
        else:
            payload = json.dumps(message_doc(reply, (body or {}).get("model", "unknown"), n)).encode()
        self.answer(reply, payload, {"request-id": f"req_loopback_{n}",
                                     **{k.replace("_", "-"): v for k, v in reply.headers.items()}})


class LoopbackServer:
    def __init__(self, script: list[Reply] | Callable[[int, dict], Reply] | None = None,
                 default: Reply | None = None, *, models: dict[str, ModelSpec] | None = MODELS,
                 validate: bool | None = None,
                 batch_results: Callable[[LoopbackBatch], bytes | Reply] | None = None,
                 batch_script: dict[str, BatchAnswer | list[BatchAnswer]] | Callable[[str, dict, int], BatchAnswer]
                 | None = None, batch_polls: int = 1, batch_api: bool = True,
                 batch_create_faults: list[Reply] | None = None,
                 count_tokens: Callable[[dict], int] | None = None, token_counting: bool = True) -> None:
        self.script = script if script is not None else []
        # POST /v1/messages/count_tokens answers {"input_tokens": count_tokens(body)} (default:
        # count_tokens_rule); token_counting=False: a gateway without it (404). Bodies recorded.
        self.count_tokens = (count_tokens or count_tokens_rule) if token_counting else None
        self.count_requests: list[dict | None] = []
        self.default = default or Reply()
        self.models = models
        self.validate = models is not None if validate is None else validate
        self.requests: list[Recorded] = []  # POST /v1/messages
        self.model_requests: list[str] = []  # GET paths of the Models API
        self.batch_script = batch_script if batch_script is not None else {}
        self.batch_polls = batch_polls  # retrieves of a batch answered in_progress (read at each poll)
        self.batch_api = batch_api  # False: a gateway without the Message Batches API (404)
        # Consumed one per create call: an error status answers without creating the batch; a 200
        # with a delay (or drop) creates it, then answers late (or not at all): accepted, unanswered.
        self.batch_create_faults = list(batch_create_faults or [])
        self.batch_create_calls = 0  # POST /v1/messages/batches, faults included
        self.batch_results = batch_results  # None: each batch's JSON lines, in reverse request order
        self.batches: dict[str, LoopbackBatch] = {}
        self.batch_creates: list[dict] = []  # the JSON body of each POST /v1/messages/batches
        self.batch_gets: list[str] = []  # GET paths of the batch API
        self._seen: dict[str, int] = {}  # custom id → submissions so far
        self._batch_requests = 0
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.loopback = self  # what the handler answers from
        self._server.daemon_threads = True
        # checked for shutdown every 50 ms, not serve_forever's 0.5 s: leaving `with` waits for that check
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    # ------------------------------------------------------------------ the Message Batches API

    def _create_batch(self, body: dict | None) -> Reply:
        requests = (body or {}).get("requests")
        if not isinstance(requests, list) or not 1 <= len(requests) <= MAX_BATCH_REQUESTS:
            return error(400, "invalid_request_error", f"requests: give 1 to {MAX_BATCH_REQUESTS:,} requests")
        ids = [r.get("custom_id") if isinstance(r, dict) else None for r in requests]
        bad = [i for i in ids if not isinstance(i, str) or not CUSTOM_ID.fullmatch(i)]
        if bad:
            return error(400, "invalid_request_error",
                         f"requests.custom_id: {bad[0]!r} does not match ^[a-zA-Z0-9_-]{{1,64}}$")
        if len(set(ids)) != len(ids):
            return error(400, "invalid_request_error", "requests: custom_id values must be unique within a batch")
        with self._lock:
            self.batch_creates.append(body)
            results = []
            for r in requests:
                params = r.get("params") or {}
                model = params.get("model", "")
                n = self._batch_requests
                self._batch_requests += 1
                seen = self._seen.get(r["custom_id"], 0)
                self._seen[r["custom_id"]] = seen + 1
                answer: BatchAnswer | None = None
                if self.validate and self.models is not None:
                    answer = _refusal(model, params, self.models.get(model))
                if answer is None:
                    answer = self._batch_answer(r["custom_id"], params, seen, n)
                results.append({"custom_id": r["custom_id"], "result": _entry(answer, model, n)})
            batch = LoopbackBatch(id=f"msgbatch_loopback_{len(self.batches) + 1}", results=results)
            self.batches[batch.id] = batch
        return Reply(json_body=self._batch_json(batch, ended=False))

    def _batch_answer(self, custom_id: str, params: dict, seen: int, n: int) -> BatchAnswer:
        script = self.batch_script
        if callable(script):
            return script(custom_id, params, seen)
        answer = script.get(custom_id)
        if isinstance(answer, list):
            answer = answer[seen] if seen < len(answer) else None
        if answer is not None:
            return answer
        return self.script(n, params) if callable(self.script) else self.default

    def _batch_json(self, batch: LoopbackBatch, ended: bool) -> dict:
        return {"id": batch.id, "type": "message_batch", "processing_status": "ended" if ended else "in_progress",
                "request_counts": batch.counts(ended), "created_at": batch.created_at,
                "expires_at": "2026-11-02T00:00:00Z", "ended_at": "2026-11-01T00:30:00Z" if ended else None,
                "cancel_initiated_at": None, "archived_at": None,
                "results_url": f"{self.url}/v1/messages/batches/{batch.id}/results" if ended else None}

    def _next(self, n: int, body: dict) -> Reply:
        if callable(self.script):
            return self.script(n, body)
        return self.script[n] if n < len(self.script) else self.default

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def prompts(self) -> list[str]:
        return [r.body["messages"][0]["content"] for r in self.requests if r.body]

    def __enter__(self) -> LoopbackServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
