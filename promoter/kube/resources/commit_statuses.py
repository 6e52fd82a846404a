"""CommitStatus custom resources: an index the gates read, and their mirror on the SCM.

Any tool may create a CommitStatus (``gitRepositoryRef``, ``sha``, ``key``, ``phase``);
it counts exactly like a status read from the SCM (the newest per key wins), and the
leader publishes it on the SCM so that it shows in the pull request's checks.
"""

from __future__ import annotations

import logging
import threading
from datetime import datetime

from pydantic import ValidationError

from promoter.kube.resources.config_source import config_name
from promoter.kube.resources.specs import COMMIT_STATUS_LABEL, CommitStatusSpec
from promoter.models import CommitStatus, utcnow

log = logging.getLogger("promoter.kube.commit_statuses")

Obj = dict[str, object]


def parse(obj: dict[str, object]) -> tuple[str, str, CommitStatus]:
    """(repository config name, sha, status) of a CommitStatus object; ValueError if invalid."""
    meta = obj.get("metadata")
    meta = meta if isinstance(meta, dict) else {}
    try:
        spec = CommitStatusSpec.model_validate(obj.get("spec") or {})
    except ValidationError as exc:
        raise ValueError(
            "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
        ) from exc
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    key = spec.key or (labels or {}).get(COMMIT_STATUS_LABEL)
    if not key:
        raise ValueError(f"give spec.key or the label {COMMIT_STATUS_LABEL}")
    stamp = meta.get("creationTimestamp")
    updated = _time(str(stamp)) if stamp else utcnow()
    status = CommitStatus(
        key=str(key),
        phase=spec.phase,
        description=spec.description,
        url=spec.url,
        source="kubernetes",
        updated_at=updated,
    )
    namespace = str(meta.get("namespace", ""))
    return config_name(namespace, spec.git_repository_ref.name), spec.sha.lower(), status


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class CommitStatusIndex:
    """(repository, sha) -> the CommitStatus objects' statuses by key. Thread-safe."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._by_object: dict[tuple[str, str], tuple[str, str, CommitStatus]] = {}
        self._seen: dict[tuple[str, str], str] = {}

    def put(self, obj: dict[str, object], parsed: tuple[str, str, CommitStatus]) -> None:
        meta = obj.get("metadata") or {}
        assert isinstance(meta, dict)
        ident = (str(meta.get("namespace")), str(meta.get("name")))
        repo, sha, status = parsed
        with self._lock:
            # A changed object is newer than anything before it: stamp it now.
            if self._seen.get(ident) not in (None, str(meta.get("resourceVersion"))):
                status = status.model_copy(update={"updated_at": utcnow()})
            self._seen[ident] = str(meta.get("resourceVersion"))
            self._by_object[ident] = (repo, sha, status)

    def remove(self, namespace: str, name: str) -> None:
        with self._lock:
            self._by_object.pop((namespace, name), None)
            self._seen.pop((namespace, name), None)

    def statuses(self, repo: str, sha: str) -> list[CommitStatus]:
        with self._lock:
            found: dict[str, CommitStatus] = {}
            for r, s, status in self._by_object.values():
                if r == repo and s == sha:
                    old = found.get(status.key)
                    if old is None or status.updated_at >= old.updated_at:
                        found[status.key] = status
            return list(found.values())


def merge(scm: list[CommitStatus], cluster: list[CommitStatus]) -> list[CommitStatus]:
    """Latest per key of both lists."""
    out = {s.key: s for s in scm}
    for status in cluster:
        old = out.get(status.key)
        if old is None or status.updated_at >= old.updated_at or old.source == "kubernetes":
            out[status.key] = status
    return list(out.values())


def needs_mirror(obj: dict[str, object], phase: str) -> bool:
    """True unless the object's status says this generation's phase is on the SCM already."""
    status = obj.get("status") or {}
    meta = obj.get("metadata") or {}
    assert isinstance(status, dict) and isinstance(meta, dict)
    return not (
        status.get("observedGeneration") == meta.get("generation")
        and status.get("mirroredPhase") == phase
    )
