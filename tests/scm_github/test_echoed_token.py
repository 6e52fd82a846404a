"""A GitHub that echoes the token back in its error bodies cannot make the promoter show it."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config import Repository, ScmProvider
from promoter.config.loader import parse_config
from promoter.errors import ScmAuthError, ScmError
from promoter.wiring import Daemon
from scm_plugins.github import GitHubScm
from tests.support import GitOpsRepo, wait_for
from tests.support_logs import daemon_logs

from .conftest import TOKEN, TOKEN_ENV
from .fake_github import FakeGitHub
from .genuine import Genuine
from .test_end_to_end import FULL_NAME, SECRET, SECRET_ENV, config_text


def echo_everything(fake: FakeGitHub, secret: str) -> None:
    """Every request from now on is refused with a body that quotes ``secret``."""
    body = {"message": f"Bad credentials: {secret} is not a token we know"}
    for method in ("GET", "POST", "PATCH", "PUT", "DELETE"):
        fake.fail_next(method, ".", status=401, body=body, times=100_000)


def causes(exc: BaseException | None) -> str:
    text = ""
    while exc is not None:
        text += f"{exc!s} {exc!r}\n"
        exc = exc.__cause__ or exc.__context__
    return text


def test_an_echoed_token_is_blanked_out_of_the_plugins_error(
    fake: FakeGitHub,
    token_provider: ScmProvider,
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    plugin = make_plugin(token_provider)
    echo_everything(fake, TOKEN)
    with pytest.raises(ScmAuthError) as raised:
        plugin.find_open_pull_request(repo=repo, head="x", base="environment/dev")
    text = causes(raised.value)
    assert "Bad credentials: *** is not a token" in str(raised.value)
    assert TOKEN not in text


def test_an_echoed_installation_token_is_blanked_out_too(
    fake: FakeGitHub,
    app_provider: Callable[..., ScmProvider],
    make_plugin: Callable[[ScmProvider], GitHubScm],
    repo: Repository,
) -> None:
    plugin = make_plugin(app_provider())
    assert plugin.find_open_pull_request(repo=repo, head="x", base="environment/dev") is None
    app = fake.app
    assert app is not None and app.issued
    echoed: list[str] = []

    def echo_the_current_token(method: str, path: str) -> None:
        if path.endswith("/pulls"):  # the plugin renews the token once after a 401
            echoed.append(app.issued[-1])
            fake.fail_next("GET", r"/pulls$", status=401, body={"message": f"{echoed[-1]} expired"})

    fake.on_request = echo_the_current_token
    with pytest.raises(ScmError) as raised:
        plugin.find_open_pull_request(repo=repo, head="x", base="environment/dev")
    assert len(set(echoed)) == 2
    assert "*** expired" in str(raised.value)
    assert not any(token in causes(raised.value) for token in echoed)


def test_no_api_answer_readiness_reply_or_log_line_shows_an_echoed_token(
    genuine: Genuine, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    gitops = GitOpsRepo.create(tmp_path)
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(SECRET_ENV, SECRET)
    with FakeGitHub(genuine, tokens=(TOKEN,)) as fake, daemon_logs() as logged:
        fake.add_repository(FULL_NAME, gitops.path)
        echo_everything(fake, TOKEN)
        daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state")))
        with TestClient(daemon.app) as client:
            view = wait_for(
                lambda: (v := client.get("/api/v1/strategies/guestbook").json()).get("error") and v,
                what="the refusal in the view",
            )
            ready = client.get("/readyz")
            status = client.post(
                f"/api/v1/repositories/gitops/commits/{gitops.tip('environment/dev')}/statuses",
                json={"key": "ci", "phase": "success"},
            )
            listing = client.get("/api/v1/strategies").text
    assert "401" in view["error"] and "***" in view["error"]
    assert status.status_code == 502 and "401" in status.json()["error"]
    assert "401" in ready.text
    lines = logged.getvalue()
    assert "reconcile failed" in lines
    for text in (json.dumps(view), ready.text, status.text, listing, lines):
        assert TOKEN not in text
