"""Credentials: a personal or fine-grained token, or a GitHub App's installation tokens.

An App signs a short JWT (PyGithub's ``Auth.AppAuth``), finds its installation per
owner (unless configured), and mints installation tokens, cached per installation
and renewed ``RENEW_BEFORE`` seconds before they expire. Git gets the same token
through ``git_environment``: an ``http.<origin>/.extraheader``, never a URL.
Concurrency: one lock guards the caches; minting happens under it (rarely).
"""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Protocol
from urllib.parse import urlsplit

from github.Auth import AppAuth

from promoter.config import GitHubApp, Repository
from promoter.errors import ConfigError, ScmNotFound
from promoter.redaction import remember
from scm_plugins.github.client import GitHubClient

RENEW_BEFORE = 300.0
"""Renew an installation token when less than this many seconds of it are left."""


class Credentials(Protocol):
    """What the plugin needs from a credential: a token for a repository."""

    def token(self, *, repo: Repository) -> str: ...

    def invalidate(self, *, repo: Repository) -> None: ...


def checked(token: str, *, where: str) -> str:
    """Refuse a token that would break an HTTP header (and leak into requests' errors)."""
    token = token.strip()
    if not token or any(c.isspace() or not c.isprintable() for c in token):
        raise ConfigError([f"the GitHub token from {where} is empty or holds whitespace"])
    return token


class TokenCredentials:
    """A personal or fine-grained access token: the same token for every repository."""

    def __init__(self, token: str) -> None:
        self._token = token

    def token(self, *, repo: Repository) -> str:
        return self._token

    def invalidate(self, *, repo: Repository) -> None:
        """A refused PAT stays refused; nothing to renew."""


class AppCredentials:
    """A GitHub App: installation found per owner, installation tokens cached and renewed."""

    def __init__(
        self,
        *,
        app: GitHubApp,
        client: GitHubClient,
        clock: Callable[[], float] = time.time,
    ) -> None:
        where = app.private_key.describe()
        try:
            self._jwt = AppAuth(app.app_id, app.private_key.resolve())
            self._jwt.create_jwt()
        except Exception:  # PyJWT's InvalidKeyError, cryptography's ValueError, ...
            raise ConfigError(
                [f"the GitHub App private key from {where} is not a PEM RSA key"]
            ) from None
        self._fixed_installation = app.installation_id
        self._client = client
        self._clock = clock
        self._installations: dict[str, int] = {}
        self._tokens: dict[int, tuple[str, float]] = {}
        self._lock = threading.Lock()

    def token(self, *, repo: Repository) -> str:
        with self._lock:
            installation = self._installation(repo)
            cached = self._tokens.get(installation)
            if cached is not None and cached[1] - self._clock() > RENEW_BEFORE:
                return cached[0]
            token, expires_at = self._mint(installation)
            self._tokens[installation] = (token, expires_at)
            return token

    def invalidate(self, *, repo: Repository) -> None:
        """Forget the owner's token (GitHub refused it); the next call mints a new one."""
        with self._lock:
            installation = self._installations.get(_owner(repo), self._fixed_installation)
            if installation is not None:
                self._tokens.pop(installation, None)

    def _installation(self, repo: Repository) -> int:
        if self._fixed_installation is not None:
            return self._fixed_installation
        owner = _owner(repo)
        found = self._installations.get(owner)
        if found is None:
            try:
                data = self._client.request(
                    "app_installation",
                    "GET",
                    f"/repos/{repo.full_path}/installation",
                    authorization=f"Bearer {self._jwt.create_jwt()}",
                    budgeted=False,
                    repo=repo.full_path,
                )
            except ScmNotFound as exc:
                raise ScmNotFound(
                    f"the GitHub App {self._jwt.app_id} is not installed on {repo.full_path}"
                ) from exc
            found = int(data["id"])
            self._installations[owner] = found
        return found

    def _mint(self, installation: int) -> tuple[str, float]:
        data = self._client.request(
            "app_access_token",
            "POST",
            f"/app/installations/{installation}/access_tokens",
            authorization=f"Bearer {self._jwt.create_jwt()}",
            budgeted=False,
            installation=installation,
        )
        expires = datetime.fromisoformat(str(data["expires_at"]).replace("Z", "+00:00"))
        token = str(data["token"])
        remember(token, slot=f"github-app:{self._jwt.app_id}:{installation}")
        return token, expires.timestamp()


def _owner(repo: Repository) -> str:
    return repo.full_path.split("/", 1)[0].lower()


def git_environment(*, repo: Repository, token: Callable[[], str]) -> Mapping[str, str]:
    """Git variables that send the token as an HTTP header to the repository's origin."""
    env = {"GIT_TERMINAL_PROMPT": "0"}
    parts = urlsplit(repo.url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return env
    origin = f"{parts.scheme}://{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    basic = base64.b64encode(f"x-access-token:{token()}".encode()).decode("ascii")
    env.update(
        {
            "GIT_CONFIG_COUNT": "1",
            "GIT_CONFIG_KEY_0": f"http.{origin}/.extraheader",
            "GIT_CONFIG_VALUE_0": f"AUTHORIZATION: basic {basic}",
        }
    )
    return env
