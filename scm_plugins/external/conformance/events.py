"""The conformance kit's events checks (``promoter.scm/v1.1``): changes reported, echoes known.

For a plugin that offers events: subscribe the scratch repository, then

- ``check_events``: push a commit (a change the promoter did not make): it must come
  back as ``refMoved`` with the new SHA and be applied, within ``Seen.TIMEOUT`` seconds;
- ``check_echoes``: set a status, open a pull request and close it, all through the
  promoter: each must come back as its event (a plugin reports every change, the
  promoter's own too) and be recognised as the promoter's own write (result ``own``),
  never applied: an echo costs the promoter no read.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from promoter.models import CommitStatus, Phase, PullRequest
from scm_plugins.external.host import ExternalScm
from scm_plugins.external.scratch import Scratch

KEY = "conformance/events"


class Failed(AssertionError):
    pass


class NotOffered(Exception):
    """An optional part of the protocol the plugin does not offer, or a check it cannot take."""


class Seen:
    """An ``EventSink`` that keeps what it is given, for ``wait``."""

    TIMEOUT = 10.0

    def __init__(self) -> None:
        self._events: list[tuple[str, dict[str, Any]]] = []
        self._changed = threading.Condition()

    @property
    def events(self) -> list[tuple[str, dict[str, Any]]]:
        with self._changed:
            return list(self._events)

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


def _until(what: str, done: Callable[[], bool]) -> None:
    deadline = time.monotonic() + Seen.TIMEOUT
    while not done():
        if time.monotonic() > deadline:
            raise Failed(f"{what} within {Seen.TIMEOUT:g}s")
        time.sleep(0.02)


def check_events(host: ExternalScm, scratch: Scratch, seen: Seen) -> str:
    """Subscribe ``seen`` and push a commit: the ``refMoved`` must reach it."""
    repo = scratch.repository
    if not host.subscribe([repo], seen):
        raise Failed("events/subscribe was refused")
    s = scratch
    sha = s.commit(s.branch("events"), "events", parent=s.branch("base"))
    ref = f"refs/heads/{s.branch('events')}"
    seen.wait("refMoved", lambda e: e["ref"] == ref and e["after"] == sha)
    return "a push: refMoved applied"


def check_echoes(host: ExternalScm, scratch: Scratch, seen: Seen) -> str:
    """A status and a PR opened and closed through ``host``: reported, and known as own."""
    repo, s = scratch.repository, scratch
    sha = s.tip(s.branch("events"))
    if sha is None:
        raise Failed("the events check pushed no commit")

    def own(kind: str) -> int:
        return host.event_results.get((kind, "own"), 0)

    before = own("statusChanged"), own("pullRequestChanged")
    status = CommitStatus(key=KEY, phase=Phase.SUCCESS, description="events")
    host.set_commit_status(repo=repo, sha=sha, status=status)
    _until("no statusChanged known as the promoter's own", lambda: own("statusChanged") > before[0])
    pr = host.open_pull_request(
        repo=repo,
        head=s.branch("events"),
        base=s.branch("base"),
        title="events",
        body="",
        labels=(),
    )
    host.close_pull_request(repo=repo, number=pr.number, comment="")
    _until(
        "no pullRequestChanged known as the promoter's own",
        lambda: own("pullRequestChanged") > before[1],
    )
    applied = [k for k, e in seen.events if k != "refMoved" and (e.get("sha") == sha or _is(e, pr))]
    if applied:
        raise Failed(f"the promoter's own writes were applied as changes: {applied}")
    return "statusChanged, pullRequestChanged: the promoter's own, not applied"


def _is(event: dict[str, Any], pr: PullRequest) -> bool:
    found = event.get("pull_request")
    return isinstance(found, PullRequest) and found.number == pr.number
