"""The layout: no import circle between files or packages, ``utils`` a true ground floor, the system
under test reached only by name, the harness's types defined in the harness.

Every ``import`` of every module of ``utils/``, ``poc/``, ``components/`` and ``benchmark.py`` counts,
wherever it is written: at the top, inside a function, under ``if TYPE_CHECKING:``. An
``importlib`` lookup by a registered name (the strategy and provider registries) is not an import
and is the one allowed way across. A package is ``utils``, ``poc``, ``benchmark``, the top-level
modules of ``components/`` together, and each subpackage ``components/<name>/``. ``tests/`` and
``bench/`` are not walked: they may import anything.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HARNESS_TYPES = ("Chunk", "ScoredChunk", "Retriever", "Document", "Corpus", "Question")


def modules(root: Path) -> dict[str, Path]:
    """Module name → file, for every module of the packages above and ``benchmark.py``."""
    found = {"benchmark": root / "benchmark.py"}
    for top in ("utils", "poc", "components"):
        for path in (root / top).rglob("*.py"):
            parts = list(path.relative_to(root).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def package(module: str, root: Path) -> str:
    parts = module.split(".")
    if parts[0] != "components":
        return parts[0]
    return f"components.{parts[1]}" if len(parts) > 1 and (root / "components" / parts[1]).is_dir() else "components"


def imports(root: Path) -> dict[tuple[str, str], str]:
    """Every import between two modules: ``(importer, imported)`` → where the first one is written."""
    mods = modules(root)

    def resolve(name: str) -> str | None:  # the deepest module a dotted name names
        while name and name not in mods:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[tuple[str, str], str] = {}
    for mod, path in mods.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:  # relative: from the importer's package, level - 1 packages up
                    package_parts = mod.split(".") if path.name == "__init__.py" else mod.split(".")[:-1]
                    package_parts = package_parts[:len(package_parts) - node.level + 1]
                    base = ".".join([*package_parts, *([node.module] if node.module else [])])
                names = [f"{base}.{alias.name}" for alias in node.names] + [base]
            else:
                continue
            for name in names:
                target = resolve(name)
                if target and target != mod:
                    edges.setdefault((mod, target), f"{path.relative_to(root)}:{node.lineno}")
    return edges


def package_imports(root: Path) -> dict[tuple[str, str], str]:
    """``(package, package)`` → where the first import between them is written."""
    out: dict[tuple[str, str], str] = {}
    for (a, b), where in sorted(imports(root).items()):
        pa, pb = package(a, root), package(b, root)
        if pa != pb:
            out.setdefault((pa, pb), f"{where} ({a} -> {b})")
    return out


def circles(edges: dict[tuple[str, str], str]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan's algorithm), each sorted."""
    graph: dict[str, list[str]] = defaultdict(list)
    for a, b in edges:
        graph[a].append(b)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                found.append(sorted(component))

    for v in list(graph):
        if v not in index:
            visit(v)
    return found


def described(cycles: list[list[str]], edges: dict[tuple[str, str], str]) -> list[str]:
    """Each circle with the imports that close it."""
    return [" <-> ".join(c) + ": " + "; ".join(f"{a} -> {b} at {where}" for (a, b), where in sorted(edges.items())
                                              if a in c and b in c) for c in cycles]


def utils_imports_upward(root: Path) -> list[str]:
    return [f"{a} -> {b} at {where}" for (a, b), where in sorted(imports(root).items())
            if package(a, root) == "utils" and package(b, root) != "utils"]


def static_imports_of_poc(root: Path) -> list[str]:
    return [f"{a} -> {b} at {where}" for (a, b), where in sorted(imports(root).items())
            if package(a, root) != "poc" and package(b, root) == "poc"]


