"""Reads what the signedCommits gate judges: the signature of every dry commit between what
an environment runs and what is proposed, verified with git against the configured signers,
and, when asked, the SCM's own verdict (``scm_plugins.protocol.CommitVerifications``).

Both are kept per commit for as long as the daemon runs (a commit never changes); the
SCM's verdict costs one call per commit the first time.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

from promoter.config import GateSpec, Repository
from promoter.engine import CommitSignature, SignaturesRead
from promoter.errors import ConfigError, GitError, ScmError
from promoter.git import GitMirror
from promoter.git.caches import remember
from promoter.git.process.runner import run_git
from promoter.git.signatures import MAX_COMMITS, SignatureVerifier
from promoter.models import Verification
from scm_plugins.protocol import CommitVerifications, ScmPlugin

log = logging.getLogger("promoter.signatures")

NOT_ASKED = SignaturesRead()
NOTHING_TO_VERIFY = SignaturesRead(value=())


@dataclass
class SignatureReading:
    """Long-lived: shared by every reconcile of the daemon."""

    verifier: SignatureVerifier = field(default_factory=SignatureVerifier)
    _scm: dict[tuple[str, str], Verification] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def read(
        self,
        plugin: ScmPlugin,
        repo: Repository,
        mirror: GitMirror,
        gates: tuple[GateSpec, ...],
        since: str | None,
        until: str | None,
    ) -> SignaturesRead:
        """The signatures of the dry commits in ``since..until``, or why they cannot be read;
        not asked without a ``signedCommits`` gate."""
        specs = [g.signed_commits for g in gates if g.signed_commits is not None]
        if not specs:
            return NOT_ASKED
        if until is None or since == until:
            return NOTHING_TO_VERIFY
        spec = specs[0]
        try:
            signers = spec.allowed_signers.resolve() if spec.allowed_signers else ""
            keyring = spec.keyring.resolve() if spec.keyring else ""
            shas = self._range(mirror, since, until)
            if len(shas) > MAX_COMMITS:
                return SignaturesRead(
                    reason=f"signatures: more than {MAX_COMMITS} dry commits to verify"
                )
            found = self.verifier.verify(
                mirror.path, shas, allowed_signers=signers, keyring=keyring
            )
        except (ConfigError, GitError) as exc:
            return SignaturesRead(reason=f"signatures: cannot verify: {exc}")
        checks = []
        for sig in found:
            verified = self._scm_verdict(plugin, repo, sig.sha) if spec.scm_verification else None
            checks.append(
                CommitSignature(
                    sha=sig.sha,
                    verdict=sig.verdict,
                    signer=sig.signer,
                    key=sig.key,
                    scm_verified=verified.verified if verified else None,
                    scm_reason=verified.reason if verified else "",
                )
            )
        return SignaturesRead(value=tuple(checks))

    @staticmethod
    def _range(mirror: GitMirror, since: str | None, until: str) -> list[str]:
        """The commits of ``since..until`` (every ancestor of ``until`` without ``since``),
        oldest first, one more than the limit at most."""
        revs = [until] if since is None else [f"{since}..{until}"]
        with mirror.lock:
            out = run_git(
                ["rev-list", "--reverse", f"--max-count={MAX_COMMITS + 1}", *revs],
                cwd=mirror.path,
                what="listing dry commits",
            )[1]
        return out.split()

    def _scm_verdict(self, plugin: ScmPlugin, repo: Repository, sha: str) -> Verification | None:
        """The SCM's verdict on ``sha`` (cached); None when it cannot say now."""
        with self._lock:
            known = self._scm.get((repo.name, sha))
        if known is not None:
            return known
        if not isinstance(plugin, CommitVerifications):
            return Verification(verified=False, reason=f"the {plugin.name} SCM cannot say")
        try:
            found = plugin.commit_verification(repo=repo, sha=sha)
        except ScmError as exc:
            log.info("commit verification unread", extra={"sha": sha, "error": str(exc)})
            return None
        with self._lock:
            remember(self._scm, (repo.name, sha), found, 100_000)
        return found
