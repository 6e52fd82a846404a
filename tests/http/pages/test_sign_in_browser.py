"""Signing in with the company's identity provider in a real Chromium, through to an approved
promotion: the dashboard asks who you are and offers the sign-in; the provider (a small one
over real HTTP, ``tests.http.access.oidc_provider``) sends the release manager back signed
in; their page offers only what their role and prod's state allow (Approve while the
approval waits, then Merge once every gate passes), each through the session with its
CSRF token, and prod runs the change; the audit names them, signed in."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon
from tests.http.access.oidc_provider import CLIENT_SECRET, OidcProvider, Person
from tests.http.pages.pages import (
    at_review_size,
    offered,
    screenshot,
    serious_violations,
    text_of,
)
from tests.people import access_yaml, bearer
from tests.support import GitOpsRepo, local_config, wait_for

DEV, STAGING, PROD = "environment/dev", "environment/staging", "environment/prod"
RM = Person("rm@example.com", ["release-managers"])
CI = bearer("ci")


@pytest.fixture
def site(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[tuple[str, OidcProvider]]:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    provider = OidcProvider(f"{url}/auth/callback").start()
    secret = tmp_path / "client-secret"
    secret.write_text(CLIENT_SECRET)
    oidc = (
        f"  oidc:\n    issuer: {provider.url}\n    clientId: promoter\n"
        f"    clientSecret: {{fromFile: {secret}}}\n    scopes: [openid, email, groups]"
    )
    access = access_yaml(tmp_path / "people", {"ci": ["role: operator"]}, more=oidc)
    access = access.replace(
        "  grants:\n",
        "  grants:\n    - {groups: [release-managers], role: approver, environments: [prod]}\n",
    )
    prod = "autoMerge: false, gates: [{approval: {count: 1, users: [rm@example.com]}}]"
    config = local_config(
        gitops.path,
        tmp_path / "state",
        port=port,
        publicUrl=url,
        access=access,
        environments={"prod": prod},
    )
    server = ThreadServer(Daemon(config).app, port).start()
    try:
        wait_for(lambda: strategy(url)["reconciledAt"], what="a first reconcile")
        yield url, provider
    finally:
        server.stop()
        provider.stop()


def strategy(url: str) -> dict[str, Any]:
    found: dict[str, Any] = httpx.get(f"{url}/api/v1/strategies/guestbook", headers=CI).json()
    return found


def envs(url: str) -> dict[str, dict[str, Any]]:
    return {e["branch"]: e for e in strategy(url)["environments"]}


def play_ci_and_health(url: str, change: str, done: set[str]) -> None:
    """CI passes on every proposal of ``change``; every environment running it is healthy."""
    for env in envs(url).values():
        for side, key in (("proposed", "ci"), ("active", "health")):
            commit = env.get(side) or {}
            if commit.get("drySha") == change and commit["hydratedSha"] + key not in done:
                done.add(commit["hydratedSha"] + key)
                httpx.post(
                    f"{url}/api/v1/repositories/gitops/commits/{commit['hydratedSha']}/statuses",
                    json={"key": key, "phase": "success"},
                    headers=CI,
                ).raise_for_status()


def answer(browser: webdriver.Chrome, op: str, env: str) -> str:
    """Click ``op`` on ``env``, accept its confirmation, and return the message it shows."""
    browser.execute_script("document.getElementById('message').textContent = ''")
    css = f'button[data-op="{op}"][data-env="{env}"]'

    def clicked(b: webdriver.Chrome) -> bool:
        try:
            b.find_element(By.CSS_SELECTOR, css).click()
        except (NoSuchElementException, StaleElementReferenceException):
            return False
        return True

    WebDriverWait(browser, 15).until(clicked)
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present()).accept()
    return str(
        WebDriverWait(browser, 15).until(
            lambda b: (m := text_of(b, "#message")) and not m.endswith("…") and m
        )
    )


def test_the_release_manager_signs_in_approves_and_merges_prod(
    site: tuple[str, OidcProvider],
    gitops: GitOpsRepo,
    browser: webdriver.Chrome,
    tmp_path: Path,
) -> None:
    url, provider = site
    at_review_size(browser)
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    done: set[str] = set()

    def prod_waits_for_approval() -> bool:
        play_ci_and_health(url, change, done)
        prod = envs(url)[PROD]
        gates = {g["name"]: g["phase"] for g in prod.get("gates") or []}
        return bool(prod.get("pullRequest")) and gates.get("promoter/approval") == "pending"

    wait_for(prod_waits_for_approval, timeout=60, what="prod's PR waiting for its approval")

    browser.get(f"{url}/dashboard/guestbook")
    assert "Who are you?" in text_of(browser, "#live")
    assert PROD not in text_of(browser, "#live")
    assert serious_violations(browser) == []
    screenshot(browser, tmp_path, "dashboard-sign-in")
    provider.person = RM
    browser.find_element(By.LINK_TEXT, "Sign in with your company account").click()
    WebDriverWait(browser, 15).until(lambda b: b.current_url == f"{url}/dashboard/guestbook")
    WebDriverWait(browser, 10).until(lambda b: PROD in text_of(b, "#live"))
    assert "you are rm@example.com (signed in)" in text_of(browser, ".who")
    assert "Sign out" in text_of(browser, "header")
    cookie = next(c for c in browser.get_cookies() if c["name"] == "promoter-session")
    assert cookie["httpOnly"] is True and cookie["sameSite"] == "Lax"

    assert offered(browser) == {("approve", PROD)}  # an approver of prod; nothing merges yet
    assert answer(browser, "approve", PROD) == f"approve on {PROD}: done"

    def prod_ready() -> bool:
        play_ci_and_health(url, change, done)
        return envs(url)[PROD]["state"] == "ready"

    wait_for(prod_ready, timeout=30, what="prod ready, waiting for a person to merge")
    WebDriverWait(browser, 15).until(lambda b: offered(b) == {("merge", PROD)})
    assert answer(browser, "merge", PROD) == f"merge on {PROD}: done"
    wait_for(
        lambda: (envs(url)[PROD].get("active") or {}).get("drySha") == change,
        what="prod running the change",
    )
    audit = httpx.get(f"{url}/api/v1/audit", headers=CI).json()["entries"]
    by_rm = [(e["action"], e["via"], e["outcome"]) for e in audit if e["who"] == RM.email]
    assert by_rm[:2] == [("merge", "oidc", "allowed"), ("approve", "oidc", "allowed")]

    browser.find_element(By.XPATH, "//button[text()='Sign out']").click()
    WebDriverWait(browser, 10).until(lambda b: "Who are you?" in text_of(b, "#live"))
    assert not [c for c in browser.get_cookies() if c["name"] == "promoter-session"]
