"""The built-in gates configured on an environment (rule 5): soak, windows, approvals,
commit-message rules. Pure: each reads the snapshot and ``snapshot.now`` only.

Each verdict carries ``changes_at`` when time alone will change it (a soak ending, a
window edge), so the strategy is woken at that instant. HTTP checks and Argo CD / Flux
health are judged outside the engine and arrive as commit statuses under the gate's key.
"""

from __future__ import annotations

from datetime import datetime, timedelta

import jmespath

from promoter.config.gates import Approval, CommitMessage, GateSpec, SignedCommits, Soak, Windows
from promoter.engine.core.actions import GateVerdict
from promoter.engine.core.dag import upstreams_of
from promoter.engine.core.pr_text import short
from promoter.engine.core.snapshot import Snapshot
from promoter.engine.gates.four_eyes import not_counted
from promoter.engine.gates.messages import has_trailer, record, trailers
from promoter.engine.gates.windows import describe, window_state
from promoter.models import Phase, Review

PURE_KINDS = frozenset({"soak", "window", "approval", "commit_message", "signed_commits"})
"""Kinds the engine judges itself; the others arrive as commit statuses."""


def _at(when: datetime) -> str:
    return f"{when:%Y-%m-%d %H:%M:%S} UTC"


def soak(spec: Soak, key: str, snapshot: Snapshot, index: int) -> GateVerdict | None:
    """The environments before this one have run this dry commit (or a newer one) healthy
    long enough: in a DAG, ``require`` of each group."""
    groups = upstreams_of(snapshot, index)
    if not groups:
        return None
    env = snapshot.environments[index]
    proposed = env.proposed.dry_sha if env.proposed is not None else None
    if proposed is None:
        return GateVerdict(name=key, phase=Phase.PENDING, reason="soak: no proposed commit")
    since: datetime | None = None
    for group in groups:
        times = sorted(
            t for u in group.indices if (t := _healthy_since(snapshot, u, proposed)) is not None
        )
        if len(times) < group.require:
            names = ", ".join(snapshot.environments[u].branch for u in group.indices)
            reason = f"soak: waiting for {names} to run {short(proposed)} healthy"
            return GateVerdict(name=key, phase=Phase.PENDING, reason=reason)
        group_since = times[group.require - 1]
        since = group_since if since is None else max(since, group_since)
    assert since is not None
    before = ", ".join(snapshot.environments[u].branch for g in groups for u in g.indices)
    ends = since + timedelta(seconds=spec.duration)
    if snapshot.now >= ends:
        reason = f"soak: {before} healthy on {short(proposed)} since {_at(since)}"
        return GateVerdict(name=key, phase=Phase.SUCCESS, reason=reason)
    reason = f"soak: {before} healthy since {_at(since)}; passes at {_at(ends)}"
    return GateVerdict(name=key, phase=Phase.PENDING, reason=reason, changes_at=ends)


def _healthy_since(snapshot: Snapshot, index: int, dry_sha: str) -> datetime | None:
    """Since when environment ``index`` has run ``dry_sha`` (or a newer commit) healthy."""
    ledger = snapshot.environments[index].ledger
    return min(
        (r.healthy_since for r in ledger.healthy if snapshot.descends(r.dry_sha, dry_sha)),
        default=None,
    )


def window(spec: Windows, key: str, snapshot: Snapshot) -> GateVerdict:
    """Inside an allow window and no deny window."""
    state = window_state(spec, snapshot.now)
    when = describe(state.changes_at, spec.time_zone) if state.changes_at else None
    if state.open:
        reason = f"window open until {when}" if when else "window open"
        return GateVerdict(name=key, phase=Phase.SUCCESS, reason=reason)
    reason = f"window opens {when}" if when else "no window opens again"
    return GateVerdict(name=key, phase=Phase.PENDING, reason=reason, changes_at=state.changes_at)


def approval(spec: Approval, key: str, snapshot: Snapshot, index: int) -> GateVerdict:
    """Enough approvals from the right people on the open PR, or the approving label.

    A PR opened in this very pass has no reviews yet and the strategy's labels: it is
    judged so, rather than as missing. The PR's author and, with
    ``excludeChangeAuthors``, the change's authors never count (``engine.four_eyes``).
    """
    env = snapshot.environments[index]
    pr = env.pull_request
    labels = pr.labels if pr is not None else snapshot.labels
    if spec.label is not None and spec.label in labels:
        return GateVerdict(name=key, phase=Phase.SUCCESS, reason=f"approved by label {spec.label}")
    reviews: tuple[Review, ...] = ()
    if pr is not None:
        read = env.approvals.reviews
        if read.value is None:
            reason = read.reason or "approval: reviews not read yet"
            return GateVerdict(name=key, phase=Phase.PENDING, reason=reason)
        reviews = read.value
    read_authors = env.approvals.change_authors
    authors = read_authors.value if spec.exclude_change_authors else ()
    if authors is None and reviews:
        reason = read_authors.reason or "approval: the authors of the change not read yet"
        return GateVerdict(name=key, phase=Phase.PENDING, reason=reason)
    head = pr.head_sha if pr is not None else ""
    latest = {r.user: r for r in reviews}  # a person's latest review counts
    approvers: list[str] = []
    left_out: list[str] = []
    for user, review in sorted(latest.items()):
        if not (
            review.approved
            and (not spec.reset_on_push or not review.commit_sha or review.commit_sha == head)
            and (not spec.users or user in spec.users)
            and (not spec.teams or set(spec.teams) & set(review.teams))
        ):
            continue
        why = not_counted(review, pr, authors)
        if why is None:
            approvers.append(user)
        else:
            left_out.append(why)
    who = " or ".join(filter(None, [", ".join(spec.users), ", ".join(spec.teams)]))
    if len(approvers) >= spec.count:
        reason = f"approved by {', '.join(approvers)}"
        return GateVerdict(name=key, phase=Phase.SUCCESS, reason=reason)
    wanted = f"{spec.count} approval{'s' if spec.count > 1 else ''}" + (
        f" from {who}" if who else ""
    )
    label = f" or the label {spec.label}" if spec.label else ""
    excluded = f"; not counted: {'; '.join(left_out)}" if left_out else ""
    reason = f"waiting for {wanted}{label} ({len(approvers)} so far{excluded})"
    return GateVerdict(name=key, phase=Phase.PENDING, reason=reason)


