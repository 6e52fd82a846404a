"""Golden decision cases: a snapshot written in a test's words, and the decision rendered as
lines a reviewer can read.

A case file (``tests/engine/golden/*.yaml``) holds ``environments`` (the fields of
``strategies.Env``, dry commits as positions on one linear history, plus the extras below)
and ``expect``: the verdicts and actions ``decide`` must give, rendered by ``render``.
SHAs are written as names: ``dry:3`` is dry commit 3, ``dev@3`` the hydrated commit of
environment/dev for it, ``dev-next@3`` the proposed one; times as offsets from the
snapshot's clock (``now-10m``).

Extras per environment:

* ``statuses_ago``: ``{key: seconds}``, how long ago a status of the active commit was set;
* ``active_since_ago``: seconds since the active commit was merged;
* ``healthy_ago``: seconds since the last healthy record (default an hour);
* ``gates``: built-in gates, as under ``gates:`` in ``promoter.yaml``;
* ``holds``: ``[{dry: N, source: revert|manual}]``; ``pin``: N; ``paused``: a reason;
* ``reverts``: ``[{bad: N, restored: M}]`` (reverts already made here);
* ``auto_revert``: ``{settle_time: seconds, auto_merge: bool}`` (turns it on);
* ``reviews``: ``[{user: name, approved: true}]`` on the open PR (given on its head);
* ``authors``: ``[{name: ..., email: ...}]``, who wrote the dry commits being promoted
  (default: nobody), and ``pr_author``: the login that opened the PR;
* ``merge_conflicts`` and ``proposed_in_active``: as in ``EnvironmentSnapshot``;
* ``proposed_by_merge``: the proposed tip is a merge the hydrator did not write.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from promoter.config import GateSpec
from promoter.engine import Approvals, AuthorsRead, Decision, ReviewsRead, Snapshot
from promoter.engine.core.ledger_state import EnvLedger, HealthyRecord, Hold, Pin, Revert
from promoter.engine.core.snapshot import AutoRevertPolicy
from promoter.models import Author, Phase, Review

from .strategies import NOW, UNKNOWN, Env, build, dry, hydrated, sha_of

EXTRAS = (
    "statuses_ago",
    "active_since_ago",
    "healthy_ago",
    "gates",
    "holds",
    "pin",
    "paused",
    "reverts",
    "auto_revert",
    "reviews",
    "authors",
    "pr_author",
    "merge_conflicts",
    "proposed_in_active",
    "proposed_by_merge",
)
HISTORY = 10


def snapshot_of(case: Mapping[str, Any]) -> Snapshot:
    """The snapshot a case describes."""
    specs = [dict(env) for env in case["environments"]]
    plain = [Env(**{k: v for k, v in spec.items() if k not in EXTRAS}) for spec in specs]
    snapshot = build(*plain, history=case.get("history", HISTORY))
    envs = tuple(
        _with_extras(env, plain[index], spec)
        for index, (env, spec) in enumerate(zip(snapshot.environments, specs, strict=True))
    )
    return snapshot.model_copy(update={"environments": envs})


def _with_extras(env: Any, plain: Env, spec: Mapping[str, Any]) -> Any:
    """One environment snapshot with the case's extras applied."""
    update: dict[str, Any] = {}
    ago = spec.get("statuses_ago", {})
    if ago and env.active is not None:
        statuses = tuple(
            s.model_copy(update={"updated_at": NOW - timedelta(seconds=ago[s.key])})
            if s.key in ago
            else s
            for s in env.active.statuses
        )
        update["active"] = env.active.model_copy(update={"statuses": statuses})
    if "active_since_ago" in spec:
        update["active_since"] = NOW - timedelta(seconds=spec["active_since_ago"])
    if "gates" in spec:
        update["gates"] = tuple(GateSpec.model_validate(g) for g in spec["gates"])
    if "auto_revert" in spec:
        update["auto_revert"] = AutoRevertPolicy(enabled=True, **spec["auto_revert"])
    approvals: dict[str, Any] = {}
    if "reviews" in spec:
        head = env.pull_request.head_sha if env.pull_request else ""
        approvals["reviews"] = ReviewsRead(
            value=tuple(
                Review(user=r["user"], approved=r.get("approved", True), commit_sha=head)
                for r in spec["reviews"]
            )
        )
    if "reviews" in spec or "authors" in spec:
        authors = tuple(Author(**a) for a in spec.get("authors", ()))
        approvals["change_authors"] = AuthorsRead(value=authors)
    if approvals:
        update["approvals"] = Approvals(**approvals)
    if "pr_author" in spec and env.pull_request is not None:
        update["pull_request"] = env.pull_request.model_copy(update={"author": spec["pr_author"]})
    if spec.get("proposed_by_merge") and env.proposed is not None:
        update["proposed"] = env.proposed.model_copy(update={"by_merge": True})
    for flag in ("merge_conflicts", "proposed_in_active"):
        if flag in spec:
            update[flag] = spec[flag]
    update["ledger"] = _ledger(env.ledger, plain, spec)
    return env.model_copy(update=update)


