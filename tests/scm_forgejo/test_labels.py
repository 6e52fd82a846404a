"""Labels on Forgejo: a label the repository lacks is created, since Forgejo drops it silently."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import git
from promoter.config import ExternalPlugin, Repository, ScmProvider, SecretRef
from promoter.engine import REVERT_LABEL
from scm_plugins.external import ExternalScm

from .conftest import BIN, FULL_NAME, TOKEN, TOKEN_ENV
from .fake_forgejo import FakeForgejo


@pytest.fixture
def host(
    forgejo: FakeForgejo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ExternalScm]:
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    plugin = ExternalPlugin(
        name="forgejo",
        directory=str(BIN),
        settings={"url": forgejo.url},
        secrets={"token": SecretRef(from_env=TOKEN_ENV)},
    )
    made = ExternalScm(provider=ScmProvider(name="fj", plugin=plugin), state_dir=str(tmp_path))
    yield made
    made.close()


@pytest.fixture
def repo(bare: Path, tmp_path: Path) -> Repository:
    work = tmp_path / "work"
    git(tmp_path, "init", "-q", "-b", "environment/prod", str(work))
    for branch in ("environment/prod", "environment/prod-revert-abc1234"):
        git(work, "checkout", "-q", "-B", branch)
        git(
            work,
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "commit",
            "-q",
            "--allow-empty",
            "-m",
            branch,
        )
        git(work, "push", "-q", str(bare), f"HEAD:refs/heads/{branch}")
    return Repository(name="gitops", url=str(bare), scm_provider="fj", path=FULL_NAME)


def names(forgejo: FakeForgejo) -> set[str]:
    return {label["name"] for label in forgejo.repos[FULL_NAME].labels}


def test_the_fake_like_forgejo_drops_a_label_the_repository_lacks_without_an_error(
    forgejo: FakeForgejo, repo: Repository
) -> None:
    status, pr = forgejo.handle(
        "POST",
        f"/api/v1/repos/{FULL_NAME}/pulls",
        f"token {TOKEN}",
        b'{"head": "environment/prod-revert-abc1234", "base": "environment/prod", "title": "t"}',
    )
    assert status == 201
    path = f"/api/v1/repos/{FULL_NAME}/issues/{pr['number']}/labels"
    forgejo.add_label(FULL_NAME, "known")
    status, held = forgejo.handle("PUT", path, f"token {TOKEN}", b'{"labels": ["known", "nope"]}')
    assert (status, [label["name"] for label in held]) == (200, ["known"])


def test_a_revert_pull_request_carries_the_revert_label_on_a_fresh_repository(
    host: ExternalScm, forgejo: FakeForgejo, repo: Repository
) -> None:
    forgejo.add_label(FULL_NAME, "prod")  # made by a person: reused, not made twice
    pr = host.open_pull_request(
        repo=repo,
        head="environment/prod-revert-abc1234",
        base="environment/prod",
        title="Revert prod",
        body="",
        labels=(REVERT_LABEL, "prod"),
    )
    assert set(pr.labels) == {REVERT_LABEL, "prod"}
    assert {label["name"] for label in forgejo.pulls_of(FULL_NAME)[0]["labels"]} == {
        REVERT_LABEL,
        "prod",
    }
    assert sorted(label["name"] for label in forgejo.repos[FULL_NAME].labels) == [
        "prod",
        REVERT_LABEL,
    ]
    creates = [
        c
        for c in forgejo.calls
        if (c.method, c.path) == ("POST", f"/api/v1/repos/{FULL_NAME}/labels")
    ]
    assert len(creates) == 1


def test_a_label_that_cannot_be_created_is_left_off_and_the_pull_request_still_opens(
    host: ExternalScm, forgejo: FakeForgejo, repo: Repository
) -> None:
    forgejo.fail_next("POST", r"/labels$", 403)
    pr = host.open_pull_request(
        repo=repo,
        head="environment/prod-revert-abc1234",
        base="environment/prod",
        title="Revert prod",
        body="",
        labels=(REVERT_LABEL,),
    )
    assert pr.labels == ()
    assert names(forgejo) == set()
