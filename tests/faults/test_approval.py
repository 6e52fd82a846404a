"""An approval whose reviews GitHub will not give (it hangs, trickles, answers 5xx or
garbage, resets, refuses the token): the approval waits with GitHub's words, its
environment does not merge, and every other environment and strategy merges as usual.

GitHub is the stateful fake of ``tests.scm_github`` served over real HTTP on 127.0.0.1;
only its reviews route misbehaves. A TLS error is not the approval's: every call to that
GitHub fails, so its strategy's reconcile fails and says so, and the others go on.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
from requests.structures import CaseInsensitiveDict

from promoter.cli.sandbox import GitOpsRepo
from tests.faults.harness import (
    DEV,
    TIMEOUT,
    Faulted,
    Faulty,
    blocked_alone,
    faulted,
    reason_says,
)
from tests.faults.standins import Answer, HeadedAnswer, Standin
from tests.scm_github.fake_github import FakeGitHub
from tests.scm_github.fake_limits import FakeLimits
from tests.scm_github.genuine import Genuine
from tests.support import wait_for

KEY = "promoter/approval"
TOKEN_ENV = "PROMOTER_FAULTS_GITHUB_TOKEN"
TOKEN = "ghp_faultsuite000000000000000000000000000"
REVIEWS = re.compile(r"^/api/v3/repos/acme/[^/]+/pulls/\d+/reviews")
GATE = f"gates: [{{approval: {{count: 1, timeout: {TIMEOUT}}}}}]"
NO_ANSWER = (  # the SCM's client waits 30 s: its calls hold the backend's threads meanwhile
    "approval: github not reachable: no answer within 0.3s",
    "approval: github not reachable: no answer to 2 earlier calls yet",
    "approval: github not reachable: no answer to 1 earlier calls yet",  # late: one at a time
)
UNLIMITED = FakeLimits(
    primary=10**9,
    concurrent=10**9,
    points_per_minute=10**9,
    content_per_minute=10**9,
    content_per_hour=10**9,
)
"""The suite's daemon polls every 50 ms for minutes, and the faults tried here are not
rate limits (``tests/scm_github/test_fake_rate_limits.py`` has those): the fake refuses
nothing, and the primary limit its answers state is as high as an Enterprise Server's
may be (a limit above GitHub's once held every read 36 s,
``tests/unit/test_credential_budget.py``)."""
WORDS = {
    "hang": NO_ANSWER,
    "slow": NO_ANSWER,
    "5xx": ("approval: github not reachable: GitHub answered 503: upstream overloaded",),
    "garbage": ("approval: github answered garbage: ",),
    "reset": ("approval: github not reachable: [Errno 104] Connection reset by peer",),
}


class GitHubOverHttp:
    """The fake GitHub answering real HTTP requests with every header it gives (ETags,
    rate limits); ``refused`` answers its reviews route with GitHub's recorded 401 (a
    token it does not take)."""

    def __init__(self, genuine: Genuine) -> None:
        self.genuine = genuine
        self.refused = False
        self.standin = Standin(self.answer, faulty=lambda path: bool(REVIEWS.match(path)))
        self.fake = FakeGitHub(
            genuine, base_url=f"{self.standin.url}/api/v3", tokens=(TOKEN,), limits=UNLIMITED
        )

    def answer(
        self, method: str, path: str, headers: dict[str, str], body: bytes
    ) -> Answer | HeadedAnswer:
        if self.refused and REVIEWS.match(path):
            status, _, payload = self.genuine.error("SpecificExceptions.testBadCredentials")
            return status, "application/json", json.dumps(payload).encode()
        request = SimpleNamespace(
            url=f"{self.standin.url}{path}",
            method=method,
            headers=CaseInsensitiveDict(headers),
            body=body or None,
        )
        status, answered, text = self.fake._respond(request)
        kind = answered.get("content-type", "application/json")
        return status, kind, text.encode() if status != 304 else b"", answered


def providers(url: str) -> str:
    token = f"{{fromEnv: {TOKEN_ENV}}}"
    return f"""
  - name: github
    github: {{token: {token}, url: '{url}/api/v3', allowInsecure: true}}
  - name: github-tls
    github: {{token: {token}, url: '{url.replace("http://", "https://")}/api/v3'}}
"""


def on_github(name: str, provider: str, *, readable: bool = True) -> Faulty:
    return Faulty(
        name,
        staging=GATE,
        provider=provider,
        repository=f"path: acme/{name}\n    pollInterval: 0.05s",
        readable=readable,
    )


@pytest.fixture(scope="module")
def github(genuine_fixtures: Path) -> Iterator[GitHubOverHttp]:
    server = GitHubOverHttp(Genuine(genuine_fixtures))
    with server.standin:
        yield server


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory, github: GitHubOverHttp) -> Iterator[Faulted]:
    root = tmp_path_factory.mktemp("approval")

    def created(repos: dict[str, GitOpsRepo]) -> None:
        for name in ("faulty", "faulty-tls"):
            github.fake.add_repository(f"acme/{name}", repos[name].path)

    faulty = [
        on_github("faulty", "github"),
        on_github("faulty-tls", "github-tls", readable=False),
    ]
    with pytest.MonkeyPatch.context() as env:
        env.setenv(TOKEN_ENV, TOKEN)
        with faulted(root, faulty, providers(github.standin.url), created=created) as world:
            yield world


@pytest.mark.parametrize("mode", list(WORDS))
def test_reviews_github_will_not_give_keep_the_approval_pending_in_its_words(
    world: Faulted, github: GitHubOverHttp, mode: str
) -> None:
    github.standin.mode = mode
    said = blocked_alone(world, "faulty", KEY, WORDS[mode])
    assert TOKEN not in said


def test_a_token_refused_for_the_reviews_keeps_the_approval_pending_in_its_words(
    world: Faulted, github: GitHubOverHttp
) -> None:
    github.standin.mode = "ok"
    github.refused = True
    try:
        blocked_alone(
            world,
            "faulty",
            KEY,
            ("approval: github not reachable: GitHub answered 401: Bad credentials",),
        )
    finally:
        github.refused = False


def test_a_tls_error_fails_the_strategys_reads_and_no_other(
    world: Faulted, github: GitHubOverHttp
) -> None:
    github.standin.mode = "ok"
    reason = reason_says(world, "faulty-tls", DEV, ("GitHub could not be reached",))
    assert world.view("faulty-tls", DEV)["state"] == "error", reason
    world.assert_usual_speed("calm")
    world.assert_usual_speed("faulty")
    wait_for(lambda: world.view("faulty-tls", DEV)["state"] == "error", what="still failing")


def test_reads_of_what_did_not_change_are_answered_304_as_github_does(
    world: Faulted, github: GitHubOverHttp
) -> None:
    """The fake's ETags reach the daemon through the stand-in, so its conditional reads
    are answered 304 here as on GitHub (the paths the faults interrupt included)."""
    github.standin.mode = "ok"
    wait_for(
        lambda: any(c.status == 304 and c.method == "GET" for c in github.fake.calls),
        what="a conditional read answered 304",
    )
