"""Typed records of a benchmark run and the results file they are dumped to.

The file is ``{"schema_version", "run": RunInfo, <Aggregates at top level>, "results": [QuestionResult]}``
and is always written atomically (temp file in the same folder, then ``os.replace``).
"""

from __future__ import annotations

import json
import os
import tempfile
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from utils.errors import InputError
from utils.metrics import RetrievalMetrics as M

SCHEMA_VERSION = 1


@dataclass(frozen=True)
class RetrievedItem:
    rank: int
    doc_id: str
    chunk_id: str
    score: float | None


@dataclass(frozen=True)
class QuestionResult:
    question_id: str
    question: str
    expected_answer: str | None
    needle_doc_id: str  # the first needle; all of them in needle_doc_ids
    needle_doc_ids: list[str]
    needle_found: bool
    rank: int | None
    hit_at_1: bool
    hit_at_5: bool
    llm_grade: int | None
    llm_reasoning: str | None
    grade_error: str | None  # "<kind>: <message>", see README
    llm_raw_reply: str | None
    prompt_variant: str  # "reference" | "reference_free"
    total_score: float | None
    latency_ms: float  # retrieval
    grading_latency_ms: float
    retrieved: list[RetrievedItem]
    extra: dict = field(default_factory=dict)  # the question's unknown fields (category, reference_ranks...)

    def to_json(self) -> dict:
        row = asdict(self)
        extra = row.pop("extra")
        row.update({k: v for k, v in extra.items() if k not in row})
        return row


@dataclass(frozen=True)
class Aggregates:
    accuracy: float  # legacy name: percent of questions with the needle in the top k
    hit_at_1_rate: float  # percent
    hit_at_5_rate: float  # percent
    mrr: float  # 0-1
    avg_llm_grade: float | None
    avg_total_score: float | None
    pass_rate_8: float  # percent of all questions
    pass_rate_7: float
    pass_rate_6_5: float
    question_count: int
    graded_count: int
    ungraded_count: int
    grade_errors: dict[str, int]  # error kind → count
    avg_latency_ms: float | None  # retrieval
    index_time_s: float


def aggregate(results: Sequence[QuestionResult], index_time_s: float, k: int = 5) -> Aggregates:
    passes = M.calculate_pass_rates(results, (8.0, 7.0, 6.5))
    graded = [r for r in results if r.llm_grade is not None]
    errors = Counter(r.grade_error.split(":", 1)[0] for r in results if r.grade_error)
    return Aggregates(
        accuracy=M.calculate_hit_rate(results, k),
        hit_at_1_rate=M.calculate_hit_rate(results, 1),
        hit_at_5_rate=M.calculate_hit_rate(results, 5),
        mrr=M.calculate_mrr(results),
        avg_llm_grade=M.calculate_average(r.llm_grade for r in results),
        avg_total_score=M.calculate_average(r.total_score for r in results),
        pass_rate_8=passes[8.0],
        pass_rate_7=passes[7.0],
        pass_rate_6_5=passes[6.5],
        question_count=len(results),
        graded_count=len(graded),
        ungraded_count=len(results) - len(graded),
        grade_errors=dict(sorted(errors.items())),
        avg_latency_ms=M.calculate_average(r.latency_ms for r in results),
        index_time_s=index_time_s,
    )


@dataclass(frozen=True)
class JudgeInfo:
    provider: str  # "anthropic" | "offline"
    model: str  # the resolved model id, or the offline judge's name
    prompt_sha256: str
    reference_free_prompt_sha256: str
    timeout_s: float | None
    note: str


@dataclass(frozen=True)
class CorpusInfo:
    source: str
    documents: int
    chunks: int
    sha256: str


@dataclass
class RunInfo:
    started_at: str
    finished_at: str | None
    status: str  # "completed" | "interrupted" | "judge_failed"
    strategy: str
    k: int
    quick: bool
    questions_file: str
    questions_sha256: str
    corpus: CorpusInfo
    judge: JudgeInfo
    python: str
    packages: dict[str, str]
    judge_failure: str | None = None  # the fatal judge error, when status is "judge_failed"
    log_file: str | None = None
    index: dict | None = None  # {"cache": "hit" | "miss" | "off", "key": str | None}, see components/run/index_cache.py


def build_report(run: RunInfo, aggregates: Aggregates, results: Iterable[QuestionResult]) -> dict:
    return {"schema_version": SCHEMA_VERSION, "run": asdict(run), **asdict(aggregates),
            "results": [r.to_json() for r in results]}


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_json_atomic(path: Path, payload: dict, secrets: Iterable[str] = ()) -> None:
    """Write ``payload`` as JSON to ``path`` atomically; every secret string is replaced by
    ``[REDACTED]`` first. A reader sees the old file or the new one, never a partial one."""
    text = json.dumps(payload, indent=2, ensure_ascii=False, default=str) + "\n"
    for secret in secrets:
        if secret:
            text = text.replace(secret, "[REDACTED]")
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        # mkstemp makes the file 0600: give it the mode an ordinary write would have (the earlier
        # file's, else 0666 less the umask) so that others can still read the results.
        os.chmod(tmp, path.stat().st_mode & 0o7777 if path.exists() else 0o666 & ~_umask())
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def check_writable(path: Path) -> None:
    """Raise InputError unless ``path`` can be written (its folder exists and accepts files)."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"--output {path} is a folder: give a file path such as {path / 'benchmark_results.json'}")
    parent = path.parent
    if not parent.is_dir():
        raise InputError(f"--output {path}: folder {parent} does not exist: create it or choose another path")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".probe", dir=parent)
    except OSError as err:
        raise InputError(f"--output {path}: folder {parent} is not writable ({err.strerror}): "
                         "choose a folder you can write to") from None
    os.close(fd)
    os.unlink(tmp)
