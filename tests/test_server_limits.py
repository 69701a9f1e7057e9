"""What a server people run themselves (llama.cpp, vLLM) does to a judge call, at the provider level,
against the real ``openai`` SDK and a loopback server with llama.cpp-shaped answers
(tests/loopback_openai.py): the context window read from ``/props`` or ``max_model_len`` and the reply
cap kept within it, a prompt over the window costing its question only, a timed-out call and a refused
connection never repeated inside the call, and usage with llama.cpp's prompt cache."""

from __future__ import annotations

import json
import math
import socket
import time

import pytest

from components.judges.llm import CONTEXT_WINDOW, RETRIED_KINDS, TRANSIENT_KINDS
from components.judges.providers import context_window
from components.judges.providers.openai import JSON_MODE_INSTRUCTION, OpenAIProvider, ProviderConfig
from components.judges.retrieval_grader import RetrievalGrader
from tests.loopback_openai import OpenAILoopback, Reply
from tests.test_openai_provider import CHUNKS, LLAMA_CPP_OVERFLOW, LOCAL
from utils.errors import JudgeError


@pytest.fixture
def serve():
    servers = []

    def start(script=None, default=None, *, timeout: float = 5, max_retries: int = 2, **options):
        server = OpenAILoopback(script, default, **options).__enter__()
        servers.append(server)
        provider = OpenAIProvider(ProviderConfig(api_key=None, base_url=server.url, timeout=timeout,
                                                 max_retries=max_retries, max_retry_wait_s=0.2))
        return server, provider

    yield start
    for s in servers:
        s.__exit__()


def _local(provider: OpenAIProvider, model: str = LOCAL):
    return provider.model(provider.check_model("judge", model))


# ---------------------------------------------------------------- the window and the reply cap


@pytest.mark.parametrize("props,window", [
    ({"default_generation_settings": {"n_ctx": 2048}, "total_slots": 1}, 2048),  # llama.cpp today
    ({"n_ctx": 512}, 512),  # older builds
])
def test_the_window_comes_from_props_and_bounds_the_cap(serve, props, window):
    server, provider = serve(props=props, retrieve=False)  # llama.cpp lists its model, cannot retrieve it
    model = _local(provider)
    prompt = "p" * 1000
    model.complete(prompt)
    estimate = math.ceil((len(JSON_MODE_INSTRUCTION) + len(prompt)) / 4)
    # 1024, or what 512 leaves once the estimate (282) is taken 1.25 times: 512 - 353 = 159
    assert server.requests[0].body["max_tokens"] == min(1024, window - math.ceil(1.25 * estimate))
    assert "/props" in server.model_requests
    assert provider.describe(provider.check_model("judge", LOCAL))["context_window"] == window


def test_the_window_comes_from_max_model_len_as_vllm_lists_it(serve):
    server, provider = serve(retrieve=False, max_model_len=600)
    model = _local(provider)
    model.complete("q" * 400)
    estimate = math.ceil((len(JSON_MODE_INSTRUCTION) + 400) / 4)
    assert server.requests[0].body["max_tokens"] == 600 - math.ceil(1.25 * estimate)
    assert "/props" not in server.model_requests  # the listing said it


@pytest.mark.parametrize("props", [None, b"<html>not json</html>", {"n_ctx": "4096"}, {"n_ctx": -1}, [1, 2]])
def test_a_missing_or_malformed_props_falls_back_to_the_default_said_once(serve, caplog_loguru, props):
    server, provider = serve(props=props, retrieve=False)
    model = _local(provider)
    provider.check_model("rewriter", LOCAL)  # a second look at the same server: not said again
    model.complete("x")
    assert server.requests[0].body["max_tokens"] == 1024  # the default of a model the project does not know
    said = [m for m in caplog_loguru if "does not say the context window" in m]
    assert len(said) == 1 and "1024 tokens" in said[0]


def test_a_known_family_is_not_asked_for_its_window(serve):
    server, provider = serve(props={"n_ctx": 100})
    provider.model(provider.check_model("judge", "gpt-4.1")).complete("x")
    assert server.requests[0].body["max_tokens"] == 1024 and "/props" not in server.model_requests


def test_a_prompt_whose_estimate_fills_the_window_costs_its_question_and_no_call(serve):
    server, provider = serve(props={"n_ctx": 256}, retrieve=False)
    result = RetrievalGrader(_local(provider)).grade("Q?", "A.", CHUNKS * 200)
    assert result.grade is None and result.error.startswith("context_window_exceeded: the prompt (about ")
    assert server.requests == []


