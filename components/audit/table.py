"""The judge audit as a console table: its headline (each blind judge first), then per judge one line per attack
(mean change with its 95% CI, flips, verdict), why the verdicts of attacks with fewer than 5 pairs are
inconclusive, then the judge's profile in one line."""

from __future__ import annotations

from components.audit.effects import MIN_PAIRS
from utils.records.audit_file import BLIND_TEXT, AttackResult, AuditFile
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


def headline(audit: AuditFile) -> list[str]:
    """The audit's headline: each blind judge first, named."""
    return [f"BLIND: judge {j.name}: {BLIND_TEXT}; its grades do not say whether the chunks answer the question"
            for j in audit.judges if j.blind()]


def few_pairs(attacks: list[AttackResult]) -> str | None:
    """Why the verdicts of attacks with fewer than :data:`MIN_PAIRS` pairs are inconclusive (None: none is)."""
    few = [a.name for a in attacks if a.pairs < MIN_PAIRS]
    if not few:
        return None
    which = "every verdict is" if len(few) == len(attacks) else f"{', '.join(few)}:"
    return (f"  fewer than {MIN_PAIRS} pairs: {which} inconclusive whatever the figures (2-4 equal differences give "
            "an interval of width zero, one flip in 3 pairs is 33%): audit more rows (--sample)")


def _against_run(value: float | None) -> str:
    """``control_vs_run`` in words: how far this judge's control grades are from its own grades in the run."""
    if value is None:
        return "not one of the run's judges (no control vs run)"
    return f"control vs run: mean absolute difference {value:.2f} from its own grades in the run"


def audit_table(audit: AuditFile) -> str:
    """The table of ``audit`` (every judge), ending with a newline: the headline (a blind judge first), then per
    judge its attacks, why the verdicts of attacks with too few pairs are inconclusive, and its profile."""
    chosen = "named by --judges" if audit.judges_named else "the run's judge"
    lines = [escape_control(f"Judge audit of {audit.run}: {audit.sampled} row(s), seed {audit.seed}, at most "
                            f"{audit.calls_per_row} calls per row and judge ({chosen})")]
    lines += [escape_control(line) for line in headline(audit)]
    for judge in audit.judges:
        cost = f", ${judge.cost_usd:.4f}" if judge.cost_usd is not None else ""
        control = f"{judge.control_mean:.2f}" if judge.control_mean is not None else "—"
        lines.append(escape_control(f"judge {judge.name} ({judge.provider}/{judge.model}): {judge.calls} calls{cost}; "
                                    f"control mean grade {control} over {judge.control_graded} row(s); "
                                    f"{_against_run(judge.control_vs_run)}"))
        header = f"  {'attack':<22}{'expected':<20}{'pairs':>6}  {'Δ grade [95% CI]':<24}{'flips':<13}verdict"
        lines.append(header)
        for a in judge.attacks:
            lines.append(f"  {a.name:<22}{EXPECTED[a.direction]:<20}{a.pairs:>6}  {_ci(a):<23} {_flips(a):<12} "
                         f"{a.verdict}")
        why = few_pairs(judge.attacks)
        if why:
            lines.append(why)
        lines.append(escape_control(f"  profile: {judge.profile()}"))
    if audit.stopped:
        lines.append(escape_control(f"The audit stopped early: {audit.stopped}"))
    return "\n".join(lines) + "\n"
