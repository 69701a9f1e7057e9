"""``python benchmark.py validate QUESTIONS`` (or ``--questions QUESTIONS``) — the forward RAG check of
a questions file.

For every question the judge (:func:`components.judges.setup.make_judge`: the LLM grader, or the
offline lexical one, labelled ``lexical``) grades two contexts of ``k`` chunks:

* **sufficiency** — the needle document's own best ``k`` chunks (BM25 for the question over that
  document's chunks, see :mod:`components.dataset.context_index`): the grade must reach
  :data:`SUFFICIENCY_MIN` (7). If not, the needle does not answer the question (wrong needle, or
  an answer the document does not hold).
* **necessity** — ``k`` chunks drawn at random (seed ``--seed``, recorded) from other documents:
  the grade must stay at or below :data:`NECESSITY_MAX` (3). If not, the question is answerable
  without its needle (too generic, or common knowledge).

With ``--judge-repeats N`` each check is graded N times; the check's grade is the mean of its
graded repeats, and its spread (max − min) and sample standard deviation are reported. A repeat
the judge could not grade is recorded with its error; a check without any grade fails.

Flags (``flags`` in the JSON): ``duplicate`` (the same normalised text — case-folded, punctuation
removed, whitespace collapsed — as an earlier question; the first one is kept),
``unknown_needle`` (a needle that is not a document of the corpus), ``empty_needle`` (a needle
document without text) and ``no_expected_answer``. The first three fail the question without
grading it; ``no_expected_answer`` is a warning (the LLM grader then uses its reference-free
prompt; the lexical judge cannot grade, so the checks fail as ungraded).

A question passes when it has no failing flag and both checks pass. ``--write-clean OUT`` writes
the passing questions in the input's own format (the same top-level object with its
``questions`` list filtered, ``question_count`` updated when present; or a bare list).

A question the judge did not grade — its calls failed (429, 5xx, a timeout, a lost connection, a
bad reply: :data:`CALL_FAILURES`, after the SDK's own retries), or it was not checked after the
judge failed — is ``not_graded``, never ``fail``. The validation then ends ``judge_failed`` (exit 3,
like a run whose judge failed), says how many questions were not graded, and ``--write-clean``
writes nothing (it would drop questions nobody graded). After :data:`FAILED_IN_A_ROW` questions in a
row not graded, the judge is not called again: the rest are not checked.

The lexical judge's necessity check is unreliable on a single-topic corpus (random chunks of other
documents share the topic's generic words: "pod", "container"): with it, the console says so once
when a question fails necessity, and ``--write-clean`` refuses to drop a question that fails only
necessity unless ``--force`` is given (the validation JSON is written either way).
"""

from __future__ import annotations

import json
import re
import statistics
import sys
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from loguru import logger

from components.core import Chunk, Question, QuestionSet
from components.dataset.context_index import ContextIndex
from components.judges.llm import TRANSIENT_KINDS
from components.judges.providers import default_provider
from components.judges.retrieval_grader import PROMPT_SHA256, REFERENCE_FREE_PROMPT_SHA256
from components.judges.settings import Settings
from components.judges.setup import make_judge
from components.readers import load_questions
from utils.console import escape_control
from utils.errors import InputError, JudgeError
from utils.files.output import check_output, write_json_atomic
from utils.redaction import Redactor

CALL_FAILURES = TRANSIENT_KINDS | {"bad_response", "client_error", "error"}  # a call that brought back no reply
FAILED_IN_A_ROW = 3  # questions in a row the judge's calls failed for: it is not called again
NOT_GRADED = "not_graded"
SUFFICIENCY_MIN = 7
NECESSITY_MAX = 3
VALIDATION_VERSION = 1
BLOCKING_FLAGS = ("duplicate", "unknown_needle", "empty_needle")
LEXICAL_NECESSITY_NOTE = ("the offline lexical judge's necessity check is unreliable on a single-topic corpus "
                          "(random chunks of other documents share the topic's generic words)")


# --------------------------------------------------------------------------- records

@dataclass(frozen=True)
class Flag:
    code: str  # duplicate | unknown_needle | empty_needle | no_expected_answer
    message: str

    @property
    def blocking(self) -> bool:
        return self.code in BLOCKING_FLAGS


