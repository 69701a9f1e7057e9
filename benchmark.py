"""Retrieval benchmark: rank the needle, grade the chunks with a judge, score, write results.

    python benchmark.py --strategy modular-no-llm --quick
    python benchmark.py compare RUN_A RUN_B          (and the other commands in components.cli.COMMANDS)

The entry point: it quiets the signals while the modules load, then hands over to the command
line, :mod:`components.cli` (``main(argv, env)`` returns the exit code; ``entry()`` is the
installed ``retrieval-benchmark`` command). The run itself is :mod:`components.run.benchmark_run`.
"""

from __future__ import annotations

import os
import signal
import sys


def _quiet_early_signals() -> None:
    """While the modules load (up to a second): a Ctrl-C, SIGTERM or SIGHUP ends the command at
    once with 130 and one line, instead of a traceback from an import. :func:`main` hands the
    signals to its :class:`components.cli.common.SignalGuard`, which puts these back when it ends."""
    def stop(signum: int, _frame: object) -> None:
        os.write(2, b"interrupted while starting: nothing written\n")
        os._exit(130)

    for name in ("SIGINT", "SIGTERM", "SIGHUP"):
        if hasattr(signal, name):
            signal.signal(getattr(signal, name), stop)


if __name__ == "__main__" or (__name__ == "benchmark"
                               and os.path.basename(sys.argv[0] if sys.argv else "") == "retrieval-benchmark"):
    _quiet_early_signals()

from components.cli import entry, main  # noqa: E402 - after the early signal handlers, on purpose

__all__ = ["entry", "main"]

if __name__ == "__main__":
    # run as a script (not `python -m benchmark`, whose module has a spec): the default outputs may go
    # beside this file (components/cli/output_home.py)
    entry(script=__file__ if __spec__ is None else None)
