"""The openai judge provider driving the real ``openai`` SDK against an OpenAI-compatible loopback
server (tests/loopback_openai.py): configuration, the start-up check over the Models API, the
request shape per model family and its fallbacks, the reply, the error taxonomy, the bounds of an
attempt, and whole CLI runs judged through it."""

from __future__ import annotations

import itertools
import json
import sys
from pathlib import Path

import pytest

from components.core import Chunk
from components.judges.chunk_relevance import LLMRelevanceJudge, build_relevance_prompt
from components.judges.providers import providers, secrets_in
from components.judges.providers.openai import (ANSWER_MAX_TOKENS, DEFAULT_JUDGE_MODEL, DEFAULT_MAX_TOKENS,
                                                DEFAULT_REWRITER_MODEL, INSTALL_HINT, JSON_MODE_INSTRUCTION, PRICES,
                                                REASONING_MAX_TOKENS, OpenAIProvider, ProviderConfig, import_openai,
                                                rate_limit_headers)
from components.judges.retrieval_grader import RetrievalGrader, build_prompt
from components.judges.settings import Settings
from tests.conftest import clean_env, judge_env, run_cli
from tests.loopback import LoopbackServer
from tests.loopback_openai import GRADE, OpenAILoopback, Reply, error
from utils.errors import InputError, JudgeError

KEY = "sk-proj-test-SENTINEL-fedcba9876543210"
PASSWORD = "pw-SENTINEL-424242"
LOCAL = "llama-3.1-8b-instruct"
CHUNKS = [Chunk("d", "d#0", "D", (), "text one", 0), Chunk("e", "e#0", "E", (), "text two", 0)]
# llama.cpp's answer to a prompt over its window, as it sends it
LLAMA_CPP_OVERFLOW = {"error": {"code": 400, "type": "exceed_context_size_error",
                                "message": "request (4588 tokens) exceeds the available context size (4096 tokens), "
                                           "try increasing it", "n_prompt_tokens": 4588, "n_ctx": 4096}}


def openai_env(url: str, model: str = LOCAL, **extra: str) -> dict[str, str]:
    """The CLI's environment for an openai-judged run: no judge settings but these (``OPENAI_*``
    of the calling shell left out too)."""
    env = {k: v for k, v in clean_env().items() if not k.startswith("OPENAI_")}
    env.update(BENCHMARK_JUDGE_MODEL=f"openai/{model}", OPENAI_BASE_URL=url, OPENAI_API_KEY=KEY)
    env.update(extra)
    return env


@pytest.fixture
def serve():
    servers = []

    def start(script=None, default=None, *, key: str | None = KEY, **options):
        config = {k: options.pop(k) for k in ("timeout", "max_retries", "max_retry_wait_s", "max_body_bytes")
                  if k in options}
        server = OpenAILoopback(script, default, **options).__enter__()
        servers.append(server)
        provider = OpenAIProvider(ProviderConfig(api_key=key, base_url=server.url,
                                                 **{"max_retry_wait_s": 0.2, "timeout": 5, **config}))
        return server, provider

    yield start
    for s in servers:
        s.__exit__()


def _model(provider: OpenAIProvider, model: str = "gpt-4.1", role: str = "judge"):
    return provider.model(provider.check_model(role, model))


# ---------------------------------------------------------------- the environment


def test_registered_but_never_the_judge_unless_asked_for():
    cls = providers()["openai"]
    assert cls is OpenAIProvider and not cls.is_default
    assert Settings.from_env({"OPENAI_API_KEY": KEY}).judge == "offline"  # a key alone chooses nothing
    settings = Settings.from_env({"BENCHMARK_JUDGE_MODEL": "openai/gpt-4.1", "OPENAI_API_KEY": KEY})
    assert (settings.judge, settings.judge_model) == ("openai", "gpt-4.1")
    assert (settings.rewriter, settings.rewriter_model) == ("openai", DEFAULT_REWRITER_MODEL)
    named = Settings.from_env({"BENCHMARK_JUDGE": "openai", "OPENAI_API_KEY": KEY,
                               "BENCHMARK_REWRITER_MODEL": "openai/o3-mini"})
    assert (named.judge_model, named.rewriter_model) == (DEFAULT_JUDGE_MODEL, "o3-mini")


