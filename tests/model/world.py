"""The world the model drives: a GitOps repository, the local SCM with a merge queue of its
own on dev and staging (prod merges directly), and the real daemon's runtime
(``promoter.daemon.Runtime``, as ``promoter.wiring.Daemon`` builds it, without its webhook
receivers), never started: each reconcile is run by hand until a pass decides nothing
more, so a sequence of steps plays the same way every time. CI is the model: it reports statuses on
proposed and active commits through the daemon, and on the queue's merge groups to the SCM.

What it observes between steps (``Facts``): each environment's active commit and the dry
commit it runs, its ledger, and every pull request; the plugin's queue calls are counted.
"""

from __future__ import annotations

import json
import shutil
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from promoter.cli.sandbox import ENVIRONMENTS, GitOpsRepo, git, sandbox_config
from promoter.config.loader import parse_config
from promoter.daemon import Runtime
from promoter.engine import EnvLedger
from promoter.errors import PromoterError
from promoter.git.process.runner import run_git
from promoter.models import CommitStatus, Phase, PullRequest
from promoter.wiring import build_plugins, with_state_dir
from scm_plugins.local import LocalScm

STRATEGY = "guestbook"
DEV, STAGING, PROD = ENVIRONMENTS
QUEUED = (DEV, STAGING)
"""The branches that merge through the local SCM's queue; prod's PRs are merged directly."""
QUEUE_CHECK = "queue-ci"
APPROVER = "alice"
PASSES = 8
"""Reconciles of one step at most: a step whose decisions do not settle by then loops."""
SCM_DATABASE = "local-scm.sqlite3"
"""The local SCM's own database in the state directory: the SCM, not the promoter's state."""


def config_text(repo: Path, state: Path) -> str:
    text = sandbox_config(
        repo,
        state,
        auto_revert="{enabled: true, settleTime: 0s, autoMerge: true}",
        environments={"staging": "gates: [{approval: {count: 1}}]"},
        daemon={"workers": 1},
    )
    queue = f"{{mergeQueue: {{checks: [{QUEUE_CHECK}], branches: [{', '.join(QUEUED)}]}}}}"
    return text.replace("local: {}", f"local: {queue}")


@dataclass(frozen=True)
class Facts:
    """The world between two steps: what the invariants compare."""

    tips: dict[str, str]
    """Each environment's active commit."""
    runs: dict[str, str]
    """The dry commit each environment runs."""
    ledgers: dict[str, EnvLedger]
    pulls: dict[int, PullRequest]


