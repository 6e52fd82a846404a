"""The dashboard in real Chromium on the demo's sandbox (``promoter demo``'s repository,
daemon and people), driven end to end: the overview, a waiting environment, a failing
gate, the release manager approving and merging prod through the buttons, and where each
change is after a revert; axe-core finds no serious violation on any page, and each step
leaves a 1280x800 screenshot (the ones docs/dashboard.md shows)."""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from selenium import webdriver
from selenium.common.exceptions import NoSuchElementException, StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from promoter.cli import demo as demo_cli
from promoter.cli.client import ApiClient
from promoter.cli.demo import PROD_GATES, Demo
from promoter.cli.sandbox import STRATEGY
from tests.http.pages.pages import (
    at_review_size,
    attribute,
    screenshot,
    serious_violations,
    text_of,
)
from tests.support import wait_for

DEV, STAGING, PROD = "environment/dev", "environment/staging", "environment/prod"


@dataclass
class Sandbox:
    demo: Demo
    client: ApiClient
    """This machine's user: the local admin, no token."""

    @property
    def url(self) -> str:
        return self.demo.url

    def envs(self) -> dict[str, dict[str, Any]]:
        return {e["branch"]: e for e in self.client.strategy(STRATEGY)["environments"]}

    def status(self, sha: str, key: str, phase: str, text: str) -> None:
        self.client.set_status("gitops", sha, key=key, phase=phase, description=text)


def start(tmp_path: Path, *, prod: str = PROD_GATES) -> Iterator[Sandbox]:
    demo = Demo(tmp_path / "demo", 0, prod=prod)
    demo.seed()
    _runtime, server = demo.start()
    client = ApiClient(demo.url, token="")
    try:
        yield Sandbox(demo, client)
    finally:
        client.close()
        server.stop(30)


@pytest.fixture
def manual_prod(tmp_path: Path) -> Iterator[Sandbox]:
    """The demo, but prod's promotions wait for a person to merge them."""
    yield from start(tmp_path, prod=PROD_GATES + ", autoMerge: false")


@pytest.fixture
def sandbox(tmp_path: Path) -> Iterator[Sandbox]:
    """The demo as ``promoter demo`` runs it."""
    yield from start(tmp_path)


def kind_of(browser: webdriver.Chrome, branch: str) -> str:
    return attribute(browser, f'[id="env-{branch}"]', "data-kind")


def overview_kinds(browser: webdriver.Chrome) -> list[str]:
    return [
        str(k)
        for k in browser.execute_script(
            "return [...document.querySelectorAll('table.overview li.env-cell')]"
            ".map((e) => e.dataset.kind)"
        )
    ]


def answer(browser: webdriver.Chrome, op: str, env: str) -> str:
    """Click ``op`` on ``env``, accept its confirmation, and return the message it shows."""
    browser.execute_script("document.getElementById('message').textContent = ''")
    css = f'button[data-op="{op}"][data-env="{env}"]'

    def clicked(b: webdriver.Chrome) -> bool:
        try:
            b.find_element(By.CSS_SELECTOR, css).click()
        except (NoSuchElementException, StaleElementReferenceException):
            return False  # not drawn yet, or a live update replaced it under the click
        return True

    WebDriverWait(browser, 10).until(clicked)
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present()).accept()
    return str(
        WebDriverWait(browser, 15).until(
            lambda b: (m := text_of(b, "#message")) and not m.endswith("…") and m
        )
    )


def no_serious_violation(browser: webdriver.Chrome) -> None:
    found = serious_violations(browser)
    assert found == [], found


def play_ci_and_health(box: Sandbox, target: str, done: set[tuple[str, str]]) -> None:
    """CI passes on ``target``'s proposals once the environment before runs it, and each
    environment running it is healthy (as the demo plays them; prod is not approved)."""
    envs = list(box.envs().values())
    for i, env in enumerate(envs):
        active, proposed = env.get("active") or {}, env.get("proposed") or {}
        if active.get("drySha") == target and (active["hydratedSha"], "health") not in done:
            done.add((active["hydratedSha"], "health"))
            box.status(active["hydratedSha"], "health", "success", "health check green")
        ready = i == 0 or (envs[i - 1].get("active") or {}).get("drySha") == target
        if (
            proposed.get("drySha") == target
            and ready
            and (proposed["hydratedSha"], "ci") not in done
        ):
            done.add((proposed["hydratedSha"], "ci"))
            box.status(proposed["hydratedSha"], "ci", "success", "CI passed")


