"""Where the default outputs go: beside benchmark.py when it is run as a script from a folder that
strictly contains its folder (the plan's "from the repository root"), else the current folder."""

from __future__ import annotations

import argparse
import os
import subprocess
from pathlib import Path

import pytest

from components.cli import command_parser, main, run_parser
from components.cli.output_home import OutputHome, apply_home, explicit, output_home
from tests.conftest import clean_env, mount_tmpfs, unmount


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    """A repository root holding poc/modular_retrieval_pipeline/benchmark.py (an empty file)."""
    module = tmp_path / "poc" / "modular_retrieval_pipeline"
    module.mkdir(parents=True)
    (module / "benchmark.py").write_text("")
    return tmp_path


MODULE = Path("poc/modular_retrieval_pipeline")


# --------------------------------------------------------------------------- the rule


def test_run_as_a_script_from_a_folder_containing_the_module_folder(tree):
    assert output_home("poc/modular_retrieval_pipeline/benchmark.py", tree) == OutputHome(MODULE)
    assert output_home(str(tree / MODULE / "benchmark.py"), tree) == OutputHome(MODULE)  # absolute, as __file__
    assert output_home(str(tree / MODULE / "benchmark.py"), tree / "poc") == \
        OutputHome(Path("modular_retrieval_pipeline"))


@pytest.mark.parametrize("where", ["module", "unrelated", "inside"])
def test_every_other_folder_keeps_the_current_one(tree, where):
    cwd = {"module": tree / MODULE, "unrelated": tree / "elsewhere", "inside": tree / MODULE / "sub"}[where]
    cwd.mkdir(exist_ok=True)
    assert output_home(str(tree / MODULE / "benchmark.py"), cwd) == OutputHome()


def test_not_run_as_a_script_keeps_the_current_folder(tree):
    assert output_home(None, tree) == OutputHome()  # the installed command, python -m benchmark, main()


def test_a_folder_that_cannot_be_written_keeps_the_current_folder_and_says_so(tree):
    module = tree / MODULE
    if os.geteuid() == 0:  # root writes through permissions: a read-only mount instead
        why_not = mount_tmpfs(module, "64k")
        if why_not is not None:
            pytest.skip(why_not)
        try:
            (module / "benchmark.py").write_text("")
            subprocess.run(["mount", "-o", "remount,ro", str(module)], check=True, capture_output=True)
            home = output_home(str(module / "benchmark.py"), tree)
        finally:
            unmount(module)
    else:
        module.chmod(0o555)
        try:
            home = output_home(str(module / "benchmark.py"), tree)
        finally:
            module.chmod(0o755)
    assert home.folder is None
    assert home.note == ("the module folder poc/modular_retrieval_pipeline cannot be written: the results, runs/ "
                         "and logs/ go to the current folder instead")


# --------------------------------------------------------------------------- the defaults it changes


def run_args(argv: list[str]) -> argparse.Namespace:
    args = run_parser().parse_args(argv)
    args.argv = argv
    return args


def test_the_runs_output_and_log_folder_move_beside_the_module():
    args = run_args(["--quick"])
    apply_home(OutputHome(MODULE), args, ["--quick"], True, run_parser)
    assert (args.output, args.log_dir) == (str(MODULE / "benchmark_results.json"), MODULE / "logs")


@pytest.mark.parametrize("argv", [["--output", "x.json"], ["--output=x.json"], ["--outp", "x.json"],
                                  ["--output", "benchmark_results.json"], ["--resume", "runs/a.journal.jsonl"]])
def test_an_output_on_the_command_line_or_a_resume_still_chooses(argv):
    args = run_args(argv)
    before = args.output
    apply_home(OutputHome(MODULE), args, argv, True, run_parser)
    assert args.output == before and args.log_dir == MODULE / "logs"


def test_a_log_dir_on_the_command_line_still_chooses():
    args = run_args(["--log-dir", "mylogs"])
    apply_home(OutputHome(MODULE), args, ["--log-dir", "mylogs"], True, run_parser)
    assert args.log_dir == Path("mylogs") and args.output == str(MODULE / "benchmark_results.json")


def test_a_command_moves_only_its_log_folder():
    from components.cli import report

    argv = ["report", "r.json"]
    args = command_parser("report", report).parse_args(argv[1:])
    apply_home(OutputHome(MODULE), args, argv[1:], False, lambda: command_parser("report", report))
    assert args.log_dir == MODULE / "logs" and args.output == Path("report.html")


def test_explicit_reads_every_spelling():
    assert explicit(run_parser(), ["--ou=a", "--log-d", "l"], ("output", "log_dir", "resume")) == {"output", "log_dir"}
    assert explicit(run_parser(), ["--quick"], ("output", "log_dir")) == set()


def test_the_read_only_note_is_said_only_when_the_results_take_the_default():
    note = OutputHome(None, "the module folder x cannot be written")
    assert apply_home(note, run_args([]), [], True, run_parser).note == note.note
    assert apply_home(note, run_args(["--output", "o.json"]), ["--output", "o.json"], True, run_parser).note is None


# --------------------------------------------------------------------------- a run


def test_a_run_from_the_root_writes_beside_the_module_and_says_where_first(tree, monkeypatch, capsys):
    monkeypatch.chdir(tree)
    code = main(["--quick", "--no-cache"], clean_env(), script=str(tree / MODULE / "benchmark.py"))
    assert code == 0
    assert (tree / MODULE / "benchmark_results.json").is_file()
    assert [p.name for p in (tree / MODULE / "runs").iterdir()][0].endswith("_modular-no-llm.json")
    assert any((tree / MODULE / "logs").glob("benchmark_*.log"))
    assert sorted(p.name for p in tree.iterdir()) == ["poc"]  # nothing in the current folder
    first = capsys.readouterr().out.splitlines()[0]
    assert first == "results            poc/modular_retrieval_pipeline/benchmark_results.json"
