"""The done-when of a judge that cannot tell right from wrong, end to end on a recorded set where 10 questions
retrieved their needle's text and 10 retrieved another document's text (the acme set, built here): a judge
answering 8 to everything (a loopback OpenAI-compatible server) against the offline judge.

- the constant judge's run: judge_signal "uninformative" and a WARNING in the summary; the offline judge's:
  "informative", no warning;
- audit-judge --attacks removal on the constant judge's run: verdict blind, named first;
- compare --fail-on worse of two constant-judge runs: exit 6, the grade metrics cannot be judged, the judge named;
- a panel of the offline judge and the constant judge: compare certifies on the offline judge alone, with the line
  naming the one left out, and --require-agreement passes.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import ROOT, clean_env, run_cli
from tests.loopback_openai import OpenAILoopback

DOCS = {
    "install": ("Installing acme", "Download the archive for your platform and put the `acme` binary on your PATH.\n"
                "Run `acme --version` to check which version you installed."),
    "config": ("Configuration", "Settings live in `~/.acme/config.toml`. The `timeout` key sets the request timeout "
               "in seconds; the default is 30."),
    "logging": ("Logging", "acme writes its log to `~/.acme/acme.log`. Set `log_level = \"debug\"` in the config "
                "file for more detail.\nLogs older than 7 days are deleted automatically."),
    "proxy": ("Using a proxy", "acme honours the `HTTPS_PROXY` environment variable. To bypass the proxy for some "
              "hosts, list them in `NO_PROXY`, separated by commas."),
    "uninstall": ("Uninstalling", "Delete the `acme` binary, then remove the `~/.acme` folder to delete your "
                  "settings too."),
    "plugins": ("Plugins", "Plugins are Python files placed in `~/.acme/plugins/`. acme loads every file there at "
                "start-up; a plugin must define a function named `register(app)`."),
    "cache": ("The download cache", "Run `acme cache clear` to empty the download cache. The cache grows to 500 MB "
              "by default; the `cache_size_mb` key changes the limit."),
    "auth": ("Authentication", "Run `acme login` and paste your API token when asked. The token is stored in the "
             "system keyring, never in the config file. `acme logout` removes it."),
}
QUESTIONS = [  # (question, expected answer, needle, the other document retrieved for its "wrong" twin)
    ("How can I tell which version of acme is installed?", "Run acme --version.", "install", "proxy"),
    ("Where do I change the request timeout?", "The timeout key in ~/.acme/config.toml, in seconds (default 30).",
     "config", "plugins"),
    ("Where are acme's logs and how do I get more detailed ones?",
     "In ~/.acme/acme.log; set log_level = \"debug\" in the config file.", "logging", "auth"),
    ("How do I make acme skip the proxy for internal hosts?",
     "List the hosts, comma-separated, in the NO_PROXY environment variable.", "proxy", "cache"),
    ("How do I remove acme completely, settings included?", "Delete the acme binary and remove the ~/.acme folder.",
     "uninstall", "config"),
    ("What function must a plugin define?", "A function named register(app), in a Python file in ~/.acme/plugins/.",
     "plugins", "install"),
    ("How do I empty the download cache?", "Run acme cache clear.", "cache", "logging"),
    ("Where is my API token stored after I log in?", "In the system keyring, not in the config file.", "auth",
     "uninstall"),
    ("How big can the cache grow before acme stops adding to it?",
     "500 MB by default, set by the cache_size_mb key.", "cache", "proxy"),
    ("How long are old log files kept?", "7 days; older logs are deleted automatically.", "logging", "plugins"),
]


def recorded_set() -> dict:
    """Per question a right twin (its needle's text retrieved) and a wrong twin (another document's text)."""
    items = []
    for i, (question, answer, needle, other) in enumerate(QUESTIONS, start=1):
        for category, doc, suffix in (("right", needle, ""), ("wrong", other, " Thanks!")):
            title, text = DOCS[doc]
            items.append({"id": f"q{i}-{category}", "question": question + suffix, "expected_answer": answer,
                          "needle_doc_id": needle, "category": category,
                          "retrieved": [{"doc_id": doc, "title": title, "text": text, "score": 1.0}]})
    return {"questions": items}


@pytest.fixture(scope="module")
def acme(tmp_path_factory):
    """The folder with the recorded set, the corpus, and a loopback judge answering 8 to everything."""
    folder = tmp_path_factory.mktemp("acme")
    (folder / "recorded.json").write_text(json.dumps(recorded_set()))
    docs = folder / "docs"
    docs.mkdir()
    for doc, (title, text) in DOCS.items():
        (docs / f"{doc}.md").write_text(f"# {title}\n\n{text}\n")
    with OpenAILoopback() as server:  # its default reply: {"grade": 8, ...}
        yield folder, server


def constant_env(server) -> dict[str, str]:
    return clean_env(BENCHMARK_JUDGE_MODEL="openai/gpt-4.1", OPENAI_BASE_URL=server.url, OPENAI_API_KEY="sk-loop")


def run(folder: Path, env: dict[str, str], output: str, *more: str):
    return run_cli("--strategy", "recorded", "--questions", str(folder / "recorded.json"), "--corpus",
                   str(folder / "docs"), "--output", str(folder / output), *more, env=env, cwd=folder)


@pytest.fixture(scope="module")
def runs(acme):
    folder, server = acme
    constant = run(folder, constant_env(server), "constant.json")
    offline = run(folder, clean_env(BENCHMARK_JUDGE="offline"), "offline.json")
    assert constant.code == 0 and offline.code == 0, constant.stderr + offline.stderr
    return {"constant": constant, "offline": offline}


def signal(folder: Path, name: str) -> dict:
    return json.loads((folder / name).read_text())["run"]["judge"]["judge_signal"]


def test_a_judge_answering_8_is_uninformative_and_warned_of(acme, runs):
    folder, _ = acme
    s = signal(folder, "constant.json")
    assert (s["verdict"], s["n_found"], s["n_missed"], s["gap"], s["ci95"], s["top_grade"], s["top_grade_share"]) == \
        ("uninformative", 10, 10, 0.0, [0.0, 0.0], 8, 1.0)
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(json.loads((folder / "constant.json").read_text()),
                        json.loads((ROOT / "docs" / "results.schema.json").read_text()))
    out = runs["constant"].stdout
    assert "judge signal       uninformative: grade gap +0.00 [+0.00, +0.00]" in out
    assert "WARNING: the judge openai gpt-4.1 is uninformative" in out


def test_the_offline_judge_is_informative(acme, runs):
    folder, _ = acme
    s = signal(folder, "offline.json")
    assert s["verdict"] == "informative" and s["ci95"][0] >= 1 and s["spearman_rr"] > 0.5
    assert "judge signal       informative" in runs["offline"].stdout and "WARNING" not in runs["offline"].stdout


def test_the_audit_of_the_constant_judge_finds_it_blind(acme, runs):
    folder, server = acme
    done = run_cli("audit-judge", str(folder / "constant.json"), "--attacks", "removal", "-o",
                   str(folder / "audit.json"), env=constant_env(server), cwd=folder)
    assert done.code == 0, done.stderr
    (judge,) = json.loads((folder / "audit.json").read_text())["judges"]
    assert [(a["name"], a["verdict"]) for a in judge["attacks"]] == [("answer-removal", "blind")]
    assert judge["profile"].startswith("BLIND")
    assert done.stdout.splitlines()[1].startswith("BLIND: judge openai/gpt-4.1")


def test_compare_of_two_constant_judge_runs_fails_the_gate_naming_the_judge(acme, runs):
    folder, server = acme
    again = run(folder, constant_env(server), "constant2.json")
    assert again.code == 0, again.stderr
    done = run_cli("compare", str(folder / "constant.json"), str(folder / "constant2.json"), "--fail-on", "worse",
                   env=constant_env(server), cwd=folder)
    assert done.code == 6, done.stdout + done.stderr
    assert "avg grade: cannot be judged: the grades come from an uninformative judge" in done.stdout
    fails = [line for line in done.stdout.splitlines() if line.startswith("  FAIL")]
    assert fails and all("cannot be judged: the judge of both runs, openai/gpt-4.1, is uninformative" in line
                         for line in fails)
    failed = {line.split()[1] for line in fails}
    assert "avg_llm_grade" in failed and "avg_total_score" in failed and "mrr" not in failed  # retrieval: judged


def test_a_panel_of_the_offline_judge_and_the_constant_judge_is_certified_on_the_offline_judge(acme):
    folder, server = acme
    (folder / "panel.toml").write_text(f'[[judge]]\nname = "offline"\nprovider = "offline"\n\n[[judge]]\nname = "qj"\n'
                                       f'provider = "openai"\nmodel = "gpt-4.1"\nbase_url = "{server.url}"\n')
    env = clean_env()
    for name in ("panel_a.json", "panel_b.json"):
        done = run(folder, env, name, "--judges", str(folder / "panel.toml"))
        assert done.code == 0, done.stderr
    doc = json.loads((folder / "panel_a.json").read_text())
    assert doc["run"]["judge"]["judge_signal"]["verdict"] == "informative"  # the aggregate follows the needle
    assert {n: j["judge_signal"]["verdict"] for n, j in doc["panel"]["per_judge"].items()} == \
        {"offline": "informative", "qj": "uninformative"}
    assert "WARNING: the panel's judge qj is uninformative" in done.stdout
    compared = run_cli("compare", str(folder / "panel_a.json"), str(folder / "panel_b.json"), "--fail-on", "worse",
                       "--require-agreement", env=env, cwd=folder)
    assert compared.code == 0, compared.stdout + compared.stderr
    assert "Verdict certificate (1 judge: offline;" in compared.stdout
    assert "\n  qj: left out, uninformative\n" in compared.stdout


# ---- --known-answers: before any question is judged

def test_known_answers_stop_the_constant_judge_as_blind_after_at_most_ten_calls(acme):
    folder, server = acme
    before = len(server.requests)
    done = run(folder, constant_env(server), "blind.json", "--known-answers", "5")
    assert done.code == 3, done.stderr
    assert len(server.requests) - before <= 10
    doc = json.loads((folder / "blind.json").read_text())
    known = doc["run"]["known_answers"]
    assert doc["run"]["status"] == "judge_blind" and known["verdict"] == "blind"
    assert (known["pairs"], known["separation"], known["ci95"], known["auc"]) == (5, 0.0, [0.0, 0.0], 0.5)
    assert [r["question_id"] for r in known["rows"]] == [f"q{i}-right" for i in range(1, 6)]
    assert all(r["llm_grade"] is None and r["grade_error"].startswith("not judged: the judge is blind")
               for r in doc["results"]) and len(doc["results"]) == 20
    assert doc["hit_at_1_rate"] == 50.0  # retrieval is still measured
    assert "graded the needle's chunks 8.0 and other documents' chunks 8.0 on average" in done.stderr
    assert "the run stopped before judging any question (status judge_blind)" in done.stderr
    assert "To continue this run" not in done.stderr  # --resume with that judge would stop again
    jsonschema = pytest.importorskip("jsonschema")
    jsonschema.validate(doc, json.loads((ROOT / "docs" / "results.schema.json").read_text()))


def test_known_answers_let_the_offline_judge_grade(acme):
    folder, _ = acme
    done = run(folder, clean_env(BENCHMARK_JUDGE="offline"), "known.json", "--known-answers", "5")
    assert done.code == 0, done.stderr
    doc = json.loads((folder / "known.json").read_text())
    assert doc["run"]["known_answers"]["verdict"] == "discriminates" and doc["run"]["status"] == "completed"
    assert doc["graded_count"] == 20
    assert "known answers      discriminates: separation +" in done.stdout


@pytest.mark.parametrize("value, message", [
    ("0", "--known-answers 0: give a whole number of questions, 1 or more (e.g. 5)"),
    ("-1", "--known-answers -1: give a whole number of questions, 1 or more (e.g. 5)"),
    ("2.5", "--known-answers '2.5': give a whole number of questions, 1 or more (e.g. 5)"),
    ("21", "--known-answers 21: give a number of questions from 1 to the run's 20 (the run has 20)"),
    ("11", "--known-answers 11: only 10 of the 20 questions retrieved a chunk of their needle's document with "
           "recorded: give --known-answers 10 or fewer"),
])
def test_bad_known_answers_are_one_line_exit_2(acme, value, message):
    folder, _ = acme
    done = run(folder, clean_env(BENCHMARK_JUDGE="offline"), "bad.json", "--known-answers", value)
    assert done.code == 2
    errors = [line for line in done.stderr.splitlines() if "error" in line.lower()]
    assert len(errors) == 1, done.stderr
    assert errors[0].endswith(message) and not (folder / "bad.json").exists()


def test_a_panel_names_its_blind_judge_and_the_estimate_counts_two_calls_per_question_and_judge(acme):
    folder, server = acme
    (folder / "panel2.toml").write_text(f'[[judge]]\nname = "offline"\nprovider = "offline"\n\n[[judge]]\nname = "qj"\n'
                                        f'provider = "openai"\nmodel = "gpt-4.1"\nbase_url = "{server.url}"\n')
    done = run(folder, clean_env(), "panel_blind.json", "--judges", str(folder / "panel2.toml"), "--known-answers", "5")
    assert done.code == 3, done.stderr
    known = json.loads((folder / "panel_blind.json").read_text())["run"]["known_answers"]
    assert known["blind"] == ["qj"] and known["judges"]["offline"]["verdict"] == "discriminates"
    assert "the judge qj graded the needle's chunks 8.0" in done.stderr
    estimate = run(folder, constant_env(server), "est.json", "--known-answers", "5", "--estimate")
    assert estimate.code == 0, estimate.stderr
    (line,) = [x for x in estimate.stdout.splitlines() if x.strip().startswith("known answers")]
    assert line.split()[2] == "10", estimate.stdout
