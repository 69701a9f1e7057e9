"""The run's retry policy: which failed judge calls are tried again, when a judge is given up, and
when a run that ended is nevertheless unfinished.

**What is retried.** Inside one call the SDK retries a rate limit (429, after its ``retry-after``),
an overloaded or failing server (5xx) and a connection reset; after the loop the retry pass grades
once more the questions whose grade failed so (:data:`~components.judges.llm.RETRIED_KINDS`): each
is a passing state of the server. A timed-out call is never repeated, neither inside the call nor
by the retry pass: the same prompt to the same model would most likely take as long again, and each
attempt costs the full timeout (three attempts and a retry pass made five questions take fifteen
minutes on a CPU model). A refused connection is not retried inside the call either: no server
listens there.

**When a judge is given up** (:class:`JudgeHealth`): after :data:`IN_A_ROW` timeouts in a row, or
:data:`IN_A_ROW` refused connections in a row, the judge is unusable, as after a fatal error: the run
stops calling it (in a panel the other judges go on), its status is ``judge_failed`` (exit 3) and one
line names the limit, the time the last call took and ``BENCHMARK_JUDGE_TIMEOUT``. A grade, or any
other failure, ends the row.

**When a run is unfinished** (:func:`incomplete`): a row the run meant to grade whose grade is null
(the judge's, or any panel judge's) with a judge error. A stop by ``--max-cost``, a row with a
``retrieval_error``, a question an ``--until-decided`` plan never reached, a question the offline
judge cannot grade (no expected answer) and an internal error do not count. Such a run ends with
status ``incomplete`` (exit 8), and one closing line says which judge missed how many grades and why,
and that ``--resume`` grades them; ``--allow-ungraded FRACTION`` accepts a share of missing grades
(:func:`allowed`).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from utils.errors import InputError, JudgeError
from utils.metrics import NOT_JUDGED
from utils.results import RETRIEVAL_ERROR

IN_A_ROW = 3  # timeouts, or refused connections, in a row that make a judge unusable
# grade_error kinds that are not a judge's failure: the run did not mean to grade, or could not ask
NOT_JUDGE_ERRORS = frozenset({"budget", NOT_JUDGED, RETRIEVAL_ERROR, "no_expected_answer", "no_key_terms",
                              "internal_error"})
_LIMIT = re.compile(r"judge timeout of (\d+(?:\.\d+)?) s")


def error_kind(error: str | None) -> str | None:
    """The kind a ``grade_error`` starts with (``timeout: …`` → ``timeout``)."""
    return error.split(":", 1)[0].strip() if error else None


@dataclass
class JudgeHealth:
    """One judge's run of timeouts and refused connections (module docstring).

    ``observe`` is given every grading result of the judge in the order they end; it returns the
    fatal :class:`JudgeError` that makes the judge unusable, once, at the :data:`IN_A_ROW`-th failure
    in a row; None otherwise. ``name`` is a panel judge's name (None: the run's judge); ``panel_file``
    says the judge comes from a panel file, whose ``timeout`` field the message then names too."""

    name: str | None = None
    panel_file: bool = False
    timeouts: int = 0
    refused: int = 0
    given_up: bool = False

    def observe(self, result: object) -> JudgeError | None:
        grade, error = getattr(result, "grade", None), getattr(result, "error", None)
        kind = error_kind(error) if grade is None else None
        self.timeouts = self.timeouts + 1 if kind == "timeout" else 0
        self.refused = self.refused + 1 if kind == "connection_refused" else 0
        if self.given_up or max(self.timeouts, self.refused) < IN_A_ROW:
            return None
        self.given_up = True
        who = "the judge" if self.name is None else f"judge {self.name}"
        if self.refused >= IN_A_ROW:
            return JudgeError("connection_refused", f"{who} is unusable: its server refused the connection "
                              f"{self.refused} times in a row (is it still running?); start it again, then --resume "
                              "grades the rest", fatal=True)
        limit = _LIMIT.search(error or "")
        took = getattr(result, "latency_ms", None)
        said = [f"the judge timeout is {limit.group(1)} s"] if limit else []
        said += [f"the last call ran {took / 1000:.1f} s"] if isinstance(took, (int, float)) else []
        where = " (or this judge's timeout in the panel file)" if self.panel_file else ""
        return JudgeError("timeout", f"{who} is unusable: {self.timeouts} calls in a row timed out"
                          f"{' (' + '; '.join(said) + ')' if said else ''}; a model on a CPU may need minutes a call: "
                          f"set BENCHMARK_JUDGE_TIMEOUT{where} higher (at most 600 s), then --resume grades the rest",
                          fatal=True)


@dataclass
class Health:
    """Every judge's :class:`JudgeHealth`, by name (None: the run's one judge)."""

    panel_file: bool = False
    judges: dict[str | None, JudgeHealth] = field(default_factory=dict)

    def observe(self, name: str | None, result: object) -> JudgeError | None:
        health = self.judges.setdefault(name, JudgeHealth(name, self.panel_file))
        return health.observe(result)


# --------------------------------------------------------------------------- an unfinished run


@dataclass(frozen=True)
class Incomplete:
    """The grades a finished run misses: per judge (None: the run's judge), each kind of error and
    how many, of the ``rows`` it meant to grade by each of its ``judges``."""

    rows: int
    judges: int
    missing: dict[str | None, dict[str, int]]

    @property
    def planned(self) -> int:
        """The grades the run meant to have: rows to grade × judges."""
        return self.rows * self.judges

    @property
    def total(self) -> int:
        return sum(sum(kinds.values()) for kinds in self.missing.values())

    @property
    def fraction(self) -> float:
        return self.total / self.planned if self.planned else 0.0

    def line(self) -> str:
        """The closing line: which judge missed how many grades and why, and that ``--resume`` grades them."""
        parts = []
        for name, kinds in self.missing.items():
            why = ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items(), key=lambda kv: (-kv[1], kv[0])))
            who = "the judge" if name is None else f"judge {name}"
            parts.append(f"{who} missed {sum(kinds.values())} of {self.rows} grades ({why})")
        total = f"; {self.total} of {self.planned} planned grades missing" if self.judges > 1 else ""
        return f"Incomplete: {'; '.join(parts)}{total}: --resume grades them"


def _planned(row: object) -> bool:
    """Whether the run meant to grade ``row`` and could ask: graded, or its grade_error is a judge's."""
    if getattr(row, "llm_grade", None) is not None:
        return True
    return error_kind(getattr(row, "grade_error", None)) not in NOT_JUDGE_ERRORS


def _missed(grade: object, error: str | None) -> str | None:
    """The kind of a judge error that left ``grade`` null, or None (graded, or not the judge's)."""
    if grade is not None:
        return None
    kind = error_kind(error) or "not graded"
    return None if kind in NOT_JUDGE_ERRORS else kind


def judge_names(rows: Iterable[object]) -> list[str]:
    """A panel run's judge names, in the order the rows give them (``grades_by_judge``); [] for one judge."""
    names: dict[str, None] = {}
    for row in rows:
        names.update(dict.fromkeys(getattr(row, "grades_by_judge", None) or {}))
    return list(names)


def incomplete(rows: Iterable[object], judges: Sequence[str] = ()) -> Incomplete | None:
    """The grades ``rows`` miss by a judge error (module docstring), or None when none is missing.
    ``judges``: a panel's judge names (each judge's grade of each row counts); empty: the one judge."""
    planned = [r for r in rows if _planned(r)]
    missing: dict[str | None, Counter] = {}
    for row in planned:
        if not judges:
            kind = _missed(getattr(row, "llm_grade", None), getattr(row, "grade_error", None))
            if kind is not None:
                missing.setdefault(None, Counter())[kind] += 1
            continue
        by_judge = getattr(row, "grades_by_judge", None) or {}
        for name in judges:
            grade = by_judge.get(name)
            kind = _missed(getattr(grade, "grade", None), getattr(grade, "error", None) if grade is not None
                           else "not graded")
            if kind is not None:
                missing.setdefault(name, Counter())[kind] += 1
    if not missing:
        return None
    return Incomplete(len(planned), max(1, len(judges)), {name: dict(kinds) for name, kinds in missing.items()})


def check_allowance(value: object) -> float:
    """``--allow-ungraded FRACTION``: a number from 0 to 1. Raises :class:`InputError` (exit 2)."""
    try:
        fraction = float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        fraction = float("nan")
    if not 0.0 <= fraction <= 1.0:
        raise InputError(f"--allow-ungraded {value!r} is not a fraction from 0 to 1: give e.g. 0.05 to accept 5% of "
                         "the planned grades missing")
    return fraction


def allowed(gap: Incomplete | None, fraction: float) -> bool:
    """Whether a run missing ``gap`` is accepted under ``--allow-ungraded fraction``."""
    return gap is None or gap.fraction <= fraction
