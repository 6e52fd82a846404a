"""Reviews of a GitHub pull request, for the approval gate.

One conditional call for the reviews (free when unchanged), plus one call per approver
and team asked about (``GET /orgs/{org}/teams/{slug}/memberships/{user}``).
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from promoter.config import Repository
from promoter.errors import ScmNotFound
from promoter.models import Review
from scm_plugins.github.api import RepoApi

DECIDING = {"APPROVED": True, "CHANGES_REQUESTED": False, "DISMISSED": False}
"""Review states that set where a reviewer stands; COMMENTED and PENDING do not."""


def to_review(data: dict[str, Any]) -> Review | None:
    """A GitHub review (REST shape) as a ``Review``, or None when it decides nothing."""
    approved = DECIDING.get(str(data.get("state") or ""))
    user = (data.get("user") or {}).get("login")
    if approved is None or not user:
        return None
    return Review(user=str(user), approved=approved, commit_sha=str(data.get("commit_id") or ""))


def _reviews(data: Any) -> list[Review]:
    """The reviews of a page of ``GET /pulls/{n}/reviews``: what is read, and all the ETag
    cache keeps of the page."""
    return [r for r in (to_review(item) for item in data or []) if r is not None]


class Reviews:
    """The reviews half of the GitHub plugin."""

    def __init__(self, api: RepoApi) -> None:
        self._api = api

    def get(self, *, repo: Repository, number: int, teams: Collection[str]) -> list[Review]:
        data = self._api.call(
            repo,
            "get_reviews",
            "GET",
            f"/pulls/{number}/reviews",
            params={"per_page": 100},
            conditional=True,
            keep=_reviews,
            pr=number,
        )
        found: list[Review] = list(data)  # the cached list stays as it was
        if not teams:
            return found
        approvers = {r.user for r in found if r.approved}
        member_of = {
            user: tuple(t for t in teams if self._member(repo, t, user)) for user in approvers
        }
        return [r.model_copy(update={"teams": member_of.get(r.user, ())}) for r in found]

    def _member(self, repo: Repository, team: str, user: str) -> bool:
        """Whether ``user`` is an active member of ``team`` (``org/slug``, or a slug of the
        repository's owner)."""
        org, _, slug = team.rpartition("/")
        org = org or repo.full_path.split("/", 1)[0]
        token = self._api.credentials.token(repo=repo)
        try:
            active: bool = self._api.client.request(
                "get_team_membership",
                "GET",
                f"/orgs/{org}/teams/{slug}/memberships/{user}",
                authorization=f"token {token}",
                conditional=True,
                keep=lambda data: isinstance(data, dict) and data.get("state") == "active",
                repo=repo.full_path,
            )
        except ScmNotFound:
            return False
        return active
