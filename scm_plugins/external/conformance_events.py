"""The conformance kit's events check (``promoter.scm/v1.1``): a push, a status and a PR reported.

For a plugin that offers events: subscribe the scratch repository, then push a commit,
set a status on it, and open and close a pull request; each must come back as an
event (``refMoved`` with the new SHA, ``statusChanged``, ``pullRequestChanged`` saying
closed) within ``Seen.TIMEOUT`` seconds.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from promoter.models import CommitStatus, Phase, PullRequest, PullRequestState
from scm_plugins.external.host import ExternalScm
from scm_plugins.external.scratch import Scratch

KEY = "conformance/events"


class Failed(AssertionError):
    pass


class Seen:
    """An ``EventSink`` that keeps what it is given, for ``wait``."""

    TIMEOUT = 10.0

    def __init__(self) -> None:
        self._events: list[tuple[str, dict[str, Any]]] = []
        self._changed = threading.Condition()

    def _add(self, kind: str, **event: Any) -> None:
        with self._changed:
            self._events.append((kind, event))
            self._changed.notify_all()

    def ref_moved(
        self, *, repository: str, ref: str, before: str | None, after: str | None
    ) -> None:
        self._add("refMoved", repository=repository, ref=ref, before=before, after=after)

    def status_changed(self, *, repository: str, sha: str, status: CommitStatus) -> None:
        self._add("statusChanged", repository=repository, sha=sha, status=status)

    def pull_request_changed(self, *, repository: str, pull_request: PullRequest) -> None:
        self._add("pullRequestChanged", repository=repository, pull_request=pull_request)

    def wait(self, kind: str, match: Callable[[dict[str, Any]], bool]) -> None:
        """Until an event of ``kind`` matches; ``Failed`` after ``TIMEOUT`` seconds."""
        deadline = time.monotonic() + self.TIMEOUT
        with self._changed:
            while not any(k == kind and match(e) for k, e in self._events):
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Failed(f"no {kind} event within {self.TIMEOUT:g}s")
                self._changed.wait(left)


def check_events(host: ExternalScm, scratch: Scratch) -> str:
    """Drive the three events through ``host``; what was seen, or ``Failed``."""
    seen = Seen()
    repo = scratch.repository
    if not host.subscribe([repo], seen):
        raise Failed("events/subscribe was refused")
    s = scratch
    sha = s.commit(s.branch("events"), "events", parent=s.branch("base"))
    ref = f"refs/heads/{s.branch('events')}"
    seen.wait("refMoved", lambda e: e["ref"] == ref and e["after"] == sha)
    status = CommitStatus(key=KEY, phase=Phase.SUCCESS, description="events")
    host.set_commit_status(repo=repo, sha=sha, status=status)
    seen.wait("statusChanged", lambda e: e["sha"] == sha and e["status"].key == KEY)
    pr = host.open_pull_request(
        repo=repo,
        head=s.branch("events"),
        base=s.branch("base"),
        title="events",
        body="",
        labels=(),
    )
    host.close_pull_request(repo=repo, number=pr.number, comment="")
    seen.wait(
        "pullRequestChanged",
        lambda e: (
            e["pull_request"].number == pr.number
            and e["pull_request"].state is PullRequestState.CLOSED
        ),
    )
    return "refMoved, statusChanged, pullRequestChanged"
