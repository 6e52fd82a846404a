"""The promoter's error classes: temporary errors are retried, permanent ones are reported.

Third-party exceptions (PyGithub, python-gitlab, GitPython) are translated into
these once, at the boundary, with the original kept as ``__cause__``. The tree, with
what each class means and what a worker (``promoter.daemon.loop.workers``) does when a
reconcile raises it. Backoff is exponential per strategy, capped at ``daemon.maxBackoff``
and reset by a success; a parked strategy waits for a webhook, a moved ref or a new
configuration (the resync skips it)::

    PromoterError               raised on purpose; anything else is a crash: backoff
    ├── TemporaryError          worth retrying: backoff, and no sooner than its ``delay``
    │   ├── GitError            a git command failed (remote unreachable, lock held): backoff
    │   ├── ScmNotFound         what we knew is gone (a PR, a branch): read again, backoff
    │   ├── ScmConflict         the SCM refused the change: read again, retry soon or at the cap
    │   │   └── ScmQueueRequired a merge refused because the branch merges through a queue
    │   ├── ScmRateLimited      the SCM's rate limit is spent: after ``retry_after``, not before
    │   │   └── RateBudgetWait  our own budget for the credential says wait: as ScmRateLimited
    │   ├── ScmUnavailable      the SCM is down, timed out or answered 5xx: backoff
    │   │   ├── ScmBusy         a branch locked, maybe by a killed git: at its ``delay``
    │   │   └── ScmOutage       the SCM said it is out for now: its environments wait, saying so
    │   └── HoldLapsed          sharded: our shard's hold lapsed, nobody else holds it: backoff
    ├── PermanentError          retrying fails the same way: reported, the strategy parked
    │   ├── ConfigError         the configuration is invalid (every problem): refused at load
    │   ├── CommitNotFound      a SHA (prefix) names no commit, or several: the API answers 422
    │   ├── StatusNotRead       no environment reads that key on that commit: the API answers 409
    │   ├── AmbiguousName       a short name that several environments share: 409 with them all
    │   ├── MetadataMissing     a hydrated commit has no hydrator metadata: its environment blocked
    │   ├── ScmAuthError        credentials refused (401), a permission missing (403): parked
    │   └── ScmUnsupported      the SCM lacks a feature asked of it: shown on its environment
    ├── NotOwner                sharded: another replica holds the repository now: dropped
    └── ScmError                what an SCM plugin raises: every Scm* class above is one too

Defined next to their use: ``OperationError`` (``promoter.daemon.operations.manual``),
``LedgerUnreadable`` (``promoter.state.ledger``), ``HydrateError``
(``promoter.cli.hydrate``), all permanent; ``PluginError`` (permanent) and
``PluginTemporaryError`` (``scm_plugins.external.errors``).
"""

from __future__ import annotations

from collections.abc import Sequence


class PromoterError(Exception):
    """Base of every error the promoter raises on purpose."""


class TemporaryError(PromoterError):
    """Worth retrying; ``delay`` (seconds) is the earliest sensible retry, if known."""

    def __init__(self, message: str, *, delay: float | None = None) -> None:
        super().__init__(message)
        self.delay = delay


class PermanentError(PromoterError):
    """Retrying the same thing will fail the same way; reported, not retried."""


