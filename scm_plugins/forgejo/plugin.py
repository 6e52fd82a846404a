"""``ForgejoScm``: pull requests, head-guarded merges and commit statuses on Forgejo / Gitea.

Served only out of process (``promoter-scm-forgejo``): the daemon talks to it
through ``promoter.scm/v1`` (v1.1: reviews, for the approval gate), never by importing
it. Labels are set by name (``PUT /issues/{n}/labels``); Forgejo drops a name the
repository has no label for without an error, so a missing label is created first
(``POST /labels``). One that cannot be created (no permission) is left off, and the
promoter reports the label as one the SCM does not keep. A merge sends
``head_commit_id`` so that Forgejo refuses it (409) when the head moved.
"""

from __future__ import annotations

import base64
import logging
import threading
from collections.abc import Collection, Mapping
from typing import Any
from urllib.parse import urlsplit

from promoter.config import Repository
from promoter.errors import ScmConflict, ScmError, ScmUnavailable, TemporaryError
from promoter.models import CommitStatus, PullRequest, PullRequestState, Review
from scm_plugins.forgejo import convert
from scm_plugins.forgejo.api import ForgejoApi

PAGE = 50
LABEL_COLOR = "#ededed"
"""The colour of a label the plugin creates (a person may change it; it is kept)."""
DESCRIPTION = "made by the promoter"

log = logging.getLogger("promoter.forgejo")


