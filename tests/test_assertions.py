"""No test's assertions all sit under a condition: such a test passes, checking nothing,
as soon as its case stops happening (a hypothesis property whose case is no longer drawn).

An assertion is an ``assert`` or a ``pytest.raises``/``pytest.warns`` block; it sits under
a condition inside an ``if``/``elif``/``else``, a conditional expression, a ``match``, a
``while`` or a ``try``'s ``except``/``else``/``finally``. A loop's body is not a condition
(a property's cases are checked to be drawn in their own tests). An ``assert x is not
None`` or ``assert isinstance(...)`` only narrows a type: it is not the test's assertion.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

TESTS = Path(__file__).parent
CONDITIONS = (ast.If, ast.IfExp, ast.Match, ast.While)
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def narrows(node: ast.Assert) -> bool:
    """``assert a is not None and isinstance(b, C)``: for the type checker only."""
    test = node.test
    parts = test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And) else [test]
    return all(
        (
            isinstance(part, ast.Compare)
            and [type(op) for op in part.ops] == [ast.IsNot]
            and isinstance(part.comparators[0], ast.Constant)
            and part.comparators[0].value is None
        )
        or (
            isinstance(part, ast.Call)
            and isinstance(part.func, ast.Name)
            and part.func.id == "isinstance"
        )
        for part in parts
    )


def checks(node: ast.AST) -> bool:
    """An assertion: an ``assert`` that does more than narrow, or ``with pytest.raises``."""
    if isinstance(node, ast.Assert):
        return not narrows(node)
    if isinstance(node, ast.With | ast.AsyncWith):
        for item in node.items:
            call = item.context_expr
            if (
                isinstance(call, ast.Call)
                and isinstance(call.func, ast.Attribute)
                and call.func.attr in ("raises", "warns")
            ):
                return True
    return False


def assertions(node: ast.AST, conditional: bool = False) -> Iterator[bool]:
    """For each assertion in ``node`` (not in nested functions): whether it is conditional."""
    for child in ast.iter_child_nodes(node):
        if isinstance(child, SCOPES):
            continue
        under = conditional
        if isinstance(node, CONDITIONS) and child is not getattr(node, "test", None):
            under = True
        if isinstance(node, ast.Try | ast.TryStar) and child not in node.body:
            under = True
        if checks(child):
            yield under
        yield from assertions(child, under)


def only_conditional(source: str) -> list[str]:
    """The tests of ``source`` whose every assertion sits under a condition."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith(
            "test"
        ):
            kinds = list(assertions(node))
            if kinds and all(kinds):
                found.append(node.name)
    return found


def test_no_test_has_its_only_assertions_under_a_condition() -> None:
    offenders = [
        f"{path.relative_to(TESTS.parent)}::{name}"
        for path in sorted(TESTS.rglob("test_*.py"))
        for name in only_conditional(path.read_text())
    ]
    assert offenders == []


def test_the_check_sees_an_assertion_under_a_condition_and_lets_the_others_be() -> None:
    source = """
def test_under_an_if(x):
    assert x is not None
    if x.ready:
        assert x.value == 1

def test_under_a_match(x):
    match x:
        case 1:
            with pytest.raises(ValueError):
                f(x)

def test_in_an_except(x):
    try:
        f(x)
    except ValueError:
        assert False

def test_in_a_loop_and_after_an_if(xs):
    for x in xs:
        assert x
    if xs:
        print(xs)
    assert len(xs) == 2

def test_raises_at_the_top(x):
    with pytest.raises(ValueError):
        f(x)

def test_with_no_assertion():
    f()
"""
    assert only_conditional(source) == [
        "test_under_an_if",
        "test_under_a_match",
        "test_in_an_except",
    ]
