"""One GitHub token for 1,000 strategies, and a burst of 300 changes: calls stay under its limits.

1,000 strategies x 4 environments over 5 repositories (``common.Fleet``) share one
GitHub token; the GitHub fake (``tests/scm_github/fake_github.py``) enforces GitHub's
limits as GitHub does: the primary one (5,000 requests per hour, a 403 once spent)
and the documented secondary ones (900 points per minute, a write costing 5; 80
content-creating requests per minute), answering with GitHub's own refusal bodies.

Time is compressed: an hour lasts ``--hour`` seconds (60 by default) and a minute
``--hour / 60``, in the fake and in the promoter's budget alike, so a burst that takes
GitHub hours drains in minutes. Figures are given in both clocks.

The daemon first starts on the whole fleet with no limits (its cold start is
``resync_scale``'s subject, and at 20 calls per strategy it alone would take four
hours of this token). Then the limits hold, and 300 strategies get a new dry change
rendered onto their first environment at once, each announced by GitHub's ``push``
webhook. CI turns each PR green as soon as it is opened (a check run and its
webhook). The burst has drained when every one of the 300 changes is merged.

    python bench/credential_budget.py [--strategies 1000] [--changes 300] [--hour 60]

Targets: no refusal from GitHub at all (primary or secondary), the last change
merged; the time to drain is reported.
"""

from __future__ import annotations

import argparse
import os
import queue
import re
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

import common
from common import Fleet

OWNER = "acme"
TOKEN_ENV = "PROMOTER_BENCH_GITHUB_TOKEN"
TOKEN = "ghp_BenchT0ken000000000000000000000000abcd"


def full_name(repo: int) -> str:
    return f"{OWNER}/gitops-{repo}"


def config(fleet: Fleet, state: Path) -> Any:
    from promoter.config import Config
    from tests.scm_github.test_end_to_end import SECRET_ENV as secret_env

    return Config.model_validate(
        {
            "scmProviders": [{"name": "github", "github": {"token": {"fromEnv": TOKEN_ENV}}}],
            "repositories": [
                {
                    "name": f"gitops-{r}",
                    "url": str(fleet.repo_path(r)),
                    "path": full_name(r),
                    "scmProvider": "github",
                    "pollInterval": 0,
                }
                for r in range(fleet.repos)
            ],
            "promotionStrategies": [
                {
                    "name": f"app-{i}",
                    "repository": f"gitops-{i % fleet.repos}",
                    "activeCommitStatuses": [{"key": "health"}],
                    "proposedCommitStatuses": [{"key": "ci"}],
                    "environments": [{"branch": f"app-{i}/{env}"} for env in fleet.environments],
                }
                for i in range(fleet.strategies)
            ],
            "webhooks": {"github": {"secrets": [{"fromEnv": secret_env}]}},
            "daemon": {"stateDir": str(state), "resyncInterval": "24h", "workers": 4},
        }
    )


class CI:
    """Turns each promotion PR green when it opens (a check run and GitHub's webhook), and
    sends GitHub's push webhooks: the hydrator's, and one after each merge."""

    def __init__(self, fake: Any, client: Any, repos: int) -> None:
        from tests.scm_github.test_end_to_end import GitHubCI

        self.fake, self.repos = fake, repos
        self.github = GitHubCI(client, fake)  # also sends a push webhook after each merge
        self.work: queue.Queue[tuple[str, int] | None] = queue.Queue()
        self.thread = threading.Thread(target=self._run, name="bench-ci", daemon=True)
        self.thread.start()

    def __call__(self, event: Any) -> None:  # a daemon observer: never block it
        if event.kind == "opened" and event.pr is not None:
            repo = int(event.strategy.split("-")[1]) % self.repos
            self.work.put((full_name(repo), event.pr))

    def _run(self) -> None:
        while (item := self.work.get()) is not None:
            repo, number = item
            sha = self.fake.pull(repo, number)["head"]["sha"]
            self.github.check_run(sha, "ci", "success", repo)

    def stop(self) -> None:
        self.work.put(None)
        self.thread.join(10)


