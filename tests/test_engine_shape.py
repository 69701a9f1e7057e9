"""The engine's shape: nothing in ``components/run/`` asks whether the run has a panel of judges or
an adaptive plan. A single judge is the panel of one and judging every question is a plan
(:mod:`components.run.judges`, :class:`components.run.adaptive.JudgeEvery`): the engine asks the
object it was given, and the one place a panel is told apart is :func:`components.judges.panel.choose`.

A test (the condition of an ``if``, a conditional expression, a ``while``, an ``assert``, a
comprehension's filter, or an operand of ``and``/``or``) must not name ``panel`` or ``members``, compare
``plan`` (or ``adaptive``) with None, or take ``len(judges)`` / ``len(members)``."""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
ENGINE = ROOT / "components" / "run"
NAMES = frozenset({"panel", "members"})
OPTIONAL = frozenset({"plan", "adaptive"})
COUNTED = frozenset({"judges", "members"})


def _name(node: ast.AST) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return None


def _asks(test: ast.AST) -> str | None:
    """What ``test`` asks that it must not, or None."""
    for node in ast.walk(test):
        if _name(node) in NAMES:
            return f"names {_name(node)!r}"
        if isinstance(node, ast.Compare) and any(isinstance(op, (ast.Is, ast.IsNot)) for op in node.ops):
            sides = [node.left, *node.comparators]
            if any(_name(s) in OPTIONAL for s in sides) and any(isinstance(s, ast.Constant) and s.value is None
                                                                 for s in sides):
                return "compares a plan with None"
        if isinstance(node, ast.Call) and _name(node.func) == "len" and node.args and _name(node.args[0]) in COUNTED:
            return f"counts {_name(node.args[0])!r}"
    return None


def _tests(tree: ast.AST):
    for node in ast.walk(tree):
        if isinstance(node, (ast.If, ast.IfExp, ast.While, ast.Assert)):
            yield node.test
        elif isinstance(node, ast.comprehension):
            yield from node.ifs
        elif isinstance(node, ast.BoolOp):
            yield from node.values


def branches(source: str, where: str = "<snippet>") -> list[str]:
    """``where:line: what`` for each test of ``source`` that asks whether there is a panel or a plan."""
    out = []
    for test in _tests(ast.parse(source)):
        what = _asks(test)
        if what is not None:
            out.append(f"{where}:{test.lineno}: {what}: {ast.unparse(test)[:80]}")
    return out


def test_the_engine_never_asks_whether_there_is_a_panel_or_a_plan():
    found = [line for path in sorted(ENGINE.rglob("*.py"))
             for line in branches(path.read_text(encoding="utf-8"), str(path.relative_to(ROOT)))]
    assert found == [], "\n".join(found)


def test_the_check_finds_each_kind_of_branch():
    snippet = (
        "if judging.members:\n    pass\n"
        "x = a if settings.panel else b\n"
        "if plan is None:\n    pass\n"
        "while adaptive is not None:\n    break\n"
        "y = [j for j in js if len(judges) > 1]\n"
        "z = settings.panel or [settings]\n"
        "assert len(members) == 1\n"
    )
    found = branches(snippet)
    assert sorted({int(line.split(":")[1]) for line in found}) == [1, 3, 4, 6, 8, 9, 10], found


def test_the_check_lets_the_engine_ask_its_objects():
    snippet = (
        "judges = kind.start(judging)\n"
        "if judges.failure is not None:\n    pass\n"
        "rows = plan.in_question_order(rows, selected)\n"
        "member = member or judges.first\n"
        "if len(rows) > 1:\n    pass\n"
    )
    assert branches(snippet) == []
