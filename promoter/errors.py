"""The promoter's error classes: temporary errors are retried, permanent ones are reported.

Third-party exceptions (PyGithub, python-gitlab, GitPython) are translated into
these once, at the boundary, with the original kept as ``__cause__``.
"""

from __future__ import annotations


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


class GitError(TemporaryError):
    """A git command failed (unreachable remote, lock held, ...)."""


class MetadataMissing(PermanentError):
    """A hydrated commit carries neither a hydrator note nor a hydrator.metadata file."""


class ScmError(PromoterError):
    """Base of the errors an SCM plugin raises."""


class ScmNotFound(ScmError, PermanentError):
    """The repository, pull request or commit does not exist (or is not visible)."""


class ScmConflict(ScmError, TemporaryError):
    """The SCM refused because the state moved (head SHA changed, not mergeable yet)."""


class ScmRateLimited(ScmError, TemporaryError):
    """The SCM's rate limit is exhausted; retry no earlier than ``retry_after`` seconds."""

    def __init__(self, message: str, *, retry_after: float) -> None:
        super().__init__(message, delay=retry_after)
        self.retry_after = retry_after


class ScmUnavailable(ScmError, TemporaryError):
    """The SCM is down, timed out or answered 5xx."""


class ScmAuthError(ScmError, PermanentError):
    """The credentials were refused (401) or lack a permission (403 without rate limit)."""
