"""Azure DevOps pull requests as promotion pull requests: find, open, update, abandon, comment.

Idempotent by construction: opening a pull request that exists is refused (409,
TF401179 "An active pull request for the source and target branch already exists"), and
the existing one is returned. Labels are set with the pull request when it is opened;
an update adds and removes them one call each, only those that differ. A comment is a
thread of one comment, closed at once, so that a "comment resolution" policy never waits
on the promoter's words. Calls: find 1, open 1, update 1 (+1 per label changed),
abandon 1 (+1 with a comment).
"""

from __future__ import annotations

from typing import Any

from promoter.errors import ScmConflict
from promoter.models import PullRequest, PullRequestState
from scm_plugins.azure_devops import convert
from scm_plugins.azure_devops.client import AzureClient, segment
from scm_plugins.azure_devops.repos import Heads, Where

CLIPPED = "\n\n(cut to Azure DevOps' 4000 characters)"


def clip(body: str) -> str:
    if len(body) <= convert.MAX_DESCRIPTION:
        return body
    return body[: convert.MAX_DESCRIPTION - len(CLIPPED)] + CLIPPED


def values(data: Any) -> list[dict[str, Any]]:
    """The items of a list answer (``{"value": [...], "count": n}``)."""
    found = data.get("value") if isinstance(data, dict) else None
    return [item for item in found or () if isinstance(item, dict)]


class Pulls:
    def __init__(self, client: AzureClient, heads: Heads) -> None:
        self._client = client
        self._heads = heads

    def find_open(self, where: Where, *, head: str, base: str) -> PullRequest | None:
        data = self._client.request(
            "find_pull_request",
            "GET",
            where.api + "/pullrequests",
            params={
                "searchCriteria.sourceRefName": convert.ref(head),
                "searchCriteria.targetRefName": convert.ref(base),
                "searchCriteria.status": "active",
                "$top": 10,
            },
            head=head,
            base=base,
        )
        for item in values(data):
            pr = convert.pull_request(item)
            if pr.state is PullRequestState.OPEN and (pr.head_branch, pr.base_branch) == (
                head,
                base,
            ):
                self._heads.seen(where, item)
                return pr
        return None

    def open(
        self,
        where: Where,
        *,
        head: str,
        base: str,
        title: str,
        body: str,
        labels: tuple[str, ...],
    ) -> PullRequest:
        payload: dict[str, Any] = {
            "sourceRefName": convert.ref(head),
            "targetRefName": convert.ref(base),
            "title": title[: convert.MAX_TITLE],
            "description": clip(body),
        }
        if labels:
            payload["labels"] = [{"name": name} for name in labels]
        try:
            data = self._client.request(
                "open_pull_request",
                "POST",
                where.api + "/pullrequests",
                body=payload,
                head=head,
                base=base,
            )
        except ScmConflict:  # TF401179: one is already active for head/base
            found = self.find_open(where, head=head, base=base)
            if found is None:
                raise
            return found
        self._heads.seen(where, data, opened=True)
        return convert.pull_request(data)

    def update(
        self, where: Where, *, number: int, title: str, body: str, labels: tuple[str, ...]
    ) -> PullRequest:
        data = self._client.request(
            "update_pull_request",
            "PATCH",
            f"{where.api}/pullrequests/{number}",
            body={"title": title[: convert.MAX_TITLE], "description": clip(body)},
            pr=number,
        )
        self._heads.seen(where, data)
        pr = convert.pull_request(data)
        if pr.state is not PullRequestState.OPEN:
            raise ScmConflict(f"pull request {number} is {pr.state.value}")
        have, wanted = set(pr.labels), set(labels)
        for name in sorted(wanted - have):
            self._client.request(
                "label_pull_request",
                "POST",
                f"{where.api}/pullRequests/{number}/labels",
                body={"name": name},
                pr=number,
            )
        for name in sorted(have - wanted):
            self._client.request(
                "label_pull_request",
                "DELETE",
                f"{where.api}/pullRequests/{number}/labels/{segment(name)}",
                pr=number,
            )
        return pr.model_copy(update={"labels": tuple(labels)}) if have != wanted else pr

    def close(self, where: Where, *, number: int, comment: str) -> None:
        if comment:
            self.comment(where, number=number, body=comment)
        data = self._client.request(
            "close_pull_request",
            "PATCH",
            f"{where.api}/pullrequests/{number}",
            body={"status": "abandoned"},
            pr=number,
        )
        self._heads.seen(where, data)

    def comment(self, where: Where, *, number: int, body: str) -> None:
        thread = {
            "comments": [{"parentCommentId": 0, "content": body, "commentType": "text"}],
            "status": "closed",
        }
        self._client.request(
            "comment_pull_request",
            "POST",
            f"{where.api}/pullRequests/{number}/threads",
            body=thread,
            pr=number,
        )
