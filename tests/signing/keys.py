"""Real signing keys for the signature tests, made in temporary directories: SSH keys with
ssh-keygen, OpenPGP keys with gpg, and commits signed with them by git."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass
from pathlib import Path

from promoter.cli.sandbox import git


@dataclass(frozen=True)
class SshKey:
    email: str
    private: Path

    @property
    def public(self) -> str:
        return Path(f"{self.private}.pub").read_text().strip()

    def allowed(self) -> str:
        """This key's line of an allowed_signers file."""
        return f"{self.email} {self.public}"

    def config(self) -> list[str]:
        return ["-c", "gpg.format=ssh", "-c", f"user.signingkey={self.private}"]


@dataclass(frozen=True)
class PgpKey:
    email: str
    home: Path
    fingerprint: str

    def armored(self) -> str:
        done = subprocess.run(
            ["gpg", "--batch", "--homedir", str(self.home), "--armor", "--export", self.email],
            capture_output=True,
            check=True,
        )
        return done.stdout.decode()

    def config(self) -> list[str]:
        return ["-c", "gpg.format=openpgp", "-c", f"user.signingkey={self.fingerprint}"]


def ssh_key(root: Path, email: str) -> SshKey:
    path = root / email.split("@")[0]
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", email, "-f", str(path)], check=True
    )
    return SshKey(email, path)


def pgp_key(root: Path, email: str) -> PgpKey:
    home = root / f"gnupg-{email.split('@')[0]}"
    home.mkdir(mode=0o700)
    spec = (
        "%no-protection\nKey-Type: eddsa\nKey-Curve: ed25519\nKey-Usage: sign\n"
        f"Name-Real: {email.split('@')[0]}\nName-Email: {email}\nExpire-Date: 0\n%commit\n"
    )
    subprocess.run(
        ["gpg", "--batch", "--homedir", str(home), "--gen-key"],
        input=spec.encode(),
        capture_output=True,
        check=True,
    )
    listing = subprocess.run(
        ["gpg", "--batch", "--homedir", str(home), "--with-colons", "--list-secret-keys"],
        capture_output=True,
        check=True,
    ).stdout.decode()
    fingerprint = next(
        line.split(":")[9] for line in listing.splitlines() if line.startswith("fpr")
    )
    return PgpKey(email, home, fingerprint)


def signed_commit(
    repo: Path, branch: str, files: dict[str, str], message: str, key: SshKey | PgpKey | None
) -> str:
    """A commit on ``branch`` of the bare ``repo``, signed with ``key`` (None: unsigned)."""
    parent = git(repo, "rev-parse", f"refs/heads/{branch}")
    env = {"GIT_INDEX_FILE": str(repo / "signing-index")}
    git(repo, "read-tree", parent, env=env)
    for name, content in files.items():
        blob = git(repo, "hash-object", "-w", "--stdin", stdin=content)
        git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}", env=env)
    tree = git(repo, "write-tree", env=env)
    (repo / "signing-index").unlink()
    home = {"GNUPGHOME": str(key.home)} if isinstance(key, PgpKey) else {}
    sign = [*key.config(), "commit-tree", "-S"] if key else ["commit-tree"]
    sha = git(repo, *sign, tree, "-p", parent, "-m", message, env=home)
    git(repo, "update-ref", f"refs/heads/{branch}", sha, parent)
    return sha
