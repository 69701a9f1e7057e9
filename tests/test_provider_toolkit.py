"""The providers' shared toolkit: one transport (no code copied between the vendor modules), its
retry-after and rate-limit helpers, configs that never show a secret, and the scripted provider."""

from __future__ import annotations

import io
import keyword
import math
import tokenize
from pathlib import Path

import pytest

from components import api
from components.judges.providers import providers
from components.judges.providers import scripted
from components.judges.providers.anthropic import ProviderConfig as AnthropicConfig
from components.judges.providers.openai import ProviderConfig as OpenAIConfig
from components.judges.providers.scripted import Script, ScriptedProvider, fail, play, reply
from components.judges.providers.transport import (ORIGINAL_HEADER, cap_retry_after, original_retry_after,
                                                   rate_limit)
from components.judges.retrieval_grader import RetrievalGrader
from poc.chunking import Chunk
from tests.test_api import DOCS, QUESTIONS, KeywordRetriever
from utils.errors import InputError, JudgeError

PROVIDERS = Path(__file__).resolve().parent.parent / "components" / "judges" / "providers"
COPIED_RUN = 6  # statements: a run this long, the same or the same shape with other names, is a copy


# --------------------------------------------------------------------------- no copied code


def statement_shapes(source: str) -> list[tuple[int, str]]:
    """(first line, shape) of each statement of ``source``: its tokens, with names, strings and
    numbers standing as N, S and 0 (keywords stay), a decorator joined to what it decorates.
    Comments, blank lines and imports are passed over."""
    fstring = (getattr(tokenize, "FSTRING_START", -1), getattr(tokenize, "FSTRING_END", -1))  # Python 3.12+
    shapes: list[tuple[int, str]] = []
    current: list[str] = []  # the shapes of the statement so far
    decorators: list[str] = []  # those of the decorators of the statement that follows
    start, depth = 0, 0  # depth: inside an f-string (3.12+ tokenizes its parts), one S for all of it
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        depth += (tok.type == fstring[0]) - (tok.type == fstring[1])
        if tok.type == tokenize.NEWLINE:
            if current[0] == "@":
                decorators += current
            elif current[0] not in ("import", "from"):
                shapes.append((start, " ".join(decorators + current)))
                decorators = []
            current = []
            continue
        if tok.type in (tokenize.NL, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER) \
                or (depth and tok.type != fstring[0]) or tok.type == fstring[1]:
            continue
        if not current and not decorators:
            start = tok.start[0]
        if tok.type == tokenize.NAME and not keyword.iskeyword(tok.string):
            current.append("N")
        elif tok.type in (tokenize.STRING, fstring[0]):
            current.append("S")
        elif tok.type == tokenize.NUMBER:
            current.append("0")
        else:
            current.append(tok.string)
    return shapes


def longest_shared_run(a: list[tuple[int, str]], b: list[tuple[int, str]]) -> tuple[int, int, int]:
    """(length, first line in a, first line in b) of the longest run of consecutive statements
    with the same shapes in both."""
    best = (0, 0, 0)
    previous = [0] * (len(b) + 1)
    for i, (_, shape_a) in enumerate(a, 1):
        current = [0] * (len(b) + 1)
        for j, (_, shape_b) in enumerate(b, 1):
            if shape_a == shape_b:
                current[j] = previous[j - 1] + 1
                if current[j] > best[0]:
                    best = (current[j], a[i - current[j]][0], b[j - current[j]][0])
        previous = current
    return best


def test_the_shape_comparison_finds_a_copy_with_other_names():
    first = "def f(a, b):\n    x = a + 1\n    if x > b:\n        return 'no'\n    y = [x, b]\n    return y\n"
    renamed = "import os\n\ndef g(p, q):  # the same, renamed\n    z = p + 2\n    if z > q:\n        return 'yes'\n" \
              "    w = [z, q]\n\n    return w\n"
    assert longest_shared_run(statement_shapes(first), statement_shapes(renamed)) == (6, 1, 3)
    other = first.replace("if x > b:", "while x > b:")
    assert longest_shared_run(statement_shapes(first), statement_shapes(other))[0] == 3


def test_the_vendor_modules_share_no_copied_run():
    anthropic = statement_shapes((PROVIDERS / "anthropic.py").read_text())
    openai = statement_shapes((PROVIDERS / "openai.py").read_text())
    length, line_a, line_b = longest_shared_run(anthropic, openai)
    assert length < COPIED_RUN, (f"anthropic.py:{line_a} and openai.py:{line_b} share {length} statements of the same "
                                 "shape: move the shared part into transport.py")


# --------------------------------------------------------------------------- the transport's helpers


@pytest.mark.parametrize("headers,cap,capped,original", [
    ({"retry-after": "3"}, 10.0, {"retry-after": "3"}, 3.0),
    ({"retry-after": "3600"}, 10.0, {"retry-after": "10", "x-should-retry": "false"}, 3600.0),
    ({"retry-after-ms": "90000"}, 10.0, {"retry-after-ms": "10000", "x-should-retry": "false"}, 90.0),
    ({"retry-after": "Wed, 21 Oct 2099 07:28:00 GMT"}, 5.0, {"retry-after": "5", "x-should-retry": "false"}, math.inf),
    ({}, 10.0, {}, None),
])
def test_a_retry_after_past_the_cap_is_capped_and_kept(headers, cap, capped, original):
    cap_retry_after(headers, cap)
    assert {k: v for k, v in headers.items() if k != ORIGINAL_HEADER} == capped
    assert original_retry_after(headers) == original


