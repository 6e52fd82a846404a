"""The token never shows: not in a log line, a URL, an exception message or git's output."""

from __future__ import annotations

import logging
import re
import traceback

import pytest
import requests
import responses
from gitlab.exceptions import GitlabHttpError

from promoter.config import Repository
from promoter.errors import ScmError
from promoter.models import CommitStatus, Phase
from scm_plugins.gitlab import GitLabScm
from scm_plugins.gitlab.errors import translate
from tests.scm_gitlab.conftest import TOKEN
from tests.scm_gitlab.fake_gitlab import FakeGitLab

HEAD, BASE = "environment/dev-next", "environment/dev"


def chain(exc: BaseException | None) -> list[BaseException]:
    found: list[BaseException] = []
    while exc is not None and exc not in found:
        found.append(exc)
        exc = exc.__cause__ or exc.__context__
    return found


def test_no_log_line_url_or_error_of_a_busy_session_carries_the_token(
    plugin: GitLabScm, repo: Repository, fake: FakeGitLab, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    errors: list[BaseException] = []

    def attempt(action: object) -> None:
        try:
            action()  # type: ignore[operator]
        except ScmError as exc:
            errors.append(exc)

    pr = plugin.open_pull_request(repo=repo, head=HEAD, base=BASE, title="t", body="b", labels=())
    plugin.set_commit_status(
        repo=repo, sha=pr.head_sha, status=CommitStatus(key="k", phase=Phase.PENDING)
    )
    for code in (401, 404, 409, 422, 500):
        fake.fail_next("GET", r"/merge_requests$", code, body={"message": f"echo {TOKEN}"})
        attempt(lambda: plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE))
    attempt(
        lambda: plugin.merge_pull_request(
            repo=repo, number=pr.number, expected_head_sha="0" * 40, message="m"
        )
    )
    with responses.RequestsMock() as mock:
        mock.add(responses.GET, re.compile(".*"), body=requests.ConnectionError(f"boom {TOKEN}"))
        attempt(lambda: plugin.get_commit_statuses(repo=repo, sha=pr.head_sha))
    # Last: a rate limit pauses every later call on the token.
    fake.fail_next("GET", r"/merge_requests$", 429, body={"message": f"echo {TOKEN}"})
    attempt(lambda: plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE))
    attempt(lambda: plugin.find_open_pull_request(repo=repo, head=HEAD, base=BASE))

    assert len(errors) == 9
    for error in errors:
        shown = "".join(traceback.format_exception(error))
        assert TOKEN not in shown, shown
    for record in caplog.records:
        assert TOKEN not in record.getMessage()
        assert TOKEN not in repr(vars(record))
    for _, url in fake.requests:
        assert TOKEN not in url
    assert TOKEN not in repr(plugin)
    for key in plugin.git_environment(repo=repo):
        assert TOKEN not in key


def test_translated_messages_blank_the_token_even_if_gitlab_echoes_it() -> None:
    original = GitlabHttpError(f"token {TOKEN} is expired", 401)
    translated = translate(original, secret=TOKEN)
    assert translated is not None
    assert "[redacted]" in str(translated)
    translated.__cause__ = original
    assert all(TOKEN not in str(e) for e in chain(translated))
