"""``python benchmark.py audit-judge RUN [--sample N] [--seed S] [--attacks ...] [--judges ...] [-o audit.json]``:
its arguments; the work is :mod:`components.audit.judge_audit`."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from loguru import logger

from components.audit.attacks import families, short_names
from components.audit.estimate import estimate_audit, estimate_table
from components.audit.judge_audit import plan_audit, run_audit
from components.audit.judges import audited_judges
from components.audit.sample import DEFAULT_SAMPLE
from components.audit.table import audit_table
from components.cli.common import count, dollars, exit_code, help_epilog, positive_int
from components.judges.panel import panel_file, panel_secrets
from utils.console import Progress
from utils.errors import EXIT_OK
from utils.files.output import check_output
from utils.results import load_run, recorded_corpora

TAKES_ENV = True  # run(args, settings, env): --judges reads the variables a panel file names


def add_arguments(parser: argparse.ArgumentParser) -> None:
    by_family = families()  # the registered attacks: built in, and a plug-in's (components.core.plugins)
    several = ", ".join(f"{family} has {len(variants)}" for family, variants in by_family.items() if len(variants) > 1)
    help_epilog(parser, "examples:\n"
                "  python benchmark.py audit-judge benchmark_results.json -o audit.json\n"
                "  python benchmark.py audit-judge run.json --sample 20 --attacks stuffing,injection --estimate\n"
                "  python benchmark.py audit-judge run.json --judges offline,<provider>/<model> -o audit.json\n"
                "  python benchmark.py report run.json --audit audit.json -o report.html\n\n"
                "attacks: " + ", ".join(by_family) + f" (or {', '.join(short_names())}); per row and judge: one "
                f"control call plus one per attack variant that applies{f' ({several})' if several else ''}\n\n"
                "exit codes: 0 done; 2 bad input (a run written with --no-text, --sample larger than the run, an "
                "unknown attack, -o over the run, the --judges panel file or inside the corpus, the environment's "
                "judge is not the run's and no --judges; nothing written); 3 the judge became unusable, 4 --max-cost "
                "stopped the audit, 130 interrupted (each: what was graded is written, with why it stopped); 5 the "
                "file could not be written")
    parser.add_argument("run", type=Path, metavar="RUN", help="results JSON file of the run whose judge to audit "
                        "(written with the chunks' text, i.e. without --no-text)")
    parser.add_argument("--sample", type=positive_int, default=None, metavar="N",
                        help=f"rows to grade again (default: min({DEFAULT_SAMPLE}, rows)), stratified over the "
                             "run's grade bands, preferring rows with headroom (grade <= 8)")
    parser.add_argument("--seed", type=count, default=0, metavar="S", help="seed of the sample and of the "
                        "stuffing's borrowed chunk (default: 0)")
    parser.add_argument("--attacks", default=None, metavar="NAME[,NAME...]",
                        help="the attacks to run (default: all): " + ", ".join(by_family))
    parser.add_argument("--judges", default=None, metavar="SPEC[,SPEC...]|panel.toml",
                        help="the judges to audit, instead of the run's (docs/judges.md#a-panel-of-judges); needed "
                             "when the environment's judge is not the one that graded the run")
    parser.add_argument("--corpus", type=Path, default=None, metavar="FOLDER",
                        help="the run's corpus, when the offline judge is audited and the folder the run recorded "
                             "has moved (its term weights come from the corpus)")
    parser.add_argument("-o", "--output", type=Path, default=Path("audit.json"), metavar="FILE",
                        help="the audit as JSON (docs/audit.schema.json), for --audit on a run or a report "
                             "(default: audit.json)")
    parser.add_argument("--estimate", action="store_true",
                        help="print what the audit's calls would cost, make none, write nothing")
    parser.add_argument("--max-cost", type=dollars, dest="max_cost", metavar="USD",
                        help="stop calling the judge before the audit's cost would pass USD (exit 4)")


def run(args: argparse.Namespace, settings, env: dict[str, str]) -> int:
    secrets = (*settings.secrets, *panel_secrets(args.judges, env))  # a panel file's keys too
    result = load_run(args.run, secrets)
    output = None
    if not args.estimate:
        output = check_output(args.output, option="-o", example="audit.json", corpus=args.corpus,
                              inputs=[("the run", args.run), ("the --judges panel file", panel_file(args.judges))],
                              recorded_corpora=recorded_corpora([result]))
    plan = plan_audit(result, str(args.run), sample=args.sample, seed=args.seed, attacks=args.attacks)
    judges = audited_judges(result, settings, env, args.judges, args.corpus)
    if args.estimate:
        sys.stdout.write(estimate_table(plan, estimate_audit(plan, judges)))
        return EXIT_OK
    logger.info("Auditing {} ({} row(s), {} attack variant(s)) with {}", args.run, len(plan.rows),
                len(plan.variants), ", ".join(j.name for j in judges))
    total = len(judges) * sum(1 + sum(a is not None for a in row.values()) for row in plan.attacked)
    with Progress("auditing", total, sys.stderr, unit="call", delay=2.0) as bar:
        audit = run_audit(plan, judges, max_cost_usd=args.max_cost, judges_named=args.judges is not None,
                          on_call=bar.advance)
    sys.stdout.write(audit_table(audit))
    sys.stdout.flush()
    audit.save(output, secrets)
    logger.info("Judge audit written to {}", output)
    return exit_code(audit.status)
