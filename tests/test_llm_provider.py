"""utils.llm_provider driving the real anthropic SDK against the loopback Messages API server."""

from __future__ import annotations

import time

import pytest

from components.run.retrieval_grader import RetrievalGrader
from poc.chunking import Chunk
from tests.conftest import SENTINEL_KEY
from tests.loopback import LoopbackServer, Reply, error
from utils import llm_provider
from utils.errors import JudgeError
from utils.llm_provider import ProviderConfig, call_llm


@pytest.fixture
def serve():
    servers = []

    def start(script=None, default=None, **config):
        server = LoopbackServer(script, default).__enter__()
        servers.append(server)
        llm_provider.configure(ProviderConfig(api_key=SENTINEL_KEY, base_url=server.url,
                                              **{"max_retry_wait_s": 0.2, **config}))
        return server

    yield start
    for s in servers:
        s.__exit__()
    llm_provider.configure(ProviderConfig())


def test_request_shape(serve):
    server = serve()
    assert call_llm("Hello judge", timeout=5) == '{"grade": 8, "reasoning": "all key facts present"}'
    (req,) = server.requests
    assert req.path == "/v1/messages"
    assert req.body["model"] == "claude-sonnet-5-5"
    assert req.body["messages"] == [{"role": "user", "content": "Hello judge"}]
    assert req.body["thinking"] == {"type": "disabled"}
    assert "temperature" not in req.body
    assert req.body["max_tokens"] == llm_provider.MAX_TOKENS
    # SDK 2.x sends the key as a bearer token (1.x used x-api-key)
    assert SENTINEL_KEY in (req.headers.get("x-api-key"), req.headers.get("authorization", "").removeprefix("Bearer "))


def test_aliases_and_overrides(serve):
    server = serve(models=(("claude-sonnet", "claude-sonnet-custom"), ("claude-haiku", "claude-haiku-4-5")))
    call_llm("x", model="claude-haiku")
    call_llm("x")
    call_llm("x", model="claude-opus-literal")
    assert [r.body["model"] for r in server.requests] == ["claude-haiku-4-5", "claude-sonnet-custom",
                                                         "claude-opus-literal"]


def test_only_text_blocks_are_read(serve):
    serve([Reply(content=[{"type": "thinking", "thinking": "hmm {\"grade\": 2}", "signature": "s"},
                          {"type": "text", "text": '{"grade": 9, "reasoning": "ok"}'}])])
    assert call_llm("x") == '{"grade": 9, "reasoning": "ok"}'


@pytest.mark.parametrize("replies,kind,fatal,requests", [
    ([error(401, "authentication_error", "invalid x-api-key")], "auth", True, 1),
    ([error(403, "permission_error")], "auth", True, 1),
    ([error(404, "not_found_error", "model: claude-sonnet-4-20250514")], "not_found", True, 1),
    ([error(400, "invalid_request_error", "temperature is not supported")], "bad_request", True, 1),
    ([error(429, "rate_limit_error")] * 3, "rate_limit", False, 3),
    ([error(529, "overloaded_error")] * 3, "overloaded", False, 3),
    ([error(500, "api_error")] * 3, "server_error", False, 3),
    ([Reply(drop=True)] * 3, "connection", False, 3),
    ([Reply(raw_body=b"<html>proxy error</html>")], "bad_response", False, 1),
    ([Reply(json_body={"unexpected": True})], "bad_response", False, 1),
])
def test_taxonomy(serve, replies, kind, fatal, requests):
    server = serve(replies)
    with pytest.raises(JudgeError) as info:
        call_llm("x", timeout=5)
    assert (info.value.kind, info.value.fatal) == (kind, fatal)
    assert len(server.requests) == requests  # the SDK retried transient ones twice, fatal ones never
    assert SENTINEL_KEY not in str(info.value)


def test_transient_burst_then_success(serve):
    server = serve([error(529, "overloaded_error"), error(500, "api_error")])
    assert '"grade": 8' in call_llm("x", timeout=5)
    assert len(server.requests) == 3


def test_timeout_is_bounded(serve):
    server = serve(default=Reply(delay=1.5))
    start = time.monotonic()
    with pytest.raises(JudgeError) as info:
        call_llm("x", timeout=0.3)
    elapsed = time.monotonic() - start
    assert info.value.kind == "timeout"
    assert len(server.requests) == 3
    assert elapsed < 3 * 0.3 + 2 * 1.0 + 1.0  # 3 attempts of 0.3 s plus SDK backoff, nowhere near 1.5 s each


def test_retry_after_is_capped(serve):
    server = serve([error(429, "rate_limit_error", **{"retry-after": "3600"})] * 2, max_retry_wait_s=0.2)
    start = time.monotonic()
    assert '"grade": 8' in call_llm("x", timeout=5)
    assert time.monotonic() - start < 3.0  # not an hour
    assert len(server.requests) == 3


def test_refusal_with_no_text(serve):
    serve([Reply(content=[], stop_reason="refusal")])
    with pytest.raises(JudgeError) as info:
        call_llm("x")
    assert info.value.kind == "refusal" and not info.value.fatal


def test_grader_over_the_real_sdk(serve):
    server = serve([Reply(text='Analysis first.\n{"grade": 7, "reasoning": "most facts"}')])
    chunks = [Chunk("d", "d#0", "D", (), "text", 0)]
    result = RetrievalGrader(timeout=5).grade("Q?", "A.", chunks)
    assert (result.grade, result.reasoning, result.error) == (7, "most facts", None)
    assert server.prompts()[0].startswith("You are an impartial judge")


def test_config_repr_hides_key():
    assert SENTINEL_KEY not in repr(ProviderConfig(api_key=SENTINEL_KEY))
