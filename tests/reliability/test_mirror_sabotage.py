"""The mirror deleted, truncated and made read-only under a running daemon, over and over,
while ledger notes are written, the mirror is fetched and read: every thread goes on and
finishes, and promotion resumes once the mirror is left alone.

A fault stays until every thread that works on the mirror has run into it twice (work
done, not time spent), so each round meets notes writes, pushes, fetches and reads
mid-flight. A thread that waits for a lock it holds itself never goes on: the test then
hangs until pytest-timeout stops it and shows every thread's stack (that is how the
self-deadlock of a notes write healing the mirror under its own notes lock was seen).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.engine import EnvLedger
from promoter.git import GitMirror
from promoter.state.ledger import LEDGER_REF, key_object
from promoter.wiring import Daemon
from tests.support import ENVIRONMENTS, GitOpsRepo, wait_for

from .faults import CI, api_poster
from .history import History

ROUNDS = 12
"""Four of each fault."""
PATIENCE = 600.0
"""Seconds a thread is waited for (a git command on a machine loaded with other work can
take tens of seconds; a thread that waits for itself takes for ever)."""
PROD = ENVIRONMENTS[-1]


def config_text(repo: Path, state: Path) -> str:
    return f"""
scmProviders: [{{name: local, local: {{}}}}]
repositories: [{{name: gitops, url: {repo}, scmProvider: local}}]
promotionStrategies:
  - name: guestbook
    repository: gitops
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev, autoMerge: true}}
      - {{branch: environment/staging, autoMerge: true}}
      - {{branch: environment/prod, autoMerge: true}}
daemon: {{stateDir: {state}, pollInterval: 0.1s, resyncInterval: 1s, workers: 2}}
"""


class Hammer:
    """A thread that does ``work`` over and over until stopped, counting its attempts."""

    def __init__(self, name: str, work: Callable[[int], object]) -> None:
        self.name = name
        self.work = work
        self.attempts = 0
        self.failures = 0
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._run, name=f"sabotage-{name}", daemon=True)

    def _run(self) -> None:
        while not self.stop.is_set():
            try:
                self.work(self.attempts)
            except Exception:  # the mirror is broken on purpose: errors are expected
                self.failures += 1
            self.attempts += 1


def stacks() -> str:
    """Every thread's stack, as a hang is diagnosed."""
    names = {t.ident: t.name for t in threading.enumerate()}
    return "\n".join(
        f"--- {names.get(ident, ident)}\n{''.join(traceback.format_stack(frame))}"
        for ident, frame in sys._current_frames().items()
    )


def files(root: Path) -> Iterator[Path]:
    """The files under ``root``; a directory the running daemon removes meanwhile (a heal
    cloning the mirror afresh) is passed over."""
    for top, _, names in sorted(os.walk(root)):
        for name in sorted(names):
            path = Path(top) / name
            if path.is_file() and not path.is_symlink():
                yield path


def delete(mirror: Path) -> Iterator[None]:
    for _ in range(10):  # the running daemon may write into it meanwhile
        shutil.rmtree(mirror, ignore_errors=True)
        if not mirror.exists():
            break
    yield


def truncate(mirror: Path) -> Iterator[None]:
    """Every file cut to half its length: HEAD, config, refs, packs, loose objects."""
    for path in files(mirror):
        try:
            os.truncate(path, path.stat().st_size // 2)
        except OSError:
            continue  # gone meanwhile (a lock file, a ref packed)
    yield


def read_only(mirror: Path) -> Iterator[None]:
    """No file or directory of the mirror can be written (root too: the immutable
    attribute, where the file system has it), until the round ends."""
    paths = [mirror]
    for top, dirs, names in sorted(os.walk(mirror)):  # what is removed meanwhile is passed over
        paths += (Path(top) / name for name in sorted(dirs + names))
    paths = [p for p in paths if not p.is_symlink()]
    modes = {}
    for path in paths:
        try:
            modes[path] = path.stat().st_mode
            path.chmod(modes[path] & ~0o222)
        except OSError:
            continue
    immutable = os.geteuid() == 0 and shutil.which("chattr") is not None
    if immutable:
        subprocess.run(["chattr", "-R", "-f", "+i", str(mirror)], check=False)
    try:
        yield
    finally:
        if immutable:
            subprocess.run(["chattr", "-R", "-f", "-i", str(mirror)], check=False)
        for path, mode in modes.items():
            try:
                path.chmod(mode)
            except OSError:
                continue


FAULTS = [contextmanager(delete), contextmanager(truncate), contextmanager(read_only)]


@pytest.mark.timeout(1200)
def test_a_mirror_broken_under_the_running_daemon_stops_no_thread_and_promotion_resumes(
    tmp_path: Path, gitops: GitOpsRepo
) -> None:
    state = tmp_path / "state"
    config = parse_config(config_text(gitops.path, state))
    repo = config.repository("gitops")
    history = History(gitops.path)
    daemon = Daemon(config)
    runtime = daemon.runtime
    with TestClient(daemon.app) as client:
        ci = CI(gitops.path, ENVIRONMENTS, api_poster(client))
        first = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        ci.wait_for(lambda: history.runs(PROD, first), timeout=PATIENCE, what="the first promotion")
        mirror: GitMirror = runtime.mirrors.get(repo)

        def write_notes(n: int) -> None:
            def change(ledger: EnvLedger) -> EnvLedger:
                requested = (*ledger.reviewers_requested, n)[-4:]
                return ledger.model_copy(update={"reviewers_requested": requested})

            runtime.ledger.update(mirror, "sabotage", f"env-{n % 3}", change)

        def fetch(n: int) -> None:
            if n % 2:
                mirror.fetch()
            else:
                runtime.mirrors.poll(repo)

        def read(n: int) -> None:
            tip = mirror.branch_sha(PROD) or ""
            mirror.refs()
            mirror.metadata(tip)
            mirror.log(None, tip, limit=5)
            mirror.read_note(LEDGER_REF, key_object("sabotage", "env-0")[1])
            runtime.enqueue(["guestbook"])

        hammers = [Hammer("notes", write_notes), Hammer("fetch", fetch), Hammer("reads", read)]
        for hammer in hammers:
            hammer.thread.start()
        try:
            for round_ in range(ROUNDS):
                with FAULTS[round_ % len(FAULTS)](mirror.path):
                    for hammer in hammers:
                        wanted = hammer.attempts + 2
                        try:
                            wait_for(
                                lambda h=hammer, w=wanted: h.attempts >= w,  # type: ignore[misc]
                                timeout=PATIENCE,
                                what=f"{hammer.name} to go on in round {round_}",
                            )
                        except AssertionError as exc:
                            raise AssertionError(f"{exc}\n{stacks()}") from None
        finally:
            for hammer in hammers:
                hammer.stop.set()
        for hammer in hammers:
            hammer.thread.join(PATIENCE)
        assert [h.name for h in hammers if h.thread.is_alive()] == [], stacks()
        print({h.name: (h.attempts, h.failures) for h in hammers})

        second = gitops.change("1.2.0", "Bump guestbook to 1.2.0")
        ci.wait_for(
            lambda: history.runs(PROD, second), timeout=PATIENCE, what="promotion to resume"
        )