def commit_message(spec: CommitMessage, key: str, snapshot: Snapshot, index: int) -> GateVerdict:
    """Every dry commit being promoted passes the message rules."""
    env = snapshot.environments[index]
    problems: list[str] = []
    block_if = jmespath.compile(spec.block_if) if spec.block_if else None
    for commit in env.changelog:
        found = trailers(commit.body)
        name = short(commit.sha)
        problems += [f"{name} has {t}" for t in spec.block_trailers if has_trailer(found, t)]
        problems += [
            f"{name} lacks {t}"
            for t in spec.require_trailers
            if not any(k.lower() == t.lower() for k in found)
        ]
        if block_if is not None and block_if.search(record(commit)):
            problems.append(f"{name} matches {spec.block_if}")
    if problems:
        reason = "commit message: " + "; ".join(problems)
        return GateVerdict(name=key, phase=Phase.FAILURE, reason=reason)
    count = len(env.changelog)
    reason = f"commit messages pass ({count} commit{'s' if count != 1 else ''})"
    return GateVerdict(name=key, phase=Phase.SUCCESS, reason=reason)


WHY_NOT = {
    "unsigned": "is not signed",
    "unknown-signer": "is signed by a key no one allowed",
    "bad": "has a signature that does not verify",
    "expired": "is signed by an expired key",
    "revoked": "is signed by a revoked key",
}


def signed_commits(spec: SignedCommits, key: str, snapshot: Snapshot, index: int) -> GateVerdict:
    """Every dry commit being promoted is signed by an allowed signer (and, when asked, the
    SCM verifies it too). A failure names each commit and what is wrong with it."""
    read = snapshot.environments[index].signatures
    if read.value is None:
        reason = read.reason or "signatures: not read yet"
        return GateVerdict(name=key, phase=Phase.PENDING, reason=reason)
    signatures = read.value
    problems = []
    unread = []
    for sig in signatures:
        if sig.verdict != "good":
            by = f" ({sig.key})" if sig.key else ""
            problems.append(f"{short(sig.sha)} {WHY_NOT.get(sig.verdict, sig.verdict)}{by}")
        elif spec.scm_verification and sig.scm_verified is False:
            problems.append(f"{short(sig.sha)} is not verified by the SCM ({sig.scm_reason})")
        elif spec.scm_verification and sig.scm_verified is None:
            unread.append(short(sig.sha))
    if problems:
        reason = "signatures: " + "; ".join(problems)
        return GateVerdict(name=key, phase=Phase.FAILURE, reason=reason)
    if unread:
        reason = f"signatures: waiting for the SCM's verdict on {', '.join(unread)}"
        return GateVerdict(name=key, phase=Phase.PENDING, reason=reason)
    count = len(signatures)
    signers = ", ".join(dict.fromkeys(s.signer or s.key for s in signatures))
    reason = (
        f"signed by {signers} ({count} commit{'s' if count != 1 else ''})"
        if count
        else "signatures: no dry commit to verify"
    )
    return GateVerdict(name=key, phase=Phase.SUCCESS, reason=reason)


def evaluate_builtin(gate: GateSpec, snapshot: Snapshot, index: int) -> GateVerdict | None:
    """The verdict of one configured gate the engine judges, or None for the other kinds."""
    key = gate.key
    if gate.soak is not None:
        return soak(gate.soak, key, snapshot, index)
    if gate.window is not None:
        return window(gate.window, key, snapshot)
    if gate.approval is not None:
        return approval(gate.approval, key, snapshot, index)
    if gate.commit_message is not None:
        return commit_message(gate.commit_message, key, snapshot, index)
    if gate.signed_commits is not None:
        return signed_commits(gate.signed_commits, key, snapshot, index)
    return None


def published_keys(snapshot: Snapshot, index: int) -> frozenset[str]:
    """The keys of the gates the engine judges and publishes on the PR head."""
    env = snapshot.environments[index]
    keys = {g.key for g in env.gates if g.kind in PURE_KINDS}
    if env.rollout.notice_lead is not None:
        keys.add("promoter/notice")
    return frozenset(keys)
