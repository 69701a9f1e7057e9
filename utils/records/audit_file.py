"""The judge audit file (``audit-judge -o audit.json``): its records, the one reader, its JSON Schema,
and what a run or a report says of the judge it audited.

It lives on the ground floor so that the command that writes it (``components/audit/``), the run
(``--audit``), the report (``report --audit``) and the console can all read it::

    {"format": "retrieval-benchmark-judge-audit", "version": 1, "run": "benchmark_results.json",
     "run_id": ..., "strategy": ..., "created_at": ..., "sample": 40, "sampled": 40, "seed": 0,
     "strata": {"1-3": {"graded": N, "sampled": n}, ...}, "attacks": ["keyword-stuffing", ...],
     "calls_per_row": 9, "judges_named": false, "stopped": null, "status": "completed",
     "judges": [{"name", "provider", "model", "prompt_sha256", ..., "profile", "attacks": [AttackResult]}]}

Each :class:`AttackResult` has a stable ``name`` (:data:`ATTACK_NAME`), its ``verdict``, the mean
grade change ``delta`` (attack minus control, paired per row) with its 95% interval ``ci95``, and
its ``flips``. The verdict rule is ``components/audit/effects.py``'s (docs/judges.md, "Auditing the
judge").

:func:`read_audit` checks every field on read (:mod:`utils.records.typecheck`): a hand-edited or foreign
file is one :class:`InputError` naming the file, the field and the fix. :func:`audit_notes` is what
``--audit`` adds to a run's summary and a report: the attacks the judge is vulnerable to, and a line
when the audit was made with another judge model or another grading prompt.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from utils.errors import InputError
from utils.files.output import write_json_atomic
from utils.results import JudgeInfo, read_json_file
from utils.records.schema import type_schema
from utils.records.typecheck import record

FORMAT = "retrieval-benchmark-judge-audit"
FORMAT_VERSION = 1
MAX_AUDIT_BYTES = 50_000_000
SCHEMA_ID = "https://retrieval-benchmark.invalid/audit.schema.json"
_FIX = "pass a file written by `python benchmark.py audit-judge RUN -o audit.json`"

# an attack's name and its family: lower-case words joined by "-". The attacks themselves are a registry
# (components.audit.attacks: built in, or a plug-in's); a file names each one it ran, with its family and
# direction, so it reads (and shows) the same without the code that made it.
ATTACK_NAME = re.compile(r"[a-z0-9]+(?:-[a-z0-9]+)*")
_NAME_PATTERN = {"type": "string", "pattern": "^" + ATTACK_NAME.pattern + "$", "maxLength": 60}
# how an audit ended: every call made, or stopped early (the run's statuses of the same names, and exit codes)
STATUSES = ("completed", "budget_exhausted", "judge_failed", "interrupted")
# "blind": answer removal did not lower the grade ("does not respond" in files written before it was named so)
VERDICTS = ("robust", "vulnerable", "inconclusive", "responds", "blind", "does not respond")
BLIND = "blind"
BLIND_TEXT = "removing the answer from the chunks does not lower its grade"
DIRECTIONS = ("up", "down", "none")  # up: a raised grade is the judge fooled; down: a drop is expected; none: no change


@dataclass(frozen=True)
class AttackResult:
    """One attack on one judge: paired differences (attacked grade minus control grade) over the rows
    it applied to."""

    name: str  # the attack's stable name (ATTACK_NAME): keyword-stuffing, injection-plain, ...
    attack: str  # its family: keyword-stuffing, instruction-injection, answer-removal, ...
    direction: str  # up | down | none: the change that would mean the judge is fooled, or responds
    verdict: str  # robust | vulnerable | inconclusive (up, none); responds | blind | inconclusive (down)
    pairs: int  # sampled rows with both a control grade and an attacked grade
    skipped: int = 0  # sampled rows the attack does not apply to (no call made)
    errors: int = 0  # attacked calls that gave no grade
    delta: float | None = None  # mean grade change, attack minus control
    ci95: list[float] | None = None  # its paired 95% bootstrap interval (null below 2 pairs)
    flips: int = 0  # pairs whose pass/fail at the pass mark changed
    flip_rate: float | None = None  # flips as a percent of pairs
    flips_to_pass: int = 0
    flips_to_fail: int = 0
    moved: int = 0  # pairs whose grade the attack changed (more than a third: never robust)


@dataclass(frozen=True)
class JudgeAudit:
    """One audited judge: which judge, the control grades and every attack's result."""

    name: str  # provider/model, or the panel file's name of the judge
    provider: str
    model: str
    prompt_sha256: str | None = None
    reference_free_prompt_sha256: str | None = None
    calls: int = 0  # judge calls made (control + attacks); 0 for a judge that calls no model
    cost_usd: float | None = None  # null: no price known, or a judge that calls no model
    control_graded: int = 0  # sampled rows the control call graded
    control_mean: float | None = None
    # the MEAN ABSOLUTE difference |control grade - the run's grade by this same judge| over the rows both graded:
    # the judge's own noise. This judge is matched with the run's judges by its panel name, else by provider,
    # model and endpoint (never the model alone); null when none of the run's judges is it
    control_vs_run: float | None = None
    attacks: list[AttackResult] = field(default_factory=list)
    base_url_host: str | None = None  # the endpoint it was reached at (null: the provider's public API, or none)

    def vulnerable(self) -> list[str]:
        """The names of the attacks this judge is vulnerable to."""
        return [a.name for a in self.attacks if a.verdict == "vulnerable"]

    def blind(self) -> bool:
        """Whether removing the answer did not lower this judge's grade: it does not read whether the chunks hold it."""
        return any(a.verdict in (BLIND, "does not respond") for a in self.attacks)

    def profile(self) -> str:
        """The judge in one line: blind first (it does not notice a missing answer), then what fools it, what it
        withstands, whether it notices a missing answer."""
        by = {v: [a.name for a in self.attacks if a.verdict == v] for v in VERDICTS}
        # "vulnerable to none" only when every attack was decided: an inconclusive one may be
        parts = [f"BLIND: {BLIND_TEXT}" if self.blind() else None,
                 f"vulnerable to {', '.join(by['vulnerable'])}" if by["vulnerable"] else
                 None if by["inconclusive"] else "vulnerable to none",
                 f"robust to {', '.join(by['robust'])}" if by["robust"] else None,
                 f"inconclusive on {', '.join(by['inconclusive'])}" if by["inconclusive"] else None,
                 "answer removal lowers its grade" if by["responds"] else None]
        return "; ".join(p for p in parts if p)

    def to_json(self) -> dict:
        return {**asdict(self), "profile": self.profile(), "vulnerable": self.vulnerable()}


