"""GitLab merge requests as promotion pull requests: find, open, update, merge, close.

Idempotent by construction: opening an MR that exists answers 409 ("Another open
merge request already exists for this source branch"), and the existing one is
returned. A merge carries the expected head as ``sha`` so that GitLab refuses it
if the head moved; a refused merge is explained by one read of the MR (draft,
closed, head moved, not mergeable yet), and a merge retried after it went
through returns the merge SHA instead of failing. The source branch is never
deleted: it is the hydrator's proposed branch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from gitlab.v4.objects import Project

from promoter.errors import ScmConflict
from promoter.models import PullRequest, PullRequestState
from scm_plugins.calls import ScmCalls

STATES = {
    "opened": PullRequestState.OPEN,
    "locked": PullRequestState.OPEN,  # for a moment, while GitLab merges it
    "closed": PullRequestState.CLOSED,
    "merged": PullRequestState.MERGED,
}


def to_pull_request(mr: Mapping[str, Any]) -> PullRequest:
    """A GitLab MR (REST entity) as the promoter's PullRequest; ``number`` is the iid."""
    head_sha = mr.get("sha") or (mr.get("diff_refs") or {}).get("head_sha") or ""
    state = STATES.get(str(mr.get("state")), PullRequestState.CLOSED)
    merge_sha = mr.get("merge_commit_sha") or mr.get("squash_commit_sha")
    if state is PullRequestState.MERGED and not merge_sha:
        merge_sha = head_sha  # fast-forward merge: the target is now the head
    return PullRequest(
        id=str(mr["id"]),
        number=int(mr["iid"]),
        head_branch=str(mr.get("source_branch") or ""),
        base_branch=str(mr.get("target_branch") or ""),
        head_sha=str(head_sha),
        state=state,
        title=str(mr.get("title") or ""),
        body=str(mr.get("description") or ""),
        labels=tuple(str(label) for label in mr.get("labels") or ()),
        url=str(mr.get("web_url") or ""),
        draft=bool(mr.get("draft") or mr.get("work_in_progress")),
        merge_sha=str(merge_sha) if merge_sha else None,
        author=str((mr.get("author") or {}).get("username") or ""),
    )


def _as_dict(result: object) -> dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"GitLab answered {type(result).__name__}, expected a JSON object")
    return result


class MergeRequests:
    """The MR half of the plugin, for one GitLab instance."""

    def __init__(self, *, calls: ScmCalls, squash: bool) -> None:
        self._calls = calls
        self._squash = squash

    def find_open(self, project: Project, *, head: str, base: str) -> PullRequest | None:
        with self._calls.call("find_pull_request", head=head, base=base):
            found = project.mergerequests.list(
                state="opened", source_branch=head, target_branch=base, per_page=20, get_all=False
            )
        mrs = [to_pull_request(mr.attributes) for mr in found]
        return min(mrs, key=lambda pr: pr.number, default=None)

    def get(self, project: Project, *, number: int) -> PullRequest:
        with self._calls.call("get_pull_request", pr=number):
            mr = project.mergerequests.get(number)
        return to_pull_request(mr.attributes)

    def open(
        self,
        project: Project,
        *,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        data: dict[str, Any] = {
            "source_branch": head,
            "target_branch": base,
            "title": title,
            "description": body,
            "labels": ",".join(labels),
            "remove_source_branch": False,
        }
        if self._squash:
            data["squash"] = True
        try:
            with self._calls.call("open_pull_request", head=head, base=base):
                created = project.mergerequests.create(data)
        except ScmConflict:
            # 409: one is already open for head/base (a retry, or a crash before recording it).
            existing = self.find_open(project, head=head, base=base)
            if existing is None:
                raise
            return existing
        return to_pull_request(created.attributes)

    def update(
        self, project: Project, *, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        data = {"title": title, "description": body, "labels": ",".join(labels)}
        with self._calls.call("update_pull_request", pr=number):
            updated = project.mergerequests.update(number, data)
        return to_pull_request(updated)

    def merge(self, project: Project, *, number: int, expected_head_sha: str, message: str) -> str:
        data: dict[str, Any] = {"sha": expected_head_sha, "should_remove_source_branch": False}
        if message:  # GitLab answers 422 to an empty message
            data["merge_commit_message"] = message
        if self._squash:
            data["squash"] = True
            if message:
                data["squash_commit_message"] = message
        path = f"{project.mergerequests.path}/{number}/merge"
        try:
            with self._calls.call("merge_pull_request", pr=number, sha=expected_head_sha):
                merged = to_pull_request(
                    _as_dict(project.manager.gitlab.http_put(path, post_data=data))
                )
        except ScmConflict as refused:
            return self._after_refusal(project, number, expected_head_sha, refused)
        if merged.state is not PullRequestState.MERGED or not merged.merge_sha:
            raise ScmConflict(f"GitLab did not merge !{number} (state {merged.state.value})")
        return merged.merge_sha

    def _after_refusal(
        self, project: Project, number: int, expected: str, refused: ScmConflict
    ) -> str:
        """Say why GitLab refused, in one read; or return the merge SHA if it already merged."""
        pr = self.get(project, number=number)
        if pr.state is PullRequestState.MERGED and pr.head_sha == expected and pr.merge_sha:
            return pr.merge_sha
        lasting = True
        if pr.state is not PullRequestState.OPEN:
            reason = f"it is {pr.state.value}"
        elif pr.draft:
            reason = "it is a draft; the promoter never merges drafts"
        elif pr.head_sha != expected:
            reason = f"its head moved to {pr.head_sha}, expected {expected}"
            lasting = False
        else:
            reason = f"GitLab refused it ({refused})"
            lasting = refused.lasting
        raise ScmConflict(
            f"merge request !{number} not merged: {reason}", lasting=lasting
        ) from refused

    def close(self, project: Project, *, number: int, comment: str) -> None:
        if comment:
            self.comment(project, number=number, body=comment)
        with self._calls.call("close_pull_request", pr=number):
            project.mergerequests.update(number, {"state_event": "close"})

    def comment(self, project: Project, *, number: int, body: str) -> None:
        with self._calls.call("comment_pull_request", pr=number):
            project.mergerequests.get(number, lazy=True).notes.create({"body": body})
