"""SCM calls per environment promotion, for each SCM plugin: local, GitHub, GitLab, Forgejo,
Bitbucket Cloud, Bitbucket Data Center and Azure DevOps.

Each plugin drives the daemon (in process, through its starlette app) over one
strategy (dev -> staging -> prod) and a real bare git repository; GitHub, GitLab,
Forgejo, Bitbucket and Azure DevOps are the test suites' stateful HTTP-level fakes
(``tests/scm_github/fake_github.py``, ``tests/scm_gitlab/fake_gitlab.py``,
``tests/scm_forgejo/fake_forgejo.py``, ``tests/scm_bitbucket/fake_*.py``,
``tests/scm_azure/fake_azure.py``: Azure's git served over HTTP too), so every
call goes through the real plugin and its HTTP client (Forgejo's out of process, counted
per protocol call). For each of ``--changes`` dry changes the benchmark hydrates every
environment, then for each environment waits for the promotion PR, reports CI green
on its head and, once merged, the environment's health on the new commit, as CI and
CD would (GitHub: status / check run on the SCM plus its webhook; GitLab: pipeline
plus Pipeline Hook, health through the daemon's API; Forgejo: statuses on the SCM plus
its webhook; Bitbucket Cloud: build statuses on the SCM plus ``repo:commit_status_created``;
Bitbucket Data Center, which sends no build events: both through the API; Azure DevOps,
which has no status event: both through the API, its service hooks for pushes and pull
requests; local: both through the API). The Bitbucket Cloud plugin reads branch tips with
``git ls-remote`` (full SHAs, the head before a merge): reported as ``git ls-remote`` per
environment, not as SCM calls.

Counted with ``promoter_scm_calls_total``, minus the status writes the benchmark
itself makes through the daemon's API (those are CI's calls, not the promoter's):

* per environment: everything the daemon spent from the hydrator's push until each
  environment runs the change, filed by the PR, branch or commit each call was about
  (GitHub, GitLab and Forgejo run as in production: pushes arrive by webhook, the fakes
  send one after each merge, ref polling is off); ``-manual`` runs leave prod to a
  person, who merges its PR in the SCM;
* from opening the PR to its merge: the calls about that PR (its number, head branch
  or head commit) between the two, from the plugin's call log; ``-waits`` runs leave prod
  to a person who merges only after ``--person-waits`` minutes of the promoter's clock (a
  reconcile each minute): what the promoter writes while a person waits, its own statuses
  coming back included (GitLab's Pipeline Hooks are sent for every status set, as GitLab
  does), counts in prod's calls;
* an idle resync, per strategy: the periodic resync reads statuses and PRs from the
  SCM again (GitHub: and how many of those calls were charged to the rate limit; its
  answers to unchanged resources are 304s). Two in a row: the first after the
  promotions (statuses changed since the last read), then a steady one.

    python bench/scm_calls.py [--changes 3] [--plugin github --plugin gitlab-waits ...]
        [--person-waits 30]

Target: at most 4 calls for every environment on GitHub, GitLab, Forgejo and Azure DevOps
(the local
SCM is reported: it is in process and has no webhooks), with no ``--feature``. ``--feature
deployments --feature reviewers`` turns on issue 31's features that cost calls, to measure
them (docs/deployments.md, docs/gates.md); the target then does not apply.

``nodelocal`` and ``nodelocal-v1`` (the Node.js example plugin, a local SCM out of process;
left out without ``node``) are reported like the local SCM, with one target of their own:
with events that report every write back, a promotion costs no more calls than without.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import shutil
import sys
import tempfile
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import common
from common import Counters

TARGET = 4.0
MANUAL = "environment/prod"
"""The environment a person merges in the ``-manual`` runs (``autoMerge: false``)."""
POLL = "1h"
"""Pushes reach GitHub's and GitLab's daemons by webhook, as in production: no polling."""
PLUGINS = (
    "local",
    "github",
    "gitlab",
    "forgejo",
    "github-manual",
    "gitlab-manual",
    "forgejo-manual",
    "nodelocal",
    "nodelocal-v1",
    "bitbucket-cloud",
    "bitbucket-datacenter",
    "bitbucket-cloud-manual",
    "bitbucket-datacenter-manual",
    "azure-devops",
    "azure-devops-manual",
    "github-waits",
    "gitlab-waits",
    "forgejo-waits",
)
"""``-manual``: prod has ``autoMerge: false`` and a person merges its PR in the SCM;
``-waits``: the same person merges only after ``--person-waits`` minutes of the promoter's
clock, a reconcile each minute (as webhooks and timers would run them)."""
FEATURES = ("deployments", "reviewers")
"""``--feature``: issue 31's features that cost SCM calls, turned on to measure what they cost
(off, the counts are those of the target)."""
ON: list[str] = []
STRATEGY = "guestbook"
TIMEOUT = 30.0
FIXTURES = common.ROOT / "tests" / "fixtures"


def featured(text: str) -> str:
    """The configuration with the ``--feature``s on: deployments in every environment, one
    reviewer requested on every promotion PR."""
    if "deployments" in ON:
        text = text.replace("    environments:\n", "    deployments: {}\n    environments:\n", 1)
    if "reviewers" in ON:
        for env in ("dev", "staging", "prod"):
            text = text.replace(
                f"branch: environment/{env}",
                f"reviewers: {{users: [ada]}}, branch: environment/{env}",
            )
    return text


# --- the call log --------------------------------------------------------------------


@dataclass
class Call:
    at: float
    operation: str
    fields: dict[str, Any]


class CallLog(logging.Handler):
    """Every ``scm call`` record of ``promoter.scm`` (debug level), with its fields."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.calls: list[Call] = []
        self._lock_calls = threading.Lock()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() != "scm call":
            return
        fields = {
            k: v for k, v in vars(record).items() if k in ("pr", "sha", "head", "base", "key")
        }
        with self._lock_calls:
            self.calls.append(Call(time.perf_counter(), str(vars(record)["operation"]), fields))

    @contextmanager
    def attached(self) -> Iterator[CallLog]:
        logger = logging.getLogger("promoter.scm")
        level, propagate = logger.level, logger.propagate
        logger.setLevel(logging.DEBUG)
        logger.propagate = False  # debug records for this log only, not for the console
        logger.addHandler(self)
        try:
            yield self
        finally:
            logger.removeHandler(self)
            logger.setLevel(level)
            logger.propagate = propagate


