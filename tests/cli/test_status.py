"""``promoter status``: reads state without every secret, and ``--watch`` shows it again."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from promoter.cli import status_table
from promoter.cli.main import main
from promoter.cli.status import watch
from tests.support import GitOpsRepo


def test_status_from_the_config_needs_no_secret_to_read_state(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("PROMOTER_T_UNSET_TOKEN", raising=False)
    local = GitOpsRepo.create(tmp_path / "local")
    hosted = GitOpsRepo.create(tmp_path / "hosted")
    config = tmp_path / "promoter.yaml"
    config.write_text(
        "scmProviders:\n"
        "  - {name: local, local: {}}\n"
        "  - {name: gh, github: {token: {fromEnv: PROMOTER_T_UNSET_TOKEN}}}\n"
        "repositories:\n"
        f"  - {{name: local-repo, url: {local.path}, scmProvider: local}}\n"
        f"  - {{name: hosted-repo, url: {hosted.path}, path: acme/gitops, scmProvider: gh}}\n"
        "promotionStrategies:\n"
        "  - {name: on-local, repository: local-repo, environments: [{branch: environment/dev}]}\n"
        "  - name: on-github\n"
        "    repository: hosted-repo\n"
        "    environments: [{branch: environment/dev}]\n"
        "webhooks: {github: {secrets: [{fromEnv: PROMOTER_T_UNSET_TOKEN}]}}\n"
        f"daemon: {{stateDir: {tmp_path / 'state'}}}\n"
    )
    assert main(["status", "--config", str(config)]) == 0
    table = capsys.readouterr().out
    rows: dict[str, str] = {}
    for line in table.splitlines()[1:]:
        rows[line.split()[0]] = rows.get(line.split()[0], "") + line + "\n"
    assert "error" not in rows["on-local"] and local.tip("main")[:7] in rows["on-local"]
    assert "PROMOTER_T_UNSET_TOKEN is not set" in rows["on-github"]


def test_watch_shows_the_table_again_until_ctrl_c() -> None:
    strategies = [
        {
            "name": "guestbook",
            "environments": [{"branch": "environment/dev", "state": "up-to-date", "reason": ""}],
        }
    ]
    reads: list[int] = []
    slept: list[float] = []

    def read() -> list[dict[str, object]]:
        reads.append(1)
        return strategies  # type: ignore[return-value]

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        if len(slept) == 3:
            raise KeyboardInterrupt

    out = io.StringIO()
    assert watch(read, status_table.render, interval=0.5, out=out, sleep=sleep) == 0
    text = out.getvalue()
    assert len(reads) == 3 and slept == [0.5, 0.5, 0.5]
    assert text.count("Every 0.5s: promoter status") == 3
    assert text.count("environment/dev") == 3