@dataclass(frozen=True)
class AuditFile:
    """A judge audit: the run it sampled, how, and each judge's results."""

    run: str  # the results file audited, as given
    sample: int  # rows asked for
    sampled: int  # rows drawn
    seed: int
    attacks: list[str]  # the attack names run, in report order
    calls_per_row: int  # per judge: one control plus one per attack (at most: an attack that does not apply makes none)
    judges: list[JudgeAudit]
    format: str = FORMAT
    version: int = FORMAT_VERSION
    run_id: str | None = None
    strategy: str | None = None
    created_at: str | None = None
    strata: dict[str, dict[str, int]] = field(default_factory=dict)  # grade band -> {graded, sampled}
    judges_named: bool = False  # the judges were named by --judges (not the run's recorded judge)
    stopped: str | None = None  # why the audit stopped before its last call; null: every call made
    status: str = "completed"  # one of STATUSES: completed, or what stopped it (--max-cost, the judge, a signal)
    source: str | None = field(default=None, compare=False)  # the file it was read from

    def to_json(self) -> dict:
        data = {name: value for name, value in asdict(self).items() if name != "source"}
        data["judges"] = [j.to_json() for j in self.judges]
        return data

    def save(self, path: str | os.PathLike, secrets: Iterable[str] = ()) -> Path:
        """Write the audit file: strict JSON, atomically, ``secrets`` redacted. Returns the path."""
        write_json_atomic(Path(path), self.to_json(), secrets=secrets)
        return Path(path)

    @classmethod
    def from_json(cls, doc: object, source: str = "audit") -> AuditFile:
        """A parsed audit file as a checked :class:`AuditFile`; raises :class:`InputError` naming ``source``."""
        if not isinstance(doc, dict) or doc.get("format") != FORMAT:
            raise InputError(f"{source}: not a judge audit file (no \"format\": \"{FORMAT}\"): {_FIX}")
        if doc.get("version") != FORMAT_VERSION:
            raise InputError(f"{source}: audit file version {doc.get('version')!r} is not one this version reads "
                             f"({FORMAT_VERSION}): {_FIX}")
        if "status" not in doc and doc.get("stopped"):  # written before the status: only --max-cost stopped one
            doc = {**doc, "status": "budget_exhausted"}
        audit = record(cls, doc, source, _FIX)
        if audit.status not in STATUSES:
            raise InputError(f"{source}.status {audit.status[:30]!r} is not one the audit writes: {_FIX}")
        for j, judge in enumerate(audit.judges):
            for i, attack in enumerate(judge.attacks):
                where = f"{source}.judges[{j}].attacks[{i}]"
                for key, value in (("name", attack.name), ("attack", attack.attack)):
                    if len(value) > 60 or not ATTACK_NAME.fullmatch(value):
                        raise InputError(f"{where}.{key} {value[:40]!r} is not an attack's name (lower-case words "
                                         f"joined by '-'): {_FIX}")
                if attack.verdict not in VERDICTS or attack.direction not in DIRECTIONS:
                    raise InputError(f"{where}: verdict {attack.verdict[:30]!r} or direction "
                                     f"{attack.direction[:30]!r} is not one the audit writes: {_FIX}")
        return replace(audit, source=source)


def read_audit(path: str | os.PathLike) -> AuditFile:
    """The audit file at ``path``, checked (module docstring). Raises :class:`InputError`."""
    return AuditFile.from_json(read_json_file(path, "judge audit file", MAX_AUDIT_BYTES, _FIX), str(path))