@dataclass
class Window:
    """One environment's promotion PR, for the open-to-merge count."""

    branch: str
    number: int = 0
    head_sha: str = ""
    opened_at: float = 0.0
    merged_at: float = 0.0
    merge_sha: str = ""


def window_calls(log: CallLog, w: Window) -> list[Call]:
    """The calls about ``w``'s PR from its opening to its merge (both included)."""
    head = f"{w.branch}-next"
    mine = []
    for call in log.calls:
        if not (w.opened_at <= call.at <= w.merged_at):
            continue
        f = call.fields
        if call.at == w.opened_at and call.operation == "open_pull_request":
            mine.append(call)  # the opening call itself (GitHub's names neither PR nor head)
            continue
        if call.operation == "set_commit_status" and not str(f.get("key", "")).startswith(
            "promoter/"
        ):
            continue  # CI's own status write through the daemon's API, not the promoter's
        if (
            f.get("pr") == w.number
            or f.get("sha") == w.head_sha
            or (f.get("head") == head and f.get("base") in (None, w.branch))
        ):
            mine.append(call)
    return mine


def per_environment(log: CallLog, windows: list[Window], since: float) -> dict[str, list[Call]]:
    """Every promoter call since ``since``, by the environment it was about.

    A call names a PR, a head or base branch, or a commit: the promotion PR's head or
    the commit its merge made. CI's and CD's own status writes through the daemon's API
    are left out; a call naming nothing known is filed under ``?``.
    """
    owner: dict[object, str] = {}
    for w in windows:
        owner.update({("pr", w.number): w.branch, ("sha", w.head_sha): w.branch})
        owner.update({("sha", w.merge_sha): w.branch, ("branch", w.branch): w.branch})
        owner[("branch", f"{w.branch}-next")] = w.branch
    found: dict[str, list[Call]] = {}
    for call in log.calls:
        f = call.fields
        if call.at < since or (
            call.operation == "set_commit_status"
            and not str(f.get("key", "")).startswith("promoter/")
        ):
            continue
        branch = (
            owner.get(("pr", f.get("pr")))
            or owner.get(("sha", f.get("sha")))
            or owner.get(("branch", f.get("head")))
            or owner.get(("branch", f.get("base")))
            or "?"
        )
        found.setdefault(branch, []).append(call)
    return found


