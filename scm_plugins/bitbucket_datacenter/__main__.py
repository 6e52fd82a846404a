"""``promoter-scm-bitbucket-datacenter``: the built-in Data Center plugin as a
``promoter.scm/v1.1`` process (for ``promoter plugins check`` and any promoter that runs its
SCMs out of process).

Settings (``scmProviders[].plugin.settings``): ``url`` (the instance with its context path),
and optionally ``caBundle``, ``mergeStrategy``, ``buildStatusApi``, ``allowInsecure``, as
in a ``bitbucketDataCenter`` provider. Secret: ``token`` (in ``plugin.secrets``).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence

from pydantic import ValidationError

from promoter.config import ScmProvider
from promoter.errors import ConfigError
from scm_plugins.bitbucket_datacenter.plugin import BitbucketDataCenterScm
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve

VERSION = "0.1.0"
TOKEN_ENV = "PROMOTER_BITBUCKET_DATACENTER_TOKEN"
"""Where the token given in ``initialize`` is put for the provider's ``SecretRef``: this
process's own environment, never a command line or a file."""


def build(params: m.InitializeParams) -> BitbucketDataCenterScm:
    token = params.secrets.get("token")
    if not token:
        raise ConfigError(["a Bitbucket Data Center token is needed: secrets.token"])
    os.environ[TOKEN_ENV] = token
    section = {**params.settings, "token": {"fromEnv": TOKEN_ENV}}
    try:
        provider = ScmProvider.model_validate(
            {"name": params.provider, "bitbucketDataCenter": section}
        )
    except ValidationError as exc:
        raise ConfigError(
            [str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()]
        ) from None
    state = params.state_dir or tempfile.gettempdir()
    return BitbucketDataCenterScm(provider=provider, state_dir=state)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="promoter-scm-bitbucket-datacenter", description=__doc__)
    parser.parse_args(argv)
    capabilities = m.Capabilities(labels=False, comments=True, reviews=True)
    return serve(build, name="bitbucket-datacenter", version=VERSION, capabilities=capabilities)


if __name__ == "__main__":
    sys.exit(main())
