"""How ``make mutate``'s report names a mutant and finds it among docs/testing.md's
equivalent ones: by module, function and its one changed line, whatever mutmut's number."""

from __future__ import annotations

from tests.mutation.__main__ import (
    DOC,
    Mutant,
    changed_line,
    explained,
    function_of,
    listed,
    modules_of,
)

DIFF = """--- promoter/engine/gates/gates.py
+++ promoter/engine/gates/gates.py
@@ -2,7 +2,7 @@
     env = snapshot.environments[index]
-    if said and parts:
+    if said or parts:
         parts[-1] += said
"""


def test_a_mutants_function_is_named_as_in_the_source() -> None:
    assert function_of("promoter.engine.gates.gates.x__after__mutmut_79") == "_after"
    assert function_of("scm_plugins.budget.xǁTicketǁclose__mutmut_4") == "Ticket.close"


def test_the_changed_line_is_read_from_the_diff_before_and_after() -> None:
    assert changed_line(DIFF) == ("if said and parts:", "if said or parts:")


def test_a_listed_equivalent_is_found_by_its_line_and_a_pipe_in_code_is_kept() -> None:
    doc = "\n".join(
        [
            "## Equivalent mutants",
            "",
            "| module | function | before | after | why |",
            "|---|---|---|---|---|",
            "| `promoter/engine/gates/gates.py` | `_after` | `if said and parts:`"
            " | `if said or parts:` | x |",
            "| `m.py` | `f` | `a \\| b` | `a & b` | y |",
            "",
            "## Next",
            "",
            "| `n.py` | `g` | `1` | `2` | z |",
        ]
    )
    mutant = Mutant("promoter/engine/gates/gates.py", "n", "_after", *changed_line(DIFF))
    found = explained(doc)
    assert mutant.key in found
    assert ("m.py", "f", "a | b", "a & b") in found
    assert ("n.py", "g", "1", "2") not in found  # another section's table


def test_every_equivalent_in_the_docs_names_a_listed_module() -> None:
    modules = set(modules_of())
    rows = explained(DOC.read_text())
    assert len(rows) > 50
    assert {module for module, *_ in rows} <= modules


def test_a_glob_of_only_mutate_stands_for_each_module_it_matches_in_order() -> None:
    modules = modules_of()
    access = [m for m in modules if m.startswith("promoter/http/access/")]
    assert "promoter/http/access/guard.py" in access and "promoter/http/access/*.py" not in modules
    assert access == sorted(access)
    assert listed(["webhooks/verify.py", "webhooks/verif*.py"]) == ["webhooks/verify.py"]