# --- the three set-ups ---------------------------------------------------------------


class Driver(ABC):
    """What differs between SCMs: the daemon's configuration and how CI and CD report."""

    provider = ""
    client: Any
    runtime: Any
    daemon: Any
    actor_calls = 0
    """Status writes the benchmark made through the daemon's API (CI's calls, not ours)."""

    def __init__(self, tmp: Path, manual_prod: bool = False) -> None:
        from tests.support import GitOpsRepo

        self.tmp = tmp
        self.manual_prod = manual_prod
        self.waits = 0
        """Minutes of the promoter's clock a person waits before merging prod's PR."""
        self.shift = timedelta(0)
        self.gitops = GitOpsRepo.create(tmp)
        self.events = common.Events()

    @abstractmethod
    def session(self) -> AbstractContextManager[Any]:
        """Implemented by each plugin's driver."""

    @abstractmethod
    def ci_green(self, branch: str, sha: str) -> None:
        """Implemented by each plugin's driver."""

    @abstractmethod
    def healthy(self, branch: str, sha: str) -> None:
        """Implemented by each plugin's driver."""

    def charged(self) -> int | None:
        return None

    def clock(self) -> datetime:
        """The promoter's clock: now, moved on by the minutes a person waited."""
        return datetime.now(UTC) + self.shift

    def person_merges(self, number: int, head_sha: str) -> None:
        """A person merges the PR in the SCM's UI (prod with ``autoMerge: false``)."""
        raise NotImplementedError(f"{self.provider}: no manual environment in this benchmark")

    def hydrate(self, version: str, message: str) -> str:
        """The hydrator pushes a dry change rendered onto every ``-next`` branch."""
        change: str = self.gitops.change(version, message)
        return change

    def api_status(self, sha: str, key: str) -> None:
        answer = self.client.post(
            f"/api/v1/repositories/gitops/commits/{sha}/statuses",
            json={"key": key, "phase": "success"},
        )
        assert answer.status_code == 201, answer.text
        self.actor_calls += 1


class LocalDriver(Driver):
    provider = "local"

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.wiring import Daemon
        from tests.support import local_config

        config = local_config(self.gitops.path, self.tmp / "state")
        self.daemon = Daemon(config, observers=[self.events], clock=self.clock)
        self.runtime = self.daemon.runtime
        with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
            yield self

    def ci_green(self, branch: str, sha: str) -> None:
        self.api_status(sha, "ci")

    def healthy(self, branch: str, sha: str) -> None:
        self.api_status(sha, "health")


class GitHubDriver(Driver):
    provider = "github"

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon
        from tests.scm_github.conftest import TOKEN, TOKEN_ENV
        from tests.scm_github.fake_github import FakeGitHub
        from tests.scm_github.genuine import Genuine
        from tests.scm_github.test_end_to_end import (
            FULL_NAME,
            SECRET,
            SECRET_ENV,
            GitHubCI,
            config_text,
        )

        os.environ[TOKEN_ENV], os.environ[SECRET_ENV] = TOKEN, SECRET
        with FakeGitHub(Genuine(FIXTURES), tokens=(TOKEN,)) as fake:
            fake.add_repository(FULL_NAME, self.gitops.path)
            self.fake = fake
            text = config_text(
                self.gitops.path,
                self.tmp / "state",
                poll_interval=POLL,
                prod_auto_merge=not self.manual_prod,
            )
            self.daemon = Daemon(
                parse_config(featured(text)), observers=[self.events], clock=self.clock
            )
            self.runtime = self.daemon.runtime
            with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
                self.robot = GitHubCI(self.client, fake)
                yield self

    def hydrate(self, version: str, message: str) -> str:
        return self.robot.hydrate(self.gitops, version, message)

    def person_merges(self, number: int, head_sha: str) -> None:
        self.robot.person_merges(number, head_sha)

    def ci_green(self, branch: str, sha: str) -> None:
        self.robot.check_run(sha, "ci", "success")

    def healthy(self, branch: str, sha: str) -> None:
        self.robot.status(sha, "health")

    def charged(self) -> int | None:
        return int(self.fake.charged())