def test_key_and_url_password_are_secrets_everywhere():
    env = {"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": f"http://user:{PASSWORD}@127.0.0.1:8000/v1",
           "BENCHMARK_JUDGE_MODEL": "openai/gpt-4.1"}
    assert {KEY, PASSWORD} <= set(secrets_in(env))
    settings = Settings.from_env(env)
    assert {KEY, PASSWORD} <= set(settings.secrets)
    shown = repr(settings.judge_config)
    assert KEY not in shown and PASSWORD not in shown and "***@127.0.0.1" in shown
    assert settings.judge_config.host == "127.0.0.1:8000"


@pytest.mark.parametrize("env,words", [
    ({}, ["OPENAI_API_KEY", "OPENAI_BASE_URL", "BENCHMARK_JUDGE=offline"]),
    ({"OPENAI_API_KEY": KEY + "\n"}, ["OPENAI_API_KEY", "whitespace"]),
    ({"OPENAI_API_KEY": KEY, "OPENAI_BASE_URL": "localhost:8000"}, ["OPENAI_BASE_URL", "http(s) URL"]),
    ({"OPENAI_BASE_URL": "ftp://127.0.0.1/v1"}, ["OPENAI_BASE_URL"]),
    ({"OPENAI_API_KEY": KEY, "BENCHMARK_JUDGE_MODEL": "openai/gpt 4"}, ["BENCHMARK_JUDGE_MODEL", "whitespace"]),
])
def test_bad_configuration_is_one_line_naming_the_variable(env, words):
    with pytest.raises(InputError) as info:
        Settings.from_env({"BENCHMARK_JUDGE_MODEL": "openai/gpt-4.1", **env})
    text = str(info.value)
    assert all(w in text for w in words), text
    assert "\n" not in text and KEY not in text


def test_a_local_server_needs_no_key(serve):
    settings = Settings.from_env({"BENCHMARK_JUDGE_MODEL": f"openai/{LOCAL}", "OPENAI_BASE_URL": "http://127.0.0.1:1/v1"})
    assert settings.judge_config.api_key is None
    server, provider = serve(key=None)
    reply = _model(provider, LOCAL).complete("x")
    assert reply.text == GRADE
    auth = server.requests[0].headers["authorization"]
    assert auth.startswith("Bearer ") and len(auth) > len("Bearer ")  # a placeholder the SDK accepts


