"""The writes a person asks the daemon for, one row each: the table the API's write
routes, the roles they need, the dashboard's buttons and the CLI's commands are made from.

A row names the operation, its route (always a POST), the role it needs and on which
environments (``reach``), what it says it will do (the CLI's help line, the dashboard's
button and question), and its arguments: each as the command line takes it and where the
API takes it (a parameter of the route, or a field of the JSON body). Adding a write is
adding a row here, then its handler in ``promoter.http`` and its sentence in the CLI.
"""

from __future__ import annotations

from dataclasses import dataclass
from string import Formatter
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from promoter.config.access import Role

Reach = Literal["environment", "later", "strategy", "scope", "repository", "strategies"]
"""Where the role is needed: the environment named; it and every later one; every
environment of the strategy; what the body names (everything, a strategy or one of its
environments); every strategy of the repository; the strategy named, or every one."""

STRATEGY_OPERATION = "/api/v1/strategies/{name}/{operation}"
"""The route of the operations on a strategy's environments, by name."""


@dataclass(frozen=True)
class Argument:
    """One argument of an operation."""

    cli: str
    """As the command line takes it: ``environment`` (positional) or ``--reason``."""
    field: str
    """Where the API takes it: ``{field}`` of the route, else the JSON body's field."""
    help: str
    metavar: str | None = None
    required: bool = False
    """An option that must be given (a positional always must, unless ``optional``)."""
    optional: bool = False
    """A positional that may be left out."""
    flag: bool = False
    """An option without a value: true when given."""
    choices: tuple[str, ...] = ()
    default: str | None = None

    @property
    def dest(self) -> str:
        """The attribute argparse stores it in."""
        return self.cli.lstrip("-").replace("-", "_")


@dataclass(frozen=True)
class Operation:
    name: str
    """The operation's name: the CLI's command and the audit's action."""
    path: str
    role: Role
    reach: Reach
    summary: str
    """What it will do, in one line (``promoter --help``)."""
    arguments: tuple[Argument, ...]
    fixed: tuple[tuple[str, str], ...] = ()
    """Body fields the CLI always sends."""
    button: str = ""
    """The dashboard's button, when it draws one for an environment."""
    question: str = ""
    """What the dashboard asks before it (``{env}``, ``{pr}``)."""

    @property
    def on_strategy(self) -> bool:
        """One of the operations on a strategy's environments (``STRATEGY_OPERATION``)."""
        return self.path == STRATEGY_OPERATION.format(name="{name}", operation=self.name)

    def path_fields(self) -> list[str]:
        """The route's parameters, in order."""
        return [field for _, field, _, _ in Formatter().parse(self.path) if field]


STRATEGY = Argument("strategy", "name", "the promotion strategy's name")
ENVIRONMENT = Argument("environment", "environment", "its branch, or the branch's last part (dev)")
REASON = Argument("--reason", "reason", "why, kept in the ledger", required=True)


def _on_strategy(
    name: str,
    role: Role,
    summary: str,
    *arguments: Argument,
    button: str = "",
    question: str = "",
) -> Operation:
    """An operation on one environment (a release: and every later one)."""
    path = STRATEGY_OPERATION.format(name="{name}", operation=name)
    reach: Reach = "later" if name == "release" else "environment"
    arguments = (STRATEGY, ENVIRONMENT, *arguments)
    return Operation(name, path, role, reach, summary, arguments, button=button, question=question)


def _freeze(name: str, summary: str, *arguments: Argument) -> Operation:
    return Operation(
        name,
        f"/api/v1/{name}",
        "admin",
        "scope",
        summary,
        (
            Argument(
                "strategy",
                "strategy",
                "only this strategy (default: everything)",
                optional=True,
            ),
            Argument(
                "environment", "environment", "only this environment of the strategy", optional=True
            ),
            *arguments,
        ),
    )