class ForgejoScm:
    name = "forgejo"
    folded_gate_keys: frozenset[str] = frozenset()

    def __init__(self, *, url: str, token: str, git_user: str = "promoter") -> None:
        self.url = url.rstrip("/")
        self.api = ForgejoApi(self.url, token)
        basic = base64.b64encode(f"{git_user}:{token}".encode()).decode()
        origin = urlsplit(self.url)
        self._git_env = {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{origin.scheme}://{origin.netloc}/.extraheader",
            "GIT_CONFIG_VALUE_0": f"Authorization: Basic {basic}",
        }
        self._known_labels: dict[str, set[str]] = {}
        self._labels_lock = threading.Lock()

    @staticmethod
    def _repo(repo: Repository) -> str:
        return "/repos/" + repo.full_path

    def _labels(self, repo: Repository, number: int, labels: tuple[str, ...]) -> tuple[str, ...]:
        if labels:
            self._create_missing(repo, set(labels))
        found = self.api.request(
            "PUT", f"{self._repo(repo)}/issues/{number}/labels", json={"labels": list(labels)}
        )
        return tuple(label["name"] for label in found or ())

    def _create_missing(self, repo: Repository, wanted: set[str]) -> None:
        """Create the labels of ``wanted`` the repository lacks (read once, then on a miss)."""
        with self._labels_lock:
            known = self._known_labels.get(repo.full_path)
            if known is None or not wanted <= known:
                known = self._list_labels(repo)
                self._known_labels[repo.full_path] = known
            for name in sorted(wanted - known):
                try:
                    self.api.request(
                        "POST",
                        f"{self._repo(repo)}/labels",
                        json={"name": name, "color": LABEL_COLOR, "description": DESCRIPTION},
                    )
                except ScmError as exc:
                    if isinstance(exc, TemporaryError):
                        raise
                    # A missing permission, say: the label stays off, the promoter reports it.
                    log.warning(
                        "cannot create a label",
                        extra={"repository": repo.full_path, "label": name, "error": str(exc)},
                    )
                    continue
                known.add(name)

    def _list_labels(self, repo: Repository) -> set[str]:
        names: set[str] = set()
        page = 1
        while True:
            items = self.api.request(
                "GET", f"{self._repo(repo)}/labels", params={"limit": PAGE, "page": page}
            )
            names.update(str(item.get("name", "")) for item in items or ())
            if not items or len(items) < PAGE:
                return names
            page += 1

    # --- pull requests ---------------------------------------------------------------

    def find_open_pull_request(
        self, *, repo: Repository, head: str, base: str
    ) -> PullRequest | None:
        page = 1
        while True:
            items = self.api.request(
                "GET",
                f"{self._repo(repo)}/pulls",
                params={"state": "open", "limit": PAGE, "page": page},
            )
            for item in items or ():
                if item["head"]["ref"] == head and item["base"]["ref"] == base:
                    return convert.pull_request(item)
            if not items or len(items) < PAGE:
                return None
            page += 1

    def open_pull_request(
        self,
        *,
        repo: Repository,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        try:
            data = self.api.request(
                "POST",
                f"{self._repo(repo)}/pulls",
                json={"head": head, "base": base, "title": title, "body": body},
            )
        except ScmConflict:  # 409: one is already open for head/base
            found = self.find_open_pull_request(repo=repo, head=head, base=base)
            if found is None:
                raise
            return found
        pr = convert.pull_request(data)
        if labels:
            pr = pr.model_copy(update={"labels": self._labels(repo, pr.number, labels)})
        return pr

    def update_pull_request(
        self, *, repo: Repository, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        data = self.api.request(
            "PATCH", f"{self._repo(repo)}/pulls/{number}", json={"title": title, "body": body}
        )
        pr = convert.pull_request(data)
        if pr.state is not PullRequestState.OPEN:
            raise ScmConflict(f"pull request {number} is {pr.state.value}")
        if set(labels) != set(pr.labels):
            pr = pr.model_copy(update={"labels": self._labels(repo, number, labels)})
        return pr

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        path = f"{self._repo(repo)}/pulls/{number}"
        self.api.request(
            "POST",
            path + "/merge",
            json={"Do": "merge", "MergeMessageField": message, "head_commit_id": expected_head_sha},
        )
        merged = convert.pull_request(self.api.request("GET", path))
        if merged.merge_sha is None:
            raise ScmUnavailable(f"pull request {number} merged without a merge commit yet")
        return merged.merge_sha

    def close_pull_request(self, *, repo: Repository, number: int, comment: str) -> None:
        if comment:
            self.comment_pull_request(repo=repo, number=number, body=comment)
        self.api.request("PATCH", f"{self._repo(repo)}/pulls/{number}", json={"state": "closed"})

    def comment_pull_request(self, *, repo: Repository, number: int, body: str) -> None:
        self.api.request(
            "POST", f"{self._repo(repo)}/issues/{number}/comments", json={"body": body}
        )

    def get_reviews(
        self, *, repo: Repository, number: int, teams: Collection[str] = ()
    ) -> list[Review]:
        """The PR's deciding reviews, oldest first. Forgejo teams are not looked up: a
        review names none, so an approval gate with ``teams`` counts no Forgejo review."""
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            found = self.api.request(
                "GET",
                f"{self._repo(repo)}/pulls/{number}/reviews",
                params={"limit": PAGE, "page": page},
            )
            items.extend(found or ())
            if not found or len(found) < PAGE:
                break
            page += 1
        items.sort(key=lambda item: int(item.get("id") or 0))
        return [r for r in (convert.review(item) for item in items) if r is not None]

    # --- statuses and credentials ----------------------------------------------------

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        items: list[dict[str, Any]] = []
        page = 1
        while True:
            found = self.api.request(
                "GET",
                f"{self._repo(repo)}/commits/{sha}/statuses",
                params={"limit": PAGE, "page": page},
            )
            items.extend(found or ())
            if not found or len(found) < PAGE:
                break
            page += 1
        return convert.latest_statuses(items)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        self.api.request(
            "POST",
            f"{self._repo(repo)}/statuses/{sha}",
            json={
                "state": convert.STATES[status.phase],
                "context": status.key,
                "description": status.description[:255],
                "target_url": status.url,
            },
        )

    def git_environment(self, *, repo: Repository) -> Mapping[str, str]:
        return dict(self._git_env)

    def close(self) -> None:
        pass
