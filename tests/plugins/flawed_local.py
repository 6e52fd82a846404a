"""The local SCM served out of process with one flaw a plugin author could make, for the
conformance kit to catch; run as ``python flawed_local.py FLAW``.

- ``int32-ids``: it reads request ids into 32 bits, so that an id past them is answered
  under another;
- ``outage-internal``: its SCM reached through the proxy variables (the kit's outage
  closes them), and a connection refused let out as an internal error, not ``unavailable``;
- ``outage-exits``: the same connection refused ends the process.
"""

from __future__ import annotations

import json
import os
import sys
import urllib.request
from collections.abc import Collection
from typing import IO

from promoter.config import LocalProvider, Repository, ScmProvider
from promoter.models import CommitStatus
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve
from scm_plugins.local.__main__ import VERSION
from scm_plugins.local.plugin import LocalScm

SCM = "http://scm.conformance.example/api/v1/version"


class Int32Ids:
    """stdin as a plugin that keeps ids in 32 bits reads it."""

    def __init__(self, stream: IO[bytes]) -> None:
        self.stream = stream

    def readline(self, limit: int = -1) -> bytes:
        line = self.stream.readline(limit)
        try:
            message = json.loads(line)
        except ValueError:
            return line
        if isinstance(message, dict) and isinstance(message.get("id"), int):
            message["id"] %= 2**32
            return (json.dumps(message) + "\n").encode()
        return line


class ThroughProxy(LocalScm):
    """Reads statuses after asking its SCM, which it reaches through the proxy variables."""

    flaw = ""

    def get_commit_statuses(
        self, *, repo: Repository, sha: str, keys: Collection[str] | None = None
    ) -> list[CommitStatus]:
        if self.flaw.startswith("outage") and os.environ.get("HTTP_PROXY"):
            try:
                urllib.request.urlopen(SCM, timeout=5).close()
            except OSError as exc:
                if self.flaw == "outage-exits":
                    os._exit(3)
                raise RuntimeError(f"cannot reach the SCM: {exc}") from None
        return super().get_commit_statuses(repo=repo, sha=sha, keys=keys)


def main(flaw: str) -> int:
    stdin: IO[bytes] = sys.stdin.buffer
    if flaw == "int32-ids":
        stdin = Int32Ids(stdin)  # type: ignore[assignment]

    def build(params: m.InitializeParams) -> LocalScm:
        provider = ScmProvider(name=params.provider, local=LocalProvider())
        scm = ThroughProxy(provider=provider, state_dir=params.state_dir)
        scm.flaw = flaw
        return scm

    return serve(build, name=f"flawed-{flaw}", version=VERSION, stdin=stdin)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