@dataclass(frozen=True)
class CheckResult:
    """One check (sufficiency or necessity): the chunks graded and the grade of every repeat."""

    name: str  # "sufficiency" | "necessity"
    chunk_ids: list[str]
    grades: list[int | None]  # one per repeat; None where the judge gave no grade
    errors: list[str]  # the grade_error of each ungraded repeat
    reasoning: str | None  # the first graded repeat's

    @property
    def graded(self) -> list[int]:
        return [g for g in self.grades if g is not None]

    @property
    def grade(self) -> float | None:
        """The mean of the graded repeats (None when none was graded)."""
        return statistics.fmean(self.graded) if self.graded else None

    @property
    def spread(self) -> int | None:
        return max(self.graded) - min(self.graded) if len(self.graded) >= 2 else None

    @property
    def stdev(self) -> float | None:
        """Sample standard deviation of the graded repeats (None under two)."""
        return statistics.stdev(self.graded) if len(self.graded) >= 2 else None

    @property
    def judge_failed(self) -> bool:
        """Whether the judge's calls failed on every repeat (no grade; each error a :data:`CALL_FAILURES` kind)."""
        return self.grade is None and bool(self.errors) and all(e.split(":", 1)[0] in CALL_FAILURES
                                                                 for e in self.errors)

    @property
    def passed(self) -> bool | None:
        if self.grade is None:
            return None
        return self.grade >= SUFFICIENCY_MIN if self.name == "sufficiency" else self.grade <= NECESSITY_MAX

    @property
    def reason(self) -> str | None:
        """Why this check fails the question (None when it passes)."""
        if self.passed:
            return None
        if self.grade is None:
            why = "; ".join(dict.fromkeys(self.errors)) or "no chunks to grade"
            return f"{self.name}: not graded ({why})"
        if self.name == "sufficiency":
            return f"sufficiency: the needle's best chunks grade {_num(self.grade)} < {SUFFICIENCY_MIN}"
        return f"necessity: random chunks of other documents grade {_num(self.grade)} > {NECESSITY_MAX}"

    def to_json(self) -> dict:
        return {"passed": self.passed, "grade": self.grade, "grades": self.grades, "spread": self.spread,
                "stdev": self.stdev, "errors": self.errors, "reasoning": self.reasoning, "chunk_ids": self.chunk_ids}


@dataclass(frozen=True)
class QuestionValidation:
    question: Question
    flags: list[Flag]
    sufficiency: CheckResult | None  # None: not graded because of a failing flag or a failed judge
    necessity: CheckResult | None
    not_checked: str | None = None  # why the checks did not run although no flag blocks them

    @property
    def reasons(self) -> list[str]:
        out = [f"{f.code}: {f.message}" for f in self.flags if f.blocking]
        if self.not_checked:
            out.append(self.not_checked)
        out += [c.reason for c in (self.sufficiency, self.necessity) if c is not None and c.reason]
        return out

    @property
    def verdict(self) -> str:
        """``pass``, ``fail``, or ``not_graded`` (the judge did not grade it: module docstring)."""
        if self.not_checked is not None or any(c is not None and c.judge_failed for c in (self.sufficiency,
                                                                                       self.necessity)):
            return NOT_GRADED
        return "fail" if self.reasons else "pass"

    def to_json(self, judge_label: str) -> dict:
        q = self.question
        return {
            "id": q.id, "question": q.question, "needle_doc_ids": list(q.needle_doc_ids), "verdict": self.verdict,
            "reasons": self.reasons, "flags": [f.code for f in self.flags],
            "warnings": [f"{f.code}: {f.message}" for f in self.flags if not f.blocking],
            "judge": judge_label,
            "sufficiency": self.sufficiency.to_json() if self.sufficiency else None,
            "necessity": self.necessity.to_json() if self.necessity else None,
        }


@dataclass
class ValidationRun:
    """What :func:`validate_questions` produced; ``status``: completed | judge_failed | interrupted."""

    items: list[QuestionValidation] = field(default_factory=list)
    status: str = "completed"
    judge_failure: str | None = None


def _num(x: float) -> str:
    return f"{x:g}" if float(x).is_integer() else f"{x:.2f}"


# --------------------------------------------------------------------------- the checks

def normalise(text: str) -> str:
    """Question text for duplicate detection: case-folded, punctuation removed, whitespace collapsed."""
    return " ".join(re.sub(r"[^\w\s]", " ", text.casefold()).split())


def question_flags(questions: Sequence[Question], index: ContextIndex) -> list[list[Flag]]:
    """The flags of every question, in order (duplicates point at the first question with that text)."""
    first: dict[str, str] = {}
    out = []
    for q in questions:
        flags = []
        key = normalise(q.question)
        if key in first:
            flags.append(Flag("duplicate", f"same text as question {first[key]!r}"))
        else:
            first[key] = q.id
        for doc in q.needle_doc_ids:
            if not index.has_document(doc):
                flags.append(Flag("unknown_needle", f"needle {doc!r} is not a document of the corpus"))
            elif index.is_empty(doc):
                flags.append(Flag("empty_needle", f"needle document {doc!r} has no text"))
        if q.expected_answer is None:
            flags.append(Flag("no_expected_answer", "the question has no expected answer"))
        out.append(flags)
    return out


