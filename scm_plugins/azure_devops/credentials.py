"""How git reaches an Azure DevOps repository over HTTPS: the PAT in a header, never a URL.

The PAT travels as ``Authorization: Basic base64(":PAT")`` in
``http.<origin>/.extraheader``, given to git through ``GIT_CONFIG_COUNT/KEY/VALUE``: never in
a URL (which git would print and store in its config), never in argv. A CA bundle for a
Server with its own certificate authority goes to ``http.<origin>/.sslCAInfo``.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from scm_plugins.azure_devops.client import basic_auth


def http_origin(url: str) -> str | None:
    """``scheme://host[:port]`` of an http(s) URL, without user info; None for others."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    port = f":{parts.port}" if parts.port else ""
    return f"{parts.scheme}://{host}{port}"


def git_environment(
    *, repo_url: str, base_url: str, token: str, ca_bundle: str | None
) -> dict[str, str]:
    """Variables that make git authenticate to the repository's origin with the PAT."""
    env = {"GIT_TERMINAL_PROMPT": "0"}
    origin = http_origin(repo_url) or http_origin(base_url)
    if origin is None:
        return env
    entries = [(f"http.{origin}/.extraheader", f"Authorization: {basic_auth(token)}")]
    if ca_bundle:
        entries.append((f"http.{origin}/.sslCAInfo", ca_bundle))
    env["GIT_CONFIG_COUNT"] = str(len(entries))
    for index, (key, value) in enumerate(entries):
        env[f"GIT_CONFIG_KEY_{index}"] = key
        env[f"GIT_CONFIG_VALUE_{index}"] = value
    return env
