"""The anthropic provider driving the real anthropic SDK against the loopback server: the start-up
check over the Models API, request settings from capabilities, the error taxonomy, and bounds."""

from __future__ import annotations

import itertools
import json

import pytest

from components.core import Chunk
from components.judges.providers.anthropic import (ANSWER_MAX_TOKENS, THINKING_MAX_TOKENS, AnthropicProvider,
                                                   ProviderConfig, parse_message)
from components.judges.retrieval_grader import RetrievalGrader
from tests.conftest import SENTINEL_KEY
from tests.loopback import MODELS, LoopbackServer, ModelSpec, Reply, error
from utils.errors import InputError, JudgeError


@pytest.fixture
def serve():
    servers = []

    def start(script=None, default=None, *, models=MODELS, validate=None, **config):
        server = LoopbackServer(script, default, models=models, validate=validate).__enter__()
        servers.append(server)
        provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url=server.url,
                                                    **{"max_retry_wait_s": 0.2, "timeout": 5, **config}))
        return server, provider

    yield start
    for s in servers:
        s.__exit__()


# ---------------------------------------------------------------- start-up check and settings

@pytest.mark.parametrize("model,thinking,effort,max_tokens", [
    ("claude-sonnet-5-5", {"type": "between_tools"}, None, ANSWER_MAX_TOKENS),  # no `disabled`
    ("claude-opus-5-5", None, "low", THINKING_MAX_TOKENS),  # adaptive only: thinking left out, lowest effort
    ("claude-haiku-4-5", {"type": "disabled"}, None, ANSWER_MAX_TOKENS),  # no adaptive, no effort
    ("claude-sonnet-4-6", {"type": "disabled"}, None, ANSWER_MAX_TOKENS),
])
def test_settings_from_capabilities_are_accepted(serve, model, thinking, effort, max_tokens):
    server, provider = serve()  # validating mode: the server refuses what the model does not accept
    settings = provider.check_model_settings(model)
    assert (settings.thinking, settings.effort, settings.max_tokens, settings.source) == \
        (thinking, effort, max_tokens, "models_api")
    reply = provider.model(settings).complete("Hello judge")
    assert reply.text.startswith('{"grade": 8')
    (req,) = server.requests
    assert req.body.get("thinking") == thinking and "temperature" not in req.body
    assert (req.body.get("output_config") or {}).get("effort") == effort
    assert req.body["max_tokens"] == max_tokens
    assert server.model_requests == [f"/v1/models/{model}"]  # one look-up per model, nothing more


def test_disabled_is_refused_by_sonnet_5_5(serve):
    """The old defect: `disabled` on today's default Sonnet is a 400 that quotes the API."""
    server, provider = serve()
    settings = provider.check_model_settings("claude-sonnet-5-5")
    forced = settings.__class__(**{**settings.to_json(), "thinking": {"type": "disabled"}})
    with pytest.raises(JudgeError) as info:
        provider.model(forced).complete("x")
    assert info.value.kind == "bad_request" and info.value.fatal
    assert "thinking.type: 'disabled' is not supported" in str(info.value)  # quoted, not guessed
    assert "model id" not in str(info.value)


def test_effort_level_the_model_lacks_is_refused_at_start_up(serve):
    server, provider = serve()
    with pytest.raises(InputError) as info:
        provider.check_model_settings("claude-sonnet-5-5", effort="xhigh")
    assert "low, medium, high, max" in str(info.value) and "BENCHMARK_JUDGE_EFFORT" in str(info.value)
    with pytest.raises(InputError):
        provider.check_model_settings("claude-haiku-4-5", effort="low")  # no effort at all
    settings = provider.check_model_settings("claude-opus-5-5", effort="high")
    provider.model(settings).complete("x")
    assert server.requests[-1].body["output_config"] == {"effort": "high"}


def test_unknown_model_names_the_newest_active_of_the_line(serve):
    server, provider = serve()
    with pytest.raises(InputError) as info:
        provider.check_model_settings("claude-sonnet-9-9", line="sonnet")
    message = str(info.value)
    assert "unknown to the API (404)" in message and "BENCHMARK_SONNET_MODEL" in message
    assert "claude-sonnet-5-5" in message  # the newest active sonnet, not the deprecated 4-5
    assert not server.requests


def test_retired_model_stops_with_the_newest_active(serve):
    server, provider = serve()
    with pytest.raises(InputError) as info:
        provider.check_model_settings("claude-sonnet-4-0")
    assert "is retired" in str(info.value) and "claude-sonnet-5-5" in str(info.value)


def test_deprecated_model_warns_once_and_goes_on(serve, caplog_loguru):
    server, provider = serve()
    settings = provider.check_model_settings("claude-sonnet-4-5")
    assert settings.lifecycle == "deprecated" and settings.retires_at.startswith("2027-03-01")
    warnings = [m for m in caplog_loguru if "deprecated" in m]
    assert len(warnings) == 1 and "2027-03-01" in warnings[0]