def _grade(judge, name: str, q: Question, chunks: list[Chunk], repeats: int) -> CheckResult:
    grades: list[int | None] = []
    errors: list[str] = []
    reasoning = None
    for _ in range(repeats if chunks else 0):
        result = judge.grade(q.question, q.expected_answer, chunks)
        grades.append(result.grade)
        if result.grade is None:
            errors.append(result.error or "no grade")
        elif reasoning is None:
            reasoning = result.reasoning
    return CheckResult(name, [c.chunk_id for c in chunks], grades, errors, reasoning)


def validate_questions(questions: Sequence[Question], index: ContextIndex, judge, *, k: int = 5, seed: int = 0,
                       repeats: int = 1) -> ValidationRun:
    """Run both checks on every question (sequentially). A fatal :class:`JudgeError` stops the
    grading (status ``judge_failed``; the remaining questions are recorded unchecked); an interrupt
    stops it too (status ``interrupted``; only the finished questions are recorded)."""
    run = ValidationRun()
    all_flags = question_flags(questions, index)
    in_a_row = 0  # questions in a row the judge's calls failed for
    for n, (q, flags) in enumerate(zip(questions, all_flags, strict=True), start=1):
        if run.judge_failure is not None:
            run.items.append(QuestionValidation(q, flags, None, None, f"not checked: the judge failed "
                                                f"({run.judge_failure})"))
            continue
        if any(f.blocking for f in flags):
            item = QuestionValidation(q, flags, None, None)
        else:
            gold = [s.chunk for s in index.gold(q.question, q.needle_doc_ids, k)]
            others = index.random_others(q.id, q.needle_doc_ids, k, seed)
            try:
                item = QuestionValidation(q, flags, _grade(judge, "sufficiency", q, gold, repeats),
                                          _grade(judge, "necessity", q, others, repeats))
            except JudgeError as err:
                if not err.fatal:
                    raise
                run.status, run.judge_failure = "judge_failed", f"{err.kind}: {err}"
                logger.error("[validate] the judge became unusable: {}", run.judge_failure)
                item = QuestionValidation(q, flags, None, None, f"not checked: the judge failed ({run.judge_failure})")
            except KeyboardInterrupt:
                run.status = "interrupted"
                logger.warning("[validate] interrupted after {} of {} questions", n - 1, len(questions))
                return run
        run.items.append(item)
        logger.info("[validate] {}/{} {}: {}{}", n, len(questions), escape_control(q.id), item.verdict,
                    f" ({escape_control('; '.join(item.reasons))})" if item.reasons else "")
        in_a_row = in_a_row + 1 if item.verdict == NOT_GRADED else 0
        if in_a_row >= FAILED_IN_A_ROW and run.judge_failure is None:
            run.judge_failure = f"the judge's calls failed for {in_a_row} questions in a row ({_first_error(item)})"
            logger.error("[validate] the judge is not called again: {}", run.judge_failure)
    ungraded = [item for item in run.items if item.verdict == NOT_GRADED]
    if ungraded:
        run.status = "judge_failed"
        run.judge_failure = run.judge_failure or f"the judge's calls failed ({_first_error(ungraded[0])})"
        logger.error("[validate] {} of {} question(s) were not graded ({}): fix the judge and run validate again",
                     len(ungraded), len(questions), run.judge_failure)
    return run


def _first_error(item: QuestionValidation) -> str:
    """The first error of a question the judge did not grade."""
    if item.not_checked is not None:
        return item.not_checked
    return next(e for c in (item.sufficiency, item.necessity) if c is not None and c.judge_failed for e in c.errors)


# --------------------------------------------------------------------------- outputs

def judge_consistency(items: Sequence[QuestionValidation], repeats: int) -> dict | None:
    """Over the checks graded at least twice: the percent whose grades moved by 2 or more (max − min)
    and the mean of their sample standard deviations. None with a single repeat."""
    if repeats < 2:
        return None
    checks = [c for item in items for c in (item.sufficiency, item.necessity) if c is not None and c.spread is not None]
    return {
        "repeats": repeats,
        "checks": len(checks),
        "grade_moved_2plus_rate": 100.0 * sum(1 for c in checks if c.spread >= 2) / len(checks) if checks else None,
        "mean_grade_stdev": statistics.fmean(c.stdev for c in checks) if checks else None,
    }


