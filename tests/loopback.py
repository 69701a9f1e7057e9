"""A scripted Anthropic Messages API server on 127.0.0.1, for driving the real SDK in tests.

Each request to ``POST /v1/messages`` takes the next :class:`Reply` from the script (a list, or a
function of the request number and body); when a list runs out, ``default`` answers. Every request
is recorded (headers and JSON body) for assertions on what the SDK sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
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


def error(status: int, kind: str, message: str = "scripted error", **headers: str) -> Reply:
    return Reply(status=status, json_body={"type": "error", "error": {"type": kind, "message": message}},
                 headers=headers)


@dataclass
class Recorded:
    path: str
    headers: dict
    body: dict | None


class LoopbackServer:
    def __init__(self, script: list[Reply] | Callable[[int, dict], Reply] | None = None,
                 default: Reply | None = None) -> None:
        self.script = script if script is not None else []
        self.default = default or Reply()
        self.requests: list[Recorded] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802
                length = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                with server._lock:
                    n = len(server.requests)
                    server.requests.append(Recorded(self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                reply = server._next(n, body or {})
                if reply.delay:
                    time.sleep(reply.delay)
                if reply.drop:
                    self.close_connection = True
                    try:
                        self.connection.shutdown(socket.SHUT_RDWR)
                    except OSError:
                        pass
                    return
                if reply.raw_body is not None:
                    payload = reply.raw_body
                else:
                    doc = reply.json_body if reply.json_body is not None else {
                        "id": f"msg_{n}", "type": "message", "role": "assistant",
                        "model": (body or {}).get("model", "unknown"),
                        "content": reply.content if reply.content is not None else
                        [{"type": "text", "text": reply.text or ""}],
                        "stop_reason": reply.stop_reason, "stop_sequence": None,
                        "usage": {"input_tokens": 10, "output_tokens": 5},
                    }
                    payload = json.dumps(doc).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(payload)))
                    for k, v in reply.headers.items():
                        self.send_header(k.replace("_", "-"), v)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

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
