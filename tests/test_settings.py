"""Start-up validation of the environment : one clear line, never the key.

A key with whitespace, a malformed ``ANTHROPIC_BASE_URL`` or a timeout beyond the maximum used to
cost three "could not reach the judge" attempts (or hang a run): now :meth:`Settings.from_env`
raises one :class:`InputError` naming the variable and the fix, before any judge call.
"""

from __future__ import annotations


import pytest

from components.judges.settings import Settings
from tests.conftest import SENTINEL_KEY, clean_env, judge_env, run_cli
from tests.loopback import LoopbackServer
from utils.errors import InputError

KEY = SENTINEL_KEY
OK = {"ANTHROPIC_API_KEY": KEY}

# (name, environment, words the one error line must hold)
REJECTED = [
    ("key-trailing-newline", {"ANTHROPIC_API_KEY": KEY + "\n"}, "ANTHROPIC_API_KEY"),
    ("key-trailing-space", {"ANTHROPIC_API_KEY": KEY + " "}, "whitespace"),
    ("key-leading-tab", {"ANTHROPIC_API_KEY": "\t" + KEY}, "whitespace"),
    ("key-only-spaces", {"ANTHROPIC_API_KEY": "   "}, "whitespace"),
    ("key-control-char", {"ANTHROPIC_API_KEY": KEY[:10] + "\x1b" + KEY[10:]}, "control character"),
    ("key-inner-space", {"ANTHROPIC_API_KEY": KEY[:10] + " " + KEY[10:]}, "ANTHROPIC_API_KEY"),
    ("key-non-ascii", {"ANTHROPIC_API_KEY": KEY + "é"}, "ASCII"),
    ("url-no-scheme", {**OK, "ANTHROPIC_BASE_URL": "localhost:8080"}, "ANTHROPIC_BASE_URL"),
    ("url-no-host", {**OK, "ANTHROPIC_BASE_URL": "http://"}, "http(s) URL with a host"),
    ("url-ftp", {**OK, "ANTHROPIC_BASE_URL": "ftp://x"}, "http(s) URL with a host"),
    ("url-bad-port", {**OK, "ANTHROPIC_BASE_URL": "http://127.0.0.1:99999"}, "ANTHROPIC_BASE_URL"),
    ("url-empty-port", {**OK, "ANTHROPIC_BASE_URL": "http://127.0.0.1:/v1"},
     "ANTHROPIC_BASE_URL='http://127.0.0.1:/v1' has an empty port"),
    ("url-space", {**OK, "ANTHROPIC_BASE_URL": "http://127.0.0.1:8080 "}, "ANTHROPIC_BASE_URL"),
    ("timeout-inf", {"BENCHMARK_JUDGE_TIMEOUT": "inf"}, "BENCHMARK_JUDGE_TIMEOUT='inf'"),
    ("timeout-1e20", {"BENCHMARK_JUDGE_TIMEOUT": "1e20"}, "at most 600"),
    ("timeout-above-max", {"BENCHMARK_JUDGE_TIMEOUT": "601"}, "BENCHMARK_JUDGE_TIMEOUT"),
    ("timeout-nan", {"BENCHMARK_JUDGE_TIMEOUT": "nan"}, "BENCHMARK_JUDGE_TIMEOUT"),
    ("timeout-zero", {"BENCHMARK_JUDGE_TIMEOUT": "0"}, "BENCHMARK_JUDGE_TIMEOUT"),
    ("timeout-negative", {"BENCHMARK_JUDGE_TIMEOUT": "-5"}, "BENCHMARK_JUDGE_TIMEOUT"),
    ("retry-wait-inf", {"BENCHMARK_RETRY_WAIT_MAX": "inf"}, "from 0 to 600"),
    ("retry-wait-negative", {"BENCHMARK_RETRY_WAIT_MAX": "-1"}, "BENCHMARK_RETRY_WAIT_MAX='-1'"),
    ("batch-poll-zero", {"BENCHMARK_BATCH_POLL_MAX": "0"}, "from 0.01 to 3600"),
    ("batch-poll-word", {"BENCHMARK_BATCH_POLL_MAX": "soon"}, "BENCHMARK_BATCH_POLL_MAX='soon'"),
    ("effort-unknown", {"BENCHMARK_JUDGE_EFFORT": "extreme"}, "low, medium, high, xhigh, max"),
    ("model-trailing-space", {**OK, "BENCHMARK_SONNET_MODEL": "claude-sonnet-5-5 "}, "BENCHMARK_SONNET_MODEL"),
    ("model-newline", {**OK, "BENCHMARK_HAIKU_MODEL": "claude\nhaiku"}, "BENCHMARK_HAIKU_MODEL"),
]


