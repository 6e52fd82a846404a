"""Where a token may travel: https, or plain http only to this machine or when allowed.

A GitHub, GitLab or Azure DevOps token goes with every API call and every git fetch and push; over
``http://`` anyone on the path reads it. Such a URL is refused unless its host is a
loopback address or its provider says ``allowInsecure: true``.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator
from urllib.parse import urlsplit

from promoter.errors import ConfigError

YamlPath = tuple[str | int, ...]


def is_loopback_host(host: str | None) -> bool:
    """``localhost``, ``127.0.0.0/8`` or ``::1``."""
    if not host:
        return False
    if host.lower() == "localhost" or host.lower().endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def insecure(url: str) -> bool:
    """Whether a token sent to ``url`` would cross the network in clear."""
    parts = urlsplit(url.strip())
    return parts.scheme.lower() == "http" and not is_loopback_host(parts.hostname)


def refusal(url: str, what: str) -> str:
    return (
        f"{what} {url_without_credentials(url)} would carry the token in clear over http://; "
        "use https://, a loopback host, or set allowInsecure: true on the provider"
    )


def url_without_credentials(url: str) -> str:
    parts = urlsplit(url)
    if "@" not in parts.netloc:
        return url
    return parts._replace(netloc=parts.netloc.rpartition("@")[2]).geturl()


def check(url: str, *, allow_insecure: bool, what: str) -> None:
    """ConfigError unless a token may be sent to ``url``."""
    if insecure(url) and not allow_insecure:
        raise ConfigError([refusal(url, what)])


def insecure_repositories(data: dict[str, object]) -> Iterator[tuple[YamlPath, str]]:
    """``(path, problem)`` for each repository served by a token over plain, remote http."""
    providers = data.get("scmProviders")
    sections: dict[str, dict[str, object]] = {}
    for provider in providers if isinstance(providers, list) else []:
        if not isinstance(provider, dict) or not isinstance(provider.get("name"), str):
            continue
        for kind in ("github", "gitlab", "bitbucketCloud", "bitbucketDataCenter", "azureDevOps"):
            if isinstance(provider.get(kind), dict):
                sections[provider["name"]] = provider[kind]
    repositories = data.get("repositories")
    for index, repo in enumerate(repositories if isinstance(repositories, list) else []):
        if not isinstance(repo, dict) or not isinstance(repo.get("url"), str):
            continue
        section = sections.get(str(repo.get("scmProvider")))
        if (
            section is not None
            and insecure(repo["url"])
            and section.get("allowInsecure") is not True
        ):
            yield ("repositories", index, "url"), refusal(repo["url"], "the repository URL")
