"""An environment named by a person: the one lookup every surface uses.

A person names an environment by its branch (``environment/prod``) or the branch's last
part (``prod``). The whole branch always wins; a last part that two branches share
(``team-a/prod``, ``team-b/prod``) names neither: ``AmbiguousName`` lists both, and the
caller answers with them (the API's 409, the CLI's list) rather than act on the first.
Strategy names are never abbreviated: they are looked up whole (``Config.strategy``).
"""

from __future__ import annotations

from collections.abc import Sequence

from promoter.errors import AmbiguousName


def short_name(branch: str) -> str:
    """The last part of ``branch``: ``prod`` of ``environment/prod``."""
    return branch.rsplit("/", 1)[-1]


def environment_index(branches: Sequence[str], name: str, *, strategy: str = "") -> int | None:
    """The index in ``branches`` of the environment ``name`` names: the branch itself, or
    the one branch whose last part it is; None when it names none.

    ``AmbiguousName`` (naming ``strategy`` in its message) when it is the last part of
    several branches and none of them whole."""
    if name in branches:
        return list(branches).index(name)
    found = [i for i, branch in enumerate(branches) if short_name(branch) == name]
    if len(found) > 1:
        raise AmbiguousName(name, [branches[i] for i in found], strategy=strategy)
    return found[0] if found else None


def environment_branch(branches: Sequence[str], name: str, *, strategy: str = "") -> str | None:
    """The branch of the environment ``name`` names (``environment_index``), or None."""
    index = environment_index(branches, name, strategy=strategy)
    return None if index is None else branches[index]
