"""A commit's statuses and check runs in one GraphQL read: ``statusCheckRollup``.

``Commit.statusCheckRollup.contexts`` lists both kinds (``StatusContext`` and
``CheckRun``, the union ``StatusCheckRollupContext`` of GitHub's schema), so one request
reads what the REST API gives in two (the combined status, the check runs). A commit
with neither has no rollup (``null``); an unknown commit has no ``object``. The enums
are GitHub's: ``StatusState`` (EXPECTED, ERROR, FAILURE, PENDING, SUCCESS),
``CheckStatusState`` and ``CheckConclusionState``; they map to phases as the REST
reads do (``statuses``), and each context becomes the ``CommitStatus`` the REST read
of the same status or check run gives.

It costs one point of the credential's GraphQL budget a page of up to 100 contexts (a
budget of its own: 5,000 points an hour for a token), one point of the secondary
limit, and is never free: GraphQL has no conditional request. GitHub Enterprise Server
serves it at ``/api/graphql`` (PyGithub's ``graphql_url``).
"""

from __future__ import annotations

from typing import Any

from promoter.config import Repository
from promoter.errors import ScmError, ScmNotFound, ScmRateLimited
from promoter.models import CommitStatus
from scm_plugins.budget import Priority
from scm_plugins.github.api import RepoApi
from scm_plugins.github.contexts import check_run_node, latest_per_key, status_context

PER_PAGE = 100
"""Contexts read a request (GitHub's most for a connection)."""
MAX_PAGES = 10

ROLLUP = """query(
  $owner: String!, $name: String!, $sha: GitObjectID!, $first: Int!, $after: String
) {
  repository(owner: $owner, name: $name) {
    object(oid: $sha) {
      ... on Commit {
        statusCheckRollup {
          contexts(first: $first, after: $after) {
            pageInfo { hasNextPage endCursor }
            nodes {
              __typename
              ... on StatusContext { context state description targetUrl createdAt }
              ... on CheckRun {
                name status conclusion title detailsUrl url startedAt completedAt
              }
            }
          }
        }
      }
    }
  }
}"""

RATE_LIMITED_RETRY = 60.0
"""Seconds before reading again after GitHub's ``RATE_LIMITED`` GraphQL error (it gives
no ``Retry-After`` with it)."""


def _page(data: Any, repo: Repository, sha: str) -> tuple[list[dict[str, Any]], str | None]:
    """One page's nodes and the cursor of the next page (None: the last)."""
    if not isinstance(data, dict):
        raise ScmError(f"GitHub's status rollup of {sha} is not an object")
    errors = data.get("errors") or []
    if errors:
        first = errors[0] if isinstance(errors[0], dict) else {}
        message = f"GitHub refused the status rollup of {sha}: {first.get('message', '')}"
        if first.get("type") == "NOT_FOUND":
            raise ScmNotFound(message)
        if first.get("type") == "RATE_LIMITED":
            raise ScmRateLimited(message, retry_after=RATE_LIMITED_RETRY)
        raise ScmError(message)
    repository = (data.get("data") or {}).get("repository")
    if repository is None:
        raise ScmNotFound(f"repository {repo.full_path} not found")
    commit = repository.get("object")
    if commit is None:
        raise ScmNotFound(f"commit {sha} not found in {repo.full_path}")
    rollup = commit.get("statusCheckRollup")
    if rollup is None:  # neither a status nor a check run
        return [], None
    contexts = rollup.get("contexts") or {}
    nodes = contexts.get("nodes")
    if not isinstance(nodes, list):
        raise ScmError(f"GitHub's status rollup of {sha} has no list of contexts")
    info = contexts.get("pageInfo") or {}
    return [n for n in nodes if isinstance(n, dict)], (
        str(info["endCursor"]) if info.get("hasNextPage") and info.get("endCursor") else None
    )


def read_rollup(
    api: RepoApi, repo: Repository, sha: str, priority: Priority | None = None
) -> list[CommitStatus]:
    """Every status and check run of ``sha`` (latest per key), one request a page, in the
    order the REST read gives them (statuses, then check runs newest first)."""
    owner, _, name = repo.full_path.partition("/")
    statuses: list[CommitStatus] = []
    checks: list[CommitStatus] = []
    after: str | None = None
    for _ in range(MAX_PAGES):
        variables = {"owner": owner, "name": name, "sha": sha, "first": PER_PAGE, "after": after}
        data = api.graphql(
            repo, "get_status_check_rollup", ROLLUP, variables, priority=priority, sha=sha
        )
        nodes, after = _page(data, repo, sha)
        for node in nodes:
            kind = node.get("__typename")
            if kind == "StatusContext":
                statuses.append(status_context(node))
            elif kind == "CheckRun":
                checks.append(check_run_node(node))
        if after is None:
            break
    checks.sort(key=lambda s: s.updated_at, reverse=True)
    return latest_per_key(statuses + checks)
