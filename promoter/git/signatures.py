"""Commit signatures verified with git: SSH signers from an ``allowed_signers`` file, OpenPGP
signers from a keyring imported into a private ``GNUPGHOME``.

``git log --format=%G?...`` verifies each commit as ``git verify-commit`` does (the same
code in git), in one process for all the commits asked about. A verdict depends only on the
commit and the signers given, so it is kept per (commit, signers). The signers' files live
in a directory of their own per signers' digest, made once, under a private temporary
directory made when a gate first needs it and removed with the verifier (or at exit).

Concurrency: verdicts and signers' directories are guarded by one lock; git runs outside it.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from promoter.errors import GitError
from promoter.git.caches import remember
from promoter.git.process.runner import run_git

Verdict = Literal["good", "unsigned", "unknown-signer", "bad", "expired", "revoked"]
FIELDS = "%H%x1f%G?%x1f%GS%x1f%GK%x1f%GF"
REMEMBERED = 100_000
"""Verdicts kept: commits are immutable, so a verdict holds for as long as its signers."""
MAX_COMMITS = 500
"""At most this many commits are verified between two dry commits: more fails the gate."""


@dataclass(frozen=True)
class Signature:
    """What git found on one commit."""

    sha: str
    verdict: Verdict
    signer: str = ""
    """The allowed signer's principal (SSH) or the key's user id (OpenPGP)."""
    key: str = ""
    """The key's fingerprint (``SHA256:...`` for SSH)."""


def judge(code: str, signer: str, key: str) -> Verdict:
    """git's ``%G?`` as a verdict. An SSH signature is good only when its key is one of the
    allowed signers (``G``); ``U`` there means a valid signature by a key nobody allowed.
    An OpenPGP ``U`` (valid, no ownertrust) is good: the keyring holds only allowed keys."""
    ssh = key.startswith("SHA256:")
    if code == "G" or (code == "U" and not ssh):
        return "good"
    return CODES.get(code, "bad")


CODES: dict[str, Verdict] = {
    "N": "unsigned",
    "U": "unknown-signer",
    "E": "unknown-signer",
    "B": "bad",
    "X": "expired",
    "Y": "expired",
    "R": "revoked",
}


class SignatureVerifier:
    """Verifies commits of a bare repository against configured signers."""

    def __init__(self, root: Path | None = None) -> None:
        self._given = root
        self._made: Path | None = None
        self._known: dict[tuple[str, str], Signature] = {}
        self._homes: dict[str, tuple[Path, Path]] = {}
        self._lock = threading.Lock()

    def verify(
        self, git_dir: Path, shas: list[str], *, allowed_signers: str, keyring: str
    ) -> list[Signature]:
        """The signature of each of ``shas``, in their order."""
        digest = hashlib.sha256(f"{allowed_signers}\0{keyring}".encode()).hexdigest()
        with self._lock:
            found = {s: self._known.get((s, digest)) for s in shas}
        missing = [s for s, v in found.items() if v is None]
        if missing:
            signers, home = self._signers(digest, allowed_signers, keyring)
            for signature in self._run(git_dir, missing, signers, home):
                found[signature.sha] = signature
                with self._lock:
                    remember(self._known, (signature.sha, digest), signature, REMEMBERED)
        return [found[s] or Signature(s, "bad") for s in shas]

    def _signers(self, digest: str, allowed_signers: str, keyring: str) -> tuple[Path, Path]:
        """The allowed_signers file and the GNUPGHOME of these signers, made once."""
        with self._lock:
            made = self._homes.get(digest)
            if made is not None:
                return made
            where = self._root() / digest[:16]
            home = where / "gnupg"
            home.mkdir(parents=True, exist_ok=True, mode=0o700)
            signers = where / "allowed_signers"
            signers.write_text(allowed_signers + ("\n" if allowed_signers else ""))
            if keyring.strip():
                _import(home, keyring)
            self._homes[digest] = (signers, home)
            return signers, home

    def _root(self) -> Path:
        """Under ``_lock``: where the signers' directories go, made on first use."""
        if self._given is not None:
            return self._given
        if self._made is None:
            self._made = Path(tempfile.mkdtemp(prefix="promoter-signers-"))
            weakref.finalize(self, shutil.rmtree, self._made, ignore_errors=True)
        return self._made

    @staticmethod
    def _run(git_dir: Path, shas: list[str], signers: Path, home: Path) -> list[Signature]:
        args = [
            "-c",
            f"gpg.ssh.allowedSignersFile={signers}",
            "log",
            "--no-walk=unsorted",
            f"--format={FIELDS}",
            *shas,
        ]
        out = run_git(args, cwd=git_dir, env={"GNUPGHOME": str(home)}, what="verifying signatures")
        found = []
        for line in out[1].splitlines():
            parts = line.split("\x1f")
            if len(parts) != 5:
                continue
            sha, code, signer, key, fingerprint = parts
            key = fingerprint or key
            found.append(Signature(sha, judge(code, signer, key), signer, key))
        return found


def _import(home: Path, keyring: str) -> None:
    """Import the armoured public keys into ``home``; GitError when gpg takes none.

    Whether a key was taken is read from gpg's status lines (``IMPORT_OK``), not from its
    exit code: after importing, gpg asks its agent about secret keys, and under a home
    whose path is too long for the agent's socket (about 100 characters) that fails and
    gpg exits 2 although every key was imported; verifying needs no agent."""
    import subprocess

    done = subprocess.run(
        [
            "gpg",
            "--batch",
            "--no-tty",
            "--no-autostart",
            "--status-fd",
            "1",
            "--homedir",
            str(home),
            "--import",
        ],
        input=keyring.encode(),
        capture_output=True,
        timeout=60,
        check=False,
    )
    if not any(line.startswith(b"[GNUPG:] IMPORT_OK ") for line in done.stdout.splitlines()):
        first = [
            line
            for line in done.stderr.decode(errors="replace").strip().splitlines()
            if "created" not in line  # the keybox and trustdb gpg made for the home
        ][:1]
        raise GitError(f"the OpenPGP keyring could not be imported: {' '.join(first)}")
