"""What every command of the command line shares: the argument types, the flags of every command
(``--log-dir``, ``--log-keep``, ``--log-level``), the :class:`SignalGuard`, the run status → exit
code table, and the environment section of ``--help``."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
from pathlib import Path

from components.run.calls.concurrency import check_concurrency
from components.run.retrieval.deadline import check_retrieval_timeout
from utils.errors import (EXIT_BUDGET, EXIT_GATE, EXIT_INCOMPLETE, EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_JUDGE,
                          EXIT_OK, EXIT_RETRIEVAL, InputError)
from utils.files.output import remove_temp_files

LOG_DIR = Path("logs")  # --log-dir's default: in the current folder, like every output (components/cli/output_home.py)
STATUS_EXIT = {"completed": EXIT_OK, "interrupted": EXIT_INTERRUPTED, "judge_failed": EXIT_JUDGE,
               "judge_blind": EXIT_JUDGE, "rate_limited": EXIT_JUDGE, "budget_exhausted": EXIT_BUDGET,
               "retrieval_failed": EXIT_RETRIEVAL, "incomplete": EXIT_INCOMPLETE}
# several runs: the exit code of the worst; 8 (incomplete) ranks below 3, 4 and 7 and above 6, the others by value
_EXIT_RANK = {EXIT_OK: -2, EXIT_GATE: -1, EXIT_INCOMPLETE: 0}

GENERAL_VARIABLES = (
    ("BENCHMARK_JUDGE", "the judge's provider: {providers} (default: the default provider when its key is set, "
                        "else offline)"),
    ("BENCHMARK_JUDGE_MODEL", "<provider>/<model>: the judge's provider and model at once"),
    ("BENCHMARK_REWRITER_MODEL", "<provider>/<model>: the query rewriter's (strategies that rewrite queries)"),
    ("BENCHMARK_PLUGINS", "package.module[,...]: modules that register metrics, judge providers, input readers, "
     "strategies or audit attacks of your own (docs/plugins.md)"),
    ("BENCHMARK_PROVIDERS", "package.module[,...]: read as BENCHMARK_PLUGINS is (its older name, for providers)"),
    ("BENCHMARK_JUDGE_TIMEOUT", "seconds per judge call, headers and body included (default 30; 300 for a server on "
                                "this machine; at most 600); a timed-out call is not retried, 3 in a row stop the run"),
    ("BENCHMARK_JUDGE_EFFORT", "low | medium | high | xhigh | max, sent only where the model supports it"),
    ("BENCHMARK_RETRY_WAIT_MAX", "seconds the retry pass may wait for a retry-after (default 60)"),
    ("BENCHMARK_BATCH_POLL_MAX", "longest wait between two polls of a --judge-batch batch (default 60)"),
)


def environment_help() -> str:
    """The environment section of ``--help``: the general variables, then each provider's own."""
    from components.judges.providers import providers, variables

    rows = [(name, text.format(providers=" | ".join(providers()))) for name, text in GENERAL_VARIABLES]
    rows += [(var.name, f"{provider}: {var.help}") for provider, var in variables()]
    width = max(len(name) for name, _ in rows) + 1
    return "\n".join(f"  {name:<{width}}{text}" for name, text in rows)


def outputs_epilog(option: str, default: str) -> str:
    """The ``outputs:`` paragraph of a command's ``--help`` whose output ``option`` defaults to ``default``."""
    return (f"outputs: without {option}, {default} is written in the current folder. Every command writes its "
            "default output in the current folder under a fixed name (benchmark_results.json and runs/, "
            "validation.json, report.html, dataset.jsonl; logs under --log-dir), names git ignores; "
            "python path/to/benchmark.py run from a folder containing its folder writes benchmark_results.json, "
            "runs/ and logs/ beside benchmark.py (docs/options.md#where-outputs-go).")


def help_epilog(parser: argparse.ArgumentParser, text: str) -> None:
    """End the command's ``--help`` with ``text`` (examples, exit codes), its line breaks kept."""
    parser.formatter_class = argparse.RawDescriptionHelpFormatter
    parser.epilog = text


def comma_list(text: str | None) -> list[str]:
    """The non-blank items of a comma-separated option (``--strategy a,b``, ``--ids``, ``--metrics``)."""
    return [item.strip() for item in (text or "").split(",") if item.strip()]


def exit_code(status: str) -> int:
    """The exit code of a run (or validation) that ended with ``status``."""
    return STATUS_EXIT.get(status, EXIT_INTERNAL)


def worst_exit(codes: list[int]) -> int:
    """The exit code of several runs: the worst of ``codes`` (:data:`_EXIT_RANK`); 0 for none."""
    return max(codes, key=lambda c: _EXIT_RANK.get(c, c)) if codes else EXIT_OK