def burst(fleet: Fleet, picked: list[int]) -> dict[str, tuple[str, str]]:
    """A new dry change rendered onto the first environment of ``picked``; moved branches."""
    moved: dict[str, tuple[str, str]] = {}
    env = fleet.environments[0]
    for r in range(fleet.repos):
        path = fleet.repo_path(r)
        mine = [i for i in picked if i % fleet.repos == r]
        if not mine:
            continue
        stream = common.FastImport()
        main = common.git(path, "rev-parse", "refs/heads/main").strip()
        d3 = stream.commit(
            "refs/heads/main", "Bump apps to v3\n", {"apps/README.md": "v3\n"}, parent=main
        )
        dry = stream.run(path)[d3]
        text = common.render_metadata(dry_sha=dry, repo_url=str(path), subject="D3")
        stream = common.FastImport()
        blob = stream.blob(text.encode())
        marks: dict[str, str] = {}
        for i in mine:
            key = f"app-{i}/{env}"
            files = {
                f"apps/app-{i}/{env}/manifest.yaml": f"app: app-{i}\nenv: {env}\nimage: 3\n",
                common.METADATA_FILE: blob,
            }
            branch = f"{key}-next"
            before = common.git(path, "rev-parse", f"refs/heads/{branch}").strip()
            marks[branch] = stream.commit(
                f"refs/heads/{branch}", f"hydrate D3 for {key}\n", files, parent=before
            )
            moved[branch] = (before, "")
        notes_tip = common.git(path, "rev-parse", common.NOTES_REF).strip()
        stream.commit(
            common.NOTES_REF,
            "Notes added by the bench hydrator\n",
            {},
            parent=notes_tip,
            notes={mark: text for mark in marks.values()},
        )
        done = stream.run(path)
        for branch, mark in marks.items():
            moved[branch] = (moved[branch][0], done[mark])
        moved[f"main@{r}"] = (main, dry)
    return moved


@contextmanager
def running(fleet: Fleet, state: Path) -> Iterator[tuple[Any, Any, CI]]:
    from starlette.testclient import TestClient

    from promoter.wiring import Daemon
    from scm_plugins.limiter import Budget, RateBudget
    from tests.scm_github.fake_github import FakeGitHub
    from tests.scm_github.genuine import Genuine
    from tests.scm_github.test_end_to_end import SECRET, SECRET_ENV

    os.environ[TOKEN_ENV], os.environ[SECRET_ENV] = TOKEN, SECRET
    # No limits while the fleet warms up (see the module's docstring).
    unlimited = 10**9
    genuine = Genuine(common.ROOT / "tests" / "fixtures")
    with FakeGitHub(genuine, tokens=(TOKEN,), rate_limit=unlimited) as fake:
        for r in range(fleet.repos):
            fake.add_repository(full_name(r), fleet.repo_path(r))
        for key, sha in fleet.active.items():
            repo = full_name(int(key.split("/")[0].split("-")[1]) % fleet.repos)
            fake.repositories[repo].statuses.setdefault(sha, [])
            fake.post_status(repo, sha, "health", "success")
        ci_box: list[CI] = []
        daemon = Daemon(
            config(fleet, state), observers=[lambda e: ci_box[0](e) if ci_box else None]
        )
        free = Budget(unlimited, points_per_minute=unlimited, writes_per_minute=unlimited)
        free = replace(free, writes_per_hour=unlimited)
        daemon.runtime.plugins["github"]._client.budget = RateBudget(free)
        with TestClient(daemon.app) as client:
            ci = CI(fake, client, fleet.repos)
            ci_box.append(ci)
            try:
                yield fake, daemon.runtime, ci
            finally:
                ci.stop()