class GitLabDriver(Driver):
    provider = "gitlab"

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon
        from tests.scm_gitlab.conftest import PROJECT, TOKEN, TOKEN_ENV
        from tests.scm_gitlab.fake_gitlab import FakeGitLab
        from tests.scm_gitlab.test_end_to_end import (
            HOOK_ENV,
            HOOK_TOKEN,
            PROJECT_ID,
            Harness,
            config_text,
        )
        from tests.scm_gitlab.test_gates_seen_at_once import GitLabSide

        os.environ[TOKEN_ENV], os.environ[HOOK_ENV] = TOKEN, HOOK_TOKEN
        hook = json.loads((FIXTURES / "gitlab/webhooks/go-gitlab/pipeline.json").read_text())
        fake = FakeGitLab(fixtures=FIXTURES, token=TOKEN)
        fake.add_project(PROJECT, git_dir=self.gitops.path, project_id=PROJECT_ID)
        with fake:
            text = config_text(
                self.gitops.path,
                self.tmp / "state",
                fake.url,
                poll_interval=POLL,
                prod=", autoMerge: false" if self.manual_prod else "",
            )
            fake.add_user("ada")
            self.daemon = Daemon(
                parse_config(featured(text)), observers=[self.events], clock=self.clock
            )
            self.runtime = self.daemon.runtime
            with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
                self.harness = Harness(self.runtime, self.client, fake, self.gitops, hook)
                side = GitLabSide(fake, self.gitops, hook, FIXTURES)
                side.client = self.client
                fake.on_status = side.on_status  # each status's Pipeline Hook, as GitLab sends
                yield self

    def hydrate(self, version: str, message: str) -> str:
        return self.harness.hydrate(version, message)

    def person_merges(self, number: int, head_sha: str) -> None:
        [mr] = [m for m in self.harness.mrs("environment/prod") if m["iid"] == number]
        self.harness.person_merges(mr)

    def ci_green(self, branch: str, sha: str) -> None:
        self.harness.pipeline(branch, "success")

    def healthy(self, branch: str, sha: str) -> None:
        self.api_status(sha, "health")


class ForgejoDriver(Driver):
    """The Forgejo plugin out of process, over the fake Forgejo; its webhooks as Forgejo
    sends them (push, status, pull_request), CI and CD writing statuses to Forgejo."""

    provider = "forgejo"

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon
        from tests.scm_forgejo.conftest import FULL_NAME, TOKEN, TOKEN_ENV
        from tests.scm_forgejo.fake_forgejo import FakeForgejo
        from tests.scm_forgejo.forgejo_ci import HOOK_ENV, HOOK_SECRET, ForgejoCI, config_text

        os.environ[TOKEN_ENV], os.environ[HOOK_ENV] = TOKEN, HOOK_SECRET
        with FakeForgejo(token=TOKEN) as fake:
            fake.add_repository(FULL_NAME, self.gitops.path)
            text = config_text(
                self.gitops.path,
                self.tmp / "state",
                fake.url,
                poll_interval=POLL,
                prod_auto_merge=not self.manual_prod,
            )
            self.daemon = Daemon(parse_config(text), observers=[self.events], clock=self.clock)
            self.runtime = self.daemon.runtime
            with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
                self.robot = ForgejoCI(self.client, fake)
                yield self

    def hydrate(self, version: str, message: str) -> str:
        return self.robot.hydrate(self.gitops, version, message)

    def person_merges(self, number: int, head_sha: str) -> None:
        self.robot.person_merges(number, head_sha)

    def ci_green(self, branch: str, sha: str) -> None:
        self.robot.status(sha, "ci")

    def healthy(self, branch: str, sha: str) -> None:
        self.robot.status(sha, "health")