def harness_types_in_poc(root: Path) -> list[str]:
    """Where ``poc/`` defines a harness type (a class, or an assignment to its name)."""
    found = []
    for path in sorted((root / "poc").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                names = [node.name]
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = [t.id for t in targets if isinstance(t, ast.Name)]
            else:
                continue
            found += [f"{name} at {path.relative_to(root)}:{node.lineno}" for name in names if name in HARNESS_TYPES]
    return found


# --------------------------------------------------------------------------- the project


def test_no_import_circle_between_files():
    edges = imports(ROOT)
    assert described(circles(edges), edges) == []


def test_no_import_circle_between_packages():
    edges = package_imports(ROOT)
    assert described(circles(edges), edges) == []


def test_utils_imports_nothing_from_components_or_poc():
    assert utils_imports_upward(ROOT) == []


def test_the_system_under_test_is_reached_only_by_name():
    """Only ``importlib`` by a registered name reaches ``poc/`` (``components.core.strategies``)."""
    assert static_imports_of_poc(ROOT) == []


def test_the_harness_types_are_not_defined_in_poc():
    assert harness_types_in_poc(ROOT) == []


# --------------------------------------------------------------------------- the checks themselves


def _project(root: Path, files: dict[str, str]) -> Path:
    for name, text in {"benchmark.py": "", "utils/__init__.py": "", "poc/__init__.py": "",
                       "components/__init__.py": "", **files}.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    return root


def test_the_checks_find_what_they_look_for(tmp_path: Path):
    root = _project(tmp_path, {
        "components/core/__init__.py": "",
        "components/core/a.py": "def f():\n    from components.core import b\n",  # a function-level import
        "components/core/b.py": "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from .a import f\n",
        "components/run/__init__.py": "from components.core.a import f\n",
        "components/core/c.py": "import components.run\n",  # core <-> run: a package circle only
        "utils/x.py": "def g():\n    import poc.y\n",
        "poc/y.py": "class Chunk:\n    pass\nScoredChunk = object\n",
        "components/api.py": "from poc.y import Chunk\nimport importlib\nimportlib.import_module('poc.y')\n",
    })
    file_edges = imports(root)
    assert described(circles(file_edges), file_edges) == [
        "components.core.a <-> components.core.b: components.core.a -> components.core.b at components/core/a.py:2; "
        "components.core.b -> components.core.a at components/core/b.py:3"]
    assert circles(package_imports(root)) == [["components.core", "components.run"]]
    assert utils_imports_upward(root) == ["utils.x -> poc.y at utils/x.py:2"]
    assert static_imports_of_poc(root) == ["components.api -> poc.y at components/api.py:1",
                                           "utils.x -> poc.y at utils/x.py:2"]
    assert harness_types_in_poc(root) == ["Chunk at poc/y.py:1", "ScoredChunk at poc/y.py:3"]


def test_a_project_without_those_faults_passes_them(tmp_path: Path):
    root = _project(tmp_path, {"components/core/__init__.py": "from components.core.chunk import Chunk\n",
                               "components/core/chunk.py": "class Chunk:\n    pass\n",
                               "poc/retriever.py": "from components.core import Chunk\n",
                               "utils/x.py": "import json\n"})
    assert circles(imports(root)) == circles(package_imports(root)) == []
    assert utils_imports_upward(root) == static_imports_of_poc(root) == harness_types_in_poc(root) == []


def test_the_old_import_paths_of_the_types_keep_working():
    """Plug-ins written against the old layout import the types from ``poc``: the same objects."""
    from components.core import Chunk, Corpus, Document, Retriever, ScoredChunk
    from components.readers import load_corpus
    from poc.chunking import Chunk as OldChunk
    from poc.corpus import Corpus as OldCorpus, Document as OldDocument, load_corpus as old_load_corpus
    from poc.retriever import Chunk as RetrieverChunk, Retriever as OldRetriever, ScoredChunk as OldScoredChunk

    assert (OldChunk, RetrieverChunk, OldCorpus, OldDocument, OldRetriever, OldScoredChunk, old_load_corpus) == \
        (Chunk, Chunk, Corpus, Document, Retriever, ScoredChunk, load_corpus)