def test_missing_sdk_is_one_line_naming_the_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` now fails as if it were not installed
    with pytest.raises(InputError) as info:
        Settings.from_env({"BENCHMARK_JUDGE_MODEL": "openai/gpt-4.1", "OPENAI_API_KEY": KEY})
    assert str(info.value) == INSTALL_HINT == 'the openai judge needs the openai package: pip install -e ".[openai]"'
    with pytest.raises(InputError, match="pip install"):
        import_openai()
    assert Settings.from_env({}).judge == "offline"  # other judges never need it


def test_missing_sdk_exits_2_from_the_cli(tmp_path: Path, few_questions: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setitem(sys.modules, "openai", None)  # `import openai` raises ImportError, as when it is absent
    run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                  env=openai_env("http://127.0.0.1:9/v1", "gpt-4.1"))
    assert run.code == 2, run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and errors[0].endswith(INSTALL_HINT), run.stderr
    assert not (tmp_path / "r.json").exists()


# ---------------------------------------------------------------- start-up check and request shape


@pytest.mark.parametrize("model,parameter,max_tokens,temperature", [
    ("gpt-4.1", "max_tokens", ANSWER_MAX_TOKENS, 0),
    ("gpt-5.4-mini", "max_completion_tokens", REASONING_MAX_TOKENS, None),  # reasoning: no temperature
    ("o3-mini", "max_completion_tokens", REASONING_MAX_TOKENS, None),
    (LOCAL, "max_tokens", DEFAULT_MAX_TOKENS, 0),  # no family names it
])
def test_request_shape_per_model_family(serve, model, parameter, max_tokens, temperature):
    server, provider = serve()  # validating: refuses max_tokens and temperature 0 for reasoning models
    choice = provider.check_model("judge", model)
    assert choice.details["token_parameter"] == parameter and choice.details["settings_source"] == "models_api"
    assert provider.model(choice).complete("Grade this").text == GRADE
    (req,) = server.requests
    body = req.body
    assert body[parameter] == max_tokens and body.get("temperature") == temperature
    assert {"max_tokens", "max_completion_tokens"} - {parameter} & body.keys() == set()
    assert body["response_format"] == {"type": "json_object"}  # supported, or the server is unknown
    assert body["messages"] == [{"role": "system", "content": JSON_MODE_INSTRUCTION},
                                {"role": "user", "content": "Grade this"}]
    # one look-up, nothing more (and, for a model no family names, its window: 404 here, so the default cap)
    assert server.model_requests == [f"/v1/models/{model}"] + (["/props"] if model == LOCAL else [])


def test_the_rewriter_asks_for_plain_text(serve):
    server, provider = serve()
    choice = provider.check_model("rewriter", "gpt-4.1")
    assert choice.details["json_mode"] is False
    provider.model(choice).complete("Rewrite")
    body = server.requests[0].body
    assert "response_format" not in body and body["messages"] == [{"role": "user", "content": "Rewrite"}]


@pytest.mark.parametrize("role,variable", [("judge", "BENCHMARK_JUDGE_MODEL"),
                                           ("rewriter", "BENCHMARK_REWRITER_MODEL")])
def test_unknown_model_names_models_the_server_has(serve, role, variable):
    server, provider = serve()
    with pytest.raises(InputError) as info:
        provider.check_model(role, "gpt-9-turbo")
    message = str(info.value)
    assert "unknown to the server" in message and f"{variable}=openai/<model>" in message
    assert "gpt-4.1" in message and LOCAL in message
    assert not server.requests


def test_a_server_that_lists_but_cannot_retrieve_knows_its_models(serve):
    server, provider = serve(retrieve=False)  # llama.cpp's server
    assert provider.check_model("judge", LOCAL).details["settings_source"] == "models_api"
    with pytest.raises(InputError):
        provider.check_model("judge", "not-served")


@pytest.mark.parametrize("status", [404, 405, 501])
def test_server_without_models_api_uses_the_builtin_table(serve, caplog_loguru, status):
    server, provider = serve(models=None, models_status=status)
    known = provider.check_model("judge", "gpt-4o")
    assert (known.details["settings_source"], known.details["family"], known.details["max_tokens"]) == \
        ("builtin_table", "gpt-4o", ANSWER_MAX_TOKENS)
    local = provider.check_model("judge", "mistral-7b")
    assert (local.details["settings_source"], local.details["json_mode"]) == ("default", True)
    assert any("no Models API" in m for m in caplog_loguru)
    assert provider.model(local).complete("x").text == GRADE


@pytest.mark.parametrize("status", [401, 403])
def test_refused_key_stops_at_start_up(serve, status):
    server, provider = serve(models=None, models_status=status)
    with pytest.raises(InputError) as info:
        provider.check_model("judge", "gpt-4.1")
    assert f"({status})" in str(info.value) and "OPENAI_API_KEY" in str(info.value)
    assert KEY not in str(info.value)


def test_unreachable_server_is_one_fatal_start_up_error():
    provider = OpenAIProvider(ProviderConfig(api_key=KEY, base_url="http://127.0.0.1:9/v1", timeout=2, max_retries=0))
    with pytest.raises(JudgeError) as info:
        provider.check_model("judge", "gpt-4.1")
    assert info.value.fatal and "OPENAI_BASE_URL" in str(info.value) and KEY not in str(info.value)


def test_effort_goes_to_reasoning_models_only(serve):
    server, provider = serve()
    provider.model(provider.check_model("judge", "o3-mini", effort="high")).complete("x")
    assert server.requests[-1].body["reasoning_effort"] == "high"
    with pytest.raises(InputError, match="takes no reasoning effort"):
        provider.check_model("judge", "gpt-4.1", effort="low")
    with pytest.raises(InputError, match="low, medium, high, xhigh"):
        provider.check_model("judge", "o3-mini", effort="max")
    provider.model(provider.check_model("judge", "o3-mini")).complete("x")
    assert "reasoning_effort" not in server.requests[-1].body  # not asked for, not sent


# ---------------------------------------------------------------- the reply


def test_reply_carries_usage_price_and_ids(serve):
    usage = {"prompt_tokens": 1000, "completion_tokens": 100, "total_tokens": 1100,
             "prompt_tokens_details": {"cached_tokens": 200}}
    server, provider = serve([Reply(usage=usage)])
    reply = _model(provider, "gpt-5.4-mini").complete("x")
    assert (reply.input_tokens, reply.cache_read_input_tokens, reply.output_tokens) == (800, 200, 100)
    # $0.75 / $4.50 per million tokens, cached input at a tenth of the input price
    assert reply.cost_usd == pytest.approx(800 * 0.75e-6 + 200 * 0.075e-6 + 100 * 4.5e-6)
    assert (reply.stop_reason, reply.model, reply.request_id) == ("end_turn", "gpt-5.4-mini", "req_openai_loopback_1")
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"


def test_reply_without_usage_has_no_tokens_and_no_cost(serve):
    server, provider = serve([Reply(usage=None)])
    reply = _model(provider, "gpt-5.4-mini").complete("x")  # a priced model: still no cost without usage
    assert (reply.input_tokens, reply.output_tokens, reply.cost_usd) == (None, None, None)
    assert reply.text == GRADE


def test_a_local_model_has_no_price(serve):
    server, provider = serve()
    assert _model(provider, LOCAL).complete("x").cost_usd is None
    assert "no price for model 'llama-3.1-8b-instruct'" in PRICES.note(LOCAL) and PRICES.as_of
    assert PRICES.note("gpt-5.4-pro-2026-03-05") is None and PRICES.price_for("gpt-5.4-pro").output_per_mtok == 180


def test_rate_limit_headers_read_as_the_anthropic_ones():
    from components.judges.llm import LLMReply

    reply = LLMReply("x", input_tokens=800, cache_read_input_tokens=200, output_tokens=100)
    headers = {"x-ratelimit-remaining-requests": "59", "x-ratelimit-remaining-tokens": "11000",
               "x-ratelimit-reset-requests": "1m0.5s"}
    assert rate_limit_headers(headers, reply) == {"requests_remaining": 59.0, "reset_s": 60.5,
                                                  "tokens_remaining_calls": 10.0}
    assert rate_limit_headers({"x-ratelimit-remaining-requests": "3", "x-ratelimit-reset-requests": "20ms"},
                              LLMReply("x")) == {"requests_remaining": 3.0, "reset_s": 0.02,
                                                 "tokens_remaining_calls": None}
    assert rate_limit_headers({"x-ratelimit-reset-requests": "soon"}, reply) is None  # a local server: none


def test_content_parts_are_joined(serve):
    server, provider = serve([Reply(content=[{"type": "text", "text": '{"grade": '}, {"type": "image_url"},
                                             {"type": "text", "text": "9}"}])])
    assert _model(provider).complete("x").text == '{"grade": 9}'


@pytest.mark.parametrize("reply,expected", [
    (Reply(), (8, None, "end_turn")),
    (Reply(text='{"reasoning": "the chunks cover', finish_reason="length"),
     (None, "truncated: the reply was cut at its output cap", "max_tokens")),
    (Reply(text='{"grade": 9, "reasoning": "cut', finish_reason="length"),  # a grade in the cut text: not used
     (None, "truncated: the reply was cut at its output cap (stop_reason=max_tokens); the grade 9 read", "max_tokens")),
    (Reply(text='{"grade": 9}', finish_reason="content_filter"), (None, "refusal", "refusal")),
    (Reply(text=None, refusal="I can't help with that."), (None, "refusal", "refusal")),
])
def test_finish_reasons_become_the_stop_reasons_the_grader_reads(serve, reply, expected):
    server, provider = serve([reply])
    result = RetrievalGrader(_model(provider)).grade("Q?", "A.", CHUNKS)
    grade, error_start, stop = expected
    assert result.grade == grade and result.reply.stop_reason == stop
    assert (result.error is None) if error_start is None else result.error.startswith(error_start)
    assert result.raw is not None  # the raw reply is kept


def test_grader_and_relevance_send_the_projects_prompts(serve):
    def answer(n: int, body: dict) -> Reply:
        prompt = body["messages"][-1]["content"]
        return Reply(text='{"scores": [3, 0]}') if "relevance of each" in prompt else Reply()

    server, provider = serve(answer)
    model = _model(provider)
    result = RetrievalGrader(model).grade("Q?", "A.", CHUNKS)
    relevance = LLMRelevanceJudge(model).relevance("Q?", "A.", CHUNKS)
    assert (result.grade, relevance.scores, relevance.error) == (8, [3, 0], None)
    assert server.user_prompts() == [build_prompt("Q?", "A.", CHUNKS), build_relevance_prompt("Q?", "A.", CHUNKS)]
    # JSON mode allows only an object: the system line asks for the relevance list under "scores"
    assert all(r.body["response_format"] == {"type": "json_object"} for r in server.requests)
    assert '{"scores": <that list>}' in server.requests[1].body["messages"][0]["content"]


def test_every_role_through_the_project_setup(serve):
    from components.judges.setup import check_models, make_judge, relevance_judge
    from components.run.calls.query_rewriter import QueryRewriter

    def answer(n: int, body: dict) -> Reply:
        prompt = body["messages"][-1]["content"]
        if "relevance of each" in prompt:
            return Reply(text='{"scores": [2, 1]}')
        return Reply(text="python for else clause") if "Rewrite the user's question" in prompt else Reply()

    server, _ = serve(answer)
    settings = Settings.from_env({"BENCHMARK_JUDGE_MODEL": "openai/gpt-4.1", "OPENAI_BASE_URL": server.url,
                                  "BENCHMARK_REWRITER_MODEL": "openai/o3-mini"})
    setup = check_models(settings, rewrites_queries=True)
    judge = make_judge(settings, CHUNKS, setup)
    assert isinstance(judge, RetrievalGrader) and judge.grade("Q?", "A.", CHUNKS).grade == 8
    assert relevance_judge(setup, judge).relevance("Q?", "A.", CHUNKS).scores == [2, 1]
    rewriter = QueryRewriter(setup.rewriter_provider.model(setup.rewriter))
    assert rewriter.rewrite("when does the else of a for loop run?").query_used == "python for else clause"
    judge_body, relevance_body, rewrite_body = (r.body for r in server.requests)
    assert judge_body["model"] == relevance_body["model"] == "gpt-4.1" and "response_format" in relevance_body
    assert rewrite_body["model"] == "o3-mini" and "response_format" not in rewrite_body
    assert setup.judge_provider is setup.rewriter_provider  # one client for both roles


# ---------------------------------------------------------------- fallbacks


def test_a_server_without_json_mode_still_grades(serve, caplog_loguru):
    server, provider = serve(json_mode=False)
    choice = provider.check_model("judge", "gpt-4.1")
    grader = RetrievalGrader(provider.model(choice))
    assert grader.grade("Q?", "A.", CHUNKS).grade == 8
    assert ["response_format" in r.body for r in server.requests] == [True, False]  # refused, then tried again
    assert grader.grade("Q?", "A.", CHUNKS).grade == 8
    assert len(server.requests) == 3  # plain text from then on: no second refusal
    relevance = LLMRelevanceJudge(provider.model(choice))
    server.default = Reply(text="[2, 1]")
    assert relevance.relevance("Q?", "A.", CHUNKS).scores == [2, 1]
    assert all(m["role"] == "user" for m in server.requests[-1].body["messages"])
    assert len([m for m in caplog_loguru if "refused JSON mode" in m]) == 1
    details = provider.describe(choice)
    assert (details["json_mode"], details["fallbacks"]) == (False, ["json_mode"])


def test_a_reasoning_model_the_table_does_not_know_is_adapted_to(serve, caplog_loguru):
    server, provider = serve(models=["acme-thinker-2"], reasoning_models=["acme-thinker-2"])
    choice = provider.check_model("judge", "acme-thinker-2")
    assert choice.details["token_parameter"] == "max_tokens"  # nothing says it is a reasoning model
    assert _model(provider, "acme-thinker-2").complete("x").text == GRADE
    bodies = [r.body for r in server.requests]
    assert "max_tokens" in bodies[0] and bodies[1]["max_completion_tokens"] == REASONING_MAX_TOKENS
    assert "temperature" in bodies[1] and "temperature" not in bodies[2]
    assert provider.describe(choice)["fallbacks"] == ["max_tokens", "temperature"]
    assert len(caplog_loguru) >= 2 and any("does not take max_tokens" in m for m in caplog_loguru)


def test_another_400_stops_the_run(serve):
    server, provider = serve([error(400, "messages[0].content: too many chunks")])
    with pytest.raises(JudgeError) as info:
        _model(provider).complete("x")
    assert (info.value.kind, info.value.fatal) == ("bad_request", True)
    assert "too many chunks" in str(info.value) and len(server.requests) == 1


# ---------------------------------------------------------------- errors and bounds


@pytest.mark.parametrize("replies,kind,fatal,requests", [
    ([error(401, f"Incorrect API key provided: {KEY}", kind="invalid_request_error")], "auth", True, 1),
    ([error(403, "forbidden")], "auth", True, 1),
    ([error(404, "The model does not exist", code="model_not_found")], "not_found", True, 1),
    ([error(400, "bad request")], "bad_request", True, 1),
    ([error(400, "This model's maximum context length is 8192 tokens", code="context_length_exceeded")],
     "context_window_exceeded", False, 1),
    ([Reply(status=400, json_body=LLAMA_CPP_OVERFLOW)], "context_window_exceeded", False, 1),  # llama.cpp's
    ([error(400, "This model's maximum context length is 4096 tokens. However, you requested 4600 tokens (4088 in "
            "the messages, 512 in the completion). Please reduce the length of the messages or completion.",
            kind="BadRequestError")], "context_window_exceeded", False, 1),  # vLLM's
    ([Reply(drop=True)] * 3, "connection", False, 3),  # a connection reset: retried by the SDK
    ([error(429, "Rate limit reached", kind="requests")] * 3, "rate_limit", False, 3),
    ([error(500, "internal", kind="server_error")] * 3, "server_error", False, 3),
    ([error(503, "overloaded", kind="server_error")] * 3, "server_error", False, 3),
    ([Reply(raw_body=b"<html>proxy error</html>")], "bad_response", False, 1),
    ([Reply(json_body={"unexpected": True})], "bad_response", False, 1),
    ([Reply(json_body={"choices": []})], "bad_response", False, 1),
    ([Reply(raw_body=b"[" * 5000 + b"]" * 5000)], "bad_response", False, 1),  # nested deeper than Python goes
])
def test_taxonomy(serve, replies, kind, fatal, requests):
    server, provider = serve(replies)
    model = _model(provider)
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert (info.value.kind, info.value.fatal) == (kind, fatal)
    assert len(server.requests) == requests  # the SDK retried transient ones twice, fatal ones never
    assert KEY not in str(info.value)


@pytest.mark.parametrize("header,value,waits,kept", [
    ("retry-after", "0.1", [0.1, 0.1], 0.1),  # within the cap: the SDK waits what was asked, and retries
    ("retry-after", "3600", [], 3600.0),  # past the cap: no SDK retry; the run's retry pass decides
    ("retry-after-ms", "90000", [], 90.0),
])
def test_retry_after_is_bounded_and_kept(serve, monkeypatch, header, value, waits, kept):
    import openai._base_client

    server, provider = serve([error(429, "slow down", **{header.replace("-", "_"): value})] * 3)
    model = _model(provider)
    computed: list[float] = []
    calculate = openai._base_client.SyncAPIClient._calculate_retry_timeout

    def spy(self, *args, **kwargs):
        computed.append(calculate(self, *args, **kwargs))
        return computed[-1]

    monkeypatch.setattr(openai._base_client.SyncAPIClient, "_calculate_retry_timeout", spy)
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert computed == pytest.approx(waits) and len(server.requests) == len(waits) + 1
    assert info.value.kind == "rate_limit" and info.value.retry_after == pytest.approx(kept)  # for the retry pass


def test_timeout_is_a_deadline_for_headers_that_do_not_come(serve):
    server, provider = serve(timeout=1.0, max_retries=0)
    model = _model(provider)
    # header bytes 0.5 s apart, for 5 s, then the server gives up: every read is within a per-read
    # timeout of 1 s, the whole is not (without the deadline this would be a connection error)
    server.default = Reply(header_gap=0.5, trickle_for=5)
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert info.value.kind == "timeout" and not info.value.fatal


def test_timeout_is_a_deadline_for_a_trickling_body(serve):
    body = json.dumps({"choices": [{"message": {"content": "x" * 50}, "finish_reason": "stop"}]}).encode()
    trickle = Reply(trickle=[body[i:i + 1] for i in range(len(body))], trickle_gap=0.2, trickle_for=20)
    server, provider = serve(timeout=1.0, max_retries=0)
    model = _model(provider)
    server.default = trickle  # whole, the body would arrive after ~15 s: a success
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert info.value.kind == "timeout" and not info.value.fatal


def test_body_that_never_ends_is_capped(serve):
    server, provider = serve(timeout=20, max_retries=0, max_body_bytes=1_000_000)
    model = _model(provider)
    server.default = Reply(trickle=itertools.repeat(b"x" * 65536), trickle_for=30)
    with pytest.raises(JudgeError) as info:
        model.complete("x")
    assert info.value.kind == "bad_response" and "1,000,000 bytes" in str(info.value)


# ---------------------------------------------------------------- the CLI


def _answer(n: int, body: dict) -> Reply:
    """A server that grades every question 8 and rates every chunk: JSON objects in JSON mode."""
    prompt = body["messages"][-1]["content"]
    if "relevance of each" in prompt:
        scores = [3] + [0] * (prompt.count("[END CHUNK ") - 1)
        return Reply(text=json.dumps({"scores": scores} if "response_format" in body else scores))
    return Reply(text='{"grade": 8, "reasoning": "the chunks state it"}')


def test_cli_run_judged_by_a_local_openai_compatible_server(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with OpenAILoopback(_answer) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out),
                      env=openai_env(srv.url, OPENAI_API_KEY=""))
        assert len(srv.requests) == 3  # one grade per question
    assert run.code == 0, run.stderr
    assert "Judge: a model via an OpenAI-compatible Chat Completions API, model llama-3.1-8b-instruct" in run.stderr
    data = json.loads(out.read_text())
    judge = data["run"]["judge"]
    assert (judge["provider"], judge["model"], judge["reply_models"]) == ("openai", LOCAL, [LOCAL])
    assert (judge["json_mode"], judge["token_parameter"], judge["settings_source"]) == (True, "max_tokens",
                                                                                        "models_api")
    assert judge["base_url_host"] == srv.url.split("/")[2]
    rows = data["results"]
    assert [r["llm_grade"] for r in rows] == [8, 8, 8]
    assert all(r["input_tokens"] == 10 and r["stop_reason"] == "end_turn" for r in rows)
    assert data["run"]["cost_usd"] is None and "no price for model 'llama-3.1-8b-instruct'" in data["run"]["cost_note"]


def test_cli_chunk_relevance_in_json_mode(tmp_path: Path, few_questions: Path):
    out = tmp_path / "r.json"
    with OpenAILoopback(_answer) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--chunk-relevance",
                      env=openai_env(srv.url, "gpt-4.1"))
        assert len(srv.requests) == 6  # a grade and a relevance call per question
        assert all(r.body["response_format"] == {"type": "json_object"} for r in srv.requests)
    assert run.code == 0, run.stderr
    data = json.loads(out.read_text())
    assert data["run"]["judge"]["relevance_prompt_sha256"]
    assert all(r["chunk_relevance"] and r["chunk_relevance"][0] == 3 and not any(r["chunk_relevance"][1:])
               for r in data["results"])


@pytest.mark.parametrize("name", ["reasoning-echoing-key", "400-echoing-key", "401-at-start-up", "success"])
def test_cli_key_and_password_never_appear(tmp_path: Path, few_questions: Path, name: str):
    echo = f"key {KEY}, password {PASSWORD}"
    server = {
        "reasoning-echoing-key": OpenAILoopback(default=Reply(text=json.dumps({"grade": 5, "reasoning": echo}))),
        "400-echoing-key": OpenAILoopback(default=error(400, f"bad request from {echo}")),
        "401-at-start-up": OpenAILoopback(models=None, models_status=401),
        "success": OpenAILoopback(),
    }[name]
    out = tmp_path / "r.json"
    with server as srv:
        url = srv.url.replace("http://", f"http://user:{PASSWORD}@")
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--log-level", "TRACE",
                      env=openai_env(url, "gpt-4.1"))
        assert srv.requests or srv.model_requests  # the server was really called with the key
    assert run.code in (0, 2, 3), run.stderr
    texts = [("stdout", run.stdout), ("stderr", run.stderr), ("log", run.log_text())]
    if out.exists():
        texts.append(("results", out.read_text()))
    for where, text in texts:
        for secret in (KEY, PASSWORD):
            assert secret not in text and secret[-10:] not in text, f"a secret leaked into {where}"
    if name == "reasoning-echoing-key":
        assert run.code == 0 and "[REDACTED]" in out.read_text()


def test_cli_compare_warns_that_the_judges_differ(tmp_path: Path, few_questions: Path):
    claude, gpt = tmp_path / "claude.json", tmp_path / "gpt.json"
    with LoopbackServer() as srv:
        first = run_cli("--questions", str(few_questions), "--output", str(claude), env=judge_env(srv.url))
    assert first.code == 0, first.stderr
    with OpenAILoopback() as srv:
        second = run_cli("--questions", str(few_questions), "--output", str(gpt), env=openai_env(srv.url, "gpt-4.1"))
    assert second.code == 0, second.stderr
    assert json.loads(gpt.read_text())["run"]["judge"]["provider"] == "openai"
    compared = run_cli("compare", str(claude), str(gpt))
    assert compared.code == 0, compared.stderr
    text = compared.stdout + compared.stderr
    assert "judge differs" in text and "anthropic claude-sonnet-5-5 vs openai gpt-4.1" in text


@pytest.mark.parametrize("env,words", [
    ({"OPENAI_BASE_URL": "", "OPENAI_API_KEY": ""}, "OPENAI_API_KEY for the OpenAI API, or OPENAI_BASE_URL"),
    ({"BENCHMARK_JUDGE_MODEL": "openai/gpt-9-turbo"}, "unknown to the server"),
])
def test_cli_bad_setup_is_one_line_and_exit_2(tmp_path: Path, few_questions: Path, env, words):
    with OpenAILoopback() as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                      env=openai_env(srv.url, "gpt-4.1", **env))
        assert not srv.requests  # no judge call
    assert run.code == 2, run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1 and words in errors[0], run.stderr
    assert not (tmp_path / "r.json").exists()


def test_an_empty_port_is_refused_at_once_naming_the_variable(tmp_path: Path, few_questions: Path):
    with pytest.raises(InputError, match="OPENAI_BASE_URL='http://127.0.0.1:/v1' has an empty port"):
        Settings.from_env({"BENCHMARK_JUDGE_MODEL": f"openai/{LOCAL}", "OPENAI_BASE_URL": "http://127.0.0.1:/v1"})
    run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                  env=openai_env("http://127.0.0.1:/v1"))
    assert run.code == 2 and "OPENAI_BASE_URL" in run.stderr and "empty port" in run.stderr, run.stderr[-2000:]
    assert "Judge settings" not in run.stderr  # refused before any call


def test_a_redirect_at_start_up_says_so_and_where_to(tmp_path: Path, few_questions: Path):
    with OpenAILoopback(models=None, models_status=302) as server:
        run = run_cli("--questions", str(few_questions), "--output", str(tmp_path / "r.json"),
                      env=openai_env(server.url))
        assert server.requests == []  # no chat completion, and the redirect was not followed
    assert run.code == 3, run.stderr[-2000:]
    line = next(x for x in run.stderr.splitlines() if "| ERROR" in x)
    assert "redirected the request (302)" in line and "set OPENAI_BASE_URL" in line
    assert "does not know model" not in run.stderr