class NodeLocalDriver(Driver):
    """The Node.js example plugin (``examples/plugins/promoter-scm-nodelocal``): a local SCM
    out of process. ``nodelocal`` speaks v1.1 and reports every ref it sees move, status it
    stores and pull request it changes as events, the promoter's own writes included, each
    50 ms after the change as an SCM's webhook would come (no ref polling); ``nodelocal-v1``
    speaks v1, sends no event, and the refs are polled. CI and CD report through the
    daemon's API. The two show whether events cost reads: with them, never more calls."""

    provider = "nodelocal"

    def __init__(self, tmp: Path, manual_prod: bool = False, *, v1: bool = False) -> None:
        super().__init__(tmp, manual_prod)
        self.v1 = v1

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.cli.sandbox import sandbox_config
        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon

        if self.v1:
            settings, poll = '{protocol: "promoter.scm/v1"}', "0.1s"
        else:
            settings, poll = "{eventInterval: 0.1, eventDelay: 0.05}", POLL
        plugin = (
            f"plugin: {{name: nodelocal, directory: {common.ROOT / 'examples' / 'plugins'},"
            f" settings: {settings}}}"
        )
        text = sandbox_config(
            self.gitops.path,
            self.tmp / "state",
            daemon={"workers": 2, "maxBackoff": "1s"},
        )
        text = text.replace("- name: local\n    local: {}", f"- name: nodelocal\n    {plugin}")
        served = f"scmProvider: nodelocal\n    pollInterval: {poll}"
        text = text.replace("scmProvider: local", served)
        self.daemon = Daemon(parse_config(text), observers=[self.events])
        self.runtime = self.daemon.runtime
        with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
            yield self

    def ci_green(self, branch: str, sha: str) -> None:
        self.api_status(sha, "ci")

    def healthy(self, branch: str, sha: str) -> None:
        self.api_status(sha, "health")


class BitbucketDriver(Driver):
    """A Bitbucket plugin in process, over its fake; webhooks as Bitbucket sends them (pushes,
    and on Cloud build statuses), Data Center's statuses through the daemon's API."""

    product = ""

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon
        from tests.scm_bitbucket.bitbucket_ci import BitbucketCI, config_text, environ
        from tests.scm_bitbucket.conftest import (
            PASSWORD,
            PROJECT_REPO,
            TOKEN,
            USERNAME,
            WORKSPACE_REPO,
        )
        from tests.scm_bitbucket.fake_cloud import FakeCloud
        from tests.scm_bitbucket.fake_datacenter import FakeDataCenter

        os.environ.update(environ())
        fake: Any
        if self.product == "cloud":
            fake = FakeCloud(username=USERNAME, password=PASSWORD)
            fake.add_repository(WORKSPACE_REPO, self.gitops.path)
            url, self.full_name = fake.url, WORKSPACE_REPO
        else:
            fake = FakeDataCenter(token=TOKEN)
            fake.add_repository(PROJECT_REPO, self.gitops.path)
            url, self.full_name = fake.base_url, PROJECT_REPO
        with fake:
            self.fake = fake
            text = config_text(
                self.product,
                self.gitops.path,
                self.tmp / "state",
                url,
                poll_interval=POLL,
                prod=", autoMerge: false" if self.manual_prod else "",
            )
            self.daemon = Daemon(
                parse_config(featured(text)), observers=[self.events], clock=self.clock
            )
            self.runtime = self.daemon.runtime
            with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
                self.robot = BitbucketCI(self.product, self.client, fake)
                yield self

    def hydrate(self, version: str, message: str) -> str:
        return self.robot.hydrate(self.gitops, version, message)

    def person_merges(self, number: int, head_sha: str) -> None:
        self.robot.person_merges(number)

    def _status(self, sha: str, key: str) -> None:
        """Data Center's CI reports through the daemon's API: those writes are CI's."""
        before = self.robot.status_posts
        self.robot.status(sha, key)
        self.actor_calls += self.robot.status_posts - before

    def ci_green(self, branch: str, sha: str) -> None:
        self._status(sha, "ci")

    def healthy(self, branch: str, sha: str) -> None:
        self._status(sha, "health")


class BitbucketCloudDriver(BitbucketDriver):
    provider = "bitbucket-cloud"
    product = "cloud"


class BitbucketDataCenterDriver(BitbucketDriver):
    provider = "bitbucket-datacenter"
    product = "datacenter"