def test_a_change_waits_fails_a_gate_and_the_release_manager_merges_prod_from_the_page(
    manual_prod: Sandbox, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    box = manual_prod
    at_review_size(browser)
    for env in box.envs().values():
        box.status(env["active"]["hydratedSha"], "health", "success", "health check green")

    browser.get(f"{box.url}/")
    WebDriverWait(browser, 15).until(lambda b: overview_kinds(b) == ["up-to-date"] * 3)
    assert "guestbook" in text_of(browser, "table.overview")
    assert "3" in text_of(browser, 'ul.counts a[href*="state=up-to-date"]')
    no_serious_violation(browser)
    screenshot(browser, tmp_path, "dashboard-overview")

    change = box.demo.gitops.change(
        "1.1.0", "Bump guestbook to 1.1.0", values="image: guestbook:1.1.0\nreplicas: 3\n"
    )
    browser.get(f"{box.url}/dashboard/{STRATEGY}")
    WebDriverWait(browser, 15).until(lambda b: "1.1.0" in text_of(b, f'[id="env-{DEV}"] .proposed'))
    assert kind_of(browser, DEV) == "waiting"  # waiting for CI is never drawn as failing
    assert "ci" in text_of(browser, f'[id="env-{DEV}"] .reason')
    assert "waiting" in text_of(browser, f'[id="env-{DEV}"] h2')
    assert kind_of(browser, STAGING) != "failing"
    proposed = box.envs()[DEV]["proposed"]["hydratedSha"]
    hydrated = text_of(browser, f'[id="env-{DEV}"] .proposed + .hydrated')
    assert proposed[:8] in hydrated and "CI and health report on this" in hydrated
    summary = text_of(browser, f'[id="env-{DEV}"] details.files summary')
    assert re.fullmatch(r"What the proposal changes: [1-9]\d* files?", summary), summary
    listed = browser.execute_script(
        "return document.querySelector(arguments[0]).textContent", f'[id="env-{DEV}"] .files ul'
    )
    assert "apps/guestbook/" in listed  # the hydrated manifests, read in the daemon's mirror
    screenshot(browser, tmp_path, "dashboard-waiting")

    box.status(proposed, "ci", "failure", "3 unit tests failed")
    WebDriverWait(browser, 15).until(lambda b: kind_of(b, DEV) == "failing")
    gate = text_of(browser, f'[id="env-{DEV}"] .gates')
    assert "ci" in gate and "failure" in gate
    assert "3 unit tests failed" in text_of(browser, f'[id="env-{DEV}"] .proposed + .hydrated')
    no_serious_violation(browser)
    screenshot(browser, tmp_path, "dashboard-failing-gate")
    browser.get(f"{box.url}/?state=failing")
    WebDriverWait(browser, 10).until(lambda b: overview_kinds(b)[:1] == ["failing"])
    assert "1" in text_of(browser, 'ul.counts a[href*="state=failing"]')
    assert "ci" in text_of(browser, "table.overview .reason")

    done: set[tuple[str, str]] = set()
    box.status(proposed, "ci", "success", "CI passed")

    def prod_waits_for_its_approver() -> dict[str, Any] | None:
        play_ci_and_health(box, change, done)
        prod = box.envs()[PROD]
        approval = [g for g in prod.get("gates") or [] if g["name"] == "promoter/approval"]
        waiting = prod.get("pullRequest") and approval and approval[0]["phase"] != "success"
        return prod if waiting else None

    wait_for(prod_waits_for_its_approver, timeout=60, what="prod's PR waiting for approval")

    browser.get(f"{box.url}/dashboard/{STRATEGY}")
    browser.find_element(By.ID, "token").send_keys(box.demo.approver_token + "\n")
    WebDriverWait(browser, 10).until(lambda b: "release-manager" in text_of(b, ".who"))
    offered = {
        (b.get_attribute("data-op"), b.get_attribute("data-env"))
        for b in browser.find_elements(By.CSS_SELECTOR, "button[data-op]")
    }
    assert offered == {("approve", PROD), ("merge", PROD)}  # an approver of prod, nothing else
    assert answer(browser, "approve", PROD) == f"approve on {PROD}: done"

    def prod_ready() -> bool:
        play_ci_and_health(box, change, done)
        return box.envs()[PROD]["state"] == "ready"

    wait_for(prod_ready, timeout=30, what="prod ready, waiting for a person to merge")
    WebDriverWait(browser, 15).until(
        lambda b: (
            b.find_elements(By.CSS_SELECTOR, f'[id="env-{PROD}"] .gate-success')
            and not b.find_elements(By.CSS_SELECTOR, f'[id="env-{PROD}"] .gate-pending')
        )
    )
    assert not browser.find_elements(By.CSS_SELECTOR, f'[id="env-{DEV}"] details.files')
    screenshot(browser, tmp_path, "dashboard-ready-to-merge")
    assert answer(browser, "merge", PROD) == f"merge on {PROD}: done"
    wait_for(
        lambda: (box.envs()[PROD].get("active") or {}).get("drySha") == change,
        what="prod running the change",
    )
    WebDriverWait(browser, 15).until(
        lambda b: "Bump guestbook to 1.1.0" in text_of(b, f'[id="env-{PROD}"] .active')
    )
    no_serious_violation(browser)


def lasted(entry: str) -> int:
    """The seconds a history entry gives in its closing parentheses (``(1m 4s)``)."""
    found = re.search(r"\(((?:\d+[dhms] ?)+)\)\s*$", entry)
    assert found, entry
    units = {"d": 86400, "h": 3600, "m": 60, "s": 1}
    return sum(int(n) * units[u] for n, u in re.findall(r"(\d+)([dhms])", found.group(1)))


def test_after_a_revert_the_page_shows_where_each_change_is_and_prod_history_stops_when_it_moved(
    sandbox: Sandbox, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    box = sandbox
    at_review_size(browser)
    good = demo_cli._act_one(box.demo, box.client, time.monotonic())
    view = box.demo.act_two(box.client, good)
    bad = next(r["badDrySha"] for r in view["environments"][1]["reverts"])

    browser.get(f"{box.url}/dashboard/{STRATEGY}")
    row = f'//table[@class="changes"]//tr[th//code[text()="{bad[:8]}"]]'
    cells = [c.text for c in browser.find_elements(By.XPATH, f"{row}/td")]
    assert [c.split()[-1] for c in cells] == ["runs", "reverted", "held"]
    staging = text_of(browser, f'[aria-label="history of {STAGING}"]')
    assert f"{bad[:8]}" in staging and "revert (PR #" in staging
    assert "held (revert)" in text_of(browser, f'[aria-label="history of {PROD}"]')
    assert kind_of(browser, PROD) == "held"  # the revert's hold, not a failure of prod's own
    no_serious_violation(browser)
    screenshot(browser, tmp_path, "dashboard-after-revert", at="h2 + table.changes")

    demo_cli._act_three(box.demo, box.client, time.monotonic())
    prod = f'[aria-label="history of {PROD}"] li.healthy'

    def good_entry() -> str:
        browser.get(f"{box.url}/dashboard/{STRATEGY}")
        entries = browser.find_elements(By.CSS_SELECTOR, prod)
        return next((e.text for e in entries if good[:8] in e.text), "")

    before = good_entry()
    assert "ran healthy" in before  # prod runs the fix now, not this commit
    moved = time.monotonic()
    wait_for(lambda: time.monotonic() - moved > 2.5, what="the clock to move on")
    assert lasted(good_entry()) == lasted(before)  # its time ended when prod moved
