"""``python benchmark.py label RUN --sample 60 --seed 0 -o labels.jsonl``: a file for people to grade.

The labelling file is JSON lines. The first line is the header (``"kind": "header"``): the run
it was drawn from, the sample size asked and drawn, the seed, and per band of the judge's grade
how many rows were graded and how many drawn. Every other line is one sampled row::

    {"question_id": ..., "question": ..., "expected_answer": ... | null, "rank": 3 | null,
     "needle_doc_ids": [...], "chunks": [{"rank": 1, "doc_id": ..., "chunk_id": ..., "text": ...}, ...],
     "human_grade": null, "human_note": null}

``human_grade`` is for the labeller to fill in: a whole number 1-10 on the judge's scoring guide
(:data:`SCALE`); null while not graded. The judge's grade is **not** in the file, so that a
labeller is not anchored by it (the header's band counts say how the sample was spread, never
which row fell where).

**The sample** is stratified over the judge's grade, proportionally: the graded rows are split
into the bands :data:`BANDS` (1-3, 4-6, 7-8, 9-10); band b of N_b rows gets n · N_b / N rows
rounded by largest remainder (ties to the lower band), drawn without replacement with
``random.Random(seed)``, one band after the other; the rows are written in the run's order.
Ungraded rows are left out. A proportional sample is a random sample of the graded rows up to
that rounding, which is what ``calibrate``'s prediction-powered estimates assume.

:func:`read_labels` is the one reader of a labelling file (``calibrate``, ``report --labels``):
every way a line can be wrong is one :class:`InputError` naming the file, the line and the fix.
"""

from __future__ import annotations

import html
import os
import random
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from loguru import logger

from utils.errors import InputError
from utils.files.lines import open_regular
from utils.files.output import check_output, to_strict_json, write_text_atomic
from utils.results import OPENING, QuestionResult, RunResult, load_run, parse_json, recorded_corpora
from utils.redaction import Redactor

BANDS = ((1, 3), (4, 6), (7, 8), (9, 10))
FORMAT = "retrieval-benchmark-labels"
FORMAT_VERSION = 1
MAX_LABELS_BYTES = 200_000_000
SCALE = ("10 complete answer with all necessary details; 8-9 the core answer, minor details may be missing; "
         "6-7 most relevant information, the user could likely solve their problem; 4-5 some relevant "
         "information, key details missing; 2-3 tangentially related, does not address the question; "
         "1 no useful information (the judge's scoring guide)")
_FIX = "write it with `python benchmark.py label RUN -o FILE`, then fill in human_grade"


def band_of(grade: int) -> str:
    for low, high in BANDS:
        if low <= grade <= high:
            return f"{low}-{high}"
    raise ValueError(f"grade {grade} is outside 1-10")


def allocate(sizes: Sequence[int], n: int) -> list[int]:
    """Proportional allocation of ``n`` over strata of ``sizes`` by largest remainder (ties to the
    earlier stratum); every stratum gets at most its size. ``n`` ≥ the total → every row."""
    total = sum(sizes)
    if n >= total:
        return list(sizes)
    quotas = [n * s / total for s in sizes]
    counts = [int(q) for q in quotas]
    order = sorted(range(len(sizes)), key=lambda i: (-(quotas[i] - counts[i]), i))
    for i in order[: n - sum(counts)]:
        counts[i] += 1
    return counts


def sample_rows(rows: Sequence[QuestionResult], n: int, seed: int) -> tuple[list[QuestionResult], dict]:
    """The stratified sample of the graded ``rows`` (module docstring), in run order, and the strata
    record ``{band: {"graded": N_b, "sampled": n_b}}``."""
    bands = {f"{low}-{high}": [] for low, high in BANDS}
    for position, row in enumerate(rows):
        if row.llm_grade is not None:
            bands[band_of(row.llm_grade)].append(position)
    chosen, strata = draw_strata(bands, allocate([len(members) for members in bands.values()], n), seed)
    return [rows[i] for i in chosen], strata


def draw_strata(bands: dict[str, list[int]], counts: Sequence[int], seed: int) -> tuple[list[int], dict]:
    """``counts[b]`` positions drawn without replacement from each band's ``bands[b]`` with
    ``random.Random(seed)``, one band after the other; the positions sorted, and the strata record
    ``{band: {"graded": N_b, "sampled": n_b}}``."""
    rng = random.Random(seed)
    chosen: list[int] = []
    for members, count in zip(bands.values(), counts, strict=True):
        chosen += rng.sample(members, count)
    strata = {band: {"graded": len(members), "sampled": count}
              for (band, members), count in zip(bands.items(), counts, strict=True)}
    return sorted(chosen), strata


