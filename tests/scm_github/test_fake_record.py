"""The fake GitHub without a record of its calls: it answers alike and keeps nothing."""

from __future__ import annotations

import requests

from tests.gitrepo import GitSandbox

from .conftest import FULL_NAME, TOKEN
from .fake_github import FakeGitHub
from .genuine import Genuine


def statuses(fake: FakeGitHub, sha: str) -> requests.Response:
    return requests.get(
        f"{fake.base_url}/repos/{FULL_NAME}/commits/{sha}/status",
        headers={"Authorization": f"token {TOKEN}"},
        timeout=5,
    )


def test_a_fake_that_records_nothing_answers_as_one_that_does(
    genuine: Genuine, sandbox: GitSandbox
) -> None:
    sha = sandbox.branch_sha("environment/dev") or ""
    answers = {}
    for record in (True, False):
        with FakeGitHub(genuine, tokens=(TOKEN,), record=record) as fake:
            fake.add_repository(FULL_NAME, sandbox.path)
            fake.post_status(FULL_NAME, sha, "ci", "success")
            first = statuses(fake, sha)
            again = requests.get(
                first.url,
                headers={"Authorization": f"token {TOKEN}", "If-None-Match": first.headers["etag"]},
                timeout=5,
            )
            answers[record] = (first.status_code, first.json()["state"], again.status_code)
            assert fake._mock is not None
            routes = sum(len(route.calls) for route in fake._mock.registered())
            kept = (len(fake.calls), len(fake._mock.calls), routes)
            assert kept == ((2, 2, 2) if record else (0, 0, 0)), kept
    assert answers[True] == answers[False] == (200, "success", 304)