def incomplete_exit(result, allowance: float) -> int:
    """The exit code of one run: its status's, except that an incomplete run (exit 8) ends with the line
    saying which judge missed how many grades and why, and exits 0 when the share of planned grades
    missing is at most ``allowance`` (``--allow-ungraded``)."""
    code = exit_code(result.run.status)
    if result.run.status not in ("incomplete", "judge_failed", "rate_limited"):
        return code
    from loguru import logger

    from components.run.retry_policy import allowed, incomplete, judge_names

    gap = incomplete(result.rows, judge_names(result.rows))
    if gap is None:
        return code
    if result.run.status != "incomplete":  # the judge became unusable: what it missed, per judge
        logger.error("{} (status {}, exit {})", gap.line(), result.run.status, code)
        return code
    if allowed(gap, allowance):
        logger.warning("{} (accepted: {:.1%} missing, --allow-ungraded {:g})", gap.line(), gap.fraction, allowance)
        return EXIT_OK
    logger.error("{} (status incomplete, exit {})", gap.line(), code)
    return code


def allow_ungraded(text: str) -> float:
    """``--allow-ungraded FRACTION``: a share of the planned grades, from 0 to 1."""
    from components.run.retry_policy import check_allowance

    try:
        return check_allowance(text)
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err).removeprefix("--allow-ungraded ")) from None


# ---- argument types ---------------------------------------------------------------------------

def _whole_number(text: str, least: int, bound: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < least:
        raise argparse.ArgumentTypeError(f"{value} must be {bound}")
    return value


def positive_int(text: str) -> int:
    return _whole_number(text, 1, "at least 1")


MAX_K = 1_000  # --k: chunks retrieved per question, 1 to this


def chunks_per_question(text: str) -> int:
    """``--k``: a whole number from 1 to :data:`MAX_K`."""
    value = _whole_number(text, 1, f"from 1 to {MAX_K:,}")
    if value > MAX_K:
        raise argparse.ArgumentTypeError(f"{value} must be from 1 to {MAX_K:,} (chunks retrieved per question)")
    return value


def concurrency(text: str) -> int:
    try:
        return check_concurrency(positive_int(text))
    except InputError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def count(text: str) -> int:
    return _whole_number(text, 0, "0 or more")


def dollars(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount of dollars") from None
    if not 0 <= value < 1e9:
        raise argparse.ArgumentTypeError(f"{text} must be a finite amount of dollars, 0 or more")
    return value


def timeout_seconds(text: str) -> float:
    """A number of seconds, 0 or more (``--retrieval-timeout``: 0 is none)."""
    try:
        return check_retrieval_timeout(float(text)) or 0.0
    except (ValueError, InputError) as err:
        raise argparse.ArgumentTypeError(str(err) if isinstance(err, InputError) else
                                         f"{text!r} is not a number of seconds") from None


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """The flags of the run and of every command."""
    p.add_argument("--log-dir", type=Path, default=LOG_DIR,
                   help="folder of the TRACE log files (default: %(default)s); when it cannot be written, "
                        "logging goes to the console only")
    p.add_argument("--log-keep", type=count, default=50, metavar="N",
                   help="keep the newest N log files of --log-dir: older benchmark_*.log files there are deleted "
                        "once the new one is open (default: %(default)s; 0 keeps them all)")
    p.add_argument("--log-level", default="INFO", type=str.upper,
                   choices=["TRACE", "DEBUG", "INFO", "SUCCESS", "WARNING", "ERROR"], help="console log level")


# ---- signals ----------------------------------------------------------------------------------

class SignalGuard:
    """First SIGINT/SIGTERM/SIGHUP: KeyboardInterrupt in the main thread (the current question is
    abandoned) and ``received`` set, which the question loop also checks: an extension module can
    swallow the KeyboardInterrupt, or wrap it in another exception (once ``received`` is set,
    the command line and the loop treat that exception as the interrupt). A second one exits at
    once with 130 (every finished row is already in the journal; a temp file being written is
    removed first). Inside :meth:`deferred` (the final write; a Message Batch being created and
    journaled) the first signal only sets ``received``: the write finishes, no temp file is left,
    and the run then ends with 130; a second one still exits at once. Leaving the ``with`` block
    puts back the handlers it found."""

    SIGNALS = tuple(s for s in (getattr(signal, n, None) for n in ("SIGINT", "SIGTERM", "SIGHUP")) if s)

    def __init__(self) -> None:
        self.received: str | None = None
        self._deferring = False
        self._previous: dict[int, object] = {}

    def _handle(self, signum: int, _frame: object) -> None:
        name = signal.Signals(signum).name
        if self.received is not None:  # the second signal, deferring or not
            remove_temp_files()  # os._exit skips the write's own clean-up
            os._exit(EXIT_INTERRUPTED)
        self.received = name
        if not self._deferring:
            raise KeyboardInterrupt(name)

    @contextlib.contextmanager
    def deferred(self):
        self._deferring = True
        try:
            yield
        finally:
            self._deferring = False

    def __enter__(self) -> SignalGuard:
        for sig in self.SIGNALS:
            self._previous[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for sig, handler in self._previous.items():
            signal.signal(sig, handler)
        self._previous = {}