def label_line(row: QuestionResult) -> dict:
    """One row of the labelling file: what a labeller reads, and an empty ``human_grade``."""
    return {"question_id": row.question_id, "question": row.question, "expected_answer": row.expected_answer,
            "rank": row.rank, "needle_doc_ids": list(row.needle_doc_ids),
            "chunks": [{"rank": item.rank, "doc_id": item.doc_id, "chunk_id": item.chunk_id, "text": item.text}
                       for item in row.retrieved],
            "human_grade": None, "human_note": None}


def build_labels(result: RunResult, source: str, n: int, seed: int) -> list[dict]:
    """The labelling file's lines (header first) for ``result``; raises :class:`InputError` when the
    run has no graded row or lacks the chunks' text."""
    graded = [r for r in result.rows if r.llm_grade is not None]
    if not graded:
        raise InputError(f"{source}: no row is graded, and a labelling sample is drawn from graded rows: "
                         "label a run whose judge graded")
    if any(item.text is None for r in graded for item in r.retrieved):
        raise InputError(f"{source}: the run was written without the chunks' text (--no-text), which a labeller "
                         "must read: run the benchmark again without --no-text and label that run")
    sampled, strata = sample_rows(result.rows, n, seed)
    judge = result.run.judge
    header = {"kind": "header", "format": FORMAT, "version": FORMAT_VERSION, "run": source, "run_id": result.run.id,
              "strategy": result.run.strategy, "judge": f"{judge.provider}/{judge.model}",
              "sample": n, "sampled": len(sampled), "seed": seed,
              "method": "proportional stratified sample over the judge's grade bands (largest remainder), "
                        "random.Random(seed) per band in band order; rows in run order; the judge's grades "
                        "are left out",
              "strata": strata, "scale": SCALE,
              "created_at": datetime.now(timezone.utc).isoformat(timespec="seconds")}
    return [header, *(label_line(r) for r in sampled)]


def write_labels(run: Path, output: Path, *, sample: int = 60, seed: int = 0, secrets: Iterable[str] = ()) -> Path:
    """``label``'s work: a stratified sample of ``sample`` graded rows of the results file ``run``
    (seed ``seed``) written to ``output`` as a labelling file, with ``secrets`` redacted; never over
    a file that holds human grades. Returns the file written. Raises :class:`InputError`."""
    result = load_run(run, secrets)
    output = check_output(output, option="-o", example="labels.jsonl", inputs=[("the run", run)],
                          recorded_corpora=recorded_corpora([result]))
    _refuse_to_overwrite_grades(output)
    lines = build_labels(result, str(run), sample, seed)
    write_text_atomic(output, "".join(to_strict_json(line, secrets, indent=None) + "\n" for line in lines))
    header = lines[0]
    if header["sampled"] < sample:
        logger.warning("The run has {} graded row(s): all of them are in the file (--sample {} asked for more)",
                       header["sampled"], sample)
    bands = ", ".join(f"{band}: {s['sampled']} of {s['graded']}" for band, s in header["strata"].items())
    sys.stdout.write(f"Wrote {header['sampled']} row(s) to label to {output} (seed {seed}; judge grade "
                     f"bands {bands}).\nFill in human_grade (1-10) on each line, without looking up the judge's "
                     f"grade, then: python benchmark.py calibrate {run} --labels {output}\n")
    sys.stdout.flush()
    return output


def _refuse_to_overwrite_grades(path: Path) -> None:
    """A labelling file people have started to grade is their work: a new sample is never written
    over it. Raises :class:`InputError` when ``path`` holds at least one human grade, or cannot be
    read as a labelling file (a grade mistyped while editing, or another file: kept either way)."""
    if not path.is_file():
        return
    try:
        graded = len(read_labels(path).graded)
    except InputError as err:
        raise InputError(f"-o {path} exists and cannot be read as a labelling file ({err}); it may hold human "
                         "grades: write the new sample to another file (-o FILE), or move this one away "
                         "first") from None
    if graded:
        raise InputError(f"-o {path} already holds {graded} human grade(s): write the new sample to another file "
                         "(-o FILE), or move this one away first")


# --------------------------------------------------------------------------- reading a labelling file

@dataclass(frozen=True)
class Label:
    question_id: str
    human_grade: int | None  # None: not graded yet
    line: int  # 1-based line number in the file
    data: dict  # the whole line


@dataclass(frozen=True)
class Labels:
    path: str
    header: dict | None
    rows: list[Label]

    @property
    def graded(self) -> list[Label]:
        return [label for label in self.rows if label.human_grade is not None]


