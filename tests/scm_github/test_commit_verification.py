"""GitHub's own verdict on a commit's signature, read from ``GET /commits/{sha}`` (the body
PyGithub recorded from GitHub), for the signedCommits gate's ``scmVerification``."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmConflict
from scm_plugins.github import GitHubScm
from scm_plugins.protocol import CommitVerifications
from tests.gitrepo import GitSandbox

from .fake_github import FakeGitHub


def test_the_recorded_answer_is_read_as_verified_with_its_reason(
    fake: FakeGitHub,
    repo: Repository,
    sandbox: GitSandbox,
    token_provider: ScmProvider,
    make_plugin: Callable[[ScmProvider], GitHubScm],
) -> None:
    plugin = make_plugin(token_provider)
    assert isinstance(plugin, CommitVerifications)
    signed = sandbox.branch_sha("environment/dev") or ""
    unsigned = sandbox.branch_sha("environment/dev-next") or ""
    fake.verify(signed, verified=True, reason="valid")
    assert plugin.commit_verification(repo=repo, sha=signed).verified
    found = plugin.commit_verification(repo=repo, sha=unsigned)
    assert (found.verified, found.reason) == (False, "unsigned")
    fake.verify(unsigned, verified=False, reason="unknown_key")
    again = make_plugin(token_provider).commit_verification(repo=repo, sha=unsigned)
    assert (again.verified, again.reason) == (False, "unknown_key")


def test_a_sha_github_does_not_know_is_refused(plugin: GitHubScm, repo: Repository) -> None:
    with pytest.raises(ScmConflict):
        plugin.commit_verification(repo=repo, sha="e" * 40)
