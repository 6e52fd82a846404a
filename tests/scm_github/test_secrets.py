"""No token, JWT or private key in a log line, a URL or an error message, whatever happens."""

from __future__ import annotations

import logging
from collections.abc import Callable

import pytest

from promoter.config import Repository, ScmProvider
from promoter.errors import ScmError
from promoter.logs import JsonFormatter
from promoter.models import CommitStatus, Phase
from scm_plugins.github import GitHubScm
from tests.gitrepo import GitSandbox

from .conftest import TOKEN
from .fake_github import FakeGitHub

DEV, DEV_NEXT = "environment/dev", "environment/dev-next"


def chain(exc: BaseException | None) -> list[BaseException]:
    out = []
    while exc is not None and exc not in out:
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


def exercise(plugin: GitHubScm, repo: Repository, fake: FakeGitHub, sha: str) -> list[str]:
    """Every operation, then every failure mode; the text of every error raised."""
    errors: list[str] = []

    def attempt(action: Callable[[], object]) -> None:
        try:
            action()
        except ScmError as exc:
            errors.extend(f"{e!s} {e!r}" for e in chain(exc))

    def open_pr() -> object:
        return plugin.open_pull_request(
            repo=repo, head=DEV_NEXT, base=DEV, title="t", body="b", labels=("promotion",)
        )

    status = CommitStatus(key="promoter/gates", phase=Phase.PENDING)
    attempt(open_pr)
    attempt(lambda: plugin.set_commit_status(repo=repo, sha=sha, status=status))
    attempt(lambda: plugin.get_commit_statuses(repo=repo, sha=sha))
    attempt(lambda: plugin.git_environment(repo=repo))
    for status_code in (401, 403, 404, 409, 422, 500):
        fake.fail_next("POST", r"/pulls$", status=status_code, body={"message": "nope"})
        attempt(open_pr)
    fake.rate_limit_next("GET", r"/pulls$")
    attempt(lambda: plugin.find_open_pull_request(repo=repo, head=DEV_NEXT, base=DEV))
    fake.exhaust_rate_limit("GET", r"/status$")
    attempt(lambda: plugin.get_commit_statuses(repo=repo, sha=sha))
    attempt(
        lambda: plugin.merge_pull_request(repo=repo, number=1, expected_head_sha=sha, message="m")
    )
    fake.tokens.clear()
    fake.installation_tokens.clear()
    attempt(open_pr)
    return errors


@pytest.mark.parametrize("kind", ["token", "app"])
def test_no_secret_shows_in_logs_urls_or_errors(
    kind: str,
    fake: FakeGitHub,
    token_provider: ScmProvider,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
    sandbox: GitSandbox,
    app_key: tuple[str, str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="github")  # PyGithub's own default is INFO
    caplog.set_level(logging.DEBUG, logger="github.Requester")
    plugin = make_plugin(token_provider if kind == "token" else app_provider())
    sha = sandbox.branch_sha(DEV_NEXT) or ""
    errors = exercise(plugin, repo, fake, sha)
    assert len(errors) >= 8
    secrets = [TOKEN, *(fake.app.issued if fake.app else [])]
    secrets += [c.authorization.split(" ", 1)[1] for c in fake.calls if " " in c.authorization]
    key_body = app_key[0].splitlines()[1]
    formatter = JsonFormatter()
    logs = "\n".join(formatter.format(record) for record in caplog.records)
    urls = "\n".join(f"{c.path}?{c.query}" for c in fake.calls)
    assert "scm call" in logs  # the calls were logged, at debug level
    for secret in {*secrets, key_body}:
        assert secret not in logs
        assert secret not in urls
        assert all(secret not in error for error in errors)