def _human_grade(value: object, where: str) -> int | None:
    if value is None:
        return None
    fix = "give a whole number from 1 to 10 (or null for a row not graded yet)"
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        shown = repr(value)[:40]
        raise InputError(f"{where}: human_grade {shown} is not a whole number: {fix}")
    if isinstance(value, float) and not value.is_integer():
        raise InputError(f"{where}: human_grade {value} is not a whole number: {fix}")
    if not 1 <= value <= 10:
        raise InputError(f"{where}: human_grade {value:g} is outside 1-10: {fix}")
    return int(value)


def _read_bytes(path: Path) -> bytes:
    fh, _ = open_regular(path, messages={**OPENING, "missing": "{path}: no such {what}: give the path of one ({fix})",
                                         "folder": None}, what="labelling file", fix=_FIX)
    with fh:
        data = fh.read(MAX_LABELS_BYTES + 1)
    if len(data) > MAX_LABELS_BYTES:
        raise InputError(f"{path} is over the {MAX_LABELS_BYTES:,}-byte limit of a labelling file: label fewer rows")
    return data


def read_labels(path: str | os.PathLike, secrets: Iterable[str] = ()) -> Labels:
    """Every line of a labelling file, checked (module docstring), ``secrets`` redacted from its
    text. Blank lines are skipped."""
    path, redact = Path(path), Redactor(secrets)
    try:
        text = _read_bytes(path).decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise InputError(f"{path}: not valid UTF-8 (byte {err.start}): save it as UTF-8") from None
    header, rows, seen = None, [], {}
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path} line {number}"
        data = redact.json(parse_json(line, where, "each line must be one JSON object: " + _FIX))
        if not isinstance(data, dict):
            raise InputError(f"{where}: not a JSON object: each line must be one object ({_FIX})")
        if data.get("kind") == "header":
            header = header or data
            continue
        qid = data.get("question_id")
        if not isinstance(qid, str) or not qid:
            raise InputError(f"{where}: no question_id: each row must keep the question_id `label` wrote ({_FIX})")
        if qid in seen:
            raise InputError(f"{where}: question {qid!r} is labelled again (first on line {seen[qid]}): keep one "
                             "line per question")
        seen[qid] = number
        rows.append(Label(qid, _human_grade(data.get("human_grade"), where), number, data))
    return Labels(str(path), header, rows)


# --------------------------------------------------------------------------- the report's section

def render_labels(path: str | os.PathLike, secrets: Iterable[str] = ()) -> str:
    """An HTML section showing a labelling file's rows for reading: question, expected answer, the
    needle's rank, the retrieved chunks (folded), and the human grade when one is filled in. The
    judge's grade is not shown (it is not in the file). ``secrets`` are redacted as it is read."""
    labels = read_labels(path, secrets)
    esc = lambda value: html.escape("" if value is None else str(value), quote=True)  # noqa: E731
    header = labels.header or {}
    rows = []
    for label in labels.rows:
        d = label.data
        chunks = "".join(
            f"<details><summary>#{esc(c.get('rank'))} {esc(c.get('doc_id'))} · {esc(c.get('chunk_id'))}</summary>"
            f"<pre class=chunk>{esc(c.get('text'))}</pre></details>"
            for c in d.get("chunks") or [] if isinstance(c, dict))
        grade = "not graded yet" if label.human_grade is None else f"human grade {label.human_grade}"
        note = f"<p class=muted>{esc(d.get('human_note'))}</p>" if d.get("human_note") else ""
        rows.append(f"<div class=label-row id='label-{esc(label.question_id)}'><h4>{esc(label.question_id)} "
                    f"<span class=muted>(rank {esc(d.get('rank') if d.get('rank') is not None else 'not found')}; "
                    f"{esc(grade)})</span></h4><p><b>Question:</b> {esc(d.get('question'))}</p>"
                    f"<p><b>Expected answer:</b> {esc(d.get('expected_answer') or '(none given)')}</p>"
                    f"{note}{chunks}</div>")
    done = len(labels.graded)
    intro = (f"{len(labels.rows)} row(s) from {esc(header.get('run', '?'))}, seed {esc(header.get('seed', '?'))}; "
             f"{done} graded"
             + (f" (labelled by: {esc(header['labelled_by'])})" if isinstance(header.get("labelled_by"), str) else "")
             + f". Scale: {esc(header.get('scale', SCALE))}")
    return (f"<section class=labels id=labels><h2>Labelling sample ({esc(labels.path)})</h2>"
            f"<p class=muted>{intro}</p>{''.join(rows)}</section>")