def test_a_refusal_over_the_window_costs_its_question_only(serve):
    server, provider = serve([Reply(status=400, json_body=LLAMA_CPP_OVERFLOW)], retrieve=False)
    grader = RetrievalGrader(_local(provider))
    first = grader.grade("Q?", "A.", CHUNKS)  # not raised: a fatal error would stop the run
    second = grader.grade("Q?", "A.", CHUNKS)
    assert first.grade is None and first.error.startswith("context_window")
    assert "exceeds the available context size (4096 tokens)" in first.error
    assert second.grade == 8 and len(server.requests) == 2  # the shape was not "adapted": same request again
    assert server.requests[0].body == server.requests[1].body


@pytest.mark.parametrize("status,body,message,expected", [
    (400, LLAMA_CPP_OVERFLOW["error"], "", True),
    (400, {"code": "context_length_exceeded"}, "", True),
    (400, None, "This model's maximum context length is 32,768 tokens. However, you requested", True),
    (400, None, "request (9 tokens) exceeds the available context size (8 tokens)", True),
    (400, {"type": "invalid_request_error"}, "max_tokens is too large", False),
    (500, LLAMA_CPP_OVERFLOW["error"], "", False),  # a server error is not a refusal of the prompt
])
def test_refusals_recognised(status, body, message, expected):
    assert context_window.is_refusal(status, body, message) is expected


def test_reply_cap_arithmetic():
    assert context_window.reply_cap(1024, 4096, 3000) == 4096 - 3750  # the estimate taken 1.25 times
    assert context_window.reply_cap(1024, 4096, 3500) == 64  # the margin leaves nothing: a short reply still fits
    assert context_window.reply_cap(1024, 4096, 4060) == 36  # the window's rest, when under 64
    assert context_window.reply_cap(1024, 4096, 100) == 1024
    assert context_window.reply_cap(1024, None, 10**6) == 1024
    assert context_window.reply_cap(1024, 4096, 4096) is None
    assert context_window.props_url("http://127.0.0.1:8097/v1/") == "http://127.0.0.1:8097/props"
    assert context_window.props_url("http://h:1/api") == "http://h:1/api/props"


# ---------------------------------------------------------------- one call, never repeated when it timed out


def test_a_timed_out_call_is_never_repeated_inside_the_call(serve):
    server, provider = serve(default=Reply(delay=3.0), timeout=0.5, max_retries=2, retrieve=False)
    model = _local(provider)
    start = time.monotonic()
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    elapsed = time.monotonic() - start
    assert info.value.kind == "timeout" and not info.value.fatal
    assert "judge timeout of 0.5 s (not retried)" in str(info.value)
    assert len(server.requests) == 1 and elapsed < 1.5  # one attempt: 3 would take 1.5 s and more


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_a_refused_connection_is_never_repeated_inside_the_call(monkeypatch):
    import openai._base_client

    slept: list[float] = []
    monkeypatch.setattr(openai._base_client.time, "sleep", slept.append)
    from components.judges.providers.openai import choose_shape

    provider = OpenAIProvider(ProviderConfig(base_url=f"http://127.0.0.1:{_closed_port()}/v1", timeout=5,
                                             max_retries=2))
    model = provider.model(choose_shape("judge", LOCAL, models_api=False))
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert info.value.kind == "connection_refused" and not info.value.fatal
    assert "refused the connection" in str(info.value) and slept == []  # no SDK back-off: no second attempt


def test_a_connection_reset_is_retried_by_the_sdk(serve):
    server, provider = serve([Reply(drop=True), Reply()], retrieve=False)
    assert _local(provider).complete("x").text.startswith('{"grade"')
    assert len(server.requests) == 2


def test_which_kinds_the_retry_pass_repeats():
    assert "timeout" in TRANSIENT_KINDS and "timeout" not in RETRIED_KINDS
    assert {"rate_limit", "overloaded", "server_error", "connection", "connection_refused"} == RETRIED_KINDS
    assert CONTEXT_WINDOW == "context_window_exceeded" and CONTEXT_WINDOW not in RETRIED_KINDS


# ---------------------------------------------------------------- usage with llama.cpp's prompt cache


