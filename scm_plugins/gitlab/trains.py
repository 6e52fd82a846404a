"""GitLab merge trains: a merge request added to its target branch's train, with its head as
the guard (``sha``), merged by GitLab once the train's pipeline passes; its place on the
train read back; and taken off it again. An MR taken off the train (its train pipeline
failed, a conflict, a person, a new commit) is no longer on it (404): GitLab says why only
in a system note, so the reason given is the MR's state. Whether the project runs merge
trains is read from the project (``merge_trains_enabled`` together with
``merge_pipelines_enabled``; GitLab Premium).

Taking an MR off its train is cancelling its auto-merge, the strategy a train is (GitLab
16 renamed "Remove from merge train" to "Cancel auto-merge"): ``POST /projects/:id/
merge_requests/:iid/cancel_merge_when_pipeline_succeeds``. GitLab's answer does not say
enough (201 for a cancel and for an MR already merged, 406 or a 201 carrying an error for
one with nothing to cancel), so the car is read afterwards: gone is what was asked, the
MR merged is the train's race, still riding is a refusal.

An instance without merge trains (GitLab without Premium: the project's answer has no
``merge_trains_enabled`` at all) refuses the train's routes (404, or 403); adding to its
train is then ``ScmUnsupported``, which the promoter shows on that environment alone.

Calls: adding 1 (``POST /projects/:id/merge_trains/merge_requests/:iid``; refused, 1 more
to read the project), reading 1
(``GET`` of the same), plus 1 to read the MR when it has left the train; taking off 1 plus
a read; whether trains are on 1 (``GET /projects/:id``).
"""

from __future__ import annotations

from typing import Any

from gitlab.v4.objects import Project

from promoter.errors import ScmAuthError, ScmConflict, ScmError, ScmNotFound, ScmUnsupported
from promoter.models import PullRequestState, QueueEntry
from scm_plugins.calls import ScmCalls
from scm_plugins.gitlab.merge_requests import MergeRequests


class MergeTrains:
    def __init__(self, *, calls: ScmCalls, mrs: MergeRequests) -> None:
        self._calls = calls
        self._mrs = mrs

    def enabled(self, project: Project) -> bool:
        """Merge trains are on: merge requests join the train instead of being merged."""
        with self._calls.call("get_project"):
            answer: Any = project.manager.gitlab.http_get(f"/projects/{project.encoded_id}")
        if not isinstance(answer, dict):
            raise ScmError("GitLab's project is not a project")
        return answer.get("merge_trains_enabled") is True and (
            answer.get("merge_pipelines_enabled") is True
        )

    def add(self, project: Project, *, number: int, expected_head_sha: str) -> QueueEntry:
        """``ScmUnsupported`` when the train refuses (404 or 403) on an instance whose
        project has no merge-train settings at all: GitLab without Premium."""
        path = f"/projects/{project.encoded_id}/merge_trains/merge_requests/{number}"
        data = {"sha": expected_head_sha, "when_pipeline_succeeds": True}
        try:
            with self._calls.call("enqueue_pull_request", pr=number, sha=expected_head_sha):
                answer: Any = project.manager.gitlab.http_post(path, post_data=data)
        except (ScmNotFound, ScmAuthError) as exc:
            if self._offered(project):
                raise
            raise ScmUnsupported(
                "merge trains (GitLab Premium): the project has no merge-train settings",
                instance="this GitLab",
            ) from exc
        mine = [c for c in answer or [] if (c.get("merge_request") or {}).get("iid") == number]
        status = str(mine[0].get("status") or "") if mine else "idle"
        return QueueEntry(queued=True, state=status)

    def _offered(self, project: Project) -> bool:
        """Whether the instance offers merge trains to the project at all (the settings
        exist, on or off)."""
        with self._calls.call("get_project"):
            answer: Any = project.manager.gitlab.http_get(f"/projects/{project.encoded_id}")
        return isinstance(answer, dict) and "merge_trains_enabled" in answer

    def remove(self, project: Project, *, number: int) -> QueueEntry:
        path = (
            f"/projects/{project.encoded_id}/merge_requests/{number}"
            "/cancel_merge_when_pipeline_succeeds"
        )
        try:
            with self._calls.call("dequeue_pull_request", pr=number):
                project.manager.gitlab.http_post(path)
        except ScmConflict:
            pass  # nothing to cancel (the MR left the train, merged or closed): read it
        left = self.entry(project, number=number)
        if left.queued:
            raise ScmConflict(f"GitLab kept merge request !{number} on its merge train")
        return left

    def entry(self, project: Project, *, number: int) -> QueueEntry:
        path = f"/projects/{project.encoded_id}/merge_trains/merge_requests/{number}"
        try:
            with self._calls.call("get_merge_queue_entry", pr=number):
                car: Any = project.manager.gitlab.http_get(path)
        except ScmNotFound:
            pr = self._mrs.get(project, number=number)
            return QueueEntry(
                queued=False,
                removed_reason=f"removed from the merge train (it is {pr.state.value})",
                merged=pr.state is PullRequestState.MERGED,
            )
        status = str(car.get("status") or "")
        pipeline = str((car.get("pipeline") or {}).get("status") or "")
        merged = status in ("merged", "skip_merged")
        return QueueEntry(queued=not merged, state=status, checks=pipeline, merged=merged)
