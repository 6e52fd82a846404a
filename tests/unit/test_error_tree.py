"""The error tree drawn in ``promoter.errors``' docstring names every class of the module
once, each under a class it derives from, and each SCM error under the retry it gets."""

from __future__ import annotations

import inspect
import re

from promoter import errors

NODE = re.compile(r"^    (?P<tree>(?:[│ ]   )*(?:[├└]── )?)(?P<name>[A-Z]\w+)\s")


def drawing() -> list[tuple[str, list[str]]]:
    """Each class of the drawing, in its order, with the classes drawn above it."""
    doc = errors.__doc__ or ""
    block = doc.split("::\n\n", 1)[1].split("\n\n", 1)[0]
    above: list[str] = []
    nodes = []
    for line in block.splitlines():
        found = NODE.match(line)
        assert found is not None, f"not a line of the tree: {line!r}"
        del above[len(found["tree"]) // 4 :]
        nodes.append((found["name"], list(above)))
        above.append(found["name"])
    return nodes


def defined() -> dict[str, type]:
    return {
        name: cls
        for name, cls in inspect.getmembers(errors, inspect.isclass)
        if cls.__module__ == errors.__name__
    }


def test_the_drawing_names_every_class_of_the_module_once() -> None:
    assert sorted(name for name, _ in drawing()) == sorted(defined())


def test_each_class_is_drawn_under_a_class_it_derives_from() -> None:
    classes = defined()
    tree = drawing()
    assert [name for name, above in tree if not above] == ["PromoterError"]
    wrong = [
        (name, above[-1])
        for name, above in tree
        if above and not issubclass(classes[name], classes[above[-1]])
    ]
    assert wrong == []


def test_each_scm_error_is_drawn_under_the_retry_it_gets() -> None:
    classes = defined()
    scm = [
        (name, above)
        for name, above in drawing()
        if issubclass(classes[name], errors.ScmError) and classes[name] is not errors.ScmError
    ]
    assert len(scm) > 3
    retry = {True: "TemporaryError", False: "PermanentError"}
    misplaced = [
        name
        for name, above in scm
        if retry[issubclass(classes[name], errors.TemporaryError)] not in above
    ]
    assert misplaced == []