class AzureDevOpsDriver(Driver):
    """The Azure DevOps plugin in process, over the fake Azure DevOps (its API and its git
    over HTTP); its service hooks as Azure sends them (pushes, pull requests created,
    updated, completed); CI and CD report through the daemon's API (Azure sends no event
    for a status)."""

    provider = "azure-devops"

    @contextmanager
    def session(self) -> Iterator[Any]:
        from starlette.testclient import TestClient

        from promoter.config.loader import parse_config
        from promoter.wiring import Daemon
        from tests.scm_azure.azure_ci import HOOK_ENV, HOOK_PASSWORD, AzureCI, config_text
        from tests.scm_azure.fake_azure import FakeAzure
        from tests.scm_azure.names import NAME, PROJECT, TOKEN, TOKEN_ENV

        os.environ[TOKEN_ENV], os.environ[HOOK_ENV] = TOKEN, HOOK_PASSWORD
        with FakeAzure(token=TOKEN) as fake:
            self.repo = fake.add_repository(PROJECT, NAME, self.gitops.path)
            self.fake = fake
            text = config_text(
                fake.clone_url(self.repo),
                self.tmp / "state",
                fake.url,
                prod=", autoMerge: false" if self.manual_prod else "",
            )
            self.daemon = Daemon(
                parse_config(featured(text)), observers=[self.events], clock=self.clock
            )
            self.runtime = self.daemon.runtime
            with TestClient(self.daemon.app, base_url=common.LOOPBACK) as self.client:
                self.robot = AzureCI(self.client, self.runtime, fake, self.repo, self.gitops)
                try:
                    yield self
                finally:
                    self.robot.close()

    def hydrate(self, version: str, message: str) -> str:
        return str(self.robot.hydrate(version, message))

    def person_merges(self, number: int, head_sha: str) -> None:
        person = {"uniqueName": "ada@fabrikam.example", "displayName": "Ada Lovelace"}
        self.fake.person_completes(self.repo, number, person)

    def ci_green(self, branch: str, sha: str) -> None:
        self.api_status(sha, "ci")

    def healthy(self, branch: str, sha: str) -> None:
        self.api_status(sha, "health")


DRIVERS: dict[str, Callable[[Path, bool], Driver]] = {
    "nodelocal": NodeLocalDriver,
    "nodelocal-v1": lambda tmp, manual: NodeLocalDriver(tmp, manual, v1=True),
    "local": LocalDriver,
    "github": GitHubDriver,
    "gitlab": GitLabDriver,
    "forgejo": ForgejoDriver,
    "bitbucket-cloud": BitbucketCloudDriver,
    "bitbucket-datacenter": BitbucketDataCenterDriver,
    "azure-devops": AzureDevOpsDriver,
}


# --- the measurement -----------------------------------------------------------------


def env_view(d: Driver, branch: str) -> dict[str, Any]:
    view = d.client.get(f"/api/v1/strategies/{STRATEGY}").json()
    found: dict[str, Any] = next(e for e in view["environments"] if e["branch"] == branch)
    return found


def settle(d: Driver) -> None:
    queue = d.runtime.queue
    common.wait_for(lambda: queue.idle() and not queue.waiting(), timeout=TIMEOUT, what="idle")


@dataclass
class PluginResult:
    provider: str
    promotions: int = 0
    total: Counters = field(default_factory=Counters)
    actor_calls: int = 0
    windows: list[int] = field(default_factory=list)
    window_ops: dict[str, int] = field(default_factory=dict)
    idle: list[Counters] = field(default_factory=list)
    idle_charged: list[int | None] = field(default_factory=list)
    charged: int | None = None
    per_env: dict[str, float] = field(default_factory=dict)
    per_env_ops: dict[str, dict[str, int]] = field(default_factory=dict)


def promote(d: Driver, log: CallLog, change: str, branch: str, mark: int) -> Window:
    """Promote ``change`` into ``branch`` (its PR is opened by the daemon); its window."""
    opened, number = d.events.wait("opened", branch, after=mark, timeout=TIMEOUT)
    env = common.wait_for(
        lambda: (e := env_view(d, branch)).get("pullRequest") and e,
        timeout=TIMEOUT,
        what=f"the PR into {branch} in the API",
    )
    # One worker runs a strategy's actions in order: the last open call before the
    # "opened" event is this PR's.
    first = max(c.at for c in log.calls if c.operation == "open_pull_request" and c.at <= opened)
    w = Window(branch, number or 0, env["proposed"]["hydratedSha"], opened_at=first)
    at = d.events.mark()
    d.ci_green(branch, w.head_sha)
    if d.manual_prod and branch == MANUAL:
        common.wait_for(
            lambda: env_view(d, branch).get("state") == "ready" or None,
            timeout=TIMEOUT,
            what=f"{branch} to wait for a person",
        )
        settle(d)
        for _ in range(d.waits):  # the person waits; the promoter writes nothing meanwhile
            d.shift += timedelta(minutes=1)
            d.runtime.queue.add(STRATEGY)
            settle(d)
        w.merged_at = time.perf_counter()
        d.person_merges(w.number, w.head_sha)
    else:
        w.merged_at, _ = d.events.wait("merged", branch, after=at, timeout=TIMEOUT)
    common.wait_for(
        lambda: (env_view(d, branch).get("active") or {}).get("drySha") == change,
        timeout=TIMEOUT,
        what=f"{branch} running the change",
    )
    w.merge_sha = d.gitops.tip(branch)
    d.healthy(branch, w.merge_sha)
    return w