OPERATIONS: tuple[Operation, ...] = (
    Operation(
        "set-status",
        "/api/v1/repositories/{repo}/commits/{sha}/statuses",
        "operator",
        "repository",
        "set a commit status through a running daemon",
        (
            Argument("repository", "repo", "the repository's name in promoter.yaml"),
            Argument("sha", "sha", "the commit SHA, or a prefix naming one commit"),
            Argument("key", "key", "the gate's key, e.g. ci or health"),
            Argument(
                "phase", "phase", "the gate's result", choices=("pending", "success", "failure")
            ),
            Argument(
                "--description", "description", "one line shown beside the status", default=""
            ),
            Argument("--target-url", "url", "a link to the details (a CI run)", default=""),
            Argument(
                "--force",
                "force",
                "write it even when no environment reads that key on that commit (by default"
                " that is refused, naming the commits that would count)",
                flag=True,
            ),
        ),
    ),
    _on_strategy(
        "revert",
        "operator",
        "open a revert PR to the last healthy commit (or --to DRY_SHA)",
        Argument("--to", "to", "a dry SHA the ledger recorded as healthy"),
        button="Revert",
        question="Open a revert of {env} to its last healthy commit?",
    ),
    _on_strategy(
        "hold",
        "operator",
        "hold a dry commit out of an environment and every later one",
        Argument("--dry-sha", "drySha", "the dry commit to hold (default: the proposed one)"),
        REASON,
        button="Hold",
        question="Hold the proposed commit out of {env}? Give a reason:",
    ),
    _on_strategy(
        "release",
        "operator",
        "release holds (all, or --dry-sha) and un-pause an environment",
        Argument("--dry-sha", "drySha", "the dry commit to release (default: every hold)"),
        button="Release",
        question="Release every hold and pause on {env}?",
    ),
    _on_strategy(
        "promote",
        "admin",
        "break glass: merge now past every gate but never-backwards",
        REASON,
    ),
    _on_strategy(
        "merge",
        "approver",
        "merge the PR waiting for a person (revert, or every gate passing)",
        button="Merge",
        question="Merge PR #{pr} into {env}? Its gates are read again first, and the"
        " PR merges only at the head they passed on.",
    ),
    _on_strategy(
        "approve",
        "approver",
        "approve an environment's open PR as your token's name (local SCM; GitHub/GitLab"
        " use their UI)",
        button="Approve",
        question="Approve PR #{pr} into {env} as yourself?",
    ),
    _on_strategy(
        "pin",
        "operator",
        "keep an environment on a dry commit until unpinned",
        Argument("dry_sha", "drySha", "the dry commit to stay on", metavar="DRY_SHA"),
        REASON,
        button="Pin",
        question="Pin {env} to a dry commit (no promotion past it until unpinned)? Its SHA:",
    ),
    _on_strategy(
        "unpin",
        "operator",
        "lift an environment's pin",
        button="Unpin",
        question="Unpin {env}?",
    ),
    Operation(
        "approve-change",
        STRATEGY_OPERATION.format(name="{name}", operation="approve-change"),
        "approver",
        "strategy",
        "let a blocked dry commit through (blockedChanges)",
        (STRATEGY, Argument("dry_sha", "drySha", "the blocked dry commit", metavar="DRY_SHA")),
        fixed=(("environment", "*"),),
    ),
    Operation(
        "refresh",
        "/api/v1/refresh",
        "operator",
        "strategies",
        "ask a running daemon to reconcile now",
        (Argument("--strategy", "strategy", "only this strategy (default: every strategy)"),),
    ),
    _freeze(
        "freeze",
        "stop every promotion (everything, a strategy, an environment) until unfrozen",
        Argument("--reason", "reason", "why, shown on every PR it stops", required=True),
    ),
    _freeze("unfreeze", "lift a freeze of the same scope"),
)
"""Every write, in the order ``promoter --help`` lists them."""

ROLES: dict[str, Role] = {op.name: op.role for op in OPERATIONS}
"""The role each write needs; releasing a hold a revert set needs ``admin`` too."""
STRATEGY_OPERATIONS = tuple(op.name for op in OPERATIONS if op.on_strategy)
"""The operations on a strategy's environments (``STRATEGY_OPERATION``), in order."""


def operation(name: str) -> Operation | None:
    """The row of ``name``, or None."""
    return next((op for op in OPERATIONS if op.name == name), None)
