"""The signedCommits gate's verdicts (pure): every dry commit good, each bad one named by its
SHA, the SCM's verdict required when asked for, and nothing read yet is pending."""

from __future__ import annotations

from promoter.config import GateSpec, SecretRef
from promoter.config.gates import SignedCommits
from promoter.engine import (
    CommitSignature,
    GateVerdict,
    MergePullRequest,
    SignaturesRead,
    decide,
)
from promoter.models import Phase
from tests.engine.reverts.test_revert import edit
from tests.engine.strategies import build
from tests.engine.test_decide import promotable

KEY = "promoter/signed-commits"
A, B = "a" * 40, "b" * 40


def verdict(
    *signatures: CommitSignature, scm: bool = False, unread: str | None = None
) -> tuple[GateVerdict, bool]:
    spec = SignedCommits(allowed_signers=SecretRef(from_env="X"), scm_verification=scm)
    snapshot = edit(
        build(promotable()),
        0,
        gates=(GateSpec(signed_commits=spec),),
        signatures=SignaturesRead(reason=unread) if unread else SignaturesRead(value=signatures),
    )
    decision = decide(snapshot)
    gate = next(g for g in decision.environments[0].gates if g.name == KEY)
    merged = any(isinstance(a, MergePullRequest) for a in decision.actions)
    return gate, merged


def good(sha: str, signer: str = "alice@example.com", **scm: object) -> CommitSignature:
    return CommitSignature(sha=sha, verdict="good", signer=signer, key="SHA256:x", **scm)  # type: ignore[arg-type]


def test_commits_all_signed_by_allowed_signers_pass_naming_the_signers() -> None:
    gate, merged = verdict(good(A), good(B, "bob@example.com"))
    assert (gate.phase, gate.reason) == (
        Phase.SUCCESS,
        "signed by alice@example.com, bob@example.com (2 commits)",
    )
    assert merged


def test_an_unsigned_or_unknown_signer_commit_fails_naming_its_sha() -> None:
    bad = CommitSignature(sha=B, verdict="unknown-signer", key="SHA256:evil")
    gate, merged = verdict(good(A), bad, CommitSignature(sha="c" * 40, verdict="unsigned"))
    assert gate.phase is Phase.FAILURE
    assert gate.reason == (
        "signatures: bbbbbbb is signed by a key no one allowed (SHA256:evil); ccccccc is not signed"
    )
    assert not merged


def test_the_scms_verdict_is_required_when_asked_for() -> None:
    gate, merged = verdict(good(A, scm_verified=False, scm_reason="unknown_key"), scm=True)
    assert (gate.phase, merged) == (Phase.FAILURE, False)
    assert "aaaaaaa is not verified by the SCM (unknown_key)" in gate.reason
    gate, merged = verdict(good(A), scm=True)
    assert (gate.phase, merged) == (Phase.PENDING, False)
    gate, merged = verdict(good(A, scm_verified=True), scm=True)
    assert (gate.phase, merged) == (Phase.SUCCESS, True)


def test_signatures_not_read_keep_the_gate_pending_with_why() -> None:
    gate, merged = verdict(unread="signatures: cannot verify: no keyring")
    assert (gate.phase, gate.reason, merged) == (
        Phase.PENDING,
        "signatures: cannot verify: no keyring",
        False,
    )