def measure(plugin: str, changes: int, waits: int = 0) -> PluginResult:
    result = PluginResult(plugin)
    provider = plugin.removesuffix("-manual").removesuffix("-waits")
    with tempfile.TemporaryDirectory(prefix=f"bench-scm-{provider}-") as tmp:
        d = DRIVERS[provider](Path(tmp), plugin.endswith(("-manual", "-waits")))
        d.waits = waits if plugin.endswith("-waits") else 0
        with d.session(), CallLog().attached() as log:
            from tests.support import ENVIRONMENTS

            common.wait_for(
                lambda: env_view(d, ENVIRONMENTS[-1]).get("state") == "up-to-date",
                timeout=TIMEOUT,
                what="the first reconcile",
            )
            for branch in ENVIRONMENTS:
                d.healthy(branch, d.gitops.tip(branch))
            settle(d)
            before, actors, charged = Counters.now(d.provider), d.actor_calls, d.charged()
            since = time.perf_counter()
            windows: list[Window] = []
            for n in range(changes):
                mark = d.events.mark()
                change = d.hydrate(f"2.{n}.0", f"Bump guestbook to 2.{n}.0")
                for branch in ENVIRONMENTS:
                    windows.append(promote(d, log, change, branch, mark))
                settle(d)
            result.total = Counters.now(d.provider) - before
            result.actor_calls = d.actor_calls - actors
            after_charged = d.charged()
            if charged is not None and after_charged is not None:
                result.charged = after_charged - charged
            result.promotions = len(windows)
            for branch, calls in per_environment(log, windows, since).items():
                result.per_env[branch] = round(len(calls) / changes, 2)
                ops = result.per_env_ops.setdefault(branch, {})
                for call in calls:
                    ops[call.operation] = ops.get(call.operation, 0) + 1
            for w in windows:
                mine = window_calls(log, w)
                result.windows.append(len(mine))
                for call in mine:
                    result.window_ops[call.operation] = result.window_ops.get(call.operation, 0) + 1
            # Idle resyncs, as the periodic timer runs them (statuses and PRs read again).
            for _ in range(2):
                idle_before, idle_charged = Counters.now(d.provider), d.charged()
                d.runtime.scheduler.resync()
                time.sleep(0.05)
                settle(d)
                result.idle.append(Counters.now(d.provider) - idle_before)
                end_charged = d.charged()
                result.idle_charged.append(
                    None
                    if idle_charged is None or end_charged is None
                    else end_charged - idle_charged
                )
    return result


