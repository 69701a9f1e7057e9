"""Suites: ``python benchmark.py --suite FILE[:NAME]`` runs every configuration of a YAML suite on the
same questions, then compares them.

A suite file::

    suites:
      quick_test:
        - name: small-chunks
          strategy: baseline
          chunk_size: 200          # words per chunk
          chunk_overlap: 0         # words repeated from the end of the previous chunk of the section
          embedding_model: wordllama-256   # or wordllama-128 / -64, or package.module:function
          reranker: null           # or package.module:function
        - name: big-chunks
          strategy: baseline
          chunk_size: 800

Each configuration is a :class:`~components.core.Strategy` named after it: its factory is the named
strategy's, called with the configuration's other keys as keyword parameters (``embedding_model``
too, when the factory takes it), wrapped by the reranker when there is one
(:mod:`components.run.retrieval.reranker`); its ``chunking`` is the chunk size and overlap; its
``configuration`` is what the results record as ``run.configuration``.

:func:`load_suite` checks everything before any work: an unknown key, a value of the wrong type,
an embedding model that is not installed, a strategy or a plug-in that does not load, two
configurations writing the same results file. Each is one :class:`InputError` (exit 2) naming the
configuration and the key.
"""

from __future__ import annotations

import difflib
import inspect
import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from loguru import logger

from components.core import Retriever, Strategy, resolve_strategy
from components.core.chunking import MAX_CHUNK_WORDS, Chunking
from components.run.file_names import strategy_file_name
from components.run.journal import read_rows
from components.run.retrieval.reranker import RerankedRetriever, load_reranker
from utils.console import escape_control
from utils.errors import InputError

OWN_KEYS = ("name", "strategy", "chunk_size", "chunk_overlap", "embedding_model", "reranker")
MAX_SUITE_BYTES = 1_000_000
EXAMPLE = "suites: {NAME: [{name: ..., strategy: baseline, chunk_size: 200}, ...]}"
RECORDED = "recorded"


@dataclass(frozen=True)
class Suite:
    """The configurations of one suite of a suite file, each as a runnable strategy."""

    path: Path
    name: str
    strategies: list[Strategy]

    @property
    def label(self) -> str:
        return f"{self.path}:{self.name}"


def split_spec(spec: str) -> tuple[Path, str | None]:
    """``FILE[:NAME]`` → (file, name or None). A path that exists is a file whatever its colons."""
    if Path(spec).is_file() or ":" not in spec:
        return Path(spec), None
    file, _, name = spec.rpartition(":")
    return Path(file), name or None


def load_suite(spec: str) -> Suite:
    """The suite ``FILE[:NAME]`` names (NAME may be left out when the file holds one suite),
    every configuration checked (module docstring). Raises :class:`InputError`."""
    path, wanted = split_spec(spec)
    suites = _read(path)
    if wanted is None:
        if len(suites) != 1:
            raise InputError(f"--suite {path} holds {len(suites)} suites ({', '.join(map(str, suites))}): name "
                             f"one, --suite {path}:NAME")
        wanted = next(iter(suites))
    if wanted not in suites:
        close = difflib.get_close_matches(wanted, [str(s) for s in suites], n=1, cutoff=0.6)
        hint = f"did you mean {close[0]!r}?" if close else f"the suites are {', '.join(map(str, suites))}"
        raise InputError(f"--suite {path}: no suite named {wanted!r}: {hint}")
    items = suites[wanted]
    where = f"suite {path}:{wanted}"
    if not isinstance(items, list) or not items:
        raise InputError(f"{where} is not a non-empty list of configurations: write {EXAMPLE}")
    strategies = [_configuration(where, i, item, path, wanted) for i, item in enumerate(items)]
    seen: dict[str, str] = {}
    for s in strategies:
        file_name = strategy_file_name(s.name)
        if file_name in seen:
            raise InputError(f"{where}, configuration {s.name!r}, key name: it writes the same results file as "
                             f"{seen[file_name]!r} (benchmark_results.{file_name}.json): give every configuration "
                             "its own name")
        seen[file_name] = s.name
    return Suite(path, str(wanted), strategies)


