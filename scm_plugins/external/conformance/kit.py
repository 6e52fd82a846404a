"""The conformance kit: drives a plugin through the whole ``promoter.scm/v1`` contract.

Against a scratch repository the plugin's SCM serves: handshake, and one without
settings (``conformance_faults``); git credentials (the kit's own git pushes with the
plugin's ``git/environment``); open, idempotent reopen, update, statuses, a merge refused
for a stale head, the merge with the right head, comment and close, reviews and events
(``promoter.scm/v1.1``, when the plugin offers them; events: a push reported and applied,
and the promoter's own writes reported back and known as its own, ``conformance_events``);
error mapping (an unknown PR is ``ScmNotFound``); ids answered as sent (and an unknown
method answered); an outage of its SCM answered ``unavailable`` without the process
being restarted; a slow call that times out (the kit freezes the process with SIGSTOP)
and the plugin answering again afterwards. ``promoter plugins check`` prints the table;
a test uses it directly::

    report = run_conformance(ExternalPlugin(command=[...]), scratch, state_dir=tmp)
    report.assert_passed()
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from promoter.config import ExternalPlugin, ScmProvider
from promoter.errors import ScmConflict, ScmNotFound, ScmUnavailable
from promoter.models import CommitStatus, Phase, PullRequestState, utcnow
from scm_plugins.external.conformance import faults as faults
from scm_plugins.external.conformance.events import (
    Failed,
    NotOffered,
    Seen,
    check_echoes,
    check_events,
)
from scm_plugins.external.host import ExternalScm
from scm_plugins.external.scratch import Scratch
from scm_plugins.external.wire import SUPPORTED

KEY = "conformance/ci"


@dataclass
class Check:
    name: str
    passed: bool | None
    detail: str = ""
    seconds: float = 0.0
    offered: bool = True
    """False: an optional part of the protocol the plugin does not offer (events)."""


@dataclass
class Report:
    plugin: str
    protocol: str = SUPPORTED[0]
    checks: list[Check] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.checks) and all(c.passed for c in self.checks if c.offered)

    def table(self) -> str:
        width = max((len(c.name) for c in self.checks), default=4)
        lines = [f"conformance of {self.plugin} ({self.protocol})"]
        for c in self.checks:
            mark = {True: "pass", False: "FAIL", None: "skip"}[c.passed] if c.offered else "n/a "
            lines.append(f"  {mark}  {c.name.ljust(width)}  {c.seconds * 1000:7.1f} ms  {c.detail}")
        offered = [c for c in self.checks if c.offered]
        passed = sum(1 for c in offered if c.passed)
        missing = [c.name for c in self.checks if not c.offered]
        lines.append(
            f"{passed}/{len(offered)} passed"
            + (f"; not offered: {', '.join(missing)}" if missing else "")
        )
        return "\n".join(lines)

    def assert_passed(self) -> None:
        assert self.ok, self.table()


def _expect(condition: bool, message: str) -> None:
    if not condition:
        raise Failed(message)


class _Kit:
    def __init__(
        self,
        host: ExternalScm,
        scratch: Scratch,
        probe: float,
        plugin: ExternalPlugin,
        state_dir: str,
        environ: Mapping[str, str],
    ) -> None:
        self.host, self.scratch, self.probe = host, scratch, probe
        self.plugin, self.state_dir, self.environ = plugin, state_dir, environ
        self.repo = scratch.repository
        self.number = 0
        self.base = self.head = ""
        self.seen = Seen()

    def bare_handshake(self) -> str:
        return faults.bare_handshake(self.plugin, f"{self.state_dir}/bare", self.environ)

    def credentials(self) -> str:
        env = self.host.git_environment(repo=self.repo)
        self.scratch.git_env = {**env, **self.scratch.git_env}
        return f"{len(env)} variable(s) for the kit's git"

    def handshake(self) -> str:
        info = self.host.info
        _expect(info is not None, "no initialize result")
        assert info is not None
        _expect(info.protocol_version in SUPPORTED, f"protocol {info.protocol_version}")
        return f"{info.name} {info.version}, {info.protocol_version}"

    def open(self) -> str:
        s = self.scratch
        self.base = s.commit(s.branch("base"), "base")
        self.head = s.commit(s.branch("head"), "head", parent=s.branch("base"))
        pr = self.host.open_pull_request(
            repo=self.repo,
            head=s.branch("head"),
            base=s.branch("base"),
            title="conformance: open",
            body="opened by the conformance kit",
            labels=("promotion",),
        )
        _expect(pr.state is PullRequestState.OPEN, f"state {pr.state}")
        _expect(pr.head_sha == self.head, f"head {pr.head_sha[:7]} is not {self.head[:7]}")
        _expect(
            (pr.head_branch, pr.base_branch) == (s.branch("head"), s.branch("base")), "branches"
        )
        self.number = pr.number
        return f"#{pr.number}"

    def reopen(self) -> str:
        s = self.scratch
        again = self.host.open_pull_request(
            repo=self.repo,
            head=s.branch("head"),
            base=s.branch("base"),
            title="again",
            body="",
            labels=(),
        )
        _expect(again.number == self.number, f"a second PR #{again.number} was opened")
        found = self.host.find_open_pull_request(
            repo=self.repo, head=s.branch("head"), base=s.branch("base")
        )
        _expect(found is not None and found.number == self.number, "find_open does not find it")
        return "same PR"

    def update(self) -> str:
        pr = self.host.update_pull_request(
            repo=self.repo,
            number=self.number,
            title="conformance: updated",
            body="new body",
            labels=("promotion", "conformance"),
        )
        _expect(pr.title == "conformance: updated", f"title {pr.title!r}")
        info = self.host.info
        if info is not None and info.capabilities.labels:
            _expect("conformance" in pr.labels, f"labels {pr.labels}")
        return "title, body, labels"

    def reviews(self) -> str:
        if not self.host.reads_reviews:
            raise NotOffered("not offered: an approval gate on this SCM waits for its label")
        found = self.host.get_reviews(repo=self.repo, number=self.number)
        _expect(all(r.user for r in found), "a review names no reviewer")
        return f"{len(found)} review(s)"

    def statuses(self) -> str:
        for phase in (Phase.PENDING, Phase.SUCCESS):
            status = CommitStatus(
                key=KEY, phase=phase, description=phase.value, updated_at=utcnow()
            )
            self.host.set_commit_status(repo=self.repo, sha=self.head, status=status)
        found = [
            s for s in self.host.get_commit_statuses(repo=self.repo, sha=self.head) if s.key == KEY
        ]
        _expect(len(found) == 1, f"{len(found)} statuses for {KEY}, want the latest only")
        _expect(found[0].phase is Phase.SUCCESS, f"phase {found[0].phase}")
        only = self.host.get_commit_statuses(repo=self.repo, sha=self.head, keys=[KEY])
        _expect(any(s.key == KEY and s.phase is Phase.SUCCESS for s in only), "keys= loses it")
        return "latest per key"

    def stale_merge(self) -> str:
        try:
            self.host.merge_pull_request(
                repo=self.repo, number=self.number, expected_head_sha=self.base, message="stale"
            )
        except ScmConflict:
            pass
        else:
            raise Failed("a merge with a stale head was accepted")
        _expect(self.scratch.tip(self.scratch.branch("base")) == self.base, "base moved")
        return "ScmConflict, base unchanged"

    def merge(self) -> str:
        sha = self.host.merge_pull_request(
            repo=self.repo, number=self.number, expected_head_sha=self.head, message="conformance"
        )
        tip = self.scratch.tip(self.scratch.branch("base"))
        _expect(tip == sha, f"base is at {str(tip)[:7]}, the merge said {sha[:7]}")
        s = self.scratch
        found = self.host.find_open_pull_request(
            repo=self.repo, head=s.branch("head"), base=s.branch("base")
        )
        _expect(found is None, "the merged PR is still open")
        return f"merged as {sha[:7]}"

    def comment_and_close(self) -> str:
        s = self.scratch
        s.commit(s.branch("other"), "other", parent=s.branch("base"))
        pr = self.host.open_pull_request(
            repo=self.repo,
            head=s.branch("other"),
            base=s.branch("base"),
            title="to close",
            body="",
            labels=(),
        )
        self.host.comment_pull_request(repo=self.repo, number=pr.number, body="a comment")
        self.host.close_pull_request(repo=self.repo, number=pr.number, comment="closing")
        found = self.host.find_open_pull_request(
            repo=self.repo, head=s.branch("other"), base=s.branch("base")
        )
        _expect(found is None, "the closed PR is still open")
        return f"#{pr.number} closed"

    def events(self) -> str:
        if not self.host.sends_events:
            raise NotOffered("not offered: the promoter relies on webhooks, polling or the resync")
        return check_events(self.host, self.scratch, self.seen)

    def echoes(self) -> str:
        if not self.host.sends_events:
            raise NotOffered("not offered: no events")
        return check_echoes(self.host, self.scratch, self.seen)

    def ids(self) -> str:
        return faults.ids(self.host, self.repo, self.head)

    def outage(self) -> str:
        return faults.outage(
            self.plugin, self.repo, self.head, f"{self.state_dir}/outage", self.environ
        )

    def not_found(self) -> str:
        try:
            self.host.update_pull_request(
                repo=self.repo, number=987654321, title="x", body="", labels=()
            )
        except ScmNotFound:
            return "ScmNotFound"
        raise Failed("updating an unknown PR did not raise ScmNotFound")

    def timeout(self) -> str:
        process = self.host.process
        _expect(process is not None, "no process")
        assert process is not None
        saved, self.host.timeout = self.host.timeout, self.probe
        os.kill(process.pid, signal.SIGSTOP)
        started = time.monotonic()
        try:
            self.host.get_commit_statuses(repo=self.repo, sha=self.head)
        except ScmUnavailable:
            took = time.monotonic() - started
        else:
            raise Failed("a frozen plugin answered")
        finally:
            os.kill(process.pid, signal.SIGCONT)
            self.host.timeout = saved
        _expect(took < self.probe + 2.0, f"gave up after {took:.1f}s")
        return f"ScmUnavailable after {took:.2f}s"

    def recovers(self) -> str:
        found = self.host.get_commit_statuses(repo=self.repo, sha=self.head, keys=[KEY])
        _expect(any(s.key == KEY for s in found), "wrong answer after a time-out")
        return "answers again"


def run_conformance(
    plugin: ExternalPlugin,
    scratch: Scratch,
    *,
    state_dir: str,
    environ: Mapping[str, str] | None = None,
    probe_timeout: float = 0.5,
) -> Report:
    """Run every check; a check whose predecessors failed is skipped."""
    provider = ScmProvider(name="conformance", plugin=plugin)
    report = Report(plugin.name or " ".join(plugin.argv() or []))
    environ = dict(os.environ if environ is None else environ)
    try:
        host = ExternalScm(provider=provider, state_dir=state_dir, environ=environ)
    except Exception as exc:
        report.checks.append(Check("handshake", False, f"{type(exc).__name__}: {exc}"))
        return report
    report.plugin = host.name
    report.protocol = host.info.protocol_version if host.info else report.protocol
    kit = _Kit(host, scratch, probe_timeout, plugin, state_dir, environ)
    steps: list[tuple[str, Callable[[], str], bool]] = [
        ("handshake", kit.handshake, True),
        ("handshake without settings", kit.bare_handshake, False),
        ("git credentials", kit.credentials, True),
        ("open", kit.open, True),
        ("idempotent reopen", kit.reopen, False),
        ("update", kit.update, False),
        ("reviews", kit.reviews, False),
        ("statuses", kit.statuses, False),
        ("stale head refused", kit.stale_merge, False),
        ("merge", kit.merge, False),
        ("comment and close", kit.comment_and_close, False),
        ("events", kit.events, False),
        ("own writes known in events", kit.echoes, False),
        ("error mapping", kit.not_found, False),
        ("ids answered as sent", kit.ids, False),
        ("outage answered unavailable", kit.outage, False),
        ("slow call times out", kit.timeout, False),
        ("recovers", kit.recovers, False),
    ]
    blocked = False
    try:
        for name, step, required in steps:
            if blocked:
                report.checks.append(Check(name, None, "an earlier check failed"))
                continue
            started = time.perf_counter()
            offered = True
            try:
                detail, passed = step(), True
            except NotOffered as exc:
                detail, passed, offered = str(exc), None, False
            except Exception as exc:
                detail, passed = f"{type(exc).__name__}: {exc}"[:300], False
                blocked = required
            took = time.perf_counter() - started
            report.checks.append(Check(name, passed, detail, took, offered))
    finally:
        host.close()
    return report