def _ledger(ledger: EnvLedger, plain: Env, spec: Mapping[str, Any]) -> EnvLedger:
    branch = plain.branch
    healthy = ledger.healthy
    if plain.healthy is not None:
        since = NOW - timedelta(seconds=spec.get("healthy_ago", 3600))
        healthy = (
            HealthyRecord(
                dry_sha=dry(plain.healthy),
                hydrated_sha=hydrated(branch, plain.healthy),
                healthy_since=since,
            ),
        )
    holds = tuple(
        Hold(dry_sha=dry(h["dry"]), reason="bad change", since=NOW, source=h["source"])
        for h in spec.get("holds", ())
    )
    reverts = tuple(
        Revert(
            bad_dry_sha=dry(r["bad"]),
            bad_hydrated_sha=hydrated(branch, r["bad"]),
            restored_dry_sha=dry(r["restored"]),
            restored_hydrated_sha=hydrated(branch, r["restored"]),
            reason="health failed",
            trigger="auto",
            opened_at=NOW - timedelta(minutes=30),
            branch=f"{branch}-revert-{dry(r['bad'])[:7]}",
            revert_sha=hydrated(f"{branch}-revert", r["bad"]),
            pr=90,
            auto_merge=True,
        )
        for r in spec.get("reverts", ())
    )
    pin = None
    if "pin" in spec:
        pin = Pin(dry_sha=dry(spec["pin"]), reason="release freeze", since=NOW)
    return ledger.model_copy(
        update={
            "healthy": healthy,
            "holds": holds,
            "reverts": reverts,
            "pin": pin,
            "paused": spec.get("paused"),
        }
    )


# --- rendering -------------------------------------------------------------------------


def names(snapshot: Snapshot, history: int = HISTORY) -> list[tuple[str, str]]:
    """``(sha, name)`` for every SHA a case can mention, longest first, then 7-char forms."""
    found: dict[str, str] = {}
    for position in [*range(history + 4), UNKNOWN, UNKNOWN + 1]:
        found[dry(position)] = f"dry:{position}"
        for env in snapshot.environments:
            short_name = env.branch.removeprefix("environment/")
            found[hydrated(env.branch, position)] = f"{short_name}@{position}"
            found[hydrated(env.proposed_branch, position)] = f"{short_name}-next@{position}"
            found[hydrated(f"{env.branch}-revert", position)] = f"{short_name}-revert@{position}"
            found[sha_of("tree", short_name, position)] = f"tree:{short_name}@{position}"
    for env in snapshot.environments:
        found[sha_of("stale head", env.branch)] = f"stale-head:{_name(env.branch)}"
    full = sorted(found.items())
    return full + [(sha[:7], name) for sha, name in full]


def _name(branch: str) -> str:
    return branch.removeprefix("environment/")


def _named(text: str, shas: list[tuple[str, str]]) -> str:
    for sha, name in shas:
        if sha in text:
            text = text.replace(sha, name)
    return text


def _value(value: Any) -> Any:
    """A field's value as it reads in a case: times relative to the clock."""
    if isinstance(value, datetime):
        delta = value - NOW
        if delta == timedelta(0):
            return "now"
        seconds = int(delta.total_seconds())
        sign = "+" if seconds > 0 else "-"
        return f"now{sign}{_duration(abs(seconds))}"
    if isinstance(value, Phase):
        return value.value
    if isinstance(value, dict):
        return {k: _value(v) for k, v in value.items() if v not in (None, "", (), [])}
    if isinstance(value, list | tuple):
        return [_value(v) for v in value]
    return value


def _duration(seconds: int) -> str:
    for unit, size in (("h", 3600), ("m", 60)):
        if seconds >= size and seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


LEFT_OUT = {"kind", "environment", "body"}
"""Fields not rendered: the PR body is long Markdown, tested on its own (``test_pr_text``)."""


def render(snapshot: Snapshot, decision: Decision) -> dict[str, Any]:
    """The decision as a case's ``expect``: one line per verdict, one per action."""
    shas = names(snapshot)
    branches = [env.branch.removeprefix("environment/") for env in snapshot.environments]
    verdicts = []
    for verdict in decision.environments:
        line = f"{_name(verdict.branch)} {verdict.state.value}: {verdict.reason}"
        gates = [f"{g.name} {g.phase.value}: {g.reason}" for g in verdict.gates]
        verdicts.append({"verdict": _named(line, shas), "gates": [_named(g, shas) for g in gates]})
    actions = []
    for action in decision.actions:
        fields = action.model_dump(exclude=LEFT_OUT)
        where = getattr(action, "environment", None)
        head = action.kind if where is None else f"{action.kind} {branches[where]}"
        parts = [f"{key}={_scalar(_value(value))}" for key, value in _value(fields).items()]
        actions.append(_named(" ".join([head, *parts]), shas))
    out: dict[str, Any] = {"environments": verdicts, "actions": actions}
    if decision.requeue_after is not None:
        out["requeue_after"] = decision.requeue_after
    return out


def _scalar(value: Any) -> str:
    if isinstance(value, str):
        return repr(value) if re.search(r"\s", value) else value
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k}: {_scalar(v)}" for k, v in value.items()) + "}"
    if isinstance(value, list):
        return "[" + ", ".join(_scalar(v) for v in value) + "]"
    return str(value)