@dataclass
class World:
    root: Path
    gitops: GitOpsRepo = field(init=False)
    runtime: Runtime = field(init=False)
    calls: Counter[tuple[str, int]] = field(default_factory=Counter)
    """Queue calls of the current step: (``enqueue``/``dequeue``, PR number)."""
    versions: int = 0
    _dry: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.gitops = GitOpsRepo.create(self.root)
        self.config = parse_config(config_text(self.gitops.path, self.root / "state"))
        self.repo = self.config.repository("gitops")
        self._start()

    # --- the daemon ----------------------------------------------------------------------

    def _start(self) -> None:
        config = with_state_dir(self.config)
        self.runtime = Runtime(config, plugins=build_plugins(config))
        plugin = self.plugin
        for name in ("enqueue", "dequeue"):
            method = getattr(plugin, f"{name}_pull_request", None)
            if method is not None:
                setattr(plugin, f"{name}_pull_request", self._counted(name, method))

    def _counted(self, name: str, method: Callable[..., Any]) -> Callable[..., Any]:
        def counted(**kw: Any) -> Any:
            self.calls[(name, kw["number"])] += 1
            return method(**kw)

        return counted

    @property
    def plugin(self) -> LocalScm:
        plugin = self.runtime.plugins["local"]
        assert isinstance(plugin, LocalScm)
        return plugin

    def close(self) -> None:
        runtime = self.runtime
        runtime.probes.close()
        runtime.ledger.flush_all()
        runtime.audit.flush_all()
        for plugin in runtime.plugins.values():
            plugin.close()
        runtime.mirrors.close()

    def restart(self, *, wipe: bool) -> None:
        """Stop the daemon and start it again; ``wipe``: with its state directory lost (all
        but the local SCM's database: the SCM is not the promoter's state)."""
        self.close()
        state = self.config.state_path()
        if wipe:
            for path in state.iterdir():
                if not path.name.startswith(SCM_DATABASE):
                    shutil.rmtree(path) if path.is_dir() else path.unlink()
        self._start()

    def reconcile(self) -> bool:
        """Reconcile until a pass decides nothing (True), at most ``PASSES`` times. What moved
        in the repository and its pull requests is announced first, as webhooks would."""
        self.runtime.mirrors.invalidate(self.repo.name)
        self.runtime.pr_cache.forget_repositories([self.repo.name])
        for _ in range(PASSES):
            try:
                self.runtime.reconciler.reconcile(STRATEGY)
            except PromoterError:
                continue  # refused: the next pass reads again, as the work queue retries
            view = self.runtime.reconciler.view(STRATEGY)
            if view is not None and view.decision is not None and not view.decision.actions:
                return True
        return False

    # --- CI, people and the hydrator ---------------------------------------------------

    def push(self) -> str:
        self.versions += 1
        return self.gitops.change(f"1.{self.versions}.0", f"Bump guestbook to 1.{self.versions}.0")

    def report(self, sha: str, key: str, phase: Phase) -> None:
        status = CommitStatus(key=key, phase=phase, description=f"{key} {phase}", source="ci")
        self.runtime.post_status("gitops", sha, status, force=True)

    def report_groups(self, phase: Phase) -> list[int]:
        """CI reports the queue's check on every merge group; the PRs the queue merged."""
        before = self.merged()
        for sha in self.plugin.queue_groups(repo=self.repo).values():
            status = CommitStatus(key=QUEUE_CHECK, phase=phase, description="", source="ci")
            self.plugin.set_commit_status(repo=self.repo, sha=sha, status=status)
        return sorted(self.merged() - before)

    def merged(self) -> set[int]:
        return {pr.number for pr in self.pulls().values() if pr.state.value == "merged"}

    # --- what is observed ----------------------------------------------------------------

    def tip(self, branch: str) -> str:
        return self.gitops.tip(branch)

    def tips(self) -> dict[str, str]:
        """Every branch's tip, in one git call."""
        out = git(self.gitops.path, "for-each-ref", "--format=%(refname:short) %(objectname)")
        return dict(line.split(" ", 1) for line in out.splitlines())

    def dry_of(self, sha: str) -> str:
        """The dry commit a hydrated commit renders (its ``hydrator.metadata`` file)."""
        if sha not in self._dry:
            text = git(self.gitops.path, "show", f"{sha}:hydrator.metadata")
            self._dry[sha] = json.loads(text)["drySha"]
        return self._dry[sha]

    def descends(self, descendant: str, ancestor: str) -> bool:
        if descendant == ancestor:
            return True
        args = ("merge-base", "--is-ancestor", ancestor, descendant)
        return run_git(args, cwd=self.gitops.path, ok=(0, 1))[0] == 0

    def pulls(self) -> dict[int, PullRequest]:
        return {pr.number: pr for pr in self.plugin.pull_requests(repo=self.repo)}

    def ledger(self, branch: str) -> EnvLedger:
        mirror = self.runtime.mirrors.fresh(self.repo)
        return self.runtime.ledger.read(mirror, STRATEGY, branch)

    def facts(self) -> Facts:
        every = self.tips()
        tips = {b: every[b] for b in ENVIRONMENTS}
        return Facts(
            tips=tips,
            runs={b: self.dry_of(sha) for b, sha in tips.items()},
            ledgers={b: self.ledger(b) for b in ENVIRONMENTS},
            pulls=self.pulls(),
        )
