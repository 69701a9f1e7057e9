"""The report's judge-audit section (``report --audit audit.json``): the warnings it raises for each
run's judge (:func:`utils.records.audit_file.audit_notes`), then per audited judge its profile and one row
per attack: mean grade change with its 95% CI, flips, verdict."""

from __future__ import annotations

import html
from collections.abc import Sequence

from loguru import logger

from components.audit.table import headline
from utils.records.audit_file import AttackResult, AuditFile, audit_notes
from utils.console import escape_control
from utils.results import RunResult

VERDICT_CLASS = {"vulnerable": "bad", "robust": "good", "responds": "good", "blind": "bad", "does not respond": "bad"}


def _h(value: object) -> str:
    return html.escape(escape_control("" if value is None else str(value)), quote=True)


def _change(a: AttackResult) -> str:
    if a.delta is None:
        return "-"
    return f"{a.delta:+.2f}" + (f" [{a.ci95[0]:+.2f}, {a.ci95[1]:+.2f}]" if a.ci95 is not None else "")


def audit_section(audit: AuditFile, runs: Sequence[RunResult], labels: Sequence[str]) -> str:
    """The section's HTML (every text escaped); its warnings are also logged."""
    notes = [f"{label}: {line}" for run, label in zip(runs, labels, strict=True)
             for line in audit_notes(audit, run.run.judge)]
    for note in notes:
        logger.warning("{}", note)
    parts = [f"<section id=judge-audit><h2>Judge audit</h2><p class=muted>{_h(audit.source or audit.run)}: "
             f"{_h(audit.sampled)} row(s) of {_h(audit.run)} (seed {_h(audit.seed)}), each graded unedited (the "
             "control) and once per attack; a change is the attacked grade minus the control's, paired per row "
             "(docs/judges.md, Auditing the judge)</p>"]
    parts += [f"<p class='warnings bad'>{_h(line)}</p>" for line in headline(audit)]  # a blind judge first
    if notes:
        parts.append("<ul class=warnings>" + "".join(f"<li>warning: {_h(n)}</li>" for n in notes) + "</ul>")
    if audit.stopped:
        parts.append(f"<p class=warnings>The audit stopped early: {_h(audit.stopped)}</p>")
    for judge in audit.judges:
        rows = "".join(
            f"<tr><th>{_h(a.name)}</th><td>{_h(a.direction)}</td><td class=num>{_h(a.pairs)}</td>"
            f"<td class=num>{_h(_change(a))}</td><td class=num>{_h(a.flips)}/{_h(a.pairs)}</td>"
            f"<td class={VERDICT_CLASS.get(a.verdict, 'muted')}>{_h(a.verdict)}</td></tr>" for a in judge.attacks)
        parts.append(f"<h3>{_h(judge.name)} <span class=muted>({_h(judge.provider)}/{_h(judge.model)})</span></h3>"
                     f"<p>{_h(judge.profile())}</p><table class=audit><thead><tr><th>attack</th><th>expected change"
                     "</th><th>pairs</th><th>Δ grade [95% CI]</th><th>flips</th><th>verdict</th></tr></thead>"
                     f"<tbody>{rows}</tbody></table>")
    return "".join(parts) + "</section>"
