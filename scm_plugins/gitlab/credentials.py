"""How git reaches a GitLab repository over HTTPS: an auth header in git's environment.

The token travels as ``Authorization: Basic base64(oauth2:TOKEN)`` in
``http.<origin>/.extraheader``, given to git through ``GIT_CONFIG_COUNT/KEY/VALUE``:
never in a URL (which git would print and store in its config), never in argv.
"""

from __future__ import annotations

import base64
from urllib.parse import urlsplit

from promoter.config import Repository


def http_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, without user info; None for others."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = parts.hostname
    if ":" in host:  # IPv6 literal
        host = f"[{host}]"
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def project_ref(repo: Repository, *, instance_url: str) -> int | str:
    """The project as the API names it: numeric id, else ``group/sub/project``.

    A path derived from the clone URL loses the instance's relative URL root
    (``https://example.com/gitlab/group/app.git`` on ``https://example.com/gitlab``).
    """
    if repo.project_id is not None:
        return repo.project_id
    path = repo.full_path
    if repo.path:
        return path
    root = urlsplit(instance_url).path.strip("/")
    same_host = http_origin(repo.url) == http_origin(instance_url)
    if root and same_host and path.startswith(root + "/"):
        path = path[len(root) + 1 :]
    return path


def git_environment(
    repo: Repository, *, token: str, instance_url: str, ca_bundle: str | None
) -> dict[str, str]:
    """Variables that make git authenticate to the repository's origin with the token."""
    origin = http_origin(repo.url) or http_origin(instance_url)
    env = {"GIT_TERMINAL_PROMPT": "0"}
    if origin is None:
        return env
    basic = base64.b64encode(f"oauth2:{token}".encode()).decode("ascii")
    entries = [(f"http.{origin}/.extraheader", f"Authorization: Basic {basic}")]
    if ca_bundle:
        entries.append((f"http.{origin}/.sslCAInfo", ca_bundle))
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env