def test_gateway_without_models_api_uses_the_builtin_table(serve, caplog_loguru):
    server, provider = serve(models=None)
    settings = provider.check_model_settings("claude-sonnet-5-5")
    assert settings.source == "builtin_table" and settings.thinking == {"type": "between_tools"}
    assert any("built-in table" in m for m in caplog_loguru)
    unknown = provider.check_model_settings("gateway-model-x")  # in neither: thinking left out, large max_tokens
    assert (unknown.source, unknown.thinking, unknown.max_tokens) == ("default", None, THINKING_MAX_TOKENS)
    provider.model(unknown).complete("x")
    assert "thinking" not in server.requests[-1].body


def test_null_capabilities_use_the_builtin_table(serve):
    server, provider = serve(models={**MODELS, "claude-opus-5-5-gw": ModelSpec("opus", frozenset(),
                                                                              capabilities_null=True)})
    settings = provider.check_model_settings("claude-opus-5-5-gw")
    assert settings.source == "builtin_table" and settings.thinking is None and settings.effort == "low"


@pytest.fixture
def refusing_server():
    """A server whose every GET answers ``status`` (set on the returned function)."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    servers = []

    def start(status: int) -> str:
        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):  # noqa: N802
                body = json.dumps({"type": "error", "error": {"type": "authentication_error",
                                                               "message": "invalid x-api-key"}}).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        srv = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        servers.append(srv)
        return f"http://127.0.0.1:{srv.server_address[1]}"

    yield start
    for srv in servers:
        srv.shutdown()
        srv.server_close()


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_stops_at_start_up(refusing_server, status):
    provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url=refusing_server(status)))
    with pytest.raises(InputError) as info:
        provider.check_model_settings("claude-sonnet-5-5")
    assert f"({status})" in str(info.value) and "ANTHROPIC_API_KEY" in str(info.value)
    assert SENTINEL_KEY not in str(info.value)


def test_unreachable_api_is_one_fatal_start_up_error():
    provider = AnthropicProvider(ProviderConfig(api_key=SENTINEL_KEY, base_url="http://127.0.0.1:9", timeout=2,
                                                max_retries=0))
    with pytest.raises(JudgeError) as info:
        provider.check_model_settings("claude-sonnet-5-5")
    assert info.value.fatal and "ANTHROPIC_BASE_URL" in str(info.value)


# ---------------------------------------------------------------- the call

def test_reply_carries_usage_stop_reason_and_ids(serve):
    server, provider = serve([Reply(usage={"input_tokens": 1200, "output_tokens": 80,
                                           "cache_creation_input_tokens": 5, "cache_read_input_tokens": 7})])
    reply = provider.model(provider.check_model_settings("claude-sonnet-5-5")).complete("x")
    assert (reply.input_tokens, reply.output_tokens, reply.cache_creation_input_tokens,
            reply.cache_read_input_tokens) == (1200, 80, 5, 7)
    assert reply.stop_reason == "end_turn" and reply.model == "claude-sonnet-5-5"
    assert reply.request_id == "req_loopback_1"
    assert SENTINEL_KEY in server.requests[0].headers.get("authorization", "")


def test_only_text_blocks_are_read(serve):
    server, provider = serve([Reply(content=[{"type": "thinking", "thinking": "hmm {\"grade\": 2}", "signature": "s"},
                                             {"type": "text", "text": '{"grade": 9, "reasoning": "ok"}'}])])
    assert provider.model(provider.check_model_settings("claude-sonnet-5-5")).complete("x").text == \
        '{"grade": 9, "reasoning": "ok"}'


@pytest.mark.parametrize("replies,kind,fatal,requests", [
    ([error(404, "not_found_error", "model: gone")], "not_found", True, 1),
    ([error(400, "invalid_request_error", "prompt is too long")], "bad_request", True, 1),
    ([error(429, "rate_limit_error")] * 3, "rate_limit", False, 3),
    ([error(529, "overloaded_error")] * 3, "overloaded", False, 3),
    ([error(500, "api_error")] * 3, "server_error", False, 3),
    ([Reply(drop=True)] * 3, "connection", False, 3),
    ([Reply(raw_body=b"<html>proxy error</html>")], "bad_response", False, 1),
    ([Reply(json_body={"unexpected": True})], "bad_response", False, 1),
    ([Reply(raw_body=b"[" * 5000 + b"]" * 5000)], "bad_response", False, 1),  # nested deeper than Python goes
])
def test_taxonomy(serve, replies, kind, fatal, requests):
    server, provider = serve(replies, validate=False)
    model = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert (info.value.kind, info.value.fatal) == (kind, fatal)
    assert len(server.requests) == requests  # the SDK retried transient ones twice, fatal ones never
    assert SENTINEL_KEY not in str(info.value)


def test_a_retry_after_past_the_cap_is_not_retried_by_the_sdk_and_is_kept(serve, monkeypatch):
    import anthropic._base_client

    server, provider = serve([error(429, "rate_limit_error", **{"retry-after": "3600"})] * 3)
    model = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
    computed: list[float] = []
    calculate = anthropic._base_client.SyncAPIClient._calculate_retry_timeout

    def spy(self, *args, **kwargs):
        computed.append(calculate(self, *args, **kwargs))
        return computed[-1]

    monkeypatch.setattr(anthropic._base_client.SyncAPIClient, "_calculate_retry_timeout", spy)
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert computed == [] and len(server.requests) == 1  # no SDK retry: an hour is the run's to decide
    assert info.value.retry_after == 3600.0  # the server's wish, for the run (retry pass or circuit breaker)


def test_a_retry_after_within_the_cap_is_waited_by_the_sdk(serve, monkeypatch):
    import anthropic._base_client

    server, provider = serve([error(429, "rate_limit_error", **{"retry-after": "0.1"})] * 3)
    model = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
    computed: list[float] = []
    calculate = anthropic._base_client.SyncAPIClient._calculate_retry_timeout

    def spy(self, *args, **kwargs):
        computed.append(calculate(self, *args, **kwargs))
        return computed[-1]

    monkeypatch.setattr(anthropic._base_client.SyncAPIClient, "_calculate_retry_timeout", spy)
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert computed == [0.1, 0.1] and info.value.retry_after == 0.1


def test_timeout_is_a_deadline_for_a_trickling_body(serve):
    """A 1-byte-per-second reply is cut at the deadline (it took 245 s at timeout 5 before)."""
    body = json.dumps({"type": "message", "content": [{"type": "text", "text": "x" * 50}]}).encode()
    trickle = Reply(trickle=[body[i:i + 1] for i in range(len(body))], trickle_gap=0.2, trickle_for=20)
    server, provider = serve([trickle] * 3, timeout=1.0, max_retries=0)
    model = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
    with pytest.raises(JudgeError) as info:  # whole, the body would arrive after ~10 s: a success
        model.complete("x")
    assert info.value.kind == "timeout" and not info.value.fatal


def test_body_that_never_ends_is_capped(serve):
    """13.6 GB in 60 s before: now a bad response at the cap."""
    endless = Reply(trickle=itertools.repeat(b"x" * 65536), trickle_for=30)
    server, provider = serve([endless], timeout=20, max_retries=0, max_body_bytes=1_000_000)
    model = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert info.value.kind == "bad_response" and "1,000,000 bytes" in str(info.value)


def test_lone_surrogate_in_a_reply_is_made_writable():
    reply = parse_message(json.loads('{"content": [{"type": "text", "text": "grade \\ud800 8"}]}'))
    reply.text.encode("utf-8")  # does not raise
    assert "\ufffd" in reply.text


def test_grader_over_the_real_sdk(serve):
    server, provider = serve([Reply(text='Analysis first.\n{"grade": 7, "reasoning": "most facts"}')])
    chunks = [Chunk("d", "d#0", "D", (), "text", 0)]
    grader = RetrievalGrader(provider.model(provider.check_model_settings("claude-sonnet-5-5")))
    result = grader.grade("Q?", "A.", chunks)
    assert (result.grade, result.reasoning, result.error) == (7, "most facts", None)
    assert result.reply.input_tokens == 10
    assert server.prompts()[0].startswith("You are an impartial judge")


@pytest.mark.parametrize("reply,error_kind", [
    (Reply(text='{"reasoning": "the chunks cover', stop_reason="max_tokens"), "truncated: the reply was cut"),
    (Reply(text='I will not grade this. {"grade": 9}', stop_reason="refusal"), "refusal"),
    (Reply(content=[], stop_reason="refusal"), "refusal"),
    (Reply(text="", stop_reason="model_context_window_exceeded"), "context_window_exceeded"),
])
def test_stop_reasons(serve, reply, error_kind):
    server, provider = serve([reply])
    chunks = [Chunk("d", "d#0", "D", (), "text", 0)]
    grader = RetrievalGrader(provider.model(provider.check_model_settings("claude-sonnet-5-5")))
    result = grader.grade("Q?", "A.", chunks)
    assert result.grade is None and result.error.startswith(error_kind)
    assert result.raw == (reply.text if reply.content is None else "")  # the raw reply is kept
    assert result.reply.stop_reason == reply.stop_reason


def test_config_repr_hides_key():
    assert SENTINEL_KEY not in repr(ProviderConfig(api_key=SENTINEL_KEY))
