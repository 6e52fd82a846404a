"""The setting the executor's tests share (no tests here): the sandbox's guestbook strategy
on a real repository, the embedded local SCM (or the local SCM with a merge queue on some
branches, as GitHub's), and one ``Executor`` as a reconcile builds it, run on actions the
engine makes from a snapshot read fresh."""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal

from promoter.config import Repository, ScmProvider
from promoter.daemon import Runtime
from promoter.daemon.acting.events import ActionEvent
from promoter.daemon.acting.outcome import Outcome
from promoter.engine import Action, Snapshot, operations
from promoter.errors import ScmConflict, ScmNotFound, ScmQueueRequired
from promoter.git import GitMirror
from promoter.models import CommitStatus, Phase, QueueEntry
from scm_plugins.local import LocalScm
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config

DEV = ENVIRONMENTS[0]
STRATEGY = "guestbook"


class QueueingScm(LocalScm):
    """The local SCM with a merge queue on the branches in ``queued``, as GitHub has one: a
    merge into such a branch is refused (405, "through the merge queue"), an enqueue holds
    the PR's head as its guard, and the SCM says which branches need the queue."""

    merge_queue_scope: Literal["branch", "repository"] = "branch"

    def __init__(self, *, provider: ScmProvider, state_dir: str) -> None:
        super().__init__(provider=provider, state_dir=state_dir)
        self.queued: set[str] = set()
        self.queue: dict[int, str] = {}
        """The PRs in the queue, with the head each was enqueued on."""

    def merge_queue_required(self, *, repo: Repository, branch: str) -> bool:
        return branch in self.queued

    def merge_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str, message: str
    ) -> str:
        row = self.store.get(repo.name, number)
        if row is not None and row["base"] in self.queued:
            raise ScmQueueRequired(
                "GitHub answered 405: Changes must be made through the merge queue"
            )
        return super().merge_pull_request(
            repo=repo, number=number, expected_head_sha=expected_head_sha, message=message
        )

    def enqueue_pull_request(
        self, *, repo: Repository, number: int, expected_head_sha: str
    ) -> QueueEntry:
        row = self.store.get(repo.name, number)
        if row is None:
            raise ScmNotFound(f"pull request {number} not found")
        if self._tip(repo, row["head"]) != expected_head_sha:
            raise ScmConflict("Expected head OID does not match")
        self.queue[number] = expected_head_sha
        return QueueEntry(queued=True, state="QUEUED", position=len(self.queue))

    def queue_entry(self, *, repo: Repository, number: int) -> QueueEntry:
        if number in self.queue:
            return QueueEntry(queued=True, state="AWAITING_CHECKS", position=1)
        return QueueEntry(queued=False)


class Setting:
    """dev's promotion PR open (1.0.0 to 1.1.0), and what a test reads and runs."""

    def __init__(
        self,
        tmp_path: Path,
        *,
        queueing: bool = False,
        environments: dict[str, str] | None = None,
    ) -> None:
        self.gitops = GitOpsRepo.create(tmp_path)
        self.first = self.gitops.tip("main")
        config = local_config(self.gitops.path, tmp_path / "state", environments=environments)
        provider, state_dir = config.scm_providers[0], str(config.state_path())
        self.queueing: QueueingScm | None = None
        if queueing:
            self.queueing = QueueingScm(provider=provider, state_dir=state_dir)
        plugin = self.queueing or LocalScm(provider=provider, state_dir=state_dir)
        self.events: list[ActionEvent] = []
        # The runtime alone: a reconcile's executor, without the webhooks' delivery log.
        self.runtime = Runtime(
            config, plugins={provider.name: plugin}, observers=[self.events.append]
        )
        self.repo = self.runtime.config.repository("gitops")
        self.plugin = plugin
        self.change = self.gitops.change("1.1.0", "Bump guestbook to 1.1.0")
        self.runtime.reconciler.reconcile(STRATEGY)  # opens dev's PR
        self.head = self.gitops.tip(f"{DEV}-next")
        self.events.clear()

    @property
    def mirror(self) -> GitMirror:
        return self.runtime.mirrors.fresh(self.repo)

    def snapshot(self) -> Snapshot:
        strategy = self.runtime.config.strategy(STRATEGY)
        assert strategy is not None
        reader = self.runtime.reconciler.reader(STRATEGY, self.plugin)
        return reader.read(strategy, self.repo, self.mirror)

    def run(
        self,
        snapshot: Snapshot,
        actions: Sequence[Action] | operations.Refusal,
        outcome: Outcome | None = None,
    ) -> Outcome:
        """Carry out ``actions`` (the engine's answer; a refusal fails the test) as a
        reconcile does, with the executor it builds."""
        assert not isinstance(actions, operations.Refusal), actions
        done = tuple(actions)
        reader = self.runtime.reconciler.reader(STRATEGY, self.plugin)
        executor = self.runtime.reconciler.executor(self.plugin, reader)
        return executor.run(snapshot, self.repo, self.mirror, done, outcome)

    def ci(self, phase: Phase) -> None:
        """CI reports on dev's PR head, on the SCM itself."""
        status = CommitStatus(key="ci", phase=phase)
        self.plugin.set_commit_status(repo=self.repo, sha=self.head, status=status)

    def pr_number(self) -> int:
        pr = self.plugin.find_open_pull_request(repo=self.repo, head=f"{DEV}-next", base=DEV)
        assert pr is not None
        return pr.number

    def told(self, kind: str) -> list[ActionEvent]:
        return [e for e in self.events if e.kind == kind]

    def close(self) -> None:
        """Stop the git processes the mirror and the local SCM keep open."""
        self.runtime.mirrors.get(self.repo).close()
        self.plugin.close()


@contextmanager
def opened(
    tmp_path: Path, *, queueing: bool = False, environments: dict[str, str] | None = None
) -> Iterator[Setting]:
    setting = Setting(tmp_path, queueing=queueing, environments=environments)
    try:
        yield setting
    finally:
        setting.close()


def log_lines(text: str, msg: str) -> list[dict[str, Any]]:
    """The JSON log lines whose message is ``msg``, without their time and logger."""
    lines = [json.loads(line) for line in text.splitlines()]
    return [
        {k: v for k, v in line.items() if k not in ("ts", "logger")}
        for line in lines
        if line["msg"] == msg
    ]
