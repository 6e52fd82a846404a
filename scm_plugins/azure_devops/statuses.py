"""Azure DevOps statuses, read as gates and written as the promoter's own checks.

A commit's gates are its commit statuses (``GET .../commits/{sha}/statuses``, latest per
context) and, when the commit is the head of an open pull request the plugin knows, the
statuses posted on that pull request: on the iteration that head is, or on the whole pull
request (``GET .../pullRequests/{id}/statuses``). Of a key found in both, the newer wins.
Asked for some keys only (the re-read before a merge), the pull request's statuses are
read only for the keys the commit lacks.

The promoter's own checks (keys ``promoter/...``: genre ``promoter``) are written on the
pull request whose head the commit is, on that head's iteration, where the pull
request's page shows them and a branch policy's status check can require them (its
"reset status whenever there are new changes" wants the iteration); other statuses (a
gate reported through the promoter's API) and a commit that heads no open pull request
get a commit status. Calls: a read 1 (2 with the pull request's), a write 1; the
iteration of a head the plugin did not see opened costs 1 more, once.
"""

from __future__ import annotations

from collections.abc import Collection

from promoter.models import CommitStatus
from scm_plugins.azure_devops import convert
from scm_plugins.azure_devops.client import AzureClient, answer_key
from scm_plugins.azure_devops.pulls import values
from scm_plugins.azure_devops.repos import Heads, Where

OWN = "promoter/"
"""The keys of the promoter's own checks (genre ``promoter``)."""
COMMIT_SOURCE = "azure-devops/commit"
PR_SOURCE = "azure-devops/pull-request"
PAGE = 1000


def commit_params() -> dict[str, str | int]:
    return {"latestOnly": "true", "$top": PAGE}


class Statuses:
    def __init__(self, client: AzureClient, heads: Heads) -> None:
        self._client = client
        self._heads = heads

    def get(
        self, where: Where, *, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        wanted = None if keys is None else set(keys)
        found: dict[str, CommitStatus] = {}
        pr = self._heads.pull_request_of(where, sha)
        own = wanted is not None and all(k.startswith(OWN) for k in wanted)
        if pr is None or not own:  # the promoter's own checks alone are on the PR
            data = self._client.request(
                "get_commit_statuses",
                "GET",
                f"{where.api}/commits/{sha}/statuses",
                params=commit_params(),
                conditional=True,
                sha=sha,
            )
            found = convert.latest_statuses(values(data), source=COMMIT_SOURCE)
        if pr is not None and (wanted is None or not wanted <= set(found)):
            number, iteration = pr
            iteration = iteration or self._iteration(where, number, sha)
            data = self._client.request(
                "get_pull_request_statuses",
                "GET",
                f"{where.api}/pullRequests/{number}/statuses",
                conditional=True,
                pr=number,
                sha=sha,
            )
            mine = [s for s in values(data) if s.get("iterationId") in (None, iteration)]
            for key, status in convert.latest_statuses(mine, source=PR_SOURCE).items():
                old = found.get(key)
                if old is None or status.updated_at >= old.updated_at:
                    found[key] = status
        return list(found.values())

    def set(self, where: Where, *, sha: str, status: CommitStatus) -> None:
        body = convert.status_body(status)
        pr = self._heads.pull_request_of(where, sha) if status.key.startswith(OWN) else None
        if pr is None:
            self._client.request(
                "set_commit_status",
                "POST",
                f"{where.api}/commits/{sha}/statuses",
                body=body,
                sha=sha,
                key=status.key,
            )
            return
        number, iteration = pr
        iteration = iteration or self._iteration(where, number, sha)
        if iteration:
            body["iterationId"] = iteration
        self._client.request(
            "set_commit_status",
            "POST",
            f"{where.api}/pullRequests/{number}/statuses",
            body=body,
            sha=sha,
            key=status.key,
            pr=number,
        )

    def _iteration(self, where: Where, number: int, sha: str) -> int | None:
        """The iteration of pull request ``number`` whose source commit is ``sha``."""
        data = self._client.request(
            "get_pull_request_iterations",
            "GET",
            f"{where.api}/pullRequests/{number}/iterations",
            params={"includeCommits": "false"},
            pr=number,
            sha=sha,
        )
        ids = [
            int(item["id"])
            for item in values(data)
            if convert.commit_id(item, "sourceRefCommit") == sha and isinstance(item.get("id"), int)
        ]
        if not ids:
            return None
        self._heads.iteration_known(where, number, sha, max(ids))
        return max(ids)

    def answer_keys(self, where: Where, sha: str) -> list[str]:
        """The ETag cache's keys of the answers about ``sha``'s commit statuses."""
        params = {**commit_params(), "api-version": self._client.api_version}
        return [answer_key(f"{where.api}/commits/{sha}/statuses", params)]
