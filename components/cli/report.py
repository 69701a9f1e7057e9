"""``python benchmark.py report RUN [RUN ...] -o report.html``: its arguments; the work is
:func:`components.report.page.write_report`."""

from __future__ import annotations

import argparse
from pathlib import Path

from components.report.page import write_report
from components.cli.common import help_epilog
from utils.errors import EXIT_OK


def add_arguments(parser: argparse.ArgumentParser) -> None:
    help_epilog(parser, "examples:\n"
                "  python benchmark.py report benchmark_results.json -o report.html\n"
                "  python benchmark.py report base.json new.json -o compare.html   # with the comparison\n"
                "  report.html#tag=chunking_split&open=q_006 in a browser: one type's questions, one row open\n\n"
                "exit codes: 0 written; 2 a RUN is missing or not a results file (nothing written)")
    parser.add_argument("runs", nargs="+", type=Path, metavar="RUN", help="results JSON file(s) of benchmark runs")
    parser.add_argument("-o", "--output", type=Path, default=Path("report.html"),
                        help="HTML file to write (default: report.html)")
    parser.add_argument("--labels", type=Path, default=None, metavar="FILE",
                        help="also show a labelling file's rows (benchmark.py label) for reading, in their own section")
    parser.add_argument("--audit", type=Path, default=None, metavar="FILE",
                        help="a judge audit (benchmark.py audit-judge -o FILE): its section, and a warning when a "
                             "run's judge is vulnerable or is not the judge audited")


TAKES_ENV = True  # run(args, settings, env): the keys a run's panel judges' api_key_env variables hold


def run(args: argparse.Namespace, settings, env=None) -> int:
    write_report(args.runs, args.output, labels=args.labels, secrets=settings.secrets, audit=args.audit, env=env)
    return EXIT_OK