def as_json(r: PluginResult) -> dict[str, Any]:
    own = r.total.scm_calls - r.actor_calls
    by_op = dict(r.total.scm)
    if r.actor_calls:
        by_op["set_commit_status"] = by_op.get("set_commit_status", 0.0) - r.actor_calls
    return {
        "promotions": r.promotions,
        "calls_per_env_promotion": round(own / r.promotions, 2),
        "writes_per_env_promotion": round((r.total.scm_writes - r.actor_calls) / r.promotions, 2),
        "per_environment": r.per_env,
        "per_environment_max": max(v for k, v in r.per_env.items() if k != "?"),
        "per_environment_by_operation": r.per_env_ops,
        "open_to_merge_per_pr": r.windows,
        "open_to_merge_max": max(r.windows),
        "open_to_merge_by_operation": {
            op: round(n / r.promotions, 2) for op, n in sorted(r.window_ops.items())
        },
        "by_operation_per_env_promotion": {
            op: round(n / r.promotions, 2) for op, n in by_op.items() if n
        },
        "actor_status_writes_excluded": r.actor_calls,
        "git_ls_remotes_per_env_promotion": round(r.total.ls_remotes / r.promotions, 2),
        "charged_per_env_promotion": (
            None if r.charged is None else round((r.charged) / r.promotions, 2)
        ),
        "idle_resync_calls_per_strategy": [int(i.scm_calls) for i in r.idle],
        "idle_resync_charged_per_strategy": r.idle_charged,
        "idle_resync_by_operation": {op: int(n) for op, n in r.idle[-1].scm.items()},
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--changes", type=int, default=3, help="dry changes promoted to prod")
    parser.add_argument("--plugin", action="append", choices=PLUGINS, help="(repeatable)")
    parser.add_argument(
        "--feature", action="append", choices=FEATURES, default=[], help="turn on (repeatable)"
    )
    parser.add_argument(
        "--person-waits", type=int, default=30, help="minutes a person waits (-waits runs)"
    )
    args = parser.parse_args(argv)
    ON[:] = args.feature
    common.quiet_logs()
    os.environ.update(common.IDENTITY)
    chosen = args.plugin or [p for p in PLUGINS if shutil.which("node") or "node" not in p]
    results = {p: as_json(measure(p, args.changes, args.person_waits)) for p in chosen}
    checks = {
        p: {
            "open_to_merge": r["open_to_merge_max"] <= TARGET,
            "every_environment": r["per_environment_max"] <= TARGET,
        }
        for p, r in results.items()
    }
    if "nodelocal" in results and "nodelocal-v1" in results:
        echoed, without = (
            results[p]["calls_per_env_promotion"] for p in ("nodelocal", "nodelocal-v1")
        )
        checks["nodelocal"]["events_cost_no_calls"] = echoed <= without
    figures = {
        "bench": "scm_calls",
        "changes": args.changes,
        "features": args.feature,
        "plugins": results,
        "target_calls_per_env_promotion": TARGET,
        "checks": checks,
        "machine": common.machine(),
    }
    lines = [
        f"SCM calls, {args.changes} changes x 3 environments per plugin"
        f" (target <= {TARGET:g} for every environment)"
    ]
    for p, r in results.items():
        charged = r["charged_per_env_promotion"]
        idle_charged = r["idle_resync_charged_per_strategy"]
        ok = checks[p]
        lines += [
            f"{p}:",
            f"  open -> merge, per PR   max {r['open_to_merge_max']}  {r['open_to_merge_per_pr']}"
            f"  [{'ok' if ok['open_to_merge'] else 'MISSED'}]",
            f"    by operation (mean)   {r['open_to_merge_by_operation']}",
            f"  whole promotion, by environment  {r['per_environment']}"
            f"  [{'ok' if ok['every_environment'] else 'MISSED'}]",
            f"  whole promotion / env   {r['calls_per_env_promotion']}"
            f" ({r['writes_per_env_promotion']} writes"
            + (f", {charged} charged to the rate limit" if charged is not None else "")
            + ")",
            f"    by operation          {r['by_operation_per_env_promotion']}",
            f"  git ls-remote / env     {r['git_ls_remotes_per_env_promotion']}"
            " (the promoter's mirror, and the Bitbucket Cloud plugin's reads of branch tips)",
            f"  idle resyncs, first then steady: {r['idle_resync_calls_per_strategy']} calls"
            " per strategy"
            + (f" ({idle_charged} charged)" if idle_charged[0] is not None else "")
            + f"  {r['idle_resync_by_operation']}",
        ]
    if "events_cost_no_calls" in checks.get("nodelocal", {}):
        no_dearer = checks["nodelocal"]["events_cost_no_calls"]
        lines.append(
            "nodelocal with events vs v1: "
            f"{results['nodelocal']['calls_per_env_promotion']} vs "
            f"{results['nodelocal-v1']['calls_per_env_promotion']} calls per environment"
            f"  [{'ok' if no_dearer else 'MISSED'}]"
        )
    common.report(figures, lines)
    scored = [
        {k: v for k, v in c.items() if k == "events_cost_no_calls"}
        if p.startswith(("local", "nodelocal"))
        else c
        for p, c in checks.items()
    ]
    return 0 if all(all(c.values()) for c in scored) else 1


if __name__ == "__main__":
    sys.exit(common.run(main))
