"""What the executor tells its observers (notifications, Kubernetes Events, the demo): one
``ActionEvent`` per thing done. An observer that fails never stops the reconcile."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

log = logging.getLogger("promoter.actions")


@dataclass(frozen=True)
class ActionEvent:
    """What happened, for observers: ``kind`` is opened/updated/closed/merged/status/healthy."""

    kind: str
    strategy: str
    environment: str
    message: str
    sha: str = ""
    pr: int | None = None
    dry_sha: str = ""
    """The dry commit the event is about (``sha`` is whichever the kind names)."""
    hydrated_sha: str = ""
    """The hydrated commit CI and health checks report on, when the event knows it."""
    link: str = ""
    """The pull request's URL on the SCM, when there is one."""


Observer = Callable[[ActionEvent], None]


def tell(
    observers: Iterable[Observer],
    kind: str,
    strategy: str,
    environment: str,
    message: str,
    sha: str = "",
    pr: int | None = None,
    *,
    dry_sha: str = "",
    hydrated_sha: str = "",
    link: str = "",
) -> None:
    """Hand the event to every observer; one that raises is logged and skipped."""
    event = ActionEvent(kind, strategy, environment, message, sha, pr, dry_sha, hydrated_sha, link)
    for observer in observers:
        try:
            observer(event)
        except Exception:
            log.exception("observer failed", extra={"kind": event.kind})