@pytest.mark.parametrize("usage", [
    # as llama.cpp (xllamacpp 2026.10.11549) sends it: prompt_tokens counts the cached ones too
    {"prompt_tokens": 1178, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1164}},
    # as an older build sent it: prompt_tokens counts only what was not in its cache
    {"prompt_tokens": 14, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1164}},
])
def test_llama_cpp_cached_prompt_tokens_are_counted(serve, usage):
    body = {"choices": [{"index": 0, "message": {"role": "assistant", "content": '{"grade": 6}'},
                         "finish_reason": "stop"}], "usage": usage, "model": LOCAL,
            "timings": {"cache_n": 1164, "prompt_n": 14}}
    _server, provider = serve([Reply(json_body=body)], retrieve=False)
    reply = _local(provider).complete("x")
    assert (reply.input_tokens, reply.cache_read_input_tokens, reply.output_tokens) == (14, 1164, 9)


def test_cached_tokens_past_prompt_tokens_are_added_not_dropped(serve):
    usage = {"prompt_tokens": 14, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1164}}
    _server, provider = serve([Reply(usage=usage)], retrieve=False)  # no timings block
    reply = _local(provider).complete("x")
    assert (reply.input_tokens, reply.cache_read_input_tokens) == (14, 1164)


def test_openai_cached_prompt_tokens_are_within_the_prompt_tokens(serve):
    usage = {"prompt_tokens": 2000, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 1536}}
    _server, provider = serve([Reply(usage=usage)])
    reply = provider.model(provider.check_model("judge", "gpt-4.1")).complete("x")
    assert (reply.input_tokens, reply.cache_read_input_tokens) == (464, 1536)


def test_a_cut_reply_is_never_a_grade(serve):
    _server, provider = serve([Reply(text='{"grade": 9, "reasoning": "the chunks', finish_reason="length")],
                             retrieve=False)
    result = RetrievalGrader(_local(provider)).grade("Q?", "A.", CHUNKS)
    assert result.grade is None and result.error.startswith("truncated: ")
    assert json.loads(json.dumps(result.raw)) == '{"grade": 9, "reasoning": "the chunks'


# ---------------------------------------------------------------- the anthropic provider: the same rule


def test_anthropic_timed_out_call_is_never_repeated(monkeypatch):
    from components.judges.providers.anthropic import AnthropicProvider
    from components.judges.providers.anthropic import ProviderConfig as AnthropicConfig
    from tests.conftest import SENTINEL_KEY
    from tests.loopback import LoopbackServer
    from tests.loopback import Reply as AnthropicReply

    with LoopbackServer([], AnthropicReply(delay=3.0)) as server:
        provider = AnthropicProvider(AnthropicConfig(api_key=SENTINEL_KEY, base_url=server.url, timeout=0.5,
                                                     max_retries=2, max_retry_wait_s=0.2))
        model = provider.model(provider.check_model_settings("claude-sonnet-5-5"))
        start = time.monotonic()
        with pytest.raises(JudgeError) as info:
            model.complete("x")
        assert info.value.kind == "timeout" and "(not retried)" in str(info.value)
        assert time.monotonic() - start < 1.5 and len(server.prompts()) == 1


def test_anthropic_refused_connection_is_never_repeated(monkeypatch):
    import anthropic._base_client

    from components.judges.providers.anthropic import AnthropicProvider, choose_settings
    from components.judges.providers.anthropic import ProviderConfig as AnthropicConfig
    from tests.conftest import SENTINEL_KEY

    slept: list[float] = []
    monkeypatch.setattr(anthropic._base_client.time, "sleep", slept.append)
    provider = AnthropicProvider(AnthropicConfig(api_key=SENTINEL_KEY, base_url=f"http://127.0.0.1:{_closed_port()}",
                                                 timeout=5, max_retries=2))
    model = provider.model(choose_settings("claude-sonnet-5-5", None, source="default"))
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert info.value.kind == "connection_refused" and slept == []


# ---------------------------------------------------------------- the judge timeout's default


@pytest.mark.parametrize("env,timeout,source", [
    ({"OPENAI_BASE_URL": "http://127.0.0.1:8097/v1"}, 300.0, "loopback default"),
    ({"OPENAI_BASE_URL": "http://localhost:8097/v1"}, 300.0, "loopback default"),
    ({"OPENAI_BASE_URL": "http://[::1]:8097/v1"}, 300.0, "loopback default"),
    ({"OPENAI_BASE_URL": "http://127.0.0.1:8097/v1", "BENCHMARK_JUDGE_TIMEOUT": "12"}, 12.0,
     "BENCHMARK_JUDGE_TIMEOUT"),  # the variable always wins
    ({"OPENAI_BASE_URL": "http://gpu-box.internal:8000/v1"}, 30.0, "default"),
    ({"OPENAI_API_KEY": "sk-test-0123456789abcdef"}, 30.0, "default"),  # the public API
])
def test_the_timeout_default_is_long_only_for_a_server_on_this_machine(env, timeout, source):
    from components.judges.settings import Settings

    settings = Settings.from_env({"BENCHMARK_JUDGE_MODEL": f"openai/{LOCAL}", **env})
    assert (settings.judge_timeout, settings.timeout_source) == (timeout, source)


