"""A scripted OpenAI-compatible Chat Completions server on 127.0.0.1, for driving the real ``openai``
SDK in tests (the counterpart of :mod:`tests.loopback` for the ``openai`` judge provider).

Each ``POST /v1/chat/completions`` takes the next :class:`Reply` from the script (a list, or a
function of the request number and body); when a list runs out, ``default`` answers. Every request
is recorded (headers and JSON body) for assertions on what the SDK sent.

llama.cpp's ``GET /props`` answers ``props`` (404 when it is None). The Models API: ``GET /v1/models``
lists ``models`` (each with ``max_model_len`` when ``max_model_len`` is given, as vLLM lists them) and
``GET /v1/models/{id}`` retrieves one (404 for an id it does not have); ``models=None`` is a server
without the Models API (``models_status``, 404 by default, on both); ``retrieve=False`` a server that
lists its models but cannot retrieve one (llama.cpp's). In validating mode (the default) a request is
refused, before the script is consulted, the way the real API refuses it:

* ``response_format`` on a server with ``json_mode=False``: 400 naming ``response_format``;
* on a model of ``reasoning_models``: ``max_tokens`` (400, "Use 'max_completion_tokens' instead")
  and a ``temperature`` other than 1 (400, "Only the default (1) value is supported");
* a model the server does not have: 404.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

from tests.loopback import ScriptedHandler, wait_or_drop

GRADE = '{"grade": 8, "reasoning": "all key facts present"}'
MODELS = ("gpt-4.1", "gpt-5.4-mini", "o3-mini", "llama-3.1-8b-instruct")
REASONING = frozenset({"gpt-5.4-mini", "o3-mini"})


@dataclass
class Reply:
    text: str | None = GRADE
    status: int = 200
    json_body: dict | None = None  # overrides the completion built from ``text``
    raw_body: bytes | None = None  # sent as-is (e.g. a non-JSON 200)
    headers: dict = field(default_factory=dict)
    delay: float = 0.0  # seconds before the status line
    drop: bool = False  # close the connection without answering
    finish_reason: str | None = "stop"
    usage: dict | None = field(default_factory=lambda: {"prompt_tokens": 10, "completion_tokens": 5,
                                                        "total_tokens": 15})  # None: no usage block
    model: str | None = None  # the model the reply names (default: the one requested)
    refusal: str | None = None
    content: object = None  # explicit message content (e.g. a list of parts), instead of ``text``
    trickle: Iterable[bytes] | None = None  # body pieces sent chunked, trickle_gap seconds apart
    trickle_gap: float = 0.0
    trickle_for: float = 30.0  # the server gives up sending after this long
    header_gap: float = 0.0  # > 0: the status line and headers are sent a byte at a time, this far apart


def error(status: int, message: str = "scripted error", *, kind: str = "invalid_request_error",
          code: str | None = None, param: str | None = None, **headers: str) -> Reply:
    """An error reply in OpenAI's shape (``retry_after="3"`` becomes the ``retry-after`` header)."""
    return Reply(status=status, json_body={"error": {"message": message, "type": kind, "param": param, "code": code}},
                 headers={k.replace("_", "-"): v for k, v in headers.items()})


