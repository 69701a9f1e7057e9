"""The project's exceptions. Modules raise them; only the command line (``components/cli/``) turns
them into console lines and exit codes.

Every message is one line that names the problem and the fix.
"""

from __future__ import annotations

# The exit codes of every command: one source (the exceptions carry theirs as ``exit_code``).
EXIT_OK, EXIT_INTERNAL, EXIT_INPUT, EXIT_JUDGE, EXIT_BUDGET, EXIT_WRITE, EXIT_INTERRUPTED = 0, 1, 2, 3, 4, 5, 130
EXIT_GATE = 6  # compare's CI gate (--fail-on, --margin, --fail-on-regressions) failed
EXIT_RETRIEVAL = 7  # the retriever failed on every question of a run
EXIT_INCOMPLETE = 8  # a run that ended with a grade it meant to have missing (status incomplete)


class BenchmarkError(Exception):
    """Base class: ``str(err)`` is the one line shown to the user."""

    exit_code = EXIT_INTERNAL


class InputError(BenchmarkError):
    """Bad usage or bad input (questions, corpus, strategy, output path): exit 2, nothing written."""

    exit_code = EXIT_INPUT


class JudgeError(BenchmarkError):
    """A judge call failed.

    ``kind`` is a short stable token recorded in ``grade_error`` (``timeout``, ``rate_limit``,
    ``overloaded``, ``server_error``, ``connection``, ``bad_response``, ``auth``, ``not_found``,
    ``bad_request``, ``redirect``, ``context_window_exceeded``). ``fatal`` errors stop all further judge
    calls (exit 3); transient ones only cost the current question its grade.
    """

    exit_code = EXIT_JUDGE

    def __init__(self, kind: str, message: str, *, fatal: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.kind = kind
        self.fatal = fatal
        self.retry_after = retry_after  # seconds the server asked to wait (uncapped), when it said


class ResultsWriteError(BenchmarkError):
    """An output file (the results, a report, a clean question set) could not be written (a full
    disk, a vanished folder...): exit 5.

    Raised by :func:`utils.files.output.write_json_atomic` / ``write_text_atomic`` after the earlier file
    (if any) was left as it was and the temp file removed; ``str(err)`` names the file and the
    cause, and the edge adds where the run is kept (the journal) and how to continue it.
    """

    exit_code = EXIT_WRITE

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"could not write {path}: {reason}")
        self.path = path
        self.reason = reason