def build_report(qset: QuestionSet, corpus_info: dict, judge_info: dict, run: ValidationRun, *, k: int, seed: int,
                 repeats: int) -> dict:
    items = run.items
    flag_counts = Counter(f.code for item in items for f in item.flags)
    return {
        "validation_version": VALIDATION_VERSION,
        "status": run.status,
        "judge_failure": run.judge_failure,
        "questions_file": qset.path,
        "questions_sha256": qset.sha256,
        "corpus": corpus_info,
        "judge": judge_info,
        "k": k,
        "seed": seed,
        "judge_repeats": repeats,
        "thresholds": {"sufficiency_min": SUFFICIENCY_MIN, "necessity_max": NECESSITY_MAX},
        "summary": {
            "question_count": len(qset.questions),
            "checked_count": len(items),
            "pass_count": sum(1 for i in items if i.verdict == "pass"),
            "fail_count": sum(1 for i in items if i.verdict == "fail"),
            "not_graded_count": sum(1 for i in items if i.verdict == NOT_GRADED),
            "flag_counts": dict(sorted(flag_counts.items())),
            "judge_consistency": judge_consistency(items, repeats),
        },
        "questions": [item.to_json(judge_info["label"]) for item in items],
    }


def _cell(check: CheckResult | None) -> str:
    if check is None:
        return "-"
    if check.grade is None:
        return "n/a"
    text = _num(check.grade)
    if check.spread is not None:
        text += f" [{min(check.graded)}-{max(check.graded)}]"
    return text


def table(items: Sequence[QuestionValidation], summary: dict, judge_label: str) -> str:
    """The table ``validate`` prints: one line per question, then a summary line."""
    rows = [("id", "verdict", "suff", "nec", "reasons / warnings")]
    for item in items:
        notes = item.reasons + [f"{f.code}: {f.message}" for f in item.flags if not f.blocking]
        rows.append((escape_control(item.question.id), item.verdict, _cell(item.sufficiency), _cell(item.necessity),
                     escape_control("; ".join(notes)) or "-"))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(cell.ljust(w) for cell, w in zip(r[:4], widths, strict=True)) + "  " + r[4] for r in rows]
    flags = ", ".join(f"{code} x{n}" for code, n in summary["flag_counts"].items()) or "none"
    ungraded = f", {summary['not_graded_count']} not graded" if summary.get("not_graded_count") else ""
    lines.append(f"{summary['checked_count']} questions: {summary['pass_count']} pass, {summary['fail_count']} fail"
                 f"{ungraded} (judge: {judge_label}; flags: {flags}; sufficiency >= {SUFFICIENCY_MIN}, necessity <= "
                 f"{NECESSITY_MAX})")
    consistency = summary["judge_consistency"]
    if consistency is not None and consistency["checks"]:
        lines.append(f"judge consistency over {consistency['repeats']} repeats: "
                     f"{consistency['grade_moved_2plus_rate']:.1f}% of {consistency['checks']} checks moved by >= 2, "
                     f"mean grade stdev {consistency['mean_grade_stdev']:.2f}")
    return "\n".join(line.rstrip() for line in lines) + "\n"


def clean_questions(qset: QuestionSet, passing_ids: set[str]) -> object:
    """The questions file's own JSON (as loaded: standard input too) with only the questions in
    ``passing_ids`` (order kept)."""
    doc = qset.document
    items = doc["questions"] if isinstance(doc, dict) else doc
    kept = [raw for raw in items if str(raw["id"]) in passing_ids]
    if isinstance(doc, list):
        return kept
    out = dict(doc, questions=kept)
    if isinstance(doc.get("question_count"), int) and not isinstance(doc["question_count"], bool):
        out["question_count"] = len(kept)
    return out


