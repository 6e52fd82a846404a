"""The fake GitHub's ``GET /repos/{owner}/{repo}/commits/{sha}`` with its ``verification``.

The body is PyGithub's recording of the real answer (``GitCommitVerification.setUp``),
with the commit's SHA and GitHub's verdict on its signature filled in: "unsigned" for a
commit nobody said was signed (``verify``), 422 for a SHA the repository lacks.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from typing import Any

from . import fake_git
from .fake_state import Answer, FakeRepo, Handler
from .genuine import Genuine

REPO = r"^/repos/([^/]+)/([^/]+)"


class CommitRoutes(ABC):
    genuine: Genuine
    verdicts: dict[str, tuple[bool, str]]

    @abstractmethod
    def _repo(self, owner: str, name: str) -> FakeRepo:
        """The repository or a 404, from the fake that mixes these routes in."""

    def commit_routes(self) -> list[tuple[str, re.Pattern[str], Handler, str]]:
        self.verdicts = {}
        return [("GET", re.compile(REPO + r"/commits/([0-9a-f]{40})$"), self._commit, "repo")]

    def verify(self, sha: str, *, verified: bool, reason: str = "valid") -> None:
        """What GitHub says of ``sha``'s signature from now on."""
        self.verdicts[sha] = (verified, reason)

    def _commit(self, owner: str, name: str, sha: str, **_: Any) -> Answer:
        repo = self._repo(owner, name)
        if not fake_git.commit_exists(repo.git_dir, sha):
            return 422, {}, {"message": f"No commit found for SHA: {sha}"}
        body = self.genuine.replay("GitCommitVerification.setUp")[0].body
        verified, reason = self.verdicts.get(sha, (False, "unsigned"))
        body["sha"] = sha
        body["commit"]["verification"].update(verified=verified, reason=reason)
        if reason == "unsigned":
            body["commit"]["verification"].update(signature=None, payload=None)
        return 200, {}, body
