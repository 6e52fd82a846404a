"""GitLab commit statuses and pipelines, read as gates and written as the promoter's own.

A SHA's gates are its commit statuses (latest per name; GitLab lists CI jobs
there too) plus its latest CI pipeline under one configurable key (default
``pipeline``). GitLab's statuses map to phases: success, skipped and a manual
job that is allowed to fail pass; the waiting states are pending; failed and
canceled fail. Anything GitLab adds later is pending until someone maps it.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from datetime import datetime
from typing import Any

from gitlab.exceptions import GitlabError
from gitlab.v4.objects import Project

from promoter.models import CommitStatus, Phase, utcnow
from scm_plugins.calls import ScmCalls

SOURCE = "gitlab"
PER_PAGE = 100
MAX_PAGES = 10
PIPELINES_PER_PAGE = 20
IGNORED_PIPELINE_SOURCES = frozenset({"external", "parent_pipeline"})
"""External pipelines only gather commit statuses (the promoter's own among them) and
child pipelines are summed up in their parent: neither is "the pipeline" of a SHA."""

SUCCESS = frozenset({"success", "skipped"})
PENDING = frozenset(
    {
        "created",
        "waiting_for_resource",
        "preparing",
        "pending",
        "running",
        "scheduled",
        "canceling",
        "waiting_for_callback",
    }
)
FAILURE = frozenset({"failed", "canceled"})

GITLAB_STATE = {Phase.PENDING: "pending", Phase.SUCCESS: "success", Phase.FAILURE: "failed"}
"""What the promoter writes for each of its phases."""

MAX_DESCRIPTION = 255


def phase_of(status: str, *, allow_failure: bool = False) -> Phase:
    """The promoter's phase for one GitLab job, status or pipeline state."""
    if status in SUCCESS:
        return Phase.SUCCESS
    if status in FAILURE:
        return Phase.FAILURE
    if status == "manual" and allow_failure:
        return Phase.SUCCESS
    return Phase.PENDING


def _when(entry: Mapping[str, Any]) -> datetime:
    for field in ("updated_at", "finished_at", "started_at", "created_at"):
        value = entry.get(field)
        if value:
            try:
                return datetime.fromisoformat(str(value))
            except ValueError:
                continue
    return utcnow()


def from_status(entry: Mapping[str, Any]) -> CommitStatus:
    """One entry of ``GET /projects/:id/repository/commits/:sha/statuses``."""
    state = str(entry.get("status") or "")
    return CommitStatus(
        key=str(entry.get("name") or "default"),
        phase=phase_of(state, allow_failure=bool(entry.get("allow_failure"))),
        description=str(entry.get("description") or state),
        url=str(entry.get("target_url") or ""),
        source=SOURCE,
        updated_at=_when(entry),
    )


def from_pipeline(entry: Mapping[str, Any], *, key: str) -> CommitStatus:
    """One entry of ``GET /projects/:id/pipelines``, reported under ``key``."""
    state = str(entry.get("status") or "")
    return CommitStatus(
        key=key,
        phase=phase_of(state),
        description=f"pipeline #{entry.get('id')} {state}",
        url=str(entry.get("web_url") or ""),
        source=SOURCE,
        updated_at=_when(entry),
    )


def latest_per_name(entries: Iterable[Mapping[str, Any]]) -> list[CommitStatus]:
    """The newest status of each name (GitLab ids grow with time)."""
    newest: dict[str, Mapping[str, Any]] = {}
    for entry in entries:
        name = str(entry.get("name") or "default")
        kept = newest.get(name)
        if kept is None or int(entry.get("id") or 0) > int(kept.get("id") or 0):
            newest[name] = entry
    return [from_status(entry) for entry in newest.values()]


def latest_pipeline(entries: Iterable[Mapping[str, Any]]) -> Mapping[str, Any] | None:
    """The newest CI pipeline among ``entries`` (external and child pipelines skipped)."""
    candidates = [e for e in entries if e.get("source") not in IGNORED_PIPELINE_SOURCES]
    return max(candidates, key=lambda e: int(e.get("id") or 0), default=None)


def read_gates(
    project: Project,
    *,
    sha: str,
    calls: ScmCalls,
    pipeline_key: str,
    keys: Collection[str] | None = None,
) -> list[CommitStatus]:
    """Every gate of ``sha``: commit statuses (latest per name) and the latest pipeline.

    With ``keys``, only what they need: the pipelines alone when the pipeline gate is
    the only key, the commit statuses alone when it is not among them.
    """
    wanted = None if keys is None else set(keys)
    commit = project.commits.get(sha, lazy=True)
    entries: list[dict[str, Any]] = []
    for page in range(1, MAX_PAGES + 1):
        if wanted is not None and wanted <= {pipeline_key}:
            break
        with calls.call("list_commit_statuses", sha=sha, page=page):
            found = commit.statuses.list(per_page=PER_PAGE, page=page, get_all=False)
        entries.extend(item.attributes for item in found)
        if len(found) < PER_PAGE:
            break
    gates = {status.key: status for status in latest_per_name(entries)}
    if wanted is not None and pipeline_key not in wanted:
        return list(gates.values())
    with calls.call("list_pipelines", sha=sha):
        pipelines = project.pipelines.list(
            sha=sha, order_by="id", sort="desc", per_page=PIPELINES_PER_PAGE, get_all=False
        )
    pipeline = latest_pipeline(item.attributes for item in pipelines)
    if pipeline is not None:
        gates[pipeline_key] = from_pipeline(pipeline, key=pipeline_key)
    return list(gates.values())


def write_status(project: Project, *, sha: str, status: CommitStatus, calls: ScmCalls) -> None:
    """Show one of the promoter's gates in the MR UI, as a commit status named by its key."""
    data: dict[str, Any] = {
        "state": GITLAB_STATE[status.phase],
        "name": status.key,
        "description": status.description[:MAX_DESCRIPTION],
    }
    if status.url:
        data["target_url"] = status.url
    with calls.call("set_commit_status", sha=sha, key=status.key):
        try:
            project.commits.get(sha, lazy=True).statuses.create(data)
        except GitlabError as exc:
            # GitLab refuses pending -> pending and running -> running with a 400
            # ("Cannot transition status via :enqueue from :pending"): already so.
            if exc.response_code == 400 and "Cannot transition status" in str(exc):
                return
            raise
