"""Finding a plugin by name: its directory, PATH, then beside the promoter's own interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from scm_plugins.external.discovery import discover, find

BIN = Path(sys.executable).parent
"""Where pip installed ``promoter`` and ``promoter-scm-forgejo`` (the venv's bin)."""

CONFIG = """
scmProviders:
  - name: codeberg
    plugin:
      name: forgejo
      settings: {url: "https://codeberg.example"}
      secrets: {token: {fromEnv: PROMOTER_TEST_FORGEJO_TOKEN}}
repositories:
  - name: gitops
    url: https://codeberg.example/acme/gitops.git
    scmProvider: codeberg
promotionStrategies:
  - name: guestbook
    repository: gitops
    environments:
      - {branch: environment/dev}
"""


def test_a_plugin_installed_beside_the_interpreter_is_found_without_it_on_path() -> None:
    assert find("forgejo", environ={"PATH": "/usr/bin:/bin"}) == BIN / "promoter-scm-forgejo"
    assert "forgejo" in {p.name for p in discover(environ={"PATH": ""})}


def test_the_venvs_promoter_validates_a_forgejo_config_without_the_venv_activated(
    tmp_path: Path,
) -> None:
    config = tmp_path / "promoter.yaml"
    config.write_text(CONFIG)
    env = {"PATH": "/usr/bin:/bin", "HOME": str(tmp_path), "PROMOTER_TEST_FORGEJO_TOKEN": "t"}
    done = subprocess.run(
        [str(BIN / "promoter"), "validate", str(config)],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok (1 strategies, 1 repositories)" in done.stdout
