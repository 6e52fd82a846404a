"""``promoter-scm-forgejo``: the Forgejo / Gitea SCM plugin, a ``promoter.scm/v1`` process.

Settings (``scmProviders[].plugin.settings``): ``url`` (the instance, e.g.
https://codeberg.org), optional ``gitUser``. Secret: ``token`` (in
``plugin.secrets``), or the environment variable named by ``settings.tokenEnv``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from promoter.errors import ConfigError
from scm_plugins.external import messages as m
from scm_plugins.external.server import serve
from scm_plugins.forgejo.plugin import ForgejoScm

VERSION = "0.1.0"


def build(params: m.InitializeParams) -> ForgejoScm:
    settings = params.settings
    url = settings.get("url")
    if not isinstance(url, str) or not url.startswith(("http://", "https://")):
        raise ConfigError(["settings.url must be the Forgejo/Gitea URL, e.g. https://codeberg.org"])
    token = params.secrets.get("token")
    env_name = settings.get("tokenEnv")
    if token is None and isinstance(env_name, str):
        token = os.environ.get(env_name)
    if not token:
        raise ConfigError(["a Forgejo token is needed: secrets.token or settings.tokenEnv"])
    return ForgejoScm(url=url, token=token, git_user=str(settings.get("gitUser", "promoter")))


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="promoter-scm-forgejo", description=__doc__)
    parser.parse_args(argv)
    capabilities = m.Capabilities(
        labels=True, comments=True, draft_pull_requests=False, reviews=True
    )
    return serve(build, name="forgejo", version=VERSION, capabilities=capabilities)


if __name__ == "__main__":
    sys.exit(main())
