"""An attacker's page in a real Chromium against a daemon run as the README and the demo
run it (loopback, no token, every local caller an admin): from another origin it tries
every write (fetch with text/plain, JSON that needs a CORS preflight, a form POST,
multipart, text/plain forms that look like JSON), and from a rebound name (DNS
rebinding: Chromium resolves ``rebind.test`` to 127.0.0.1) it sends same-origin JSON.
Each fails, and the daemon's state is unchanged: no hold, no approval, no promotion,
no status, the ledger in git as it was."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse
from starlette.routing import Route

from promoter.cli.sandbox import git
from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon
from tests.http.pages.conftest import chromium
from tests.support import GitOpsRepo, local_config, wait_for

WRITES = ["hold", "release", "promote", "approve", "merge", "revert", "pin", "unpin"]

ATTACK = """<!doctype html><html><body><h1>cute cats</h1><script>
const T = "%(target)s", ops = %(ops)s, sha = "%(sha)s";
window.results = [];
const body = JSON.stringify({environment: "dev", reason: "csrf", drySha: sha});
const writes = ops.map(op => T + "/api/v1/strategies/guestbook/" + op).concat([
  T + "/api/v1/refresh", T + "/api/v1/repositories/gitops/commits/" + sha + "/statuses"]);
async function attempt(name, send) {
  try { const r = await send(); results.push([name, r.type, r.status]); }
  catch (e) { results.push([name, "error", String(e)]); }
}
function form(url, enctype, fields) {
  return new Promise(done => {
    const frame = document.createElement("iframe");
    frame.name = "f" + Math.random().toString(36).slice(2);
    document.body.appendChild(frame);  // its about:blank loads at once, before this
    const f = document.createElement("form");
    f.method = "POST"; f.action = url; f.enctype = enctype; f.target = frame.name;
    for (const [k, v] of Object.entries(fields)) {
      const i = document.createElement("input"); i.name = k; i.value = v; f.appendChild(i);
    }
    document.body.appendChild(f); f.submit();
    frame.addEventListener("load", () => {
      results.push(["form " + enctype, "sent", url]); done(); }, {once: true});
  });
}
(async () => {
  for (const url of writes) {
    await attempt("no-cors text/plain " + url, () => fetch(url, {method: "POST",
      mode: "no-cors", headers: {"Content-Type": "text/plain"}, body}));
    await attempt("no-cors form " + url, () => fetch(url, {method: "POST",
      mode: "no-cors", body: new URLSearchParams({environment: "dev", reason: "csrf"})}));
    await attempt("cors json " + url, () => fetch(url, {method: "POST",
      headers: {"Content-Type": "application/json"}, body}));
    await form(url, "application/x-www-form-urlencoded", {environment: "dev", reason: "x"});
    await form(url, "multipart/form-data", {environment: "dev", reason: "x"});
    await form(url, "text/plain", {['{"environment":"dev","reason":"x","k":"']: '"}'});
  }
  window.done = true;
})();
</script></body></html>"""


@pytest.fixture
def daemon(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    config = local_config(gitops.path, tmp_path / "state", port=port)
    server = ThreadServer(Daemon(config).app, port).start()
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: dev(url).get("proposed"), what="a first reconcile")
    yield url
    server.stop()


def dev(url: str) -> dict[str, Any]:
    env: dict[str, Any] = httpx.get(f"{url}/api/v1/strategies/guestbook").json()["environments"][0]
    return env


def attacker(target: str, sha: str) -> Iterator[int]:
    page = ATTACK % {"target": target, "ops": json.dumps(WRITES), "sha": sha}

    async def index(request: Request) -> HTMLResponse:
        return HTMLResponse(page)

    port = free_port()
    server = ThreadServer(Starlette(routes=[Route("/", index)]), port, name="attacker").start()
    yield port
    server.stop()


def state(url: str, gitops: GitOpsRepo) -> tuple[Any, ...]:
    """Everything a write could change: the view's holds, pins, PRs and statuses, and the
    repository's refs (branches and the ledger's notes)."""
    env = dev(url)
    keep = ("holds", "pin", "pullRequest", "paused", "active", "proposed")
    return tuple(json.dumps(env.get(k), sort_keys=True) for k in keep), git(
        gitops.path, "for-each-ref", "refs/heads", "refs/notes/promoter.ledger"
    )


@pytest.mark.parametrize("attacker_host", ["127.0.0.1", "localhost"])
def test_a_page_from_another_origin_cannot_write(
    daemon: str, gitops: GitOpsRepo, browser: webdriver.Chrome, attacker_host: str
) -> None:
    before = state(daemon, gitops)
    for port in attacker(daemon, gitops.tip("main")):
        browser.get(f"http://{attacker_host}:{port}/")
        WebDriverWait(browser, 60).until(lambda b: b.execute_script("return window.done"))
        results = browser.execute_script("return window.results")
    preflighted = [r for r in results if r[0].startswith("cors json")]
    assert preflighted and all(r[1] == "error" for r in preflighted)  # no CORS, never sent
    assert len([r for r in results if r[0].startswith("form")]) == 3 * 10
    audit = httpx.get(f"{daemon}/api/v1/audit", params={"limit": "500"}).json()["entries"]
    origin = f"http://{attacker_host}:{port}"
    seen = [e for e in audit if e["origin"] == origin]
    assert seen and all((e["outcome"], e["status"]) == ("refused", 403) for e in seen)
    assert {e["action"] for e in seen} >= {*WRITES, "refresh", "set-status"}
    assert not [e for e in audit if e["outcome"] != "refused"]
    assert state(daemon, gitops) == before


def test_a_rebound_name_cannot_read_or_write(daemon: str, gitops: GitOpsRepo) -> None:
    """``rebind.test`` resolves to the daemon, as an attacker's name would after
    rebinding: its page's same-origin JSON requests reach the daemon with that Host."""
    before = state(daemon, gitops)
    port = daemon.rsplit(":", 1)[1]
    driver = chromium("--host-resolver-rules=MAP rebind.test 127.0.0.1")
    try:
        driver.get(f"http://rebind.test:{port}/dashboard/guestbook")
        assert "does not answer to the Host" in driver.page_source
        answers = driver.execute_async_script(
            """const done = arguments[arguments.length - 1];
            const json = {"Content-Type": "application/json"};
            const body = JSON.stringify({environment: "dev", reason: "rebound"});
            Promise.all([
              fetch("/api/v1/strategies/guestbook/hold", {method: "POST", headers: json, body}),
              fetch("/api/v1/strategies/guestbook/promote", {method: "POST", headers: json, body}),
              fetch("/api/v1/refresh", {method: "POST", headers: json, body: "{}"}),
              fetch("/api/v1/strategies/guestbook"),
              fetch("/api/v1/audit"),
            ]).then(rs => done(rs.map(r => r.status)), e => done(String(e)));"""
        )
    finally:
        driver.quit()
    assert answers == [421, 421, 421, 421, 421]
    assert state(daemon, gitops) == before
