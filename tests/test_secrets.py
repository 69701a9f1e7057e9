"""With a sentinel API key set, no path leaks it: stdout, stderr, the log file, the results."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import SENTINEL_KEY, judge_env, run_cli
from tests.loopback import LoopbackServer, Reply, error

PATHS = {
    "success": ([], Reply()),
    # servers that echo the key back, in an error message and in a judge's reasoning
    "401-echoing-key": ([], error(401, "authentication_error", f"invalid x-api-key: {SENTINEL_KEY}")),
    "400-echoing-key": ([], error(400, "invalid_request_error", f"bad request for key {SENTINEL_KEY}")),
    "reasoning-echoing-key": ([], Reply(text=json.dumps({"grade": 5, "reasoning": f"key was {SENTINEL_KEY}"}))),
    "unparseable-echoing-key": ([], Reply(text=f"cannot grade; auth {SENTINEL_KEY}")),
    "429": ([], error(429, "rate_limit_error", **{"retry-after": "3600"})),
    "500": ([], error(500, "api_error", f"internal {SENTINEL_KEY}")),
    "dropped": ([], Reply(drop=True)),
    "non-json": ([], Reply(raw_body=f"<html>{SENTINEL_KEY}</html>".encode())),
    "timeout": ([], Reply(delay=2.0)),
}
# BENCHMARK_JUDGE_TIMEOUT: 0.5 s, and 0.25 s where every attempt times out
TIMEOUTS = {"timeout": "0.25"}


@pytest.mark.parametrize("name", list(PATHS))
def test_key_never_appears(name: str, tmp_path: Path, few_questions: Path):
    script, default = PATHS[name]
    out = tmp_path / "r.json"
    with LoopbackServer(script, default) as srv:
        run = run_cli("--questions", str(few_questions), "--output", str(out), "--log-level", "TRACE",
                      env=judge_env(srv.url, BENCHMARK_JUDGE_TIMEOUT=TIMEOUTS.get(name, "0.5")))
        assert srv.requests  # the judge was really called with the key
    assert run.code in (0, 3, 8), run.stderr  # 8: a grade missing (status incomplete)
    for where, text in [("stdout", run.stdout), ("stderr", run.stderr), ("log", run.log_text()),
                        ("results", out.read_text())]:
        assert SENTINEL_KEY not in text, f"key leaked into {where}"
        assert SENTINEL_KEY[-12:] not in text, f"part of the key leaked into {where}"


def test_key_never_appears_on_input_errors(tmp_path: Path):
    run = run_cli("--questions", str(tmp_path / "missing.json"), env=judge_env("http://127.0.0.1:9"))
    assert run.code == 2
    assert SENTINEL_KEY not in run.stderr + run.stdout + run.log_text()


# ---- a key holding the characters each output format escapes: redacted before any escaping

HOSTILE_KEY = "sk-ant-\"&<>'-" + "Qx9" * 12  # printable ASCII without whitespace: a key check_key accepts
KEY_CORE = "Qx9Qx9Qx9"  # what must appear in no output, in any spelling


def test_redactor_catches_the_html_escaped_spelling():
    from utils.redaction import Redactor

    escaped = HOSTILE_KEY.replace("&", "&amp;").replace('"', "&quot;").replace("<", "&lt;").replace(">", "&gt;") \
        .replace("'", "&#x27;")
    assert Redactor([HOSTILE_KEY])(f"<td>{escaped}</td>") == "<td>[REDACTED]</td>"


def test_a_key_holding_quote_amp_lt_gt_apostrophe_is_redacted_in_every_output(tmp_path: Path, few_questions: Path):
    """The key pasted into a question reaches a run's results, and from them report (HTML), compare
    (console, JSON), export-run (TREC), label (JSON lines), calibrate (console, JSON) and every log:
    none of them may hold it, however the format escapes `"&<>'`."""
    from tests.conftest import clean_env

    env = clean_env(ANTHROPIC_API_KEY=HOSTILE_KEY, BENCHMARK_JUDGE="offline")  # the key is set, never sent
    doc = json.loads(few_questions.read_text())
    doc["questions"][0]["question"] += f" (my key is {HOSTILE_KEY})"
    questions = tmp_path / "q.json"
    questions.write_text(json.dumps(doc))
    results = tmp_path / "r.json"
    runs = [run_cli("--questions", str(questions), "--strategy", "baseline", "--output", str(results), env=env)]
    assert runs[0].code == 0, runs[0].stderr[-2000:]
    # a results file from elsewhere holds the key where the formats escape: strategy, id, doc id, chunk text
    elsewhere = json.loads(results.read_text())
    elsewhere["run"]["strategy"] = f"mine {HOSTILE_KEY}"
    elsewhere["run"]["id"] = f"id-{HOSTILE_KEY}"
    for row in elsewhere["results"]:
        row["question"] = f"<{HOSTILE_KEY}> {row['question']}"
        row["llm_reasoning"] = f"because {HOSTILE_KEY}"
        row["retrieved"][0]["doc_id"] = f"doc{HOSTILE_KEY}"
        row["retrieved"][0]["text"] = f"text & {HOSTILE_KEY}"
    hostile = tmp_path / "hostile.json"
    hostile.write_text(json.dumps(elsewhere))
    labels = tmp_path / "labels.jsonl"
    outputs = {name: tmp_path / name for name in ("report.html", "c.json", "run.trec", "qrels.txt", "cal.json")}
    for args in (["report", str(hostile), str(results), "-o", str(outputs["report.html"])],
                 ["compare", str(results), str(hostile), "--json", str(outputs["c.json"])],
                 ["export-run", str(hostile), "-o", str(outputs["run.trec"]), "--qrels", str(outputs["qrels.txt"])],
                 ["label", str(hostile), "-o", str(labels)]):
        runs.append(run_cli(*args, env=env))
        assert runs[-1].code == 0, (args[0], runs[-1].stderr[-2000:])
    lines = labels.read_text().splitlines()
    labels.write_text("\n".join([lines[0], *(json.dumps(dict(json.loads(x), human_grade=7)) for x in lines[1:])])
                      + "\n")
    runs.append(run_cli("calibrate", str(hostile), "--labels", str(labels), "--json", str(outputs["cal.json"]),
                        env=env))
    assert runs[-1].code == 0, runs[-1].stderr[-2000:]
    texts = {"results": results.read_text(), "labels": labels.read_text(),
             **{name: path.read_text(encoding="utf-8") for name, path in outputs.items()}}
    for i, run in enumerate(runs):
        texts.update({f"stdout {i}": run.stdout, f"stderr {i}": run.stderr, f"log {i}": run.log_text()})
    for name, text in texts.items():
        assert KEY_CORE not in text, f"the key leaked into {name}"
    for name in ("report.html", "run.trec", "results", "c.json", "labels"):
        assert "[REDACTED]" in texts[name], name  # redacted where it was, not dropped with its text
    assert "my key is [REDACTED]" in texts["results"] and "doc[REDACTED]" in texts["run.trec"]
    assert "mine [REDACTED]" in texts[f"stdout {2}"]  # compare's table names the run by its strategy