def dump_json(payload: object) -> str:
    """Strict JSON (a NaN or Infinity is a bug: it raises)."""
    return json.dumps(payload, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def judge_description(judge, settings: Settings) -> dict:
    """The judge block of the validation JSON; ``label`` is ``lexical`` for a judge that calls no
    model (the offline one), else ``llm``."""
    from components.judges.providers import provider_class

    calls_models = provider_class(settings.judge).calls_models
    model = getattr(getattr(judge, "llm", None), "model", None) or getattr(judge, "model", None)
    return {"label": "llm" if calls_models else "lexical", "provider": settings.judge, "model": model,
            "prompt_sha256": PROMPT_SHA256, "reference_free_prompt_sha256": REFERENCE_FREE_PROMPT_SHA256}


def necessity_only_failures(items: Sequence[QuestionValidation]) -> list[str]:
    """The ids of the questions whose only failure is a graded necessity check above the bar."""
    return [item.question.id for item in items
            if item.verdict == "fail" and not any(f.blocking for f in item.flags) and item.not_checked is None
            and item.sufficiency is not None and item.sufficiency.passed is True
            and item.necessity is not None and item.necessity.passed is False]


def _ids(ids: Sequence[str], shown: int = 5) -> str:
    text = ", ".join(ids[:shown])
    return text + (f" and {len(ids) - shown} more" if len(ids) > shown else "")


def validate_file(questions: Path, json_path: Path, settings: Settings, *, corpus_path: Path | None = None,
                  k: int = 5, seed: int = 0, repeats: int = 1, write_clean: Path | None = None,
                  force: bool = False) -> ValidationRun:
    """``validate``'s work: every question of ``questions`` checked over ``corpus_path`` (default: the
    built-in one) by the judge ``settings`` name, the validation written to ``json_path``, its table
    printed, and the passing questions written to ``write_clean`` when given (``force``: with the
    lexical judge, drop those that fail only necessity too). Returns the run (its ``status``).
    Raises :class:`InputError`."""
    inputs = [("the questions file", questions)]
    json_path = check_output(json_path, option="--json", inputs=inputs, corpus=corpus_path, example="validation.json")
    if write_clean is not None:
        write_clean = check_output(write_clean, option="--write-clean",
                                   inputs=[*inputs, ("the --json output", json_path)], corpus=corpus_path,
                                   example="questions_clean.json")
    redact = Redactor(settings.secrets)
    qset = load_questions(questions)
    from components.core.chunking import chunk_corpus
    from components.readers import load_corpus

    corpus = load_corpus(corpus_path)
    chunks = chunk_corpus(corpus.documents)
    index = ContextIndex(chunks)
    judge = make_judge(settings, chunks)
    info = judge_description(judge, settings)
    logger.info("Validating {} questions of {} on corpus {} ({} documents, {} chunks), judge {} ({}), k={}, "
                "seed={}, repeats={}", len(qset.questions), escape_control(str(questions)),
                escape_control(corpus.source), len(corpus.documents),
                len(chunks), info["label"], info["model"], k, seed, repeats)
    result = validate_questions(qset.questions, index, judge, k=k, seed=seed, repeats=repeats)
    corpus_info = {"source": corpus.source, "documents": len(corpus.documents), "chunks": len(chunks),
                   "sha256": corpus.sha256}
    report = build_report(qset, corpus_info, info, result, k=k, seed=seed, repeats=repeats)
    write_json_atomic(json_path, report, redact)
    sys.stdout.write(redact(table(result.items, report["summary"], info["label"])))
    logger.info("Validation written to {}", json_path)
    lexical = info["label"] == "lexical"
    failing_necessity = [item for item in result.items if item.necessity is not None and item.necessity.passed is False]
    if lexical and failing_necessity:
        default = default_provider()
        logger.warning("Note: {} question(s) fail necessity, but {}: check them with the LLM judge (set {}) before "
                       "dropping them", len(failing_necessity), LEXICAL_NECESSITY_NOTE,
                       default.missing_key() if default else "a judge provider's key")
    if write_clean is not None:
        _write_clean(qset, result, write_clean, json_path, redact,
                     necessity_only=necessity_only_failures(result.items) if lexical and not force else [])
    return result


def _write_clean(qset: QuestionSet, result: ValidationRun, path: Path, json_path: Path, redact: Redactor, *,
                 necessity_only: Sequence[str]) -> None:
    """``--write-clean``: the passing questions to ``path``, unless the validation did not complete
    or would drop ``necessity_only`` (the lexical judge's unreliable failures; refused)."""
    if result.status != "completed":
        ungraded = sum(1 for item in result.items if item.verdict == NOT_GRADED)
        why = f": {ungraded} question(s) were not graded" if ungraded else ""
        logger.warning("--write-clean skipped: the validation is {}{} ({} is not written)", result.status, why, path)
    elif necessity_only:
        raise InputError(f"--write-clean would drop {len(necessity_only)} question(s) that fail only necessity "
                         f"({_ids(necessity_only)}), which the offline lexical judge cannot judge reliably on a "
                         "single-topic corpus: add --force to drop them anyway, or validate with the LLM judge "
                         f"({json_path} is written, {path} is not)")
    else:
        passing = {item.question.id for item in result.items if item.verdict == "pass"}
        write_json_atomic(path, clean_questions(qset, passing), redact)
        logger.info("{} passing questions written to {}", len(passing), path)
