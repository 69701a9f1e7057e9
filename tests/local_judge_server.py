"""llama.cpp's own OpenAI-compatible server on 127.0.0.1, from the prebuilt ``xllamacpp`` wheel (the
``localjudge`` extra), for the local-judge tests (tests/test_local_judge.py). Run as a process:

    OMP_WAIT_POLICY=PASSIVE python -m tests.local_judge_server MODEL.gguf --port 0 --ctx 1024 --alias smollm2

It prints ``listening http://127.0.0.1:PORT`` once the server answers, then serves until SIGTERM.
With ``--port 0`` it picks a free port first. ``OMP_WAIT_POLICY=PASSIVE`` matters on a machine with
few cores: without it the OpenMP threads spin while they wait, and generation slows to a crawl.
"""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import time
import urllib.request


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def answers(url: str, wait_s: float) -> bool:
    """Whether ``GET url`` answers 200 within ``wait_s`` seconds (the model loaded)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=2) as response:  # noqa: S310 - loopback only
                if response.status == 200:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("model", help="a .gguf file")
    parser.add_argument("--port", type=int, default=0, help="0: a free port")
    parser.add_argument("--ctx", type=int, default=1024, help="the context window, in tokens")
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--alias", default=None, help="the model id the server answers to")
    args = parser.parse_args(argv)

    import xllamacpp

    params = xllamacpp.CommonParams()
    params.model.path = args.model
    params.n_ctx = args.ctx
    params.n_parallel = 1
    params.cpuparams.n_threads = args.threads
    params.cpuparams_batch.n_threads = args.threads
    params.hostnames = ["127.0.0.1"]
    params.port = args.port or free_port()
    params.n_threads_http = 2
    params.warmup = False
    if args.alias:
        params.model_alias = {args.alias}
    server = xllamacpp.Server(params)  # noqa: F841 - kept alive until the process ends
    url = f"http://127.0.0.1:{params.port}"
    if not answers(f"{url}/health", 120):
        sys.stderr.write(f"the server at {url} did not answer /health within 120 s\n")
        return 1
    sys.stdout.write(f"listening {url}\n")
    sys.stdout.flush()
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    signal.signal(signal.SIGINT, lambda *_: stop.set())
    stop.wait()
    return 0


if __name__ == "__main__":
    sys.exit(main())
