"""``promoter demo``: a sandbox repository, the daemon on the local SCM, and one change
moving dev -> staging -> prod as its gates turn green, told in plain lines; then a bad
change reverted in staging, and its fix going through (the local SCM merges three-way,
so the promoter first makes the fix's promotion mergeable again after the revert).

The demo plays the parts a real set-up has elsewhere: the hydrator (``promoter
hydrate``), CI (the proposed gate ``ci``) and the health checker (the active gate
``health``); it sets statuses through the daemon's HTTP API like any client. It plays
two people too: this machine's user, the local admin (no token, as on any loopback
daemon), and the release manager, who approves prod with a token of their own (an
approval is recorded as the caller, never as a name the caller gives).
"""

from __future__ import annotations

import logging
import secrets
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from promoter import logs
from promoter.cli import status_table
from promoter.cli.client import ApiClient
from promoter.cli.sandbox import ENVIRONMENTS, STRATEGY, GitOpsRepo, init_bare, sandbox_config
from promoter.config.loader import parse_config
from promoter.daemon import ActionEvent
from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon

TIMEOUT = 90.0
APPROVER = "release-manager"
PROD_GATES = f"gates: [{{soak: {{duration: 2s}}}}, {{approval: {{count: 1, users: [{APPROVER}]}}}}]"
"""Prod waits for staging to run a change healthy for 2 s, and for the release manager."""


def say(text: str) -> None:
    print(text, flush=True)


def short(sha: str | None) -> str:
    return sha[:7] if sha else "-"


EVENT_LINES = {
    "opened": "PR #{pr} opened: {message}",
    "merged": "PR #{pr} merged: {env} now runs dry {sha}",
    "status": "gate {message}",
    "closed": "PR #{pr} closed: {message}",
    "healthy": "recorded healthy on dry {sha}",
    "revert": "revert PR #{pr} opened: {message}",
    "reverted": "revert PR #{pr} merged: {env} back on dry {sha}",
    "released": "hold on {sha} released: {message}",
    "paused": "auto-promotion paused: {message}",
    "mergeable": "{message}, keeping the proposed tree (the promotion conflicted)",
}
"""One plain progress line per kind of action the daemon carries out."""


def _on_event(event: ActionEvent) -> None:
    line = EVENT_LINES.get(event.kind)
    if line is None:
        return
    env = event.environment.removeprefix("environment/")
    text = line.format(pr=event.pr, message=event.message, env=env, sha=short(event.sha))
    say(f"  [{env}] {text}")


