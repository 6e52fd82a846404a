"""The one way the promoter runs a git command (the mirror's persistent ``cat-file`` aside).

Commands never prompt, run with the caller's variables on top of the process
environment, retry once when a killed git left a stale lock behind, and fail with a
``GitError`` whose message and cause hold no credentials. Each one runs watched
(``promoter.watchdog``): one running past its deadline is reported with its thread's
stack.
"""

from __future__ import annotations

import subprocess
from collections.abc import Container, Iterable, Mapping, Sequence
from pathlib import Path

from git.exc import GitCommandError

from promoter.errors import GitError
from promoter.git.process.child_env import child_env
from promoter.git.process.credentials import redact
from promoter.git.process.stale_lock import clear_stale_lock
from promoter.watchdog import CALL_DEADLINE, GRACE, watch

REFUSED_CREDENTIALS = (
    "could not read Username",
    "could not read Password",
    "Authentication failed",
    "HTTP Basic: Access denied",
    "The requested URL returned error: 403",
)
"""What git prints when a remote refuses the credentials it was given (or asked for some);
a 403 only in git's own words for it (http.c), never a bare "403", which a path, a SHA or
a hook's message may hold."""

GitResult = tuple[int, str, str]
"""``(exit status, stdout, stderr)``."""


def git_error(
    args: Sequence[str], status: int, stderr: str, secrets: Iterable[str], what: str = ""
) -> GitError:
    """A ``GitError`` for a failed ``git args``, caused by an equally clean ``GitCommandError``."""
    secrets = list(secrets)
    clean = redact(stderr.strip(), secrets)
    where = f" {what}" if what else ""
    if any(sign in clean for sign in REFUSED_CREDENTIALS):
        clean = (
            "the SCM refused the git credentials: the token was refused, has expired, or may"
            f" not read this repository (git said: {clean.splitlines()[-1]})"
        )
    error = GitError(f"git {args[0]}{where} failed (exit {status}): {clean or 'no message'}")
    error.__cause__ = GitCommandError(["git", *(redact(a, secrets) for a in args)], status, clean)
    return error


def run_git(
    args: Sequence[str],
    *,
    cwd: Path | str | None = None,
    env: Mapping[str, str] | None = None,
    base_env: Mapping[str, str] | None = None,
    stdin: bytes | str | None = None,
    ok: Container[int] = (0,),
    timeout: float | None = None,
    secrets: Iterable[str] = (),
    what: str = "",
    encoding: str = "utf-8",
    ceiling: Path | None = None,
) -> GitResult:
    """Run ``git args`` in ``cwd``: ``(status, stdout, stderr)``.

    ``env`` is added to ``base_env`` (default: the process environment). A status not
    in ``ok`` raises ``git_error`` with the values of ``env`` and ``secrets`` redacted.
    Binary output (object contents) is read with ``encoding="latin-1"``, which maps
    every byte to one character and back. ``ceiling``: git looks for the repository in
    ``cwd`` and never above this directory (a damaged repository then fails, where git
    would otherwise take the repository around it for it).
    """
    if ceiling is not None:
        env = {**(env or {}), "GIT_CEILING_DIRECTORIES": str(ceiling)}
    full_env = child_env(env, base_env)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    hidden = [*secrets, *(v for k, v in (env or {}).items() if k != "GIT_CEILING_DIRECTORIES")]
    deadline = CALL_DEADLINE if timeout is None else timeout + GRACE
    command = f"git {args[0]}" if args and not args[0].startswith("-") else "git"
    for attempt in (1, 2):
        try:
            with watch(command, detail=what, deadline=deadline):
                done = subprocess.run(
                    ["git", *args],
                    cwd=cwd,
                    input=data,
                    capture_output=True,
                    env=full_env,
                    timeout=timeout,
                    check=False,
                )
        except subprocess.TimeoutExpired:
            raise git_error(args, -1, f"timed out after {timeout} s", hidden, what) from None
        except OSError as exc:
            raise git_error(args, -1, str(exc), hidden, what) from None
        status = done.returncode
        out = done.stdout.decode(encoding, "replace")
        err = done.stderr.decode("utf-8", "replace")
        if status != 0 and attempt == 1 and clear_stale_lock(err):
            continue  # a git killed mid-update left its lock; the lock is gone now
        if status in ok:
            return status, out, err
        raise git_error(args, status, err, hidden, what)
    raise AssertionError("unreachable")
