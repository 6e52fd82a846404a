"""Branch tips and commits of a local SCM repository, read through one persistent
``git cat-file``.

Every pull request call of the local SCM needs the tips of its head and base branches,
and many ask whether one commit is an ancestor of another (a PR merged by hand). A
``git for-each-ref`` or ``git merge-base`` per call is a process of a few milliseconds;
``git cat-file --batch`` answers ``<sha> <type> <size>`` and the object for each name
written to it, resolving the name against the refs as they are on disk at that moment (a
loose ref is read again, packed refs when their file changed, a new pack when an object
is not found), in a few microseconds. One such process per repository answers every
read; it is started on first use and again if it died. Ancestry near the tip is walked
through it (``promoter.git.ancestry``), and left to ``git merge-base`` beyond.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import threading
import weakref
from collections.abc import Mapping
from pathlib import Path

from promoter.errors import GitError


class BranchTips:
    """``git cat-file --batch`` in the repository at ``path``, kept running."""

    def __init__(self, path: Path, env: Mapping[str, str]) -> None:
        self.path = path
        self._env = dict(env)
        self._lock = threading.Lock()
        self._process: subprocess.Popen[bytes] | None = None
        self._identity: tuple[int, int] | None = None
        """The repository directory's (device, inode) when the process started: a
        repository deleted and made again at the same path needs a new process."""

    def tips(self, branches: tuple[str, ...]) -> dict[str, str]:
        """``branch -> tip`` for those of ``branches`` that exist and name a commit (a name
        git cannot hold, with a space or a newline, is one that does not exist).

        ``OSError`` when the repository is not there (any more)."""
        branches = tuple(b for b in branches if b and "\n" not in b and " " not in b)
        if not branches:  # names git cannot hold: no such branch
            return {}
        names = [f"refs/heads/{b}" for b in branches]
        found = {}
        for branch, (sha, kind, _) in zip(branches, self._read(names), strict=True):
            if kind == b"commit":
                found[branch] = sha
        return found

    def parents(self, sha: str) -> list[str] | None:
        """The parents of commit ``sha``; None when the repository has no such commit.

        ``OSError`` when the repository is not there (any more)."""
        if not sha or "\n" in sha or " " in sha:
            return None
        [(_, kind, data)] = self._read([sha])
        if kind != b"commit":
            return None
        found = []
        for line in data.split(b"\n"):
            if not line:  # the headers end before the message
                break
            if line.startswith(b"parent "):
                found.append(line[7:].decode("ascii"))
        return found

    def _read(self, names: list[str]) -> list[tuple[str, bytes, bytes]]:
        """``(sha, type, content)`` of each name; type ``missing`` for none."""
        request = ("\n".join(names) + "\n").encode()
        with self._lock:
            stat = os.stat(self.path)
            if self._identity != (stat.st_dev, stat.st_ino):
                self._stop()
                self._identity = (stat.st_dev, stat.st_ino)
            try:
                return self._ask(request, len(names))
            except (OSError, ValueError):
                self._stop()  # it died (killed, or its repository went away): start again
                try:
                    return self._ask(request, len(names))
                except (OSError, ValueError) as exc:
                    self._stop()
                    raise GitError(f"cannot read the repository {self.path}: {exc}") from exc

    def _ask(self, request: bytes, count: int) -> list[tuple[str, bytes, bytes]]:
        process = self._process
        if process is None:
            process = self._process = subprocess.Popen(
                ["git", "cat-file", "--batch"],
                cwd=self.path,
                env=self._env,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
            )
            weakref.finalize(self, _end, process)  # a plugin dropped without close()
        assert process.stdin is not None and process.stdout is not None
        process.stdin.write(request)
        process.stdin.flush()
        answers = []
        for _ in range(count):
            line = process.stdout.readline()
            if not line:
                raise ValueError("git cat-file stopped answering")
            header = line.rstrip(b"\n").split(b" ")
            if len(header) != 3:  # "<name> missing", "<name> ambiguous"
                answers.append(("", b"missing", b""))
                continue
            size = int(header[2])
            data = process.stdout.read(size + 1)  # the object and its newline
            if len(data) != size + 1:
                raise ValueError("git cat-file stopped answering")
            answers.append((header[0].decode("ascii"), header[1], data[:size]))
        return answers

    def _stop(self) -> None:
        process, self._process = self._process, None
        if process is not None:
            _end(process)

    def close(self) -> None:
        """Stop the process (started again by the next read)."""
        with self._lock:
            self._stop()


def _end(process: subprocess.Popen[bytes]) -> None:
    """Stop ``cat-file``: end of its input, then wait for it (killed if it lingers)."""
    for stream in (process.stdin, process.stdout):
        if stream is not None:
            with contextlib.suppress(OSError):
                stream.close()
    if process.returncode is not None:
        return
    try:
        process.wait(timeout=5)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
