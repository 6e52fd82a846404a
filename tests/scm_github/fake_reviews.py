"""Reviews and team memberships in the fake GitHub, built from genuine REST examples."""

from __future__ import annotations

import itertools
import re
from collections.abc import Callable
from typing import Any

from .fake_state import NOT_FOUND, Answer, FakeRepo, Handler
from .genuine import Genuine

REPO = r"^/repos/([^/]+)/([^/]+)"


class ReviewRoutes:
    """``GET/POST /pulls/{n}/reviews`` and ``GET /orgs/{org}/teams/{slug}/memberships/{u}``."""

    genuine: Genuine

    def __init__(self, pull: Callable[[str, str, str], tuple[FakeRepo, dict[str, Any]]]) -> None:
        """``pull`` finds a stored pull request (404 when there is none)."""
        self._find_pull = pull
        self.reviews: dict[tuple[str, int], list[dict[str, Any]]] = {}
        self.teams: dict[tuple[str, str], set[str]] = {}
        self._review_ids = itertools.count(80)

    def review_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        return [
            ("GET", re.compile(REPO + r"/pulls/(\d+)/reviews$"), self._list_reviews, "repo"),
            ("POST", re.compile(REPO + r"/pulls/(\d+)/reviews$"), self._create_review, "repo"),
            (
                "GET",
                re.compile(r"^/orgs/([^/]+)/teams/([^/]+)/memberships/([^/]+)$"),
                self._membership,
                "repo",
            ),
        ]

    def review(self, full_name: str, number: int, user: str, state: str, commit: str) -> None:
        """A person's review, as GitHub lists it (the genuine example, with these fields)."""
        item = dict(self.genuine.openapi("pulls.list-reviews.200")[0])
        item.update(
            id=next(self._review_ids),
            user={**item["user"], "login": user},
            state=state,
            commit_id=commit,
        )
        self.reviews.setdefault((full_name, number), []).append(item)

    def _list_reviews(self, owner: str, name: str, number: str, **_: Any) -> Answer:
        self._find_pull(owner, name, number)
        return 200, {}, list(self.reviews.get((f"{owner}/{name}", int(number)), []))

    def _create_review(
        self, owner: str, name: str, number: str, *, query: Any, body: Any
    ) -> Answer:
        _, pull = self._find_pull(owner, name, number)
        state = {"APPROVE": "APPROVED", "REQUEST_CHANGES": "CHANGES_REQUESTED"}.get(
            body.get("event", ""), "COMMENTED"
        )
        self.review(f"{owner}/{name}", int(number), "octocat", state, pull["head"]["sha"])
        return 200, {}, self.reviews[(f"{owner}/{name}", int(number))][-1]

    def _membership(self, org: str, slug: str, user: str, **_: Any) -> Answer:
        if user not in self.teams.get((org, slug), set()):
            return 404, {}, NOT_FOUND
        return (
            200,
            {},
            {
                "url": f"/orgs/{org}/teams/{slug}/memberships/{user}",
                "role": "member",
                "state": "active",
            },
        )
