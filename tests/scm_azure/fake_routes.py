"""The fake Azure DevOps' REST routes: which function of ``fake_pulls`` or ``fake_gates``
answers which method and path (matched without regard to case, as Azure's are)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from tests.scm_azure import fake_gates, fake_pulls
from tests.scm_azure.fake_state import Answer, AzureError, not_found

if TYPE_CHECKING:
    from tests.scm_azure.fake_azure import FakeAzure

API = re.compile(r"^/([^/]+)/_apis/git/repositories/([^/]+)(/.*)?$")
EVALUATIONS = re.compile(r"^/([^/]+)/_apis/policy/evaluations$")


def route(
    fake: FakeAzure,
    method: str,
    path: str,
    query: dict[str, str],
    headers: dict[str, str],
    body: Any,
) -> Answer:
    found = EVALUATIONS.match(path)
    if found is not None and method == "GET":
        return fake_gates.evaluations(fake, found.group(1), query)
    found = API.match(path)
    if found is None:
        raise AzureError(404, "The controller for path was not found.", "HttpException")
    repo, rest = fake.find(found.group(1), found.group(2)), found.group(3) or ""
    etag = headers.get("if-none-match", "")
    pull = re.fullmatch(r"/pullrequests/(\d+)(/[a-z]+)?(?:/(.+))?", rest, re.IGNORECASE)
    if rest.lower() == "/pullrequests":
        return (
            fake_pulls.search(fake, repo, query)
            if method == "GET"
            else fake_pulls.create(fake, repo, body)
        )
    if pull is not None:
        number, part, more = int(pull.group(1)), (pull.group(2) or "").lower(), pull.group(3)
        if number not in repo.pulls:
            raise not_found()
        routes: dict[tuple[str, str], Callable[[], Answer]] = {
            ("GET", ""): lambda: Answer(200, fake_pulls.view(fake, repo, number)),
            ("PATCH", ""): lambda: fake_pulls.update(fake, repo, number, body),
            ("GET", "/reviewers"): lambda: fake_gates.reviewers(repo, number),
            ("POST", "/labels"): lambda: fake_pulls.add_label(repo, number, body),
            ("DELETE", "/labels"): lambda: fake_pulls.remove_label(repo, number, more or ""),
            ("POST", "/threads"): lambda: fake_pulls.add_thread(fake, repo, number, body),
            ("GET", "/statuses"): lambda: fake_gates.pr_statuses(repo, number, etag),
            ("POST", "/statuses"): lambda: fake_gates.post_pr_status(fake, repo, number, body),
            ("GET", "/iterations"): lambda: fake_gates.iterations(repo, number),
        }
        handler = routes.get((method, part))
        if handler is not None:
            return handler()
    commit = re.fullmatch(r"/commits/([0-9a-f]{40})/statuses", rest, re.IGNORECASE)
    if commit is not None and method == "GET":
        return fake_gates.commit_statuses(repo, commit.group(1), query, etag)
    if commit is not None and method == "POST":
        return fake_gates.post_commit_status(fake, repo, commit.group(1), body)
    raise AzureError(404, "The controller for path was not found.", "HttpException")
