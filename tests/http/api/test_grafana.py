"""The Grafana dashboard shipped in manifests/grafana/ asks only for metrics the daemon
exports, and takes rates of counters only."""

from __future__ import annotations

import json
import re
from pathlib import Path

from starlette.testclient import TestClient

from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

DASHBOARD = Path(__file__).parents[3] / "manifests" / "grafana" / "promoter-dashboard.json"
METRIC = re.compile(r"\bpromoter_[a-z0-9_]+")
RATE = re.compile(r"\b(?:rate|increase|irate)\((promoter_[a-z0-9_]+)")


def queries() -> list[str]:
    board = json.loads(DASHBOARD.read_text())
    found = [t["expr"] for p in board["panels"] for t in p["targets"]]
    found += [v["definition"] for v in board["templating"]["list"] if "definition" in v]
    return [q for q in found if isinstance(q, str)]


def families(text: str) -> dict[str, str]:
    """Each family's name and type, as ``/metrics`` declares it."""
    return dict(re.findall(r"^# TYPE (\S+) (\S+)$", text, flags=re.MULTILINE))


def exported(name: str, declared: dict[str, str]) -> str | None:
    """The type of the family a sample name of a query belongs to."""
    if name in declared:
        return declared[name]
    for suffix in ("_bucket", "_sum", "_count"):
        if name.endswith(suffix) and (base := name.removesuffix(suffix)) in declared:
            return declared[base]
    return None


def test_every_query_of_the_grafana_dashboard_names_a_metric_the_daemon_exports(
    gitops: GitOpsRepo, tmp_path: Path
) -> None:
    config = local_config(gitops.path, tmp_path / "state")
    with TestClient(Daemon(config).app) as client:
        wait_for(
            lambda: client.get("/api/v1/strategies/guestbook").json()["reconciledAt"],
            what="a first reconcile",
        )
        declared = families(client.get("/metrics").text)
    names = {name for q in queries() for name in METRIC.findall(q)}
    assert len(names) >= 8
    missing = sorted(n for n in names if exported(n, declared) is None)
    assert missing == []
    rated = {name for q in queries() for name in RATE.findall(q)}
    not_counters = sorted(n for n in rated if exported(n, declared) not in ("counter", "histogram"))
    assert not_counters == []
    assert {"promoter_dora_deployments_total", "promoter_dora_failures_total"} <= rated
