"""Kubernetes mode carries the strategy's new fields from the custom resources (the CRDs are
generated from the same models): freeze dates here."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from promoter.config import Config
from promoter.kube.resources.config_source import SecretFiles, assemble

NS = "gitops"


def objects(spec: dict[str, Any]) -> dict[tuple[str, str, str], dict[str, Any]]:
    def obj(kind: str, name: str, body: dict[str, Any]) -> dict[str, Any]:
        return {"kind": kind, "metadata": {"namespace": NS, "name": name}, "spec": body}

    found = [
        obj("ScmProvider", "local", {"local": {}}),
        obj("GitRepository", "repo", {"url": "/tmp/repo", "scmProviderRef": {"name": "local"}}),
        obj("PromotionStrategy", "guestbook", spec),
    ]
    return {(o["kind"], NS, o["metadata"]["name"]): o for o in found}


def assembled(spec: dict[str, Any], tmp_path: Path) -> Config:
    secrets = SecretFiles(tmp_path, lambda namespace, name: {})
    result = assemble(Config(), objects(spec), secrets)
    assert result.problems == {}
    return result.config


def test_a_promotion_strategy_resource_carries_its_freeze_dates(tmp_path: Path) -> None:
    spec = {
        "gitRepositoryRef": {"name": "repo"},
        "environments": [{"branch": "environment/dev"}],
        "freezes": [{"reason": "Christmas", "timeZone": "Europe/Berlin", "dates": ["2026-12-24"]}],
    }
    [strategy] = assembled(spec, tmp_path).promotion_strategies
    assert [f.reason for f in strategy.freezes] == ["Christmas"]
