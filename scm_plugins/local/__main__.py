"""``python -m scm_plugins.local --plugin``: the built-in local SCM as an out-of-process plugin.

It serves ``promoter.scm/v1`` on stdin/stdout, keeping its pull requests and
statuses under the ``stateDir`` the promoter gives in ``initialize``. Used by the
conformance kit, the tests and the overhead benchmark.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from promoter.config import LocalProvider, ScmProvider
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve
from scm_plugins.local.plugin import LocalScm

VERSION = "0.1.0"


def build(params: m.InitializeParams) -> LocalScm:
    provider = ScmProvider(name=params.provider, local=LocalProvider())
    return LocalScm(provider=provider, state_dir=params.state_dir)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m scm_plugins.local", description=__doc__)
    parser.add_argument("--plugin", action="store_true", help="serve promoter.scm/v1 on stdio")
    args = parser.parse_args(argv)
    if not args.plugin:
        parser.error("only --plugin is supported")
    return serve(
        build, name="local", version=VERSION, capabilities=m.Capabilities(labels=True, reviews=True)
    )


if __name__ == "__main__":
    sys.exit(main())
