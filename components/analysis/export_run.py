"""``python benchmark.py export-run RUN.json -o run.trec [--qrels qrels.txt] [--level doc|chunk]``:
a results file as TREC files, so that trec_eval, ranx, ir_measures or pytrec_eval recompute its
metrics.

- **doc level** (default): each question's distinct documents in first-occurrence order of its top
  k chunks — the ranking the document-level metrics see (:func:`utils.metrics.doc_ranking`); the
  qrels are every needle with its grade (``needle_grades``, else 1). trec_eval's ``ndcg_cut_k``,
  ``recall_k``, ``map_cut_k`` and ``recip_rank`` on these files are the results' ``ndcg_at_k``,
  ``recall_at_k``, ``ap_at_k`` and ``rr_doc`` for every question (k the run's k).
- **chunk level**: the top k chunk ids in retrieved order; the qrels are the retrieved chunks of
  the needle documents, each with its document's grade (the chunks never retrieved are not known).
  ``recip_rank`` is the chunk-level ``rr`` (MRR), ``P_k`` the ``context_precision``; recall and
  nDCG are not meaningful at this level.

The score of each line is n − rank + 1 (n documents of the question), so every tool orders the
documents as the run did; the retriever's own scores stay in the results file. A question that
retrieved nothing has no line in the run: ``trec_eval -c`` counts it as 0, as the results do. Ids
must be free of whitespace (TREC's columns are whitespace-separated): one that is not is refused
with one line naming it.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from pathlib import Path

from loguru import logger

from utils import metrics as M
from utils.errors import InputError
from utils.files.output import check_output, same_file
from utils.redaction import Redactor
from utils.results import RunResult
from utils.records.trec import check_id, write_qrels, write_run

LEVELS = ("doc", "chunk")
_RENAME = "rename it in the questions (or the corpus) and run again, or export another run"


def _tag(result: RunResult) -> str:
    return re.sub(r"\s+", "_", result.run.strategy or result.run.id or "benchmark").strip("_") or "benchmark"


def rankings(result: RunResult, level: str = "doc") -> list[tuple[str, list[str]]]:
    """``(question id, ids best first)`` of every row: its distinct documents (``doc``) or chunk ids
    (``chunk``) of the top k retrieved. Raises :class:`InputError` for an id TREC cannot carry."""
    if level not in LEVELS:
        raise InputError(f"--level {level!r}: choose doc or chunk")
    source = result.source or "the results"
    out = []
    for row in result.rows:
        qid = check_id(row.question_id, "question id", source, _RENAME)
        top = row.retrieved[:result.k]
        ids = M.doc_ranking(top) if level == "doc" else list(dict.fromkeys(item.chunk_id for item in top))
        what = "document id" if level == "doc" else "chunk id"
        out.append((qid, [check_id(i, what, f"{source}: question {qid}", _RENAME) for i in ids]))
    return out


def judgments(result: RunResult, level: str = "doc") -> list[tuple[str, dict[str, int]]]:
    """``(question id, {id: grade})`` of every row: its needles and their grades (``doc``), or its
    retrieved chunks of a needle document with that document's grade (``chunk``)."""
    source = result.source or "the results"
    out = []
    for row in result.rows:
        qid = check_id(row.question_id, "question id", source, _RENAME)
        grades = row.relevance
        if level == "doc":
            judged = grades
        else:
            judged = {item.chunk_id: grades[item.doc_id] for item in row.retrieved[:result.k] if item.doc_id in grades}
        for doc in judged:
            check_id(doc, "document id" if level == "doc" else "chunk id", f"{source}: question {qid}", _RENAME)
        out.append((qid, judged))
    return out


def export_trec(result: RunResult, run_path: str | os.PathLike, qrels_path: str | os.PathLike | None = None, *,
                level: str = "doc", tag: str | None = None) -> tuple[str, str | None]:
    """Write the run (and the qrels, when ``qrels_path`` is given) of ``result`` at ``level``;
    returns their texts. ``tag``: the run's last column (default: the strategy)."""
    tag = check_id(tag, "--tag", "export-run", "give a tag without whitespace") if tag is not None else _tag(result)
    ranked = rankings(result, level)
    judged = judgments(result, level) if qrels_path is not None else None
    run_text = write_run(run_path, ranked, tag)
    qrels_text = write_qrels(qrels_path, judged) if judged is not None else None
    return run_text, qrels_text


def export_run_file(run: str, output: Path, *, qrels: Path | None = None, level: str = "doc",
                    tag: str | None = None, secrets: Iterable[str] = (), state_dir: Path | None = None) -> None:
    """``export-run``'s work: the results file (or run id) ``run`` written as the TREC run file
    ``output``, and its qrels to ``qrels`` when given (see :func:`export_trec`), ``secrets``
    redacted from the results as they are read (and from ``tag``); a run id is also looked up in
    the index of ``state_dir``. Raises :class:`InputError`."""
    from components.analysis.run_files import resolve_run
    from utils.results import load_run, recorded_corpora

    path = resolve_run(run, Path.cwd(), [run], state_dir)
    result = load_run(path, secrets)
    tag = Redactor(secrets)(tag) if tag is not None else None
    exported, corpora = [("the results file being exported", path)], recorded_corpora([result])
    output = check_output(output, option="-o", example="run.trec", inputs=exported, recorded_corpora=corpora)
    if qrels is not None:
        qrels = check_output(qrels, option="--qrels", example="qrels.txt", inputs=exported, recorded_corpora=corpora)
        if same_file(qrels, output):
            raise InputError(f"--qrels {qrels} is the run file -o: give them two paths")
    for option, target in (("-o", output), ("--qrels", qrels)):
        if target is not None and same_file(target, path):
            raise InputError(f"{option} {target} is the results file being exported: give another path")
    run_text, _ = export_trec(result, output, qrels, level=level, tag=tag)
    empty = sum(1 for row in result.rows if not row.retrieved)
    logger.info("Run written to {} ({} questions, {} lines, {} level){}", output, len(result.rows),
                run_text.count("\n"), level,
                f"; {empty} question(s) retrieved nothing and have no line (trec_eval -c counts them as 0)"
                if empty else "")
    if qrels is not None:
        logger.info("Qrels written to {}", qrels)
