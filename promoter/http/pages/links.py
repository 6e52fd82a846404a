"""Links to the SCM's web pages: a commit, and the diff between two commits.

Built from the repository's clone URL (``https://host/owner/repo.git`` or
``git@host:owner/repo.git``) and its SCM's kind: GitLab's pages are under ``/-/``,
GitHub's, Forgejo's and Gitea's are not. A repository without a web page (the local
SCM, a path) gets no links. The dry repository and the hydrated branches are one
repository here, so one base serves both.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import quote

SCP = re.compile(r"^[\w.-]+@([\w.-]+):(.+)$")
SHA = re.compile(r"^[0-9a-f]{7,64}$")


@dataclass(frozen=True)
class Links:
    base: str = ""
    """``https://host/owner/repo``, or empty: no links."""
    gitlab: bool = False

    def commit(self, sha: str | None) -> str:
        if not self.base or not sha or not SHA.match(sha):
            return ""
        return f"{self.base}/{'-/' if self.gitlab else ''}commit/{sha}"

    def compare(self, older: str | None, newer: str | None) -> str:
        if not self.base or not (older and newer and SHA.match(older) and SHA.match(newer)):
            return ""
        return f"{self.base}/{'-/' if self.gitlab else ''}compare/{older}...{newer}"


def links_for(clone_url: str, kind: str) -> Links:
    """The links of a repository cloned from ``clone_url`` on an SCM of ``kind``."""
    url = clone_url.strip()
    scp = SCP.match(url)
    if scp:
        url = f"https://{scp.group(1)}/{scp.group(2)}"
    url = re.sub(r"^ssh://(?:[^@/]+@)?([^/:]+)(?::\d+)?/", r"https://\1/", url)
    if not url.startswith(("https://", "http://")) or kind == "local":
        return Links()
    url = re.sub(r"//[^/@]+@", "//", url)  # no credentials in a link
    url = url.removesuffix("/").removesuffix(".git")
    return Links(base=quote(url, safe=":/%-._~"), gitlab=kind == "gitlab")
