"""GitHub's documented limits on one credential, and what each REST call costs against them.

From "Rate limits for the REST API" (docs.github.com/en/rest/using-the-rest-api/
rate-limits-for-the-rest-api): 5,000 requests an hour for a token (``x-ratelimit-limit``
says the real figure, and the budget follows it); secondary limits: no more than 100
concurrent requests, no more than 900 points a minute for REST endpoints (GET, HEAD and
OPTIONS 1 point, POST, PATCH, PUT and DELETE 5), no more than 80 content-generating
requests a minute and 500 an hour. A 304 to a conditional request is not charged on
the primary limit ("Best practices for using the REST API"). A GraphQL request is
charged to the GraphQL API's own primary limit, not the REST one, and to the secondary
points at 1 for a query and 5 for a mutation ("Rate limits and query limits for the
GraphQL API"). GitHub does not list the
content-generating endpoints; these are the routes among ours that octokit's
throttling plugin files as creating content that notifies people (pull requests,
comments, reviews, merges).
"""

from __future__ import annotations

import re

from scm_plugins.budget import Cost, Limits, Priority

GITHUB_LIMITS = Limits(
    window=3600.0,
    primary=5000,
    burst=0.1,
    concurrent=100,
    points_per_minute=900,
    content_per_minute=80,
    content_per_window=500,
)

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
GRAPHQL_PATH = "/graphql"
READ_POINTS, WRITE_POINTS = 1, 5

_REPO = r"^/repos/[^/]+/[^/]+"
CONTENT_ROUTES = (
    ("POST", re.compile(_REPO + r"/pulls$")),
    ("PUT", re.compile(_REPO + r"/pulls/\d+/merge$")),
    ("POST", re.compile(_REPO + r"/pulls/\d+/(reviews|comments)$")),
    ("POST", re.compile(_REPO + r"/issues$")),
    ("POST", re.compile(_REPO + r"/issues/\d+/comments$")),
)


def creates_content(method: str, path: str) -> bool:
    return any(verb == method and route.match(path) for verb, route in CONTENT_ROUTES)


def cost(
    operation: str,
    method: str,
    path: str,
    *,
    revalidation: bool = False,
    priority: Priority | None = None,
    mutation: bool = False,
) -> Cost:
    """The cost of one call: a merge goes first, then the reads asked for by a merge
    (``priority``), then writes, then every other read. ``mutation``: a GraphQL request
    (``path`` ``GRAPHQL_PATH``) that changes something."""
    if path == GRAPHQL_PATH:
        return Cost(
            priority=priority or (Priority.WRITE if mutation else Priority.READ),
            points=WRITE_POINTS if mutation else READ_POINTS,
            core=False,
        )
    read = method in READ_METHODS
    if priority is None:
        if operation == "merge_pull_request":
            priority = Priority.MERGE
        else:
            priority = Priority.READ if read else Priority.WRITE
    return Cost(
        priority=priority,
        points=READ_POINTS if read else WRITE_POINTS,
        content=creates_content(method, path),
        revalidation=revalidation and read,
    )
