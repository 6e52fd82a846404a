"""Every plugin says which gate keys fold in the promoter's own statuses (the protocol's
``folded_gate_keys``): none but GitLab's pipeline gate."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.config import ScmProvider
from promoter.kube import ClusterScm, CommitStatusIndex, leader_guard
from scm_plugins.forgejo.plugin import ForgejoScm
from scm_plugins.github import GitHubScm
from scm_plugins.local import LocalScm
from scm_plugins.unavailable import UnavailableScm


@pytest.mark.parametrize("plugin", [LocalScm, GitHubScm, ForgejoScm])
def test_a_plugin_whose_scm_folds_nothing_declares_no_folded_keys(plugin: type) -> None:
    assert plugin.folded_gate_keys == frozenset()


def test_a_plugin_that_could_not_be_built_folds_nothing() -> None:
    scm = UnavailableScm(provider="gh", kind="github", reason="GITHUB_TOKEN is not set")
    assert scm.folded_gate_keys == frozenset()


def test_a_cluster_replica_folds_what_its_plugin_folds_now(tmp_path: Path) -> None:
    """An out-of-process plugin learns its folded keys at its handshake, which may come
    after the replica wrapped it (a plugin that started only on its second try)."""
    inner = LocalScm(provider=ScmProvider(name="local", local={}), state_dir=str(tmp_path))
    cluster = ClusterScm(inner, guard=leader_guard(lambda: True), statuses=CommitStatusIndex())
    assert cluster.folded_gate_keys == frozenset()
    inner.folded_gate_keys = frozenset({"gitlab-ci"})
    assert cluster.folded_gate_keys == {"gitlab-ci"}
    inner.close()
