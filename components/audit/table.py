"""The judge audit as a console table: per judge, one line per attack (mean change with its 95% CI,
flips, verdict), then the judge's profile in one line."""

from __future__ import annotations

from utils.records.audit_file import AttackResult, AuditFile
from utils.console import escape_control

EXPECTED = {"up": "up = fooled", "down": "down expected", "none": "no change expected"}


def _ci(attack: AttackResult) -> str:
    if attack.delta is None:
        return "—"
    # no CI: fewer than 2 pairs
    ci = f" [{attack.ci95[0]:+.2f}, {attack.ci95[1]:+.2f}]" if attack.ci95 is not None else " [no CI]"
    return f"{attack.delta:+.2f}{ci}"


def _flips(attack: AttackResult) -> str:
    if attack.flip_rate is None:
        return "—"
    return f"{attack.flips}/{attack.pairs} ({attack.flip_rate:.0f}%)"


def audit_table(audit: AuditFile) -> str:
    """The table of ``audit`` (every judge), ending with a newline."""
    chosen = "named by --judges" if audit.judges_named else "the run's judge"
    lines = [escape_control(f"Judge audit of {audit.run}: {audit.sampled} row(s), seed {audit.seed}, at most "
                            f"{audit.calls_per_row} calls per row and judge ({chosen})")]
    for judge in audit.judges:
        cost = f", ${judge.cost_usd:.4f}" if judge.cost_usd is not None else ""
        control = f"{judge.control_mean:.2f}" if judge.control_mean is not None else "—"
        lines.append(escape_control(f"judge {judge.name} ({judge.provider}/{judge.model}): {judge.calls} calls{cost}; "
                                    f"control mean grade {control} over {judge.control_graded} row(s)"))
        header = f"  {'attack':<22}{'expected':<20}{'pairs':>6}  {'Δ grade [95% CI]':<24}{'flips':<13}verdict"
        lines.append(header)
        for a in judge.attacks:
            lines.append(f"  {a.name:<22}{EXPECTED[a.direction]:<20}{a.pairs:>6}  {_ci(a):<23} {_flips(a):<12} "
                         f"{a.verdict}")
        lines.append(escape_control(f"  profile: {judge.profile()}"))
    if audit.stopped:
        lines.append(escape_control(f"The audit stopped early: {audit.stopped}"))
    return "\n".join(lines) + "\n"