def _read(path: Path) -> Mapping[Any, Any]:
    """The ``suites`` mapping of the YAML file ``path``."""
    import yaml

    from utils.files.lines import open_regular

    fix = "give the path of a YAML suite file"
    fh, _ = open_regular(path, messages={"missing": f"--suite {{path}}: no such file: {fix}",
                                         "unreadable": f"--suite {{path}}: cannot be read ({{reason}}): {fix}",
                                         "kind": f"--suite {{path}} is {{kind}}, not a file: {fix}"})
    try:
        with fh:
            data = fh.read(MAX_SUITE_BYTES + 1)
    except OSError as err:
        raise InputError(f"--suite {path}: cannot be read ({err.strerror}): {fix}") from None
    if len(data) > MAX_SUITE_BYTES:
        raise InputError(f"--suite {path} is over the {MAX_SUITE_BYTES:,}-byte limit of a suite file: split it")
    try:
        doc = yaml.safe_load(data.decode("utf-8-sig"))
    except UnicodeDecodeError as err:
        raise InputError(f"--suite {path}: not valid UTF-8 (byte {err.start}): save it as UTF-8") from None
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        at = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(err, "problem", None) or type(err).__name__
        raise InputError(f"--suite {path}: not valid YAML{at}: {escape_control(str(problem))}: fix the YAML") \
            from None
    if not isinstance(doc, dict) or not isinstance(doc.get("suites"), dict) or not doc["suites"]:
        raise InputError(f"--suite {path} has no \"suites\" mapping: write {EXAMPLE}")
    stray = [str(k) for k in doc if k != "suites"]
    if stray:
        raise InputError(f"--suite {path}: unknown top-level key {stray[0]!r}: a suite file holds \"suites\" only")
    return doc["suites"]


def _configuration(where: str, i: int, item: object, path: Path, suite: str) -> Strategy:
    if not isinstance(item, dict):
        raise InputError(f"{where}, configuration #{i + 1} is a {type(item).__name__}, not a mapping: write "
                         "name: ..., strategy: ... under its dash")
    name = item.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InputError(f"{where}, configuration #{i + 1}, key name: missing or not a text: give every "
                         "configuration a name")
    where = f"{where}, configuration {name!r}"
    strategy_name = item.get("strategy")
    if not isinstance(strategy_name, str) or not strategy_name.strip():
        raise InputError(f"{where}, key strategy: missing or not a text: name a registered strategy or "
                         "package.module:factory")
    if strategy_name == RECORDED:
        raise InputError(f"{where}, key strategy: {RECORDED!r} grades a question set's recorded retrievals, which "
                         "no configuration changes: run it with --strategy recorded")
    try:
        base = resolve_strategy(strategy_name)
    except InputError as err:
        raise InputError(f"{where}, key strategy: {err}") from None
    chunking = _chunking(where, item)
    params = {str(k): v for k, v in item.items() if k not in OWN_KEYS}
    _check_keys(where, params, base)
    embedding = item.get("embedding_model")
    if embedding is not None:
        if not isinstance(embedding, str) or not embedding.strip():
            raise InputError(f"{where}, key embedding_model: {embedding!r} is not a name: give wordllama-256, "
                             "wordllama-128, wordllama-64 or package.module:function")
        if _takes(base.factory, "embedding_model"):
            params["embedding_model"] = embedding
        else:
            logger.warning("{}: strategy {} takes no embedding_model (it embeds nothing): the key has no effect",
                           escape_control(where), escape_control(strategy_name))
    _check_factory(where, base, params)
    reranker = item.get("reranker")
    rerank = None
    if reranker is not None:
        try:
            rerank = load_reranker(reranker)
        except InputError as err:
            raise InputError(f"{where}, key reranker: {err}") from None
    record = json.loads(json.dumps({  # as the results file will hold it (a YAML date becomes its text)
        "suite": suite, "file": str(path), "name": name, "strategy": strategy_name,
        "chunk_size": chunking.words()["target"], "chunk_overlap": chunking.overlap,
        "embedding_model": embedding, "reranker": reranker,
        "parameters": {k: v for k, v in params.items() if k != "embedding_model"}}, default=str))
    return Strategy(name, _factory(base.factory, params, rerank, reranker), base.rewrites_queries, chunking, record)


def _whole(where: str, item: dict, key: str, least: int) -> int | None:
    value = item.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or not least <= value <= MAX_CHUNK_WORDS:
        big = isinstance(value, int) and abs(value) >= 10 ** 12
        shown = f"a {len(str(value))}-digit number" if big else repr(value)
        raise InputError(f"{where}, key {key}: {shown} is not a whole number of words from {least} to "
                         f"{MAX_CHUNK_WORDS:,}")
    return value


