"""Bitbucket Cloud's credentials: basic auth, an access token, or an OAuth consumer.

- ``password`` with ``username``: an app password (with the Bitbucket username) or an
  Atlassian API token (with the account's e-mail), sent as basic auth; git uses the
  username, or ``x-bitbucket-api-token-auth`` for an API token.
- ``accessToken``: a repository, project or workspace access token, sent as a bearer;
  git uses ``x-token-auth``.
- ``oauth``: an OAuth consumer's key and secret. An access token is asked for with the
  client-credentials grant (``POST tokenUrl``, basic auth with the consumer's key and
  secret), kept until a minute before it expires (Bitbucket's last two hours), and asked
  for again after a 401. It goes to each REST request as a bearer (a ``requests`` auth on
  the session) and to git with ``x-token-auth``. The token request is counted
  (``oauth_token``) but not charged to the REST budget: it is not a REST API call.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import requests

from promoter.config import BitbucketCloudProvider
from promoter.errors import ScmAuthError, ScmError
from promoter.redaction import remember
from scm_plugins.bitbucket import BitbucketHTTPError, basic
from scm_plugins.calls import ScmCalls

EARLY = 60.0
"""Seconds before its stated expiry that an OAuth access token is asked for anew."""
DEFAULT_LIFETIME = 3600.0
TIMEOUT = 30.0


class OAuthToken(requests.auth.AuthBase):
    """The client-credentials access token of one OAuth consumer. Thread-safe."""

    def __init__(
        self,
        *,
        token_url: str,
        client_id: str,
        client_secret: str,
        calls: ScmCalls,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._url = token_url
        self._client = (client_id, client_secret)
        self._calls = calls
        self._clock = clock
        self._token = ""
        self._until = 0.0
        self._lock = threading.Lock()

    def __call__(self, request: requests.PreparedRequest) -> requests.PreparedRequest:
        request.headers["Authorization"] = f"Bearer {self.token()}"
        return request

    def token(self) -> str:
        with self._lock:
            if not self._token or self._clock() >= self._until:
                self._token, lifetime = self._fetch()
                self._until = self._clock() + max(lifetime - EARLY, EARLY)
            return self._token

    def drop(self) -> bool:
        """Forget the token (Bitbucket refused it): the next request asks for another."""
        with self._lock:
            self._token, self._until = "", 0.0
        return True

    def _fetch(self) -> tuple[str, float]:
        with self._calls.call("oauth_token"):
            answer = requests.post(
                self._url,
                data={"grant_type": "client_credentials"},
                auth=self._client,
                timeout=TIMEOUT,
            )
            if answer.status_code >= 400:
                raise BitbucketHTTPError(
                    answer.status_code, _json(answer), answer.headers, "POST the token URL"
                )
            data = _json(answer)
        token = data.get("access_token") if isinstance(data, dict) else None
        if not isinstance(token, str) or not token:
            raise ScmAuthError("Bitbucket's OAuth answer holds no access_token")
        remember(token)
        lifetime = data.get("expires_in")
        if isinstance(lifetime, int | float) and not isinstance(lifetime, bool):
            return token, float(lifetime)
        return token, DEFAULT_LIFETIME


def _json(answer: requests.Response) -> Any:
    try:
        return answer.json()
    except ValueError:
        return {}


class Credentials:
    """What the Cloud plugin authenticates with, for REST and for git."""

    def __init__(self, config: BitbucketCloudProvider, calls: ScmCalls) -> None:
        self.username: str | None = None
        self.password: str | None = None
        self.token: str | None = None
        self.oauth: OAuthToken | None = None
        self.git_user = config.git_user()
        if config.password is not None:
            self.username, self.password = config.username, config.password.resolve()
        elif config.access_token is not None:
            self.token = config.access_token.resolve()
        else:
            assert config.oauth is not None
            self.oauth = OAuthToken(
                token_url=config.oauth.token_url,
                client_id=config.oauth.client_id.resolve(),
                client_secret=config.oauth.client_secret.resolve(),
                calls=calls,
            )

    def renew(self) -> bool:
        """After a 401: True when a new credential can be had (OAuth), so the call is
        made once more."""
        return self.oauth.drop() if self.oauth is not None else False

    def git_authorization(self) -> str:
        """The ``Authorization`` header git sends: basic auth with the git user."""
        if self.password is not None:
            return basic(self.git_user, self.password)
        if self.token is not None:
            return basic(self.git_user, self.token)
        if self.oauth is None:  # pragma: no cover - one of the three is always given
            raise ScmError("no Bitbucket Cloud credentials")
        return basic(self.git_user, self.oauth.token())
