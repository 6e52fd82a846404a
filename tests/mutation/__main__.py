"""Print the mutation score of each module of ``[tool.mutmut] only_mutate`` and every
survivor that docs/testing.md does not explain; exit 1 below the target or on one.

Run from the repository's root after ``mutmut run`` and ``python -m tests.mutation.wider``
(``make mutate`` does all three): a mutant either caught is killed. ``--only PATTERN...``
reports the modules those globs match alone (``--only 'promoter/http/access/*'``), after a
``mutmut run`` of theirs. A
survivor is explained when docs/testing.md lists it under "Equivalent mutants" by its
module, its function and its one changed line, before and after: that names it whatever
mutmut's number for it, and the entry goes stale, and the mutant is reported again,
when the line it names changes.
"""

from __future__ import annotations

import fnmatch
import json
import re
import sys
import tomllib
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

TARGET = 90.0
"""The lowest mutation score accepted: killed mutants out of all, equivalent ones included
(percent)."""
DOC = Path("docs/testing.md")
WIDER = Path("mutants/wider.json")
"""What the survivors' run against their module's wider tests killed (tests.mutation.wider)."""
KILLED = {1, 3, 24, -24, 152, 255, 36, 37, -11, -9}
"""mutmut's exit codes of a mutant its tests (or mypy, or a timeout) caught."""
SURVIVED = {0, 5, 33, 35}
"""Survived, no test, or suspicious: not caught."""


@dataclass(frozen=True)
class Mutant:
    module: str
    name: str
    function: str
    before: str
    after: str

    @property
    def key(self) -> tuple[str, str, str, str]:
        """How docs/testing.md names it: module, function, its line before and after."""
        return (self.module, self.function, self.before, self.after)


def mutant_of(module: str, name: str) -> tuple[Mutant, str]:
    """Mutant ``name`` of ``module`` (as ``mutants/`` holds it), and its diff."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    diff = get_diff_for_mutant(name, path=module)
    return Mutant(module, name, function_of(name), *changed_line(diff)), diff


def function_of(name: str) -> str:
    """``mod.xǁClassǁmethod__mutmut_3`` -> ``Class.method``; ``mod.x_f__mutmut_1`` -> ``f``."""
    local = name.rsplit("__mutmut_", 1)[0].rsplit(".", 1)[1]
    if local.startswith("xǁ"):
        return ".".join(local[2:].split("ǁ"))
    return local.removeprefix("x_")


def changed_line(diff: str) -> tuple[str, str]:
    """The one line a mutant changed, before and after (joined when it spans several)."""
    before = " ".join(ln[1:].strip() for ln in diff.splitlines()[2:] if ln.startswith("-"))
    after = " ".join(ln[1:].strip() for ln in diff.splitlines()[2:] if ln.startswith("+"))
    return before, after


def explained(doc: str) -> set[tuple[str, str, str, str]]:
    """The equivalent mutants docs/testing.md lists: (module, function, before, after)."""
    section = doc.split("## Equivalent mutants", 1)[-1].split("\n## ", 1)[0]
    rows = set()
    for line in section.splitlines():
        cells = [c.strip() for c in re.split(r"(?<!\\)\|", line.strip())[1:-1]]
        if len(cells) < 4 or not cells[0].startswith("`"):
            continue
        module, function, before, after = (c.strip("`").replace("\\|", "|") for c in cells[:4])
        rows.add((module, function, before, after))
    return rows


def listed(patterns: list[str], root: Path = Path(".")) -> list[str]:
    """The modules ``only_mutate`` names, in its order: a glob (``promoter/http/access/*.py``)
    stands for each file it matches."""
    found: list[str] = []
    for pattern in patterns:
        if any(c in pattern for c in "*?["):
            matches = sorted(str(p.relative_to(root)) for p in root.glob(pattern))
        else:
            matches = [pattern]
        found += [m for m in matches if m not in found]
    return found


def modules_of(pyproject: Path = Path("pyproject.toml")) -> list[str]:
    """Every module ``[tool.mutmut] only_mutate`` names."""
    patterns = tomllib.loads(pyproject.read_text())["tool"]["mutmut"]["only_mutate"]
    return listed(patterns, pyproject.parent)


def main(argv: list[str]) -> int:
    modules = modules_of()
    if "--only" in argv:
        wanted = argv[argv.index("--only") + 1 :]
        modules = [m for m in modules if any(fnmatch.fnmatch(m, w) for w in wanted)]
    known = explained(DOC.read_text())
    wider = json.loads(WIDER.read_text()) if WIDER.exists() else {}
    totals: Counter[str] = Counter()
    unexplained: list[tuple[Mutant, str]] = []
    print(
        f"{'module':40} {'mutants':>8} {'killed':>7} {'equiv.':>7} {'left':>5} {'unrun':>6}"
        f" {'score':>7}"
    )
    for module in modules:
        meta = Path("mutants") / f"{module}.meta"
        codes = json.loads(meta.read_text())["exit_code_by_key"] if meta.exists() else {}
        counts: Counter[str] = Counter()
        for name, code in sorted(codes.items()):
            if code in KILLED or wider.get(name, 0) not in SURVIVED:
                counts["killed"] += 1
                continue
            if code is None:  # not run yet (an interrupted run)
                counts["unchecked"] += 1
                continue
            mutant, diff = mutant_of(module, name)
            if mutant.key in known:
                counts["equivalent"] += 1
            else:
                counts["left"] += 1
                unexplained.append((mutant, diff))
        score = 100.0 * counts["killed"] / len(codes) if codes else 100.0
        totals.update(counts)
        totals["mutants"] += len(codes)
        print(
            f"{module:40} {len(codes):8} {counts['killed']:7} {counts['equivalent']:7}"
            f" {counts['left']:5} {counts['unchecked']:6} {score:6.1f}%"
        )
    overall = 100.0 * totals["killed"] / totals["mutants"] if totals["mutants"] else 100.0
    print(
        f"{'all':40} {totals['mutants']:8} {totals['killed']:7} {totals['equivalent']:7}"
        f" {totals['left']:5} {totals['unchecked']:6} {overall:6.1f}%"
    )
    for mutant, diff in unexplained:
        print(f"\nsurvived: {mutant.name} ({mutant.function})\n{diff}")
    if unexplained:
        print(
            f"\n{len(unexplained)} survivors: kill each with a test, or list it in {DOC}"
            " under 'Equivalent mutants' with why (module | function | before | after | why)."
        )
    if totals["unchecked"]:
        print(f"\n{totals['unchecked']} mutants not run yet: run `mutmut run` to the end")
    if overall < TARGET:
        print(f"\nbelow the target of {TARGET:.0f} %")
    return 1 if unexplained or totals["unchecked"] or overall < TARGET else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
