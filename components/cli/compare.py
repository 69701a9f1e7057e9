"""``python benchmark.py compare A B [C ...]``: its arguments and its exit code (6 when a gate fails);
the work is :func:`components.analysis.compare.compare_files`."""

from __future__ import annotations

import argparse
from pathlib import Path

from loguru import logger

from components.analysis.compare import ALPHA, compare_files
from components.analysis.gate import check_min_overlap, gated_metrics, parse_fail_on, parse_margins
from components.cli.common import comma_list
from utils import metrics as M
from utils.errors import EXIT_GATE, EXIT_OK, InputError


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("runs", nargs="+", metavar="RUN",
                        help="results file or run id (runs/<id>.json); the first is the baseline. A TREC run file "
                             "or a ranx JSON run stands beside them as a rank-only system")
    parser.add_argument("--qrels", type=Path, default=None, metavar="PATH",
                        help="the judgments of the TREC/ranx runs (TREC or BEIR qrels; default: the baseline's "
                             "needles)")
    parser.add_argument("--json", type=Path, default=None, metavar="OUT", help="also write the comparison as JSON")
    parser.add_argument("--top", type=int, default=10, metavar="N",
                        help="questions listed per direction in the table (default 10; --json has all)")
    parser.add_argument("--alpha", type=float, default=ALPHA, help="significance level (default %(default)s)")
    parser.add_argument("--metrics", default=None, metavar="KEYS",
                        help="metric keys to compare, comma-separated (default: "
                             f"{','.join(m.key for m in M.metrics(compared=True))})")
    gate = parser.add_argument_group("CI gate (exit 6 when it fails)")
    gate.add_argument("--fail-on", default=None, metavar="worse[:METRICS]",
                      help="fail when a metric's verdict is worse (Holm-adjusted p below --alpha): every compared "
                           "metric, or worse:mrr,ndcg (keys, or ndcg, map, recall, hit1, hit5, grade, total, pass7)")
    gate.add_argument("--margin", action="append", default=[], metavar="METRIC=MARGIN",
                      help="non-inferiority: fail when the lower bound of the 95%% CI of the metric's delta is below "
                           "-MARGIN (the metric's unit: points for rates); repeatable")
    gate.add_argument("--fail-on-regressions", type=int, default=None, metavar="N",
                      help="fail when more than N questions lost their rank-1 hit")
    gate.add_argument("--min-overlap", type=float, default=None, metavar="SHARE",
                      help="the share of the baseline's question ids each gated run must hold, 0 to 1 (default 1: "
                           "all of them); a run holding fewer fails the gate")
    gate.add_argument("--require-agreement", action="store_true",
                      help="with --fail-on or --margin on panel runs (--judges): also fail when a gated verdict that "
                           "uses grades depends on the judge (one judge of the panel alone would decide otherwise)")


def _check(args: argparse.Namespace) -> tuple[list[str] | bool, dict[str, float]]:
    """Refuse bad values (:class:`InputError`); the gate's ``--fail-on`` and ``--margin`` parsed."""
    if len(args.runs) < 2:
        raise InputError("compare needs at least two runs: python benchmark.py compare BASELINE OTHER [...]")
    if args.top < 0:
        raise InputError(f"--top {args.top} is negative: give 0 or more")
    if not 0 < args.alpha < 1:
        raise InputError(f"--alpha {args.alpha:g} is not between 0 and 1: give e.g. 0.05")
    worse = parse_fail_on(args.fail_on) if args.fail_on is not None else False
    margins = parse_margins(args.margin)
    if args.fail_on_regressions is not None and args.fail_on_regressions < 0:
        raise InputError(f"--fail-on-regressions {args.fail_on_regressions} is negative: give 0 or more")
    if args.min_overlap is not None:
        check_min_overlap(args.min_overlap)
        if not worse and not margins and args.fail_on_regressions is None:
            raise InputError("--min-overlap relaxes the gate: give it with --fail-on, --margin or "
                             "--fail-on-regressions")
    if args.require_agreement and not (worse or margins):
        raise InputError("--require-agreement checks the gate's verdicts: add --fail-on worse[:METRICS] or --margin")
    return worse, margins


def run(args: argparse.Namespace, settings) -> int:
    worse, margins = _check(args)
    result = compare_files(args.runs, qrels=args.qrels, json_path=args.json, top=args.top, alpha=args.alpha,
                           metrics=_metrics(args.metrics, worse, margins), worse=worse, margins=margins,
                           regressions=args.fail_on_regressions, require_agreement=args.require_agreement,
                           min_overlap=1.0 if args.min_overlap is None else args.min_overlap, secrets=settings.secrets,
                           state_dir=settings.state_dir)
    if result is None:
        return EXIT_OK
    if result.passed:
        logger.info("Gate passed: {} check(s), none failed", len(result.checks))
        return EXIT_OK
    names = ", ".join(dict.fromkeys(c.metric or c.rule for c in result.failures))
    logger.error("Gate failed: {} ({} failing check(s)): exit {}", names, len(result.failures), EXIT_GATE)
    return EXIT_GATE


def _metrics(keys: str | None, worse: list[str] | bool, margins: dict[str, float]) -> list[str] | None:
    """``--metrics`` (None: the registry's compared ones), plus every metric the gate checks."""
    metrics = comma_list(keys) if keys else None
    extra = gated_metrics(worse, margins)
    base = metrics if metrics is not None else [m.key for m in M.metrics(compared=True)]
    if any(key not in base for key in extra):
        metrics = [*base, *(key for key in extra if key not in base)]
    return metrics