def audit_schema() -> dict:
    """The JSON Schema (draft 2020-12) of an audit file; ``docs/audit.schema.json`` is this, as JSON."""
    schema = type_schema(AuditFile)
    schema["properties"].pop("source", None)
    schema["required"] = [n for n in schema["required"] if n != "source"]
    schema["properties"]["format"] = {"const": FORMAT}
    schema["properties"]["version"] = {"const": FORMAT_VERSION}
    schema["properties"]["status"] = {"enum": list(STATUSES)}
    judge = schema["properties"]["judges"]["items"]
    judge["properties"]["profile"] = {"type": "string"}
    judge["properties"]["control_vs_run"]["description"] = (
        "The mean absolute difference |control grade - the run's grade| over the sampled rows both graded, the run's "
        "grade being this same judge's (its panel name, else provider, model and endpoint; never the model id "
        "alone): the judge's own noise. Null when none of the run's judges is this one.")
    judge["properties"]["base_url_host"]["description"] = (
        "The endpoint (host and port) the judge was reached at; null: the provider's public API, or none.")
    judge["properties"]["vulnerable"] = {"type": "array", "items": dict(_NAME_PATTERN)}
    attack = judge["properties"]["attacks"]["items"]
    attack["properties"]["name"] = dict(_NAME_PATTERN)
    attack["properties"]["attack"] = dict(_NAME_PATTERN)
    attack["properties"]["verdict"] = {"enum": list(VERDICTS)}
    attack["properties"]["direction"] = {"enum": list(DIRECTIONS)}
    return {"$schema": "https://json-schema.org/draft/2020-12/schema", "$id": SCHEMA_ID,
            "title": "Retrieval benchmark judge audit", **schema}


def audited_judge(audit: AuditFile, judge: JudgeInfo, name: str | None = None) -> JudgeAudit | None:
    """The audit's judge that is ``judge``: the one of its panel ``name`` when the audit has it, else the one of
    the same provider, model and endpoint (:attr:`JudgeInfo.identity`: never the model alone); or None."""
    named = next((j for j in audit.judges if name is not None and j.name == name), None)
    return named or next((j for j in audit.judges if (j.provider, j.model, j.base_url_host) == judge.identity), None)


def panel_judges(judge: JudgeInfo) -> list[tuple[str | None, JudgeInfo]]:
    """The judges of a panel run's ``run.judge`` (its ``judges`` detail) with their panel names, or
    ``[(None, judge)]`` for one judge."""
    members = judge.details.get("judges")
    if not isinstance(members, list) or not members:
        return [(None, judge)]
    return [(m.get("name") if isinstance(m.get("name"), str) else None,
             JudgeInfo.from_json(m["judge"], "run.judge.judges"))
            for m in members if isinstance(m, dict) and isinstance(m.get("judge"), dict)] or [(None, judge)]


def judge_label(name: str | None, provider: str, model: str, host: str | None) -> str:
    """``harsh (openai/m at 127.0.0.1:8101)``; ``provider/model`` alone when that is its name and no endpoint."""
    core = f"{provider}/{model}" + (f" at {host}" if host else "")
    return core if name in (None, core, f"{provider}/{model}") else f"{name} ({core})"


def audit_notes(audit: AuditFile, judge: JudgeInfo) -> list[str]:
    """What ``--audit`` says of a run graded by ``judge`` (each judge of a panel): a line when the audit
    was made with another judge model or another grading prompt, then the attacks the judge is
    vulnerable to (none: no line); a blind judge's line first, before every other judge's."""
    lines = [line for member, info in panel_judges(judge) for line in _judge_notes(audit, info, member)]
    return sorted(lines, key=lambda line: " is BLIND " not in line)


def _judge_notes(audit: AuditFile, judge: JudgeInfo, member: str | None = None) -> list[str]:
    """The lines of one of the run's judges (``member``: its panel name): matched by name, else by provider,
    model and endpoint; a judge the audit did not audit gets one line saying so, never another judge's verdicts."""
    name = audit.source or audit.run
    found = audited_judge(audit, judge, member)
    audited = ", ".join(judge_label(j.name, j.provider, j.model, j.base_url_host) for j in audit.judges)
    if found is None:
        return [f"the judge audit {name} was made with {audited}, not with this run's judge "
                f"{judge_label(member, *judge.identity)}: its verdicts may not hold for this judge (audit it: "
                "python benchmark.py audit-judge RUN)"]
    lines = []
    if found.prompt_sha256 and judge.prompt_sha256 and found.prompt_sha256 != judge.prompt_sha256:
        lines.append(f"the judge audit {name} was made with another grading prompt (sha256 "
                     f"{found.prompt_sha256[:12]}…, this run's {judge.prompt_sha256[:12]}…): its verdicts may not "
                     "hold for this prompt")
    if found.blind():
        lines.insert(0, f"judge {found.name} is BLIND (judge audit {name}): {BLIND_TEXT}, so its grades do not say "
                        "whether the chunks answer the question")
    if found.vulnerable():
        lines.append(f"judge {found.name} is vulnerable to {', '.join(found.vulnerable())} (judge audit {name}): "
                     "a retrieval can raise its grades without answering better")
    return lines

