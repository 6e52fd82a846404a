"""The fake GitHub's requested reviewers: ``POST/GET /pulls/{n}/requested_reviewers``.

The POST answers the pull request (GitHub's 201), the GET the ``{users, teams}`` PyGithub
recorded (``PullRequest.testReviewRequests``) with the fake's names. As on GitHub, a
request naming the PR's author, or someone who is not a collaborator (``collaborators``,
when set), is refused with 422 and changes nothing.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from .fake_state import Answer, FakeRepo, Handler
from .genuine import Genuine

REPO = r"^/repos/([^/]+)/([^/]+)"
AUTHOR = "octocat"
"""The author of every PR the fake renders (GitHub's example pull request's user)."""


class RequestedRoutes(ABC):
    genuine: Genuine
    collaborators: set[str] | None
    review_requests: list[tuple[int, tuple[str, ...], tuple[str, ...]]]

    @abstractmethod
    def _pull(self, owner: str, name: str, number: str) -> tuple[FakeRepo, dict[str, Any]]:
        """The repository and a stored pull request, or a 404."""

    @abstractmethod
    def _render(self, repo: FakeRepo, pr: dict[str, Any], *, listed: bool = False) -> Any:
        """A pull request as GitHub answers it."""

    def requested_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        self.collaborators = None
        self.review_requests = []
        path = re.compile(REPO + r"/pulls/(\d+)/requested_reviewers$")
        return [("POST", path, self._request, "repo"), ("GET", path, self._requested, "repo")]

    def _request(self, owner: str, name: str, number: str, *, query: Any, body: Any) -> Answer:
        repo, pr = self._pull(owner, name, number)
        users = [str(u) for u in (body or {}).get("reviewers", [])]
        teams = [str(t) for t in (body or {}).get("team_reviewers", [])]
        if AUTHOR in users:
            return 422, {}, _invalid("Review cannot be requested from pull request author.")
        if self.collaborators is not None and not set(users) <= self.collaborators:
            return (
                422,
                {},
                _invalid(
                    "Reviews may only be requested from collaborators. One or more of the users or"
                    f" teams you specified is not a collaborator of the {owner}/{name} repository."
                ),
            )
        pr.setdefault("requested_reviewers", [])
        pr.setdefault("requested_teams", [])
        pr["requested_reviewers"] += [u for u in users if u not in pr["requested_reviewers"]]
        pr["requested_teams"] += [t for t in teams if t not in pr["requested_teams"]]
        self.review_requests.append((int(number), tuple(users), tuple(teams)))
        rendered = self._render(repo, pr)
        return 201, {}, rendered

    def _requested(self, owner: str, name: str, number: str, **_: Any) -> Answer:
        _, pr = self._pull(owner, name, number)
        recorded = self.genuine.replay("PullRequest.testReviewRequests")[1].body
        user, team = recorded["users"][0], recorded["teams"][0]
        return (
            200,
            {},
            {
                "users": [{**user, "login": u} for u in pr.get("requested_reviewers", [])],
                "teams": [{**team, "slug": t, "name": t} for t in pr.get("requested_teams", [])],
            },
        )


def _invalid(message: str) -> dict[str, Any]:
    return {"message": message, "documentation_url": "https://docs.github.com/rest"}
