"""The dashboard in a real headless Chromium (Debian's ``chromium`` and
``chromium-driver``, driven by Selenium): live updates without a reload, the hold
button offered once the token is typed (a viewer gets none, and the API refuses its
write anyway), a daemon that wants a token before it shows
anything, and a screenshot of the strategy page."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from selenium import webdriver
from selenium.common.exceptions import StaleElementReferenceException
from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, local_config, wait_for

TOKEN = "dashboard-test-token"
AUTH = {"authorization": f"Bearer {TOKEN}"}
DEV = "environment/dev"


def serve(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, access: str = ""
) -> Iterator[str]:
    """A loopback daemon with an API token (the shared admin); ``access`` besides."""
    monkeypatch.setenv("PROMOTER_DASHBOARD_TEST_TOKEN", TOKEN)
    port = free_port()
    config = local_config(
        gitops.path,
        tmp_path / "state",
        port=port,
        apiToken="{fromEnv: PROMOTER_DASHBOARD_TEST_TOKEN}",
        access=access,
    )
    server = ThreadServer(Daemon(config).app, port).start()
    url = f"http://127.0.0.1:{port}"
    wait_for(lambda: api(url)["reconciledAt"], what="a first reconcile")
    yield url
    server.stop()


@pytest.fixture
def served(gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Anyone may read; writes need the token."""
    yield from serve(gitops, tmp_path, monkeypatch, access="  anonymous: viewer")


@pytest.fixture
def guarded(gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Reading needs the token too."""
    yield from serve(gitops, tmp_path, monkeypatch)


def api(url: str) -> dict[str, Any]:
    body: dict[str, Any] = httpx.get(f"{url}/api/v1/strategies/guestbook", headers=AUTH).json()
    return body


def dev(url: str) -> dict[str, Any]:
    env: dict[str, Any] = api(url)["environments"][0]
    return env


def text_of(browser: webdriver.Chrome, css: str) -> str:
    """The element's visible text, read in one step (live updates replace elements)."""
    found = browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : ''", css
    )
    return str(found)


def click(browser: webdriver.Chrome, css: str) -> None:
    """A real click, retried when a live update replaced the element under it."""
    for _ in range(20):
        try:
            browser.find_element(By.CSS_SELECTOR, css).click()
            return
        except StaleElementReferenceException:
            continue
    raise AssertionError(f"{css} kept going stale")


def click_operation(browser: webdriver.Chrome, op: str, answer: str | None = None) -> str:
    """Click ``op`` on dev, accept its dialog, and return the message it shows."""
    browser.execute_script("document.getElementById('message').textContent = ''")
    click(browser, f'button[data-op="{op}"][data-env="{DEV}"]')
    dialog = WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    if answer is not None:
        dialog.send_keys(answer)
    dialog.accept()
    return str(
        WebDriverWait(browser, 10).until(
            lambda b: (m := text_of(b, "#message")) and not m.endswith("…") and m
        )
    )


def test_the_dashboard_shows_a_promotion_live_and_holds_need_the_token(
    served: str, browser: webdriver.Chrome, gitops: GitOpsRepo, tmp_path: Path
) -> None:
    browser.get(f"{served}/dashboard/guestbook")
    WebDriverWait(browser, 10).until(lambda b: text_of(b, "#live-state") == "live")
    browser.execute_script("window.notReloaded = true")

    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    pr = wait_for(lambda: (e := dev(served)).get("pullRequest") and e, what="a dev PR")
    WebDriverWait(browser, 15).until(
        lambda b: "Bump guestbook to 1.1.0" in text_of(b, f'[id="env-{DEV}"] .proposed')
    )
    status = httpx.post(
        f"{served}/api/v1/repositories/gitops/commits/{pr['proposed']['hydratedSha']}/statuses",
        json={"key": "ci", "phase": "success"},
        headers=AUTH,
    )
    assert status.status_code == 201, status.text
    WebDriverWait(browser, 20).until(
        lambda b: "Bump guestbook to 1.1.0" in text_of(b, f'[id="env-{DEV}"] .active')
    )
    assert browser.execute_script("return window.notReloaded") is True

    assert not browser.find_elements(By.CSS_SELECTOR, "button[data-op]")  # a viewer's page
    anonymous = httpx.post(
        f"{served}/api/v1/strategies/guestbook/hold",
        json={"environment": DEV, "reason": "not without a token"},
    )
    assert anonymous.status_code == 401  # and the API refuses the write anyway
    assert not dev(served)["holds"]

    browser.find_element(By.ID, "token").send_keys(TOKEN + "\n")
    WebDriverWait(browser, 10).until(
        lambda b: b.find_elements(By.CSS_SELECTOR, f'button[data-op="hold"][data-env="{DEV}"]')
    )
    assert click_operation(browser, "hold", "frozen for the demo") == f"hold on {DEV}: done"
    WebDriverWait(browser, 15).until(
        lambda b: "frozen for the demo" in text_of(b, f'[id="env-{DEV}"]')
    )
    assert [h["reason"] for h in dev(served)["holds"]] == ["held by api-token: frozen for the demo"]
    assert browser.execute_script("return window.notReloaded") is True

    shot = tmp_path / "dashboard-strategy.png"
    assert browser.save_screenshot(str(shot)) and shot.stat().st_size > 10_000


def test_a_daemon_that_wants_a_token_asks_for_it_and_then_shows_the_page_live(
    guarded: str, browser: webdriver.Chrome, gitops: GitOpsRepo
) -> None:
    browser.get(f"{guarded}/dashboard/guestbook")
    assert "Who are you?" in text_of(browser, "#live")
    assert DEV not in text_of(browser, "#live")
    browser.find_element(By.ID, "token").send_keys(TOKEN + "\n")
    WebDriverWait(browser, 10).until(lambda b: DEV in text_of(b, "#live"))
    WebDriverWait(browser, 10).until(lambda b: text_of(b, "#live-state") == "live")
    assert "you are api-token" in text_of(browser, "#live")
    cookies = browser.get_cookies()
    assert cookies == []  # the token is a header, never an ambient cookie
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    WebDriverWait(browser, 15).until(
        lambda b: "Bump guestbook to 1.1.0" in text_of(b, f'[id="env-{DEV}"] .proposed')
    )