class ConfigError(PermanentError):
    """The configuration is invalid; carries every problem found."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


class CommitNotFound(PermanentError):
    """A SHA (or a prefix of one) names no commit of the repository, or several."""


class StatusNotRead(PermanentError):
    """A commit status no environment would read: a key nothing reads, or the wrong commit
    (a dry SHA where the hydrated one counts, a superseded head); the message names the
    commits that would count."""


class AmbiguousName(PermanentError):
    """A name a person typed is the last part of several environments' branches
    (``prod`` of ``team-a/prod`` and ``team-b/prod``); ``candidates`` are those branches.
    Nothing is done: the API answers 409 with them, the CLI lists them."""

    def __init__(self, name: str, candidates: Sequence[str], *, strategy: str = "") -> None:
        self.name = name
        self.candidates = tuple(candidates)
        where = f" of {strategy}" if strategy else ""
        super().__init__(
            f"{name!r} names {len(self.candidates)} environments{where}"
            f" ({', '.join(self.candidates)}): give the whole branch"
        )


class GitError(TemporaryError):
    """A git command failed (unreachable remote, lock held, ...)."""


class MetadataMissing(PermanentError):
    """A hydrated commit carries neither a hydrator note nor a hydrator.metadata file."""


class NotOwner(PromoterError):
    """This replica no longer owns the repository (its shard Lease expired or moved to
    another replica): nothing was written, and the work is dropped here, not retried;
    the new owner reads everything afresh."""


class HoldLapsed(TemporaryError):
    """This replica's hold on the repository's shard lapsed (its Lease was not renewed in
    time) and no other replica holds it: nothing was written; try again shortly."""


class ScmError(PromoterError):
    """Base of the errors an SCM plugin raises."""


class ScmNotFound(ScmError, TemporaryError):
    """The repository, pull request or commit does not exist (or is not visible).

    Temporary: it says that what the promoter knew was wrong (a PR merged or closed
    meanwhile, a branch deleted), so the strategy is read again, with backoff, and never
    parked. Callers that expect a missing thing (a group member, a review) catch it.
    """


class ScmConflict(ScmError, TemporaryError):
    """The SCM refused the change as asked.

    Temporary (``lasting=False``): the state moved or is still being computed (head
    SHA changed, base modified, mergeability not known yet); read again and retry soon.
    Lasting (``lasting=True``): a merge conflict, branch protection, a missing
    permission; retrying soon fails the same way, so the retry backs off to the cap
    (a webhook or a push still wakes it at once) and the reason is shown.
    """

    def __init__(self, message: str, *, delay: float | None = None, lasting: bool = False) -> None:
        super().__init__(message, delay=delay)
        self.lasting = lasting


class ScmQueueRequired(ScmConflict):
    """A merge refused because the base branch merges only through the SCM's merge queue
    (GitHub: 405 "Changes must be made through the merge queue"). Lasting; where the
    configuration leaves ``mergeQueue`` unset, the promoter enqueues the PR instead."""

    def __init__(self, message: str) -> None:
        super().__init__(message, lasting=True)


class ScmRateLimited(ScmError, TemporaryError):
    """The SCM's rate limit is exhausted; retry no earlier than ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, delay=retry_after)
        self.retry_after = retry_after


class RateBudgetWait(ScmRateLimited):
    """Not the SCM's refusal: the promoter's own budget for the credential says wait
    (``scm_plugins.budget.CredentialBudget``), so that the SCM never has to refuse."""


class ScmUnavailable(ScmError, TemporaryError):
    """The SCM is down, timed out or answered 5xx."""


class ScmBusy(ScmUnavailable):
    """A branch is locked, perhaps by a git killed while it held the lock (git never
    removes such a lock; it is taken as abandoned after ``STALE_AFTER``): retried at
    ``delay``, when it can be, not at the backoff's next step, which could be minutes."""


class ScmOutage(ScmUnavailable):
    """The SCM (through its plugin) answered that it cannot serve now (a plugin's
    ``unavailable`` or ``temporary`` answer, or the pause the promoter keeps after them):
    an outage, not a failure of the promoter's. Retried no sooner than ``delay``; the
    environments it stops wait (``blocked``) with its words as their reason, not ``error``."""


class ScmAuthError(ScmError, PermanentError):
    """The credentials were refused (401) or lack a permission (403 without rate limit)."""


class ScmUnsupported(ScmError, PermanentError):
    """The SCM instance lacks a feature asked of it (a merge queue on a GitHub Enterprise
    Server release without one): ``instance`` names it ("this GitHub Enterprise"),
    ``detail`` is the SCM's own words. What asked for the feature names it and shows it on
    the environment that needs it, not on the whole strategy."""

    def __init__(self, detail: str, *, instance: str) -> None:
        super().__init__(f"{instance} lacks it: {detail}")
        self.detail = detail
        self.instance = instance