def _chunking(where: str, item: dict) -> Chunking:
    size, overlap = _whole(where, item, "chunk_size", 1), _whole(where, item, "chunk_overlap", 0)
    try:
        return Chunking(size, overlap or 0)
    except ValueError as err:
        raise InputError(f"{where}, key chunk_overlap: {err}: make it smaller than chunk_size") from None


def _parameters(factory: Callable[..., Any]) -> tuple[list[str], bool]:
    """The keyword parameters ``factory`` takes, and whether it takes any keyword (``**kwargs``)."""
    try:
        signature = inspect.signature(factory)
    except (TypeError, ValueError):
        return [], True
    names = [p.name for p in signature.parameters.values()
             if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return names, any(p.kind == p.VAR_KEYWORD for p in signature.parameters.values())


def _takes(factory: Callable[..., Any], key: str) -> bool:
    names, any_keyword = _parameters(factory)
    return any_keyword or key in names


def _check_keys(where: str, params: Mapping[str, Any], base: Strategy) -> None:
    names, any_keyword = _parameters(base.factory)
    if any_keyword:
        return
    for key in params:
        if key not in names:
            known = [*OWN_KEYS, *(n for n in names if n not in OWN_KEYS)]
            close = difflib.get_close_matches(key, known, n=1, cutoff=0.6)
            hint = f"did you mean {close[0]!r}? " if close else ""
            takes = f"the parameters of {base.name}: {', '.join(names)}" if names else f"{base.name} takes no parameter"
            raise InputError(f"{where}: unknown key {escape_control(key)!r}: {hint}(the keys are "
                             f"{', '.join(OWN_KEYS)}, and {takes})")


def _check_factory(where: str, base: Strategy, params: Mapping[str, Any]) -> None:
    """Build the retriever once, so that a parameter it refuses (a model not installed, a plug-in
    that fails to load) stops the suite now; the error names the key it mentions."""
    try:
        base.factory(**params)
    except (Exception, SystemExit) as err:  # whatever a factory raises for a value it refuses
        detail = err if isinstance(err, (InputError, ValueError)) else f"{type(err).__name__}: {err}"
        text = str(detail)
        key = next((k for k, v in params.items() if str(v) in text), None) or \
            next((k for k in params if k in text), None)
        keys = f"key {key}" if key else (f"keys {', '.join(params)}" if params else "key strategy")
        raise InputError(f"{where}, {keys}: {escape_control(text[:300])}") from None


def _factory(make: Callable[..., Retriever], params: Mapping[str, Any], rerank, reranker: str | None
             ) -> Callable[[], Retriever]:
    def factory() -> Retriever:
        retriever = make(**params)
        return RerankedRetriever(retriever, rerank, reranker) if rerank is not None else retriever
    return factory


def resume_files(resume: Path | None, strategies: Sequence[Strategy]) -> dict[str, tuple[Path, tuple]]:
    """``--resume A[,B...]`` of a suite: each file (a results file or journal of one configuration)
    by the configuration whose name it records, with what :func:`components.run.journal.read_rows`
    read of it. Raises :class:`InputError` before any work for a file of no configuration, two files
    of one, or a file whose configuration has changed since (the run checks the rest of what it
    recorded when it gets to it)."""
    by_name = {s.name: s for s in strategies}
    out: dict[str, tuple[Path, tuple]] = {}
    for text in (str(resume).split(",") if resume is not None else []):
        if not text.strip():
            continue
        path = Path(text.strip())
        previous = read_rows(path)
        name = previous[0].get("strategy")
        if name not in by_name:
            raise InputError(f"--resume {path}: it records the configuration {name!r}, which is not in the suite "
                             f"({', '.join(by_name)}): give the files of this suite's configurations")
        if name in out:
            raise InputError(f"--resume: {out[name][0]} and {path} both continue the configuration {name!r}: give "
                             "one file per configuration")
        recorded = previous[0].get("configuration")
        if recorded is not None and recorded != by_name[name].configuration:
            changed = sorted(k for k in {*recorded, *(by_name[name].configuration or {})}
                             if recorded.get(k) != (by_name[name].configuration or {}).get(k))
            raise InputError(f"--resume {path}: the suite configuration {name!r} differs ({', '.join(changed)} "
                             "changed since): run with the configuration as it was, or without --resume")
        out[name] = (path, previous)
    return out


def first_resume_file(resume: Path) -> Path:
    """The first file of ``--resume A[,B...]`` (the one whose recorded settings fill the run's)."""
    return Path(str(resume).split(",")[0].strip())