def completion_doc(reply: Reply, model: str, n: int) -> dict:
    """The Chat Completions body ``reply`` stands for (``json_body`` wins)."""
    if reply.json_body is not None:
        return reply.json_body
    message: dict = {"role": "assistant", "content": reply.content if reply.content is not None else reply.text,
                     "refusal": reply.refusal}
    doc = {"id": f"chatcmpl-{n}", "object": "chat.completion", "created": 1_790_000_000,
           "model": reply.model or model,
           "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}]}
    if reply.usage is not None:
        doc["usage"] = reply.usage
    return doc


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict | None


class _Handler(ScriptedHandler):
    """The scripted API's HTTP side: it answers from its server's :class:`OpenAILoopback` (``self.server.loopback``)."""

    def do_GET(self) -> None:  # noqa: N802
        server = self.server.loopback
        path = self.path.split("?", 1)[0].rstrip("/")
        with server._lock:
            server.model_requests.append(path)
        if path == "/props" and server.props is not None:
            raw = server.props if isinstance(server.props, bytes) else None
            return self._send(Reply(json_body=server.props if raw is None else None, raw_body=raw))
        if not path.startswith("/v1/models"):
            return self._send(error(404, f"Not Found: {path}"))
        if server.models is None:
            return self._send(error(server.models_status, f"no route for {path}"))
        if path == "/v1/models":
            data = [{"id": m, "object": "model", "created": 1_700_000_000, "owned_by": "loopback"}
                    | ({"max_model_len": server.max_model_len} if server.max_model_len else {})
                    for m in server.models]
            return self._send(Reply(json_body={"object": "list", "data": data}))
        model_id = path[len("/v1/models/"):]
        if not server.retrieve or model_id not in server.models:
            return self._send(error(404, f"The model '{model_id}' does not exist", code="model_not_found"))
        return self._send(Reply(json_body={"id": model_id, "object": "model", "created": 1_700_000_000,
                                           "owned_by": "loopback"}))

    def do_POST(self) -> None:  # noqa: N802
        server = self.server.loopback
        body = self.json_body()
        if self.path.split("?", 1)[0].rstrip("/") != "/v1/chat/completions":
            return self._send(error(404, f"Not Found: {self.path}"))
        with server._lock:
            n = len(server.requests)
            server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
        reply = server._refusal(body or {}) if server.validate else None
        if reply is None:
            reply = server._next(n, body or {})
        self._send(reply, body)

    def _send(self, reply: Reply, body: dict | None = None) -> None:
        server = self.server.loopback
        n = len(server.requests)
        if not wait_or_drop(self, reply):
            return
        if reply.raw_body is not None:
            payload = reply.raw_body
        else:
            payload = json.dumps(completion_doc(reply, (body or {}).get("model", "unknown"), n)).encode()
        if reply.header_gap:
            return self._send_slowly(reply, payload)
        self.answer(reply, payload, {"x-request-id": f"req_openai_loopback_{n}", **reply.headers})

    def _send_slowly(self, reply: Reply, payload: bytes) -> None:
        """Headers a byte at a time (each byte well within any per-read timeout), then the body."""
        head = f"HTTP/1.1 {reply.status} Scripted\r\ncontent-type: application/json\r\n" \
               f"content-length: {len(payload)}\r\nconnection: close\r\n\r\n".encode()
        deadline = time.monotonic() + reply.trickle_for
        self.close_connection = True
        try:
            for i in range(len(head)):
                if time.monotonic() > deadline:
                    return
                self.wfile.write(head[i:i + 1])
                self.wfile.flush()
                time.sleep(reply.header_gap)
            self.wfile.write(payload)
        except (BrokenPipeError, ConnectionResetError, OSError):
            pass


class OpenAILoopback:
    def __init__(self, script: list[Reply] | Callable[[int, dict], Reply] | None = None,
                 default: Reply | None = None, *, models: Iterable[str] | None = MODELS, models_status: int = 404,
                 retrieve: bool = True, json_mode: bool = True, reasoning_models: Iterable[str] = REASONING,
                 validate: bool = True, props: dict | bytes | None = None, max_model_len: int | None = None) -> None:
        self.script = script if script is not None else []
        self.default = default or Reply()
        self.models = list(models) if models is not None else None
        self.models_status = models_status
        self.retrieve = retrieve
        self.json_mode = json_mode
        self.reasoning_models = frozenset(reasoning_models)
        self.validate = validate
        self.props = props  # llama.cpp's GET /props body (bytes: sent as-is); None: 404
        self.max_model_len = max_model_len  # vLLM's window in each model of GET /v1/models
        self.requests: list[Recorded] = []  # POST /v1/chat/completions
        self.model_requests: list[str] = []  # GET paths of the Models API
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.loopback = self  # what the handler answers from
        self._server.daemon_threads = True
        # checked for shutdown every 50 ms, not serve_forever's 0.5 s: leaving `with` waits for that check
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        daemon=True)

    def _refusal(self, body: dict) -> Reply | None:
        """The error the real API gives a request this server does not accept; None when it is fine."""
        model = body.get("model", "")
        if self.models is not None and model not in self.models:
            return error(404, f"The model '{model}' does not exist or you do not have access to it.",
                         code="model_not_found")
        if "response_format" in body and not self.json_mode:
            return error(400, "Invalid parameter: 'response_format' of type 'json_object' is not supported with "
                         "this model.", param="response_format", code="invalid_parameter")
        if model in self.reasoning_models:
            if "max_tokens" in body:
                return error(400, "Unsupported parameter: 'max_tokens' is not supported with this model. Use "
                             "'max_completion_tokens' instead.", param="max_tokens", code="unsupported_parameter")
            if body.get("temperature", 1) != 1:
                return error(400, f"Unsupported value: 'temperature' does not support {body['temperature']} with "
                             "this model. Only the default (1) value is supported.", param="temperature",
                             code="unsupported_value")
        return None

    def _next(self, n: int, body: dict) -> Reply:
        if callable(self.script):
            return self.script(n, body)
        return self.script[n] if n < len(self.script) else self.default

    @property
    def url(self) -> str:
        """The base URL to give the SDK (``OPENAI_BASE_URL``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def user_prompts(self) -> list[str]:
        return [m["content"] for r in self.requests if r.body for m in r.body["messages"] if m["role"] == "user"]

    def __enter__(self) -> OpenAILoopback:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()
