"""The run's adaptive-judging options: ``--until-decided BASELINE.json`` (with ``--fail-on`` and
``--margin``, as ``compare`` reads them) and ``--target-ci W``; the work is
:mod:`components.run.adaptive`."""

from __future__ import annotations

import argparse
from pathlib import Path


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--until-decided", type=Path, default=None, metavar="BASELINE.json",
                   help="judge only until the verdict against this fully graded baseline (same questions, k and "
                        "judge) is known: every question is retrieved, the judge is called in a seeded random order "
                        "in blocks, and judging stops once every gated metric that uses grades is decided "
                        "(group-sequential test; docs/compare.md#judging-until-the-verdict-is-known)")
    p.add_argument("--fail-on", default=None, metavar="worse[:METRICS]",
                   help="with --until-decided: the metrics gated (as for compare; default: the primary metric, the "
                        "mean grade, alone), and exit 6 when one is decided worse")
    p.add_argument("--margin", action="append", default=[], metavar="METRIC=MARGIN",
                   help="with --until-decided: non-inferiority margins (as for compare, repeatable): exit 6 when the "
                        "metric is not shown non-inferior")
    p.add_argument("--target-ci", default=None, metavar="W|METRIC=W,...",
                   help="without a baseline: judge until the anytime-valid 95%% interval of the mean grade has a "
                        "half-width (half its width) of at most W (or of each METRIC given, e.g. grade=0.3,pass7=5; "
                        "points for pass rates)")


def request(args: argparse.Namespace, strategies: int):
    """The :class:`components.run.adaptive.Request` of the parsed options, or None."""
    from components.run.adaptive import request as adaptive_request

    if args.until_decided is None and args.target_ci is None and args.fail_on is None and not args.margin:
        return None
    return adaptive_request(args.until_decided, fail_on=args.fail_on, margins=args.margin, target_ci=args.target_ci,
                            strategies=strategies)


def gate_exit(args: argparse.Namespace, results, code: int) -> int:
    """``--until-decided`` with ``--fail-on`` or ``--margin``: exit 6 when a run that completed has a
    gated metric decided worse, inferior or not shown non-inferior; another exit code stays."""
    from loguru import logger

    from components.analysis.adaptive import failed
    from utils.errors import EXIT_GATE, EXIT_OK

    if args.until_decided is None or not (args.fail_on or args.margin) or code != EXIT_OK:
        return code
    names = [key for r in results for key in failed(r.adaptive)]
    if not names:
        return code
    logger.error("Gate failed (sequential verdict against the baseline): {}: exit {}", ", ".join(names), EXIT_GATE)
    return EXIT_GATE