@pytest.mark.parametrize("env,message", [r[1:] for r in REJECTED], ids=[r[0] for r in REJECTED])
def test_rejected_at_start_up(env, message):
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")) as err:
        Settings.from_env(env)
    text = str(err.value)
    assert "\n" not in text and KEY not in text and KEY[-12:] not in text


@pytest.mark.parametrize("name", ["key-trailing-newline", "url-no-scheme", "url-no-host", "timeout-inf"])
def test_rejected_before_any_judge_call(tmp_path, name):
    env = next(r[1] for r in REJECTED if r[0] == name)
    with LoopbackServer() as srv:
        full = judge_env(srv.url)
        full.update(env)
        run = run_cli("--output", str(tmp_path / "r.json"), env=full, timeout=60)
        assert srv.requests == []
    assert run.code == 2, run.stderr
    errors = [ln for ln in run.stderr.splitlines() if "| ERROR" in ln]
    assert len(errors) == 1, run.stderr
    assert KEY not in run.stderr and KEY[-12:] not in run.stderr and KEY not in run.log_text()
    assert not (tmp_path / "r.json").exists()


@pytest.mark.parametrize("raw,expected", [
    (None, None), ("", None), ("low", "low"), ("MEDIUM", "medium"), (" high ", "high"), ("xhigh", "xhigh"),
    ("max", "max"),
])
def test_judge_effort(raw, expected):
    env = {} if raw is None else {"BENCHMARK_JUDGE_EFFORT": raw}
    assert Settings.from_env(env).judge_effort == expected


@pytest.mark.parametrize("env,timeout", [({}, 30.0), ({"BENCHMARK_JUDGE_TIMEOUT": "600"}, 600.0),
                                         ({"BENCHMARK_JUDGE_TIMEOUT": " 0.5 "}, 0.5)])
def test_valid_timeouts(env, timeout):
    assert Settings.from_env(env).judge_timeout == timeout


@pytest.mark.parametrize("url", ["http://127.0.0.1:8080", "https://api.anthropic.com", "https://proxy.example/v1/",
                                 "http://[::1]:9000"])
def test_valid_base_urls(url):
    assert Settings.from_env({**OK, "ANTHROPIC_BASE_URL": url}).judge_config.base_url == url


@pytest.mark.parametrize("env,wait,poll", [({}, 60.0, 60.0), ({"BENCHMARK_RETRY_WAIT_MAX": "0",
                                                               "BENCHMARK_BATCH_POLL_MAX": "0.05"}, 0.0, 0.05)])
def test_valid_waits(env, wait, poll):
    settings = Settings.from_env({**OK, **env})
    assert (settings.retry_wait_max_s, settings.batch_poll_max_s) == (wait, poll)


def test_offline_judge_ignores_the_key_shape():
    """BENCHMARK_JUDGE=offline never sends the key: a stale one with a newline does not stop the run."""
    s = Settings.from_env({"ANTHROPIC_API_KEY": KEY + "\n", "BENCHMARK_JUDGE": "offline"})
    assert s.judge == "offline"


def test_secrets_in_the_environment():
    from components.judges.providers import secrets_in

    env = {"ANTHROPIC_API_KEY": KEY + "\n", "ANTHROPIC_AUTH_TOKEN": "tok-123456",
           "ANTHROPIC_BASE_URL": "https://user:pa55word@proxy.example/"}
    assert set(secrets_in(env)) == {KEY + "\n", KEY, "tok-123456", "pa55word"}
    assert secrets_in({}) == ()


def test_a_url_with_a_password_is_not_echoed():
    with pytest.raises(InputError) as err:
        Settings.from_env({**OK, "ANTHROPIC_BASE_URL": "ftp://user:pa55word@host/"})
    assert "pa55word" not in str(err.value)


def test_an_auth_token_instead_of_the_key(tmp_path):
    token = "tok-" + SENTINEL_KEY[-16:]
    settings = Settings.from_env({"ANTHROPIC_AUTH_TOKEN": token, "BENCHMARK_JUDGE": "anthropic"})
    assert settings.judge == "anthropic" and settings.judge_config.auth_token == token and token in settings.secrets
    with LoopbackServer() as srv:
        env = {k: v for k, v in judge_env(srv.url).items() if k != "ANTHROPIC_API_KEY"}
        env["ANTHROPIC_AUTH_TOKEN"] = token
        run = run_cli("--quick", "--output", str(tmp_path / "r.json"), env=env)
        sent = [r.headers.get("authorization") for r in srv.requests if r.path.endswith("/v1/messages")]
    assert run.code == 0, run.stderr
    assert sent and all(h == f"Bearer {token}" for h in sent) and token not in run.stderr


