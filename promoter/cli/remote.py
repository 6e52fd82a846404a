"""Commands that ask a running daemon to act: set-status, refresh, and the manual operations.

Each prints one plain sentence saying what happened, or the daemon's JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from promoter.cli.client import ApiClient
from promoter.cli.commands import Command, add_client_arguments


def _short(sha: object) -> str:
    return str(sha)[:7] if sha else "-"


def _names(items: list[str]) -> str:
    if len(items) <= 1:
        return "".join(items)
    return ", ".join(items[:-1]) + " and " + items[-1]


def _print(args: argparse.Namespace, result: dict[str, Any], sentence: str) -> int:
    print(json.dumps(result, indent=2) if args.json else sentence)
    return 0


def _client(args: argparse.Namespace) -> ApiClient:
    return ApiClient(args.url, token=args.token)


# --- set-status and refresh ----------------------------------------------------------


def set_status_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("repository", help="the repository's name in promoter.yaml")
    p.add_argument("sha", help="the commit SHA, or a prefix naming one commit")
    p.add_argument("key", help="the gate's key, e.g. ci or health")
    p.add_argument("phase", choices=["pending", "success", "failure"], help="the gate's result")
    p.add_argument("--description", default="", help="one line shown beside the status")
    p.add_argument("--target-url", default="", help="a link to the details (a CI run)")
    p.add_argument(
        "--force",
        action="store_true",
        help="write it even when no environment reads that key on that commit (by default"
        " that is refused, naming the commits that would count)",
    )
    add_client_arguments(p)


def set_status(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        result = client.set_status(
            args.repository,
            args.sha,
            key=args.key,
            phase=args.phase,
            description=args.description,
            url=args.target_url,
            force=args.force,
        )
    finally:
        client.close()
    woken = result.get("enqueued") or []
    after = f"; reconciling {_names(woken)}" if woken else "; no strategy tracks it"
    return _print(
        args,
        result,
        f"Set {args.key} to {args.phase} on {_short(args.sha)} in {args.repository}{after}.",
    )


def refresh_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--strategy", help="only this strategy (default: every strategy)")
    add_client_arguments(p)


def refresh(args: argparse.Namespace) -> int:
    client = _client(args)
    try:
        result = client.refresh(args.strategy)
    finally:
        client.close()
    return _print(args, result, f"Reconciling {_names(result.get('enqueued') or []) or 'nothing'}.")


# --- manual operations -----------------------------------------------------------------


def _hold(r: dict[str, Any]) -> str:
    return (
        f"Held {_short(r.get('held'))} out of {_names(r.get('environments') or [])}"
        f" (reason: {r.get('reason')})."
    )


def _release(r: dict[str, Any]) -> str:
    environments = _names(r.get("environments") or [])
    released = r.get("released") or []
    text = (
        f"Released {_names([_short(s) for s in released])} in {environments}."
        if released
        else f"No hold to release in {environments}."
    )
    if r.get("unpaused"):
        reason = f" (it was paused: {r['pausedFor']})" if r.get("pausedFor") else ""
        return f"{text} Unpaused {r['unpaused']}{reason}."
    return f"{text} It was not paused."


def _revert(r: dict[str, Any]) -> str:
    return (
        f"Reverting {r.get('reverting')} from {_short(r.get('from'))} back to "
        f"{_short(r.get('to'))}: the revert pull request is open."
    )


def _promote(r: dict[str, Any]) -> str:
    pr = f" (PR #{r['pr']})" if r.get("pr") else ""
    return f"Promoted {_short(r.get('promoted'))} to {r.get('environment')} past its gates{pr}."


def _merge(r: dict[str, Any]) -> str:
    what = "revert PR" if r.get("revert") else "PR"
    return (
        f"Merged {what} #{r.get('merged')} into {r.get('environment')} ({_short(r.get('drySha'))})."
    )


def _approve(r: dict[str, Any]) -> str:
    return f"Approved PR #{r.get('approved')} for {r.get('environment')} as {r.get('user')}."


def _pin(r: dict[str, Any]) -> str:
    return f"Pinned {r.get('environment')} to {_short(r.get('pinned'))}: {r.get('reason')}."


def _unpin(r: dict[str, Any]) -> str:
    return f"Unpinned {r.get('unpinned')}: newer changes are promoted there again."


def _approve_change(r: dict[str, Any]) -> str:
    environments = _names(r.get("environments") or [])
    return f"Let {_short(r.get('approved'))} through {environments}."


def _generic(operation: str) -> Callable[[dict[str, Any]], str]:
    def sentence(r: dict[str, Any]) -> str:
        return f"{operation.capitalize()} done: " + ", ".join(f"{k} {v}" for k, v in r.items())

    return sentence


OPERATIONS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    # name: (summary, the sentence that tells the daemon's answer)
    "revert": ("open a revert PR to the last healthy commit (or --to DRY_SHA)", _revert),
    "hold": ("hold a dry commit out of an environment and every later one", _hold),
    "release": ("release holds (all, or --dry-sha) and un-pause an environment", _release),
    "promote": ("break glass: merge now past every gate but never-backwards", _promote),
    "merge": ("merge the PR waiting for a person (revert, or every gate passing)", _merge),
    "approve": (
        "approve an environment's open PR as your token's name (local SCM; GitHub/GitLab"
        " use their UI)",
        _approve,
    ),
    "pin": ("keep an environment on a dry commit until unpinned", _pin),
    "unpin": ("lift an environment's pin", _unpin),
    "approve-change": ("let a blocked dry commit through (blockedChanges)", _approve_change),
}


def operation_arguments(name: str) -> Callable[[argparse.ArgumentParser], None]:
    def arguments(p: argparse.ArgumentParser) -> None:
        p.add_argument("strategy", help="the promotion strategy's name")
        if name == "approve-change":
            p.add_argument("dry_sha", metavar="DRY_SHA", help="the blocked dry commit")
            add_client_arguments(p)
            return
        p.add_argument("environment", help="its branch, or the branch's last part (dev)")
        if name == "pin":
            p.add_argument("dry_sha", metavar="DRY_SHA", help="the dry commit to stay on")
        if name == "revert":
            p.add_argument("--to", help="a dry SHA the ledger recorded as healthy")
        if name == "hold":
            p.add_argument("--dry-sha", help="the dry commit to hold (default: the proposed one)")
        if name == "release":
            p.add_argument("--dry-sha", help="the dry commit to release (default: every hold)")
        if name in ("hold", "promote", "pin"):
            p.add_argument("--reason", required=True, help="why, kept in the ledger")
        add_client_arguments(p)

    return arguments


def operate(args: argparse.Namespace) -> int:
    body = {
        "environment": getattr(args, "environment", "*"),
        "reason": getattr(args, "reason", None),
        "to": getattr(args, "to", None),
        "drySha": getattr(args, "dry_sha", None),
    }
    client = _client(args)
    try:
        result = client.operate(args.strategy, args.command, **body)
    finally:
        client.close()
    sentence = OPERATIONS.get(args.command, ("", _generic(args.command)))[1]
    return _print(args, result, sentence(result))


def commands() -> list[Command]:
    rows = [
        Command(
            "set-status",
            "set a commit status through a running daemon",
            set_status_arguments,
            set_status,
        )
    ]
    rows += [
        Command(name, summary, operation_arguments(name), operate)
        for name, (summary, _) in OPERATIONS.items()
    ]
    rows.append(
        Command("refresh", "ask a running daemon to reconcile now", refresh_arguments, refresh)
    )
    return rows
