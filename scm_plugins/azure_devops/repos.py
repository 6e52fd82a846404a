"""Where a repository lives on Azure DevOps, and what the plugin saw of its open pull requests.

A repository is ``project/name``: from its ``path`` (``project/name``, or ``name`` in the
provider's ``project``), else from its clone URL (``.../{project}/_git/{name}``; a URL
without the project, ``.../_git/{name}``, names a project of the repository's name).

``Heads`` remembers, from the pull requests the plugin read or opened, which open pull
request has which head commit and, when known, the iteration that head is (a pull request
the plugin opened is at iteration 1): the promoter's checks on that commit are then written
on that pull request's iteration, where the PR's page shows them and a status policy finds
them. Bounded; thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from promoter.config import Repository
from promoter.errors import ConfigError
from scm_plugins.azure_devops import convert
from scm_plugins.azure_devops.client import segment

MAX_HEADS = 20_000
"""Open pull requests remembered (a strategy has one per environment at most)."""


@dataclass(frozen=True, slots=True)
class Where:
    project: str
    name: str

    @property
    def api(self) -> str:
        """The repository's API path under the organization or collection."""
        return f"/{segment(self.project)}/_apis/git/repositories/{segment(self.name)}"

    @property
    def key(self) -> str:
        return f"{self.project}/{self.name}"


def locate(repo: Repository, *, base_url: str, project: str | None) -> Where:
    """The project and name of ``repo`` (ConfigError when neither path nor URL says)."""
    if repo.path:
        parts = [unquote(p) for p in repo.path.strip("/").split("/") if p]
        if len(parts) == 2:
            return Where(parts[0], parts[1])
        if len(parts) == 1 and project:
            return Where(project, parts[0])
        raise ConfigError(
            [
                f"repository {repo.name}: path must be PROJECT/REPOSITORY (or REPOSITORY with "
                "the provider's project)"
            ]
        )
    segments = [unquote(s) for s in urlsplit(repo.url).path.split("/") if s]
    if "_git" in segments:
        at = segments.index("_git")
        if at + 1 < len(segments):
            name = segments[at + 1].removesuffix(".git")
            base = [s for s in urlsplit(base_url).path.split("/") if s]
            before = segments[:at]
            owner = before[len(base) :] if before[: len(base)] == base else before[-1:]
            return Where(owner[-1] if owner else name, name)
    raise ConfigError(
        [f"repository {repo.name}: give path PROJECT/REPOSITORY (the URL names no _git/)"]
    )


class Heads:
    def __init__(self, max_entries: int = MAX_HEADS) -> None:
        self._max = max_entries
        self._open: OrderedDict[tuple[str, int], tuple[str, int | None]] = OrderedDict()
        self._by_sha: dict[tuple[str, str], int] = {}
        self._projects: dict[str, str] = {}
        self._lock = threading.Lock()

    def seen(self, where: Where, data: Mapping[str, Any], *, opened: bool = False) -> None:
        """A pull request as Azure answered it (``opened``: just created, iteration 1)."""
        number = data.get("pullRequestId")
        if not isinstance(number, int):
            return  # not a pull request: convert.pull_request says so
        head = convert.commit_id(data, "lastMergeSourceCommit")
        project = convert.project_id(data)
        with self._lock:
            if project:
                self._projects[where.key] = project
            known = self._drop(where.key, number)
            if data.get("status") != "active" or not head:
                return
            iteration = 1 if opened else known[1] if known and known[0] == head else None
            self._open[(where.key, number)] = (head, iteration)
            self._by_sha[(where.key, head)] = number
            while len(self._open) > self._max:
                (key, oldest), (sha, _) = self._open.popitem(last=False)
                if self._by_sha.get((key, sha)) == oldest:
                    del self._by_sha[(key, sha)]

    def iteration_known(self, where: Where, number: int, sha: str, iteration: int) -> None:
        with self._lock:
            if self._open.get((where.key, number), ("", None))[0] == sha:
                self._open[(where.key, number)] = (sha, iteration)

    def ended(self, where: Where, number: int) -> None:
        with self._lock:
            self._drop(where.key, number)

    def pull_request_of(self, where: Where, sha: str) -> tuple[int, int | None] | None:
        """``(number, iteration or None)`` of the open pull request whose head is ``sha``."""
        with self._lock:
            number = self._by_sha.get((where.key, sha))
            if number is None:
                return None
            return number, self._open[(where.key, number)][1]

    def project_id(self, where: Where) -> str:
        with self._lock:
            return self._projects.get(where.key, "")

    def _drop(self, key: str, number: int) -> tuple[str, int | None] | None:
        old = self._open.pop((key, number), None)
        if old is not None and self._by_sha.get((key, old[0])) == number:
            del self._by_sha[(key, old[0])]
        return old
