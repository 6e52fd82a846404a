"""Commands that ask a running daemon to act: set-status, refresh, the manual operations,
freeze and unfreeze, one for each row of the table of operations (``promoter.config.
operations``: name, summary, arguments and route).

Each prints one plain sentence saying what happened, or the daemon's JSON with ``--json``.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable
from typing import Any

from promoter.cli.client import ApiClient
from promoter.cli.commands import Command, add_client_arguments
from promoter.config import OPERATIONS as WRITES
from promoter.config import Argument, Operation


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


# --- what the daemon's answers say ------------------------------------------------------


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


def _set_status(args: argparse.Namespace, r: dict[str, Any]) -> str:
    woken = r.get("enqueued") or []
    after = f"; reconciling {_names(woken)}" if woken else "; no strategy tracks it"
    return f"Set {args.key} to {args.phase} on {_short(args.sha)} in {args.repository}{after}."


def _refresh(args: argparse.Namespace, r: dict[str, Any]) -> str:
    return f"Reconciling {_names(r.get('enqueued') or []) or 'nothing'}."


def _freeze(args: argparse.Namespace, r: dict[str, Any]) -> str:
    if r["action"] == "frozen":
        return f"Froze {r['scope']}: {r['reason']}. Reverts still go through."
    return f"Unfroze {r['scope']} (it was frozen: {r['reason']})."


def _generic(operation: str) -> Callable[[dict[str, Any]], str]:
    def sentence(r: dict[str, Any]) -> str:
        return f"{operation.capitalize()} done: " + ", ".join(f"{k} {v}" for k, v in r.items())

    return sentence


SENTENCES: dict[str, Callable[[dict[str, Any]], str]] = {
    "revert": _revert,
    "hold": _hold,
    "release": _release,
    "promote": _promote,
    "merge": _merge,
    "approve": _approve,
    "pin": _pin,
    "unpin": _unpin,
    "approve-change": _approve_change,
}
"""The sentence that tells the daemon's answer to each operation on a strategy."""
TOLD: dict[str, Callable[[argparse.Namespace, dict[str, Any]], str]] = {
    "set-status": _set_status,
    "refresh": _refresh,
    "freeze": _freeze,
    "unfreeze": _freeze,
}
"""The other writes' sentences, which also tell what was asked."""

OPERATIONS: dict[str, tuple[str, Callable[[dict[str, Any]], str]]] = {
    op.name: (op.summary, SENTENCES.get(op.name, _generic(op.name)))
    for op in WRITES
    if op.on_strategy
}
"""Each operation on a strategy: its summary and its sentence."""


# --- the commands, from the table -------------------------------------------------------


def _add(p: argparse.ArgumentParser, argument: Argument) -> None:
    options: dict[str, Any] = {"help": argument.help}
    if argument.metavar:
        options["metavar"] = argument.metavar
    if argument.choices:
        options["choices"] = list(argument.choices)
    if argument.default is not None:
        options["default"] = argument.default
    if argument.flag:
        options["action"] = "store_true"
    if argument.required:
        options["required"] = True
    if argument.optional:
        options["nargs"] = "?"
    p.add_argument(argument.cli, **options)


def arguments_of(op: Operation) -> Callable[[argparse.ArgumentParser], None]:
    """The command's arguments: its row's, then ``--url``, ``--token`` and ``--json``."""

    def arguments(p: argparse.ArgumentParser) -> None:
        for argument in op.arguments:
            _add(p, argument)
        add_client_arguments(p)

    return arguments


def request_of(op: Operation, args: argparse.Namespace) -> tuple[str, dict[str, Any]]:
    """The route and JSON body the command's arguments make: each argument to the route's
    parameter or the body's field it names (a body field left empty is left out)."""
    values = {a.field: getattr(args, a.dest) for a in op.arguments}
    path = op.path.format(**{field: values.pop(field) for field in op.path_fields()})
    given = {k: v for k, v in values.items() if v not in (None, False, "")}
    return path, {**dict(op.fixed), **given}


def runner(op: Operation) -> Callable[[argparse.Namespace], int]:
    """Ask the daemon for ``op`` and tell its answer in a sentence (JSON with ``--json``)."""

    def run(args: argparse.Namespace) -> int:
        path, body = request_of(op, args)
        client = _client(args)
        try:
            result = client.post(path, body)
        finally:
            client.close()
        told = TOLD.get(op.name)
        sentence = told(args, result) if told else OPERATIONS[op.name][1](result)
        return _print(args, result, sentence)

    return run


def commands() -> list[Command]:
    """A command for each row of the table of operations, in its order."""
    return [Command(op.name, op.summary, arguments_of(op), runner(op)) for op in WRITES]
