"""How git reaches a Bitbucket repository over HTTPS: an auth header in git's environment.

The secret travels in ``http.<origin>/.extraheader`` (``Authorization: Basic`` for a user
and an app password or token, ``Authorization: Bearer`` for a Data Center token), given to
git through ``GIT_CONFIG_COUNT/KEY/VALUE``: never in a URL (which git would print and
store), never in argv. A CA bundle goes to ``http.<origin>/.sslCAInfo``. A repository at a
local path (a test's bare repository) needs neither.
"""

from __future__ import annotations

import base64
from urllib.parse import urlsplit


def http_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, without user info; None for others."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def basic(user: str, secret: str) -> str:
    """The value of an ``Authorization: Basic`` header."""
    return "Basic " + base64.b64encode(f"{user}:{secret}".encode()).decode("ascii")


def git_environment(
    url: str, *, authorization: str, ca_bundle: str | None = None
) -> dict[str, str]:
    """Variables that make git send ``authorization`` to the origin of ``url``."""
    env = {"GIT_TERMINAL_PROMPT": "0"}
    origin = http_origin(url)
    if origin is None:
        return env
    entries = [(f"http.{origin}/.extraheader", f"Authorization: {authorization}")]
    if ca_bundle:
        entries.append((f"http.{origin}/.sslCAInfo", ca_bundle))
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env
