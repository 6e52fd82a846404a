"""Reviewer requests as the SCM takes them: one request for everyone; when the SCM refuses it
as a whole (GitHub answers 422 for every name when one is the PR's author or not a
collaborator; GitLab refuses a username it does not know), each user and team is asked
alone, so that one refused name does not leave everyone else unasked. What the SCM refused,
and why in its words, is returned for the PR to be told."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from promoter.config import Repository
from promoter.errors import ScmConflict
from scm_plugins.protocol import ReviewerRequests

WORDS = 200
"""Characters of the SCM's refusal kept per name."""


@dataclass
class Asked:
    """Who was asked, and who the SCM refused, each with its words."""

    users: list[str] = field(default_factory=list)
    teams: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)


def ask(
    plugin: ReviewerRequests,
    repo: Repository,
    number: int,
    users: Sequence[str],
    teams: Sequence[str],
) -> Asked:
    """Ask for ``users`` and ``teams`` on PR ``number``: at once, else one by one."""
    if not (users or teams):
        return Asked()
    try:
        plugin.request_reviewers(repo=repo, number=number, users=users, teams=teams)
        return Asked(list(users), list(teams))
    except ScmConflict as exc:
        if len(users) + len(teams) == 1:  # the one name is the refused one
            return Asked(refused=[f"{(*users, *teams)[0]} (refused: {_words(exc)})"])
    asked = Asked()
    for kind, name in [*(("user", u) for u in users), *(("team", t) for t in teams)]:
        alone = ([name], []) if kind == "user" else ([], [name])
        try:
            plugin.request_reviewers(repo=repo, number=number, users=alone[0], teams=alone[1])
        except ScmConflict as exc:
            asked.refused.append(f"{name} (refused: {_words(exc)})")
            continue
        (asked.users if kind == "user" else asked.teams).append(name)
    return asked


def _words(exc: ScmConflict) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= WORDS else text[: WORDS - 1] + "…"
