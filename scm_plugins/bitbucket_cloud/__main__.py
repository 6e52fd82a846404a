"""``promoter-scm-bitbucket-cloud``: the built-in Bitbucket Cloud plugin as a
``promoter.scm/v1.1`` process (for ``promoter plugins check`` and any promoter that runs its
SCMs out of process).

Settings (``scmProviders[].plugin.settings``), as in a ``bitbucketCloud`` provider: ``url``
(default ``https://api.bitbucket.org``), ``username``, ``gitUsername``, ``mergeStrategy``,
``allowInsecure``, ``oauth: {tokenUrl}``. Secrets (``plugin.secrets``): ``password`` (an app
password or API token, with ``username``), or ``accessToken``, or ``clientId`` and
``clientSecret`` (an OAuth consumer).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from promoter.config import ScmProvider
from promoter.errors import ConfigError
from scm_plugins.bitbucket_cloud.plugin import BitbucketCloudScm
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve

VERSION = "0.1.0"
ENV = "PROMOTER_BITBUCKET_CLOUD_"
"""The prefix of the variables the secrets given in ``initialize`` are put in for the
provider's ``SecretRef``s: this process's own environment, never a command line or a file."""


def _secret(name: str, value: str) -> dict[str, str]:
    variable = ENV + name.upper()
    os.environ[variable] = value
    return {"fromEnv": variable}


def build(params: m.InitializeParams) -> BitbucketCloudScm:
    section: dict[str, Any] = dict(params.settings)
    secrets = params.secrets
    if "password" in secrets:
        section["password"] = _secret("password", secrets["password"])
    if "accessToken" in secrets:
        section["accessToken"] = _secret("access_token", secrets["accessToken"])
    if "clientId" in secrets or "clientSecret" in secrets:
        oauth = dict(section.get("oauth") or {})
        oauth["clientId"] = _secret("client_id", secrets.get("clientId", ""))
        oauth["clientSecret"] = _secret("client_secret", secrets.get("clientSecret", ""))
        section["oauth"] = oauth
    try:
        provider = ScmProvider.model_validate({"name": params.provider, "bitbucketCloud": section})
    except ValidationError as exc:
        raise ConfigError(
            [str(e["msg"]).removeprefix("Value error, ") for e in exc.errors()]
        ) from None
    state = params.state_dir or tempfile.gettempdir()
    return BitbucketCloudScm(provider=provider, state_dir=state)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="promoter-scm-bitbucket-cloud", description=__doc__)
    parser.parse_args(argv)
    capabilities = m.Capabilities(labels=False, comments=True, reviews=True)
    return serve(build, name="bitbucket-cloud", version=VERSION, capabilities=capabilities)


if __name__ == "__main__":
    sys.exit(main())