def test_a_panel_judges_timeout_wins(tmp_path):
    from components.judges.panel import panel_settings, parse_judges

    panel = tmp_path / "panel.toml"
    panel.write_text('[[judge]]\nname = "slow"\nprovider = "openai"\nmodel = "m"\nbase_url = "http://127.0.0.1:9/v1"\n'
                     'timeout = 45\n\n[[judge]]\nname = "fast"\nprovider = "openai"\nmodel = "n"\n'
                     'base_url = "http://127.0.0.1:8/v1"\n')
    settings = panel_settings(parse_judges(str(panel)), {"BENCHMARK_JUDGE_TIMEOUT": "12"})
    slow, fast = settings.panel
    assert (slow.settings.judge_timeout, slow.settings.timeout_source) == (45.0, "timeout")
    assert (fast.settings.judge_timeout, fast.settings.timeout_source) == (12.0, "BENCHMARK_JUDGE_TIMEOUT")


@pytest.mark.parametrize("value", ["0", "-1", "601", '"soon"', "true"])
def test_a_panel_judges_timeout_is_checked(tmp_path, value):
    from components.judges.panel import parse_judges
    from utils.errors import InputError

    panel = tmp_path / "panel.toml"
    panel.write_text(f'[[judge]]\nprovider = "openai"\nmodel = "m"\ntimeout = {value}\n')
    with pytest.raises(InputError) as info:
        parse_judges(str(panel))
    assert "timeout" in str(info.value) and "judge #1" in str(info.value)


def test_openai_max_tokens_sets_the_cap_of_an_unknown_model_within_the_window(serve):
    config = OpenAIProvider.configure({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_MAX_TOKENS": "48"},
                                      {"judge": LOCAL})
    assert config.max_tokens == 48
    server = OpenAILoopback(props={"n_ctx": 1024}, retrieve=False).__enter__()
    try:
        from dataclasses import replace

        provider = OpenAIProvider(replace(config, base_url=server.url))
        provider.model(provider.check_model("judge", LOCAL)).complete("x" * 100)
        provider.model(provider.check_model("judge", "gpt-4.1")).complete("x")  # a known family: its own cap
        assert [r.body["max_tokens"] for r in server.requests] == [48, 1024]
    finally:
        server.__exit__()


@pytest.mark.parametrize("value", ["0", "-5", "lots", "16001"])
def test_openai_max_tokens_is_checked(value):
    from utils.errors import InputError

    with pytest.raises(InputError) as info:
        OpenAIProvider.configure({"OPENAI_BASE_URL": "http://127.0.0.1:1/v1", "OPENAI_MAX_TOKENS": value},
                                 {"judge": LOCAL})
    assert str(info.value).startswith(f"OPENAI_MAX_TOKENS={value!r} is not a number of tokens")


def test_anthropic_prompt_too_long_costs_its_question_only():
    from components.judges.providers.anthropic import AnthropicProvider
    from components.judges.providers.anthropic import ProviderConfig as AnthropicConfig
    from tests.conftest import SENTINEL_KEY
    from tests.loopback import LoopbackServer
    from tests.loopback import error as anthropic_error

    too_long = anthropic_error(400, "invalid_request_error", "prompt is too long: 201234 tokens > 200000 maximum")
    with LoopbackServer([too_long]) as server:
        provider = AnthropicProvider(AnthropicConfig(api_key=SENTINEL_KEY, base_url=server.url, timeout=5))
        grader = RetrievalGrader(provider.model(provider.check_model_settings("claude-sonnet-5-5")))
        first, second = grader.grade("Q?", "A.", CHUNKS), grader.grade("Q?", "A.", CHUNKS)
    assert first.grade is None and first.error.startswith("context_window_exceeded: the prompt passed the context")
    assert "prompt is too long" in first.error and second.grade == 8


def test_the_start_up_line_says_where_a_loopback_timeout_comes_from(tmp_path, few_questions):
    from tests.conftest import run_cli
    from tests.test_openai_provider import openai_env

    with OpenAILoopback() as server:
        env = {k: v for k, v in openai_env(server.url).items() if k != "BENCHMARK_JUDGE_TIMEOUT"}
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"), "--limit", "1", env=env)
    assert ("(timeout 300s, the default for a server on this machine: BENCHMARK_JUDGE_TIMEOUT sets another)"
            in run.stderr), run.stderr
