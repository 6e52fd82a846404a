"""Commit signatures verified with git against allowed signers: real SSH and OpenPGP keys,
real signed commits in a temporary repository."""

from __future__ import annotations

import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from promoter.cli.sandbox import commit_files, init_bare
from promoter.errors import GitError
from promoter.git.signatures import SignatureVerifier

from .keys import PgpKey, pgp_key, signed_commit, ssh_key


@pytest.fixture
def pgp(tmp_path: Path) -> Iterator[Callable[[str], PgpKey]]:
    """OpenPGP keys of people; the gpg-agent each key's home started is stopped after."""
    made: list[PgpKey] = []

    def make(email: str) -> PgpKey:
        made.append(pgp_key(tmp_path, email))
        return made[-1]

    yield make
    for key in made:
        subprocess.run(["gpgconf", "--homedir", str(key.home), "--kill", "gpg-agent"], check=False)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = init_bare(tmp_path / "dry.git")
    commit_files(path, "main", {"a": "1\n"}, "first")
    return path


def test_ssh_commits_are_good_only_when_signed_by_an_allowed_signer(
    repo: Path, tmp_path: Path
) -> None:
    alice, mallory = ssh_key(tmp_path, "alice@example.com"), ssh_key(tmp_path, "mallory@evil.test")
    good = signed_commit(repo, "main", {"a": "2\n"}, "by alice", alice)
    foreign = signed_commit(repo, "main", {"a": "3\n"}, "by mallory", mallory)
    unsigned = signed_commit(repo, "main", {"a": "4\n"}, "by nobody", None)
    found = SignatureVerifier(tmp_path / "v").verify(
        repo, [good, foreign, unsigned], allowed_signers=alice.allowed(), keyring=""
    )
    assert [(s.sha, s.verdict) for s in found] == [
        (good, "good"),
        (foreign, "unknown-signer"),
        (unsigned, "unsigned"),
    ]
    assert found[0].signer == "alice@example.com"
    assert found[1].key.startswith("SHA256:")


def test_openpgp_commits_are_good_only_when_their_key_is_in_the_keyring(
    repo: Path, tmp_path: Path, pgp: Callable[[str], PgpKey]
) -> None:
    ada, eve = pgp("ada@example.com"), pgp("eve@evil.test")
    good = signed_commit(repo, "main", {"a": "2\n"}, "by ada", ada)
    foreign = signed_commit(repo, "main", {"a": "3\n"}, "by eve", eve)
    found = SignatureVerifier(tmp_path / "v").verify(
        repo, [good, foreign], allowed_signers="", keyring=ada.armored()
    )
    assert [s.verdict for s in found] == ["good", "unknown-signer"]
    assert "ada@example.com" in found[0].signer
    assert found[0].key == ada.fingerprint


def test_openpgp_keys_are_taken_under_a_home_too_long_for_gpg_agents_socket(
    repo: Path, tmp_path: Path, pgp: Callable[[str], PgpKey]
) -> None:
    """gpg imports the keys, then fails to reach its agent (``File name too long``) and
    exits 2: the keys were taken all the same, and commits are judged by them."""
    ada, eve = pgp("ada@example.com"), pgp("eve@evil.test")
    good = signed_commit(repo, "main", {"a": "2\n"}, "by ada", ada)
    foreign = signed_commit(repo, "main", {"a": "3\n"}, "by eve", eve)
    root = tmp_path / ("state-" + "d" * 80) / "v"
    assert len(str(root / ("0" * 16) / "gnupg" / "S.gpg-agent")) > 108  # sun_path's size
    found = SignatureVerifier(root).verify(
        repo, [good, foreign], allowed_signers="", keyring=ada.armored()
    )
    assert [s.verdict for s in found] == ["good", "unknown-signer"]


def test_a_verdict_is_kept_for_the_same_signers_and_asked_again_for_others(
    repo: Path, tmp_path: Path
) -> None:
    alice = ssh_key(tmp_path, "alice@example.com")
    sha = signed_commit(repo, "main", {"a": "2\n"}, "by alice", alice)
    verifier = SignatureVerifier(tmp_path / "v")
    assert verifier.verify(repo, [sha], allowed_signers=alice.allowed(), keyring="")[0].verdict == (
        "good"
    )
    gone = tmp_path / "gone.git"
    repo.rename(gone)  # no git can answer now: a kept verdict needs none
    assert (
        verifier.verify(
            gone.with_name("dry.git"), [sha], allowed_signers=alice.allowed(), keyring=""
        )[0].verdict
        == "good"
    )
    with pytest.raises(GitError):
        verifier.verify(gone.with_name("dry.git"), [sha], allowed_signers="", keyring="")


def test_a_keyring_gpg_cannot_read_is_an_error_not_an_empty_keyring(
    repo: Path, tmp_path: Path
) -> None:
    with pytest.raises(GitError, match="keyring could not be imported"):
        SignatureVerifier(tmp_path / "v").verify(
            repo,
            ["0" * 40],
            allowed_signers="",
            keyring="-----BEGIN PGP PUBLIC KEY BLOCK-----\ngarbage",
        )


def test_the_signers_directory_is_made_only_when_needed_and_removed_with_the_verifier(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A daemon without a signature gate leaves nothing in the temporary directory; one with
    it leaves nothing behind once the verifier is gone."""
    import gc
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    made = lambda: sorted((tmp_path / "tmp").iterdir())  # noqa: E731
    idle = SignatureVerifier()
    assert made() == []
    alice = ssh_key(tmp_path, "alice@example.com")
    good = signed_commit(repo, "main", {"a": "2\n"}, "by alice", alice)
    verifier = SignatureVerifier()
    found = verifier.verify(repo, [good], allowed_signers=alice.allowed(), keyring="")
    assert [s.verdict for s in found] == ["good"]
    assert [p.name[:17] for p in made()] == ["promoter-signers-"]
    del verifier, idle
    gc.collect()
    assert made() == []