def test_rate_limit_counts_tokens_in_calls_of_this_size():
    headers = {"req-left": "7", "tok-left": "450"}
    assert rate_limit(headers, "req-left", "tok-left", call_tokens=100, reset_s=2.5) == \
        {"requests_remaining": 7.0, "reset_s": 2.5, "tokens_remaining_calls": 4.0}
    assert rate_limit({"tok-left": "x"}, "req-left", "tok-left", call_tokens=100, reset_s=None) is None
    limits = rate_limit({"req-left": "1"}, "req-left", "tok-left", call_tokens=0, reset_s=None)
    assert limits["tokens_remaining_calls"] is None


@pytest.mark.parametrize("config", [AnthropicConfig(api_key="sk-secret-1", auth_token="tok-secret-2",
                                                    base_url="https://user:pw-secret-3@gateway.example/v1"),
                                    OpenAIConfig(api_key="sk-secret-1", base_url="https://user:pw-secret-3@h/v1")])
def test_a_config_shows_no_secret(config):
    shown = repr(config)
    assert not [s for s in ("sk-secret-1", "tok-secret-2", "pw-secret-3") if s in shown], shown
    assert "api_key=set" in shown and "***@" in shown and "timeout=30.0" in shown


# --------------------------------------------------------------------------- the scripted provider


def test_a_script_plays_its_steps_in_order_then_its_then():
    script = Script("plain", reply("counted", input_tokens=12, output_tokens=3, cost_usd=0.5),
                    fail("rate_limit", retry_after=4), then=fail("auth", "refused"), model="m-1")
    first, second = script.complete("p1"), script.complete("p2")
    assert (first.text, first.stop_reason, first.model, first.input_tokens) == ("plain", "end_turn", "m-1", None)
    assert (second.text, second.input_tokens, second.output_tokens, second.cost_usd) == ("counted", 12, 3, 0.5)
    with pytest.raises(JudgeError) as transient:
        script.complete("p3")
    assert (transient.value.kind, transient.value.fatal, transient.value.retry_after) == ("rate_limit", False, 4)
    for prompt in ("p4", "p5"):
        with pytest.raises(JudgeError) as fatal:
            script.complete(prompt)
        assert (fatal.value.kind, fatal.value.fatal, str(fatal.value)) == ("auth", True, "refused")
    assert script.prompts == ["p1", "p2", "p3", "p4", "p5"]


def test_a_script_past_its_end_says_so_and_a_function_answers_every_call():
    short = Script("one")
    short.complete("a")
    with pytest.raises(LookupError, match="no step for call 2"):
        short.complete("b")
    echo = Script(lambda prompt: reply(prompt.upper(), model="echo-2"))
    assert [echo.complete(p).text for p in ("x", "y")] == ["X", "Y"] and echo.complete("z").model == "echo-2"


def test_a_delay_is_slept_before_the_step(monkeypatch):
    slept: list[float] = []
    monkeypatch.setattr(scripted.time, "sleep", slept.append)
    script = Script(reply("late", delay_s=1.5), fail("timeout", delay_s=2.0), "now")
    assert script.complete("a").text == "late"
    with pytest.raises(JudgeError):
        script.complete("b")
    script.complete("c")
    assert slept == [1.5, 2.0]


def test_a_script_is_a_model_for_the_grader():
    chunk = Chunk(doc_id="d", chunk_id="d#0", title="D", heading_path=(), text="text", position=0)
    script = Script('{"grade": 7, "reasoning": "most of it"}', fail("overloaded"))
    grader = RetrievalGrader(script)
    graded = grader.grade("q?", "a.", [chunk])
    assert (graded.grade, graded.reasoning, graded.error) == (7, "most of it", None)
    assert grader.grade("q?", "a.", [chunk]).error.startswith("overloaded")
    assert "q?" in script.prompts[0] and len(script.prompts) == 2


def test_play_registers_the_provider_for_its_block_only():
    assert "scripted" not in providers()
    with pytest.raises(InputError, match="not a judge"):
        api.Settings.from_env({"BENCHMARK_JUDGE": "scripted"})
    with play('{"grade": 8, "reasoning": "ok"}', then=fail("overloaded")) as script:
        assert providers()["scripted"] is ScriptedProvider
        result = api.evaluate(KeywordRetriever(), QUESTIONS, DOCS, judge="scripted")
    assert "scripted" not in providers()
    assert result.run.judge.provider == "scripted" and result.rows[0].llm_grade == 8
    assert [r.grade_error for r in result.rows][1:] == ["overloaded: scripted overloaded"] * (len(result.rows) - 1)
    assert len(script.prompts) > len(result.rows)  # the transient failures were tried again


def test_the_scripted_provider_needs_a_script_playing():
    with pytest.raises(InputError, match="none is playing"):
        ScriptedProvider.configure({}, {"judge": scripted.MODEL})
