"""A plugin process for the fault suite, run as a script: the local SCM over stdio, except
when asked to publish a check whose key starts with ``promoter/smoke``. Then it does what
the file named by the setting ``control`` says: ``ok``, ``hang`` (never answers), ``slow``
(answers after 3 s), ``5xx`` and ``tls`` (the SCM behind it failed so: unavailable),
``credentials`` (its token refused), ``garbage`` (a line that is no JSON-RPC message
instead of the answer), ``reset`` (the process dies; asked again about the same commit,
it says its SCM reset the connection, so that the host's restart backoff does not grow
for the whole test).
"""

from __future__ import annotations

import os
import sys
import threading
import time
from pathlib import Path
from typing import Any

from promoter.config import LocalProvider, Repository, ScmProvider
from promoter.errors import ScmAuthError, ScmUnavailable
from promoter.models import CommitStatus
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve
from scm_plugins.local.plugin import LocalScm

SAID = {
    "5xx": ScmUnavailable("the SCM answered 503: upstream overloaded"),
    "tls": ScmUnavailable("[SSL: CERTIFICATE_VERIFY_FAILED] certificate verify failed"),
    "credentials": ScmAuthError("the SCM refused the token: 401 Bad credentials"),
}


class Faulty:
    def __init__(self, inner: LocalScm, control: Path) -> None:
        self.inner = inner
        self.control = control

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def set_commit_status(self, *, repo: Repository, sha: str, status: CommitStatus) -> None:
        mode = self.control.read_text().strip() if status.key.startswith("promoter/smoke") else "ok"
        if mode == "hang":
            threading.Event().wait()
        if mode == "slow":
            time.sleep(3.0)
        if mode in SAID:
            raise SAID[mode]
        if mode == "garbage":
            os.write(1, b"<html>oops</html>\n")
            threading.Event().wait()
        if mode == "reset":
            died = self.control.with_name(f"died-{sha}")
            if died.exists():
                raise ScmUnavailable("the SCM reset the connection")
            died.touch()
            os._exit(1)
        self.inner.set_commit_status(repo=repo, sha=sha, status=status)


def build(params: m.InitializeParams) -> Any:
    provider = ScmProvider(name=params.provider, local=LocalProvider())
    local = LocalScm(provider=provider, state_dir=params.state_dir)
    return Faulty(local, Path(params.settings["control"]))


if __name__ == "__main__":
    sys.exit(
        serve(
            build,
            name="faulty",
            version="0.0.1",
            capabilities=m.Capabilities(labels=True),
            workers=8,
        )
    )
