"""Two local judges that disagree, for trying a panel of judges without a key (docs/judges.md).

    python examples/panel_judges.py            # serves until Ctrl-C, on 127.0.0.1:8101 and 8102

Each port is an OpenAI-compatible Chat Completions endpoint (what ``examples/panel.toml`` points the
``openai`` judge provider at; the provider needs ``pip install -e ".[openai]"``). They are not
models: each grades by a rule, from the share s of the expected answer's words (4 letters or more)
found in the retrieved chunks, grade g = 1 + round(9 s):

* ``generous`` (8101): g + 2, at most 10;
* ``contrarian`` (8102): 11 − g — it prefers the chunks the others find worse, so a verdict can
  depend on the judge.

Standard library only; nothing leaves 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RULES = {"generous": lambda g: min(10, g + 2), "contrarian": lambda g: 11 - g}
WORD = re.compile(r"[a-z][a-z0-9_]{3,}")


def grade(prompt: str) -> int:
    """1 + round(9 × the share of the expected answer's words found in the chunks)."""
    expected = re.search(r"^EXPECTED ANSWER \(ground truth\): (.*)$", prompt, re.M)
    chunks = " ".join(line[2:] for line in prompt.splitlines() if line.startswith("│ ")).lower()
    words = set(WORD.findall(expected.group(1).lower())) if expected else set()
    found = set(WORD.findall(chunks))
    return 1 + round(9 * len(words & found) / len(words)) if words else 1


def handler(rule: str) -> type[BaseHTTPRequestHandler]:
    class Judge(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args: object) -> None:
            pass

        def _send(self, status: int, doc: dict) -> None:
            body = json.dumps(doc).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:  # noqa: N802 - the Models API: every model id is served
            model = self.path.rstrip("/").rsplit("/", 1)[-1]
            self._send(200, {"id": model, "object": "model", "created": 0, "owned_by": rule})

        def do_POST(self) -> None:  # noqa: N802 - Chat Completions
            body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
            prompt = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "user"), "")
            g = RULES[rule](grade(prompt))
            text = json.dumps({"grade": g, "reasoning": f"{rule}: {g} by the word-overlap rule"})
            self._send(200, {"id": "local", "object": "chat.completion", "created": 0, "model": body.get("model"),
                             "choices": [{"index": 0, "finish_reason": "stop",
                                          "message": {"role": "assistant", "content": text}}],
                             "usage": {"prompt_tokens": len(prompt) // 4, "completion_tokens": 20,
                                       "total_tokens": len(prompt) // 4 + 20}})
    return Judge


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--port", type=int, default=8101, help="the first judge's port; the next one on the next port")
    args = p.parse_args()
    servers = [ThreadingHTTPServer(("127.0.0.1", args.port + i), handler(rule)) for i, rule in enumerate(RULES)]
    for server, rule in zip(servers, RULES, strict=True):
        threading.Thread(target=server.serve_forever, daemon=True).start()
        print(f"{rule}: http://127.0.0.1:{server.server_address[1]}/v1", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