def settled(runtime: Any) -> bool:
    return bool(runtime.queue.idle() and not runtime.queue.waiting())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--strategies", type=int, default=1000)
    parser.add_argument("--changes", type=int, default=300)
    parser.add_argument("--hour", type=float, default=60.0, help="seconds an hour lasts")
    parser.add_argument("--timeout", type=float, default=1800.0)
    args = parser.parse_args(argv)
    from scm_plugins.limiter import Budget, RateBudget

    common.quiet_logs()
    os.environ.update(common.IDENTITY)
    scale = 3600.0 / args.hour
    limits = Budget(window=args.hour, minute=args.hour / 60)
    times: list[tuple[float, bool]] = []
    with tempfile.TemporaryDirectory(prefix="bench-budget-") as tmp:
        fleet = Fleet(Path(tmp) / "repos", args.strategies, pending_every=0).build()
        with running(fleet, Path(tmp) / "state") as (fake, runtime, ci):
            started = time.perf_counter()
            common.wait_for(
                lambda: settled(runtime) or None, timeout=args.timeout, what="warm-up", poll=0.2
            )
            warm = time.perf_counter() - started
            # From here on GitHub's limits hold, and the promoter keeps to its budget.
            fake.remaining, fake.window, fake.reset_at = (
                limits.per_window,
                args.hour,
                time.time() + args.hour,
            )
            fake.enforce = limits
            fake.on_request = lambda method, path: times.append(
                (time.perf_counter(), method != "GET")
            )
            runtime.plugins["github"]._client.budget = RateBudget(limits)
            charged_before, calls_before = fake.charged(), len(fake.calls)
            warm_calls = charged_before
            picked = list(range(0, args.strategies, max(1, args.strategies // args.changes)))[
                : args.changes
            ]
            t0 = time.perf_counter()
            moved = burst(fleet, picked)
            for branch, (before, after) in moved.items():
                if branch.startswith("main@"):
                    ci.github.push("main", before, after, full_name(int(branch.split("@")[1])))
                else:
                    repo = full_name(int(branch.split("/")[0].split("-")[1]) % fleet.repos)
                    ci.github.push(branch, before, after, repo)
            names = [f"app-{i}" for i in picked]
            first = fleet.environments[0]

            def merged() -> int:
                views = runtime.reconciler.views
                done = 0
                for name in names:
                    snapshot = getattr(views.get(name), "snapshot", None)
                    env = snapshot.environments[0] if snapshot else None
                    active = env.active if env is not None and env.branch.endswith(first) else None
                    done += bool(active and active.dry_sha and active.dry_sha != fleet.dry["D1"])
                return done

            progress: list[tuple[float, int]] = []
            while (done := merged()) < len(names):
                if time.perf_counter() - t0 > args.timeout:
                    break
                progress.append((time.perf_counter() - t0, done))
                time.sleep(0.5)
            drained = time.perf_counter() - t0
            done = merged()
            charged = fake.charged() - charged_before
            kinds: dict[str, int] = {}
            for call in fake.calls[calls_before:]:
                if call.status != 304:
                    kind = f"{call.method} " + re.sub(r"/[0-9a-f]{40}|/\d+", "/*", call.path)
                    kinds[kind] = kinds.get(kind, 0) + 1
            refused = dict(fake.refused)
    rel = [(t - t0, w) for t, w in times if t >= t0]
    minute, hour = args.hour / 60, args.hour
    peak_minute = max((sum(1 for u, _ in rel if s <= u < s + minute) for s, _ in rel), default=0)
    peak_writes = max(
        (sum(1 for u, w in rel if w and s <= u < s + minute) for s, _ in rel), default=0
    )
    peak_hour = max((sum(1 for u, _ in rel if s <= u < s + hour) for s, _ in rel), default=0)
    figures = {
        "bench": "credential_budget",
        "strategies": args.strategies,
        "changes": args.changes,
        "hour_s": args.hour,
        "warm_up_s": round(warm, 1),
        "warm_up_calls": warm_calls,
        "merged": done,
        "drain_s": round(drained, 1),
        "drain_github_hours": round(drained * scale / 3600, 2),
        "calls": charged,
        "calls_by_kind": dict(sorted(kinds.items(), key=lambda kv: -kv[1])),
        "peak_requests_per_hour": peak_hour,
        "peak_requests_per_minute": peak_minute,
        "peak_writes_per_minute": peak_writes,
        "limits": {
            "per_hour": limits.per_window,
            "writes_per_minute": limits.writes_per_minute,
            "points_per_minute": limits.points_per_minute,
        },
        "refused_by_github": refused,
        "pass": done == len(picked) and not any(refused.values()),
        "machine": common.machine(),
    }
    common.report(
        figures,
        [
            f"{args.strategies} strategies on one token, a burst of {args.changes} changes"
            f" (an hour lasts {args.hour:g} s)",
            f"warm-up without limits: {warm:.1f} s, {warm_calls} calls",
            f"drained: {done}/{len(picked)} merged in {drained:.1f} s"
            f" = {drained * scale / 3600:.2f} GitHub hours, {charged} calls",
            f"peak (requests, free 304s included): {peak_hour} in an hour"
            f" (limit {limits.per_window}), {peak_minute} in a minute,"
            f" {peak_writes} writes in a minute"
            f" (limit {limits.writes_per_minute})",
            f"refused by GitHub: {refused}  " + ("[ok]" if figures["pass"] else "[MISSED]"),
        ],
    )
    return 0 if figures["pass"] else 1


if __name__ == "__main__":
    sys.exit(main())
