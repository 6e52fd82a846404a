"""``promoter-scm-azure-devops``: the Azure DevOps plugin as a ``promoter.scm/v1.1`` process.

Settings (``scmProviders[].plugin.settings``): ``organization`` (Services) or ``url``
(an organization's or, for Azure DevOps Server, a collection's URL), optional
``project``, ``mergeStrategy``, ``apiVersion``, ``caBundle``, ``allowInsecure``. Secret:
``token``, a PAT (in ``plugin.secrets``), or the environment variable named by
``settings.tokenEnv``. Built in, the same plugin is the ``azureDevOps`` provider.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from promoter.config import AzureDevOpsProvider, ScmProvider, SecretRef
from promoter.errors import ConfigError
from scm_plugins.azure_devops.plugin import AzureDevOpsScm
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve

VERSION = "0.1.0"
SETTINGS = ("organization", "url", "project", "mergeStrategy", "apiVersion", "caBundle")


def build(params: m.InitializeParams) -> AzureDevOpsScm:
    settings = params.settings
    env_name = settings.get("tokenEnv")
    token = params.secrets.get("token")
    if token is None and isinstance(env_name, str):
        token = os.environ.get(env_name)
    if not token:
        raise ConfigError(["an Azure DevOps PAT is needed: secrets.token or settings.tokenEnv"])
    fields: dict[str, Any] = {k: settings[k] for k in SETTINGS if k in settings}
    fields["allowInsecure"] = settings.get("allowInsecure") is True
    where = env_name if isinstance(env_name, str) else "PROMOTER_INITIALIZE_SECRET"
    try:
        config = AzureDevOpsProvider.model_validate({**fields, "token": SecretRef(from_env=where)})
    except ValidationError as exc:
        raise ConfigError([f"settings: {e['msg']}" for e in exc.errors()]) from None
    provider = ScmProvider(name=params.provider, azure_devops=config)
    return AzureDevOpsScm(provider=provider, state_dir=params.state_dir, token=token)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="promoter-scm-azure-devops", description=__doc__)
    parser.parse_args(argv)
    capabilities = m.Capabilities(
        labels=True, comments=True, draft_pull_requests=False, reviews=True
    )
    return serve(build, name="azure-devops", version=VERSION, capabilities=capabilities)


if __name__ == "__main__":
    sys.exit(main())