@pytest.mark.parametrize("env,fix", [
    ({"BENCHMARK_JUDGE_MODEL": "gpt-5.4-mini"}, "did you mean BENCHMARK_JUDGE_MODEL=openai/gpt-5.4-mini, with "
                                                "OPENAI_API_KEY"),
    ({"BENCHMARK_JUDGE_MODEL": "gpt-5.4-mini", "OPENAI_API_KEY": KEY}, "did you mean "
                                                                       "BENCHMARK_JUDGE_MODEL=openai/gpt-5.4-mini?"),
    ({"BENCHMARK_JUDGE_MODEL": "claude-opus-5-5"}, "did you mean BENCHMARK_JUDGE_MODEL=anthropic/claude-opus-5-5, "
                                                   "with ANTHROPIC_API_KEY set?"),
    ({"BENCHMARK_JUDGE_MODEL": "llama3"}, "write it as <provider>/<model> (anthropic or call_llm or openai)"),
    ({"BENCHMARK_JUDGE_MODEL": "gpt-4o", "BENCHMARK_JUDGE": "offline"}, "unset BENCHMARK_JUDGE_MODEL, or unset "
                                                                       "BENCHMARK_JUDGE"),
])
def test_a_judge_model_that_cannot_be_used_is_refused_with_a_did_you_mean(env, fix):
    """A model without its provider used to leave the offline judge grading, without a word."""
    with pytest.raises(InputError) as err:
        Settings.from_env(env)
    text = str(err.value)
    assert text.startswith(f"BENCHMARK_JUDGE_MODEL={env['BENCHMARK_JUDGE_MODEL']!r} cannot be used: it names no "
                           "provider, and the judge is then the offline judge") and fix in text, text
    assert KEY not in text


@pytest.mark.parametrize("env,message", [
    ({"BENCHMARK_SONNET_MODEL": "gpt-5.4-mini"},
     "BENCHMARK_SONNET_MODEL='gpt-5.4-mini' cannot be used: the judge is the offline judge (no ANTHROPIC_API_KEY), "
     "which calls no model: did you mean BENCHMARK_JUDGE_MODEL=openai/gpt-5.4-mini, with OPENAI_API_KEY (or "
     "OPENAI_BASE_URL for a local server) set?"),
    ({"BENCHMARK_SONNET_MODEL": "claude-sonnet-4-6"},
     "BENCHMARK_SONNET_MODEL='claude-sonnet-4-6' cannot be used: the judge is the offline judge (no "
     "ANTHROPIC_API_KEY), which calls no model: set ANTHROPIC_API_KEY for the anthropic judge, or unset "
     "BENCHMARK_SONNET_MODEL"),
])
def test_a_provider_judge_model_without_its_key_is_refused(env, message):
    """The provider's own judge-model variable, set with no key, used to leave the offline judge grading."""
    with pytest.raises(InputError) as err:
        Settings.from_env(env)
    assert str(err.value) == message


def test_a_provider_judge_model_is_ignored_when_the_offline_judge_is_asked_for():
    settings = Settings.from_env({"BENCHMARK_JUDGE": "offline", "BENCHMARK_SONNET_MODEL": "gpt-5.4-mini"})
    assert settings.judge == "offline"


def test_the_missing_key_message_names_no_variable_the_user_did_not_set():
    with pytest.raises(InputError) as err:
        Settings.from_env({"BENCHMARK_JUDGE_MODEL": "anthropic/claude-sonnet-5-5"})
    assert str(err.value).startswith("the anthropic judge needs ANTHROPIC_API_KEY")
    assert "BENCHMARK_JUDGE=anthropic" not in str(err.value)


def test_a_model_its_provider_can_use_is_kept():
    assert Settings.from_env({"BENCHMARK_JUDGE_MODEL": "claude-opus-5-5", **OK}).judge_model == "claude-opus-5-5"
    assert Settings.from_env({}).judge == "offline"  # no judge variable at all: the offline judge, as before


def test_cli_exits_2_on_a_model_without_its_provider(tmp_path):
    run = run_cli("--output", str(tmp_path / "r.json"), env=clean_env(BENCHMARK_JUDGE_MODEL="gpt-5.4-mini"))
    assert run.code == 2 and "did you mean BENCHMARK_JUDGE_MODEL=openai/gpt-5.4-mini" in run.stderr, run.stderr
    assert not (tmp_path / "r.json").exists()
