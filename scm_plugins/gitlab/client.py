"""The python-gitlab client as the promoter uses it: no retries of its own, headers recorded.

python-gitlab sleeps and retries on 429 (``obey_rate_limit``) and, if asked, on
5xx. The promoter's work queue owns retries (it honours ``retry_after`` without
blocking a worker), so this client makes exactly one HTTP request per call,
feeds every response's rate-limit headers to ``ScmCalls.record_rate_limit``, and
hangs the headers of a failed response on the error for ``errors.translate``.
"""

from __future__ import annotations

import threading
from typing import Any

import gitlab
import requests
from gitlab.exceptions import GitlabError

from scm_plugins.calls import ScmCalls
from scm_plugins.gitlab.errors import HEADERS_ATTR

TIMEOUT_SECONDS = 30.0


class PromoterGitlab(gitlab.Gitlab):
    """``gitlab.Gitlab`` that never retries or sleeps by itself."""

    def __init__(self, *args: Any, calls: ScmCalls, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._calls = calls
        self._local = threading.local()
        self.session.hooks["response"].append(self._on_response)

    def _on_response(self, response: requests.Response, *args: Any, **kwargs: Any) -> None:
        self._calls.record_rate_limit(response.headers)
        if response.status_code >= 400:
            # Read back by http_request below: the hook runs on the requesting thread.
            self._local.error_headers = dict(response.headers)

    def http_request(self, verb: str, path: str, *args: Any, **kwargs: Any) -> requests.Response:
        kwargs["obey_rate_limit"] = False
        kwargs["retry_transient_errors"] = False
        kwargs["max_retries"] = 0
        self._local.error_headers = {}
        try:
            return super().http_request(verb, path, *args, **kwargs)
        except GitlabError as exc:
            setattr(exc, HEADERS_ATTR, self._local.error_headers)
            raise


def connect(*, url: str, token: str, ca_bundle: str | None, calls: ScmCalls) -> PromoterGitlab:
    """A client for one GitLab instance (gitlab.com or self-managed)."""
    return PromoterGitlab(
        url,
        private_token=token,
        ssl_verify=ca_bundle if ca_bundle else True,
        timeout=TIMEOUT_SECONDS,
        retry_transient_errors=False,
        user_agent="promoter (python-gitlab)",
        calls=calls,
    )