class Demo:
    def __init__(self, base: Path, port: int, *, prod: str = PROD_GATES) -> None:
        """``prod``: the prod environment's settings (the browser tests add ``autoMerge:
        false``, so that a person merges it from the dashboard)."""
        self.base = base
        self.prod = prod
        self.gitops = GitOpsRepo(init_bare(base / "gitops.git"))
        self.repo = self.gitops.path
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.done_keys: set[tuple[str, str]] = set()
        self.approver_token = secrets.token_urlsafe(24)

    def seed(self) -> str:
        say(f"sandbox: {self.base}")
        first = self.gitops.change(
            "1.0.0", "Add guestbook 1.0.0", values="image: guestbook:1.0.0\nreplicas: 2\n"
        )
        say(f"dry main at {short(first)}; hydrated environment/dev, staging and prod")
        return first

    def start(self) -> tuple[Daemon, ThreadServer]:
        token_file = self.base / f"{APPROVER}.token"
        token_file.write_text(self.approver_token + "\n")
        token_file.chmod(0o600)
        text = sandbox_config(
            self.repo,
            self.base / "state",
            auto_revert="{enabled: true, settleTime: 1s, autoMerge: true}",
            environments={"prod": self.prod},
            daemon={
                "host": "127.0.0.1",
                "port": self.port,
                "pollInterval": "0.5s",
                "resyncInterval": "30s",
                "workers": 2,
            },
            access=(
                f"  tokens: [{{name: {APPROVER}, secret: {{fromFile: {token_file}}}}}]\n"
                f"  grants: [{{role: approver, users: [{APPROVER}], environments: [prod]}}]\n"
                "  anonymous: admin"
            ),
        )
        (self.base / "promoter.yaml").write_text(text)
        runtime = Daemon(
            parse_config(text, source=str(self.base / "promoter.yaml")), observers=[_on_event]
        )
        server = ThreadServer(runtime.app, self.port, name="promoter-demo-server").start(20)
        say(f"daemon up at {self.url} (local SCM; no token needed on this machine)")
        say(f"dashboard: {self.url}/dashboard/{STRATEGY} (live; open it in a browser)")
        return runtime, server

    def set_once(
        self, client: ApiClient, sha: str, key: str, env: str, text: str, phase: str = "success"
    ) -> None:
        if (sha, key) in self.done_keys:
            return
        self.done_keys.add((sha, key))
        client.set_status("gitops", sha, key=key, phase=phase, description=text)
        say(f"  [{env.removeprefix('environment/')}] gate {key}: {text} on {short(sha)}")

    def approve_once(self, client: ApiClient, env: dict[str, Any]) -> None:
        """Play the release manager: approve a PR the approval gate waits for, once."""
        pr = env.get("pullRequest")
        waiting = any(
            g["name"] == "promoter/approval" and g["phase"] != "success"
            for g in env.get("gates") or []
        )
        if pr is None or not waiting or ("approve", str(pr["number"])) in self.done_keys:
            return
        self.done_keys.add(("approve", str(pr["number"])))
        approver = ApiClient(self.url, token=self.approver_token)
        try:
            approver.operate(STRATEGY, "approve", environment=env["branch"])
        finally:
            approver.close()
        name = env["branch"].removeprefix("environment/")
        say(f"  [{name}] {APPROVER} approves PR #{pr['number']}")

    def act_two(self, client: ApiClient, good: str) -> dict[str, Any]:
        """A bad change: passes dev, fails health in staging, is reverted, never reaches prod."""
        bad = self.gitops.change(
            "1.2.0", "Bump guestbook to 1.2.0", values="image: guestbook:1.2.0\nreplicas: 3\n"
        )
        say(f"\nAct 2: new dry commit {short(bad)}: Bump guestbook to 1.2.0 (it will misbehave)")
        deadline = time.monotonic() + TIMEOUT
        reverted = False
        while True:
            view = client.strategy(STRATEGY)
            envs = {e["branch"]: e for e in view["environments"]}
            dev, staging, prod = (envs[b] for b in ENVIRONMENTS)
            staging_dry = (staging.get("active") or {}).get("drySha")
            reverted = reverted or any(r["badDrySha"] == bad for r in staging.get("reverts", []))
            prod_held = any(h["drySha"] == bad for h in prod.get("holds", []))
            if reverted and staging_dry == good and prod_held:
                self.set_once(
                    client,
                    staging["active"]["hydratedSha"],
                    "health",
                    staging["branch"],
                    "health check green again",
                )
                return view
            if time.monotonic() > deadline:
                raise TimeoutError(
                    "the bad change was not reverted in time: "
                    + "; ".join(f"{e['branch']}: {e.get('reason')}" for e in envs.values())
                )
            for i, branch in enumerate(ENVIRONMENTS[:2]):
                env = envs[branch]
                active, proposed = env.get("active") or {}, env.get("proposed") or {}
                prev_ok = (
                    i == 0 or (envs[ENVIRONMENTS[i - 1]].get("active") or {}).get("drySha") == bad
                )
                if (
                    proposed.get("drySha") == bad
                    and active.get("drySha") != bad
                    and prev_ok
                    and not reverted
                ):
                    self.set_once(client, proposed["hydratedSha"], "ci", branch, "CI passed")
            if (dev.get("active") or {}).get("drySha") == bad:
                self.set_once(
                    client,
                    dev["active"]["hydratedSha"],
                    "health",
                    dev["branch"],
                    "health check green",
                )
            if staging_dry == bad:
                self.set_once(
                    client,
                    staging["active"]["hydratedSha"],
                    "health",
                    staging["branch"],
                    "error rate 12% > 1%",
                    phase="failure",
                )
            time.sleep(0.05)

    def drive(self, client: ApiClient, target: str) -> dict[str, Any]:
        """Play CI and health checks until prod runs ``target``; the last strategy view."""
        deadline = time.monotonic() + TIMEOUT
        while True:
            view = client.strategy(STRATEGY)
            envs = view["environments"]
            if all((e.get("active") or {}).get("drySha") == target for e in envs):
                return view
            if time.monotonic() > deadline:
                raise TimeoutError(
                    "prod did not reach the new change in time: "
                    + "; ".join(f"{e['branch']}: {e.get('reason')}" for e in envs)
                )
            for i, env in enumerate(envs):
                active, proposed = env.get("active") or {}, env.get("proposed") or {}
                if active.get("drySha") == target:
                    self.set_once(
                        client, active["hydratedSha"], "health", env["branch"], "health check green"
                    )
                ready = i == 0 or (envs[i - 1].get("active") or {}).get("drySha") == target
                if proposed.get("drySha") == target and active.get("drySha") != target and ready:
                    self.set_once(client, proposed["hydratedSha"], "ci", env["branch"], "CI passed")
                    self.approve_once(client, env)
            time.sleep(0.05)


def run_demo(*, scripted: bool, port: int = 0, workdir: str | None = None) -> int:
    """The demo in ``workdir``, else in a temporary directory removed when it ends
    (after --scripted, a failure or Ctrl-C alike)."""
    base = Path(workdir) if workdir else Path(tempfile.mkdtemp(prefix="promoter-demo-"))
    try:
        base.mkdir(parents=True, exist_ok=True)
        return _run(base.resolve(), scripted=scripted, port=port)
    finally:
        if workdir is None:
            shutil.rmtree(base, ignore_errors=True)


def _run(base: Path, *, scripted: bool, port: int) -> int:
    started = time.monotonic()
    logs.setup("error", json_lines=False)
    demo = Demo(base, port)
    demo.seed()
    _runtime, server = demo.start()
    client = ApiClient(demo.url, token="")  # this machine's user: the local admin
    try:
        change = _act_one(demo, client, started)
        _act_two(demo, client, change)
        _act_three(demo, client, started)
        if not scripted:
            _keep_running(demo, server)
        return 0
    except (TimeoutError, RuntimeError) as exc:
        print(f"demo failed: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        client.close()
        server.stop(30)
        logging.getLogger("promoter").info("demo finished")


def _act_one(demo: Demo, client: ApiClient, started: float) -> str:
    """A good change promoted dev -> staging -> prod; its dry SHA."""
    view = client.strategy(STRATEGY)
    for env in view["environments"]:
        if env.get("active"):
            demo.set_once(
                client,
                env["active"]["hydratedSha"],
                "health",
                env["branch"],
                "health check green",
            )
    change = demo.gitops.change(
        "1.1.0", "Bump guestbook to 1.1.0", values="image: guestbook:1.1.0\nreplicas: 3\n"
    )
    say(f"new dry commit {short(change)}: Bump guestbook to 1.1.0")
    say("hydrated it onto environment/{dev,staging,prod}-next")
    final = demo.drive(client, change)
    say("")
    say(status_table.render([final]))
    say("")
    say(
        f"prod runs {short(change)}: promoted dev -> staging -> prod in "
        f"{time.monotonic() - started:.1f}s"
    )
    prod = final["environments"][-1]["active"]
    demo.set_once(client, prod["hydratedSha"], "health", ENVIRONMENTS[-1], "health check green")
    return change


def _act_two(demo: Demo, client: ApiClient, change: str) -> None:
    """A bad change reverted in staging (``Demo.act_two``); prod stays on ``change``."""
    view = demo.act_two(client, change)
    envs = {e["branch"]: e for e in view["environments"]}
    prod_dry = (envs[ENVIRONMENTS[-1]].get("active") or {}).get("drySha")
    if prod_dry != change:
        raise RuntimeError(f"prod moved to {short(prod_dry)}; it must stay on {short(change)}")
    say("")
    say(status_table.render([view]))
    say("")
    say(f"staging was reverted to {short(change)} by PR; prod never ran the bad change")


def _act_three(demo: Demo, client: ApiClient, started: float) -> None:
    """The bad change's fix promoted to prod."""
    fix = demo.gitops.change(
        "1.2.1", "Fix guestbook 1.2.0", values="image: guestbook:1.2.1\nreplicas: 3\n"
    )
    say(f"\nAct 3: new dry commit {short(fix)}: Fix guestbook 1.2.0")
    final = demo.drive(client, fix)
    say("")
    say(status_table.render([final]))
    say(f"\nprod runs the fix {short(fix)} (total {time.monotonic() - started:.1f}s)")


def _keep_running(demo: Demo, server: ThreadServer) -> None:
    """Say how to look at the daemon, and keep it running until Ctrl-C."""
    say(f"\nThe daemon keeps running at {demo.url} (Ctrl-C to stop). Try:")
    say(f"  open {demo.url}/dashboard/{STRATEGY} in a browser (the dashboard)")
    say(f"  promoter status --url {demo.url}")
    say(f"  curl {demo.url}/api/v1/strategies/{STRATEGY}")
    say(f"  config: {demo.base / 'promoter.yaml'}")
    while server.alive():
        time.sleep(0.5)
