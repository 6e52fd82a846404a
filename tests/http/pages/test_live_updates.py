"""A dashboard page's live updates start from the page itself: a change the daemon saw
between the page's making and its stream's start is told at once, not at the next change
(a page opened just after a push showed the push's state only when something else moved)."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from selenium import webdriver
from selenium.webdriver.support.ui import WebDriverWait

from promoter.http import ThreadServer, free_port
from promoter.wiring import Daemon
from tests.http.pages.pages import text_of
from tests.support import GitOpsRepo, local_config, wait_for

HTML = {"accept": "text/html"}
DEV = "environment/dev"


@pytest.fixture
def url(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[str]:
    port = free_port()
    config = local_config(gitops.path, tmp_path / "state", port=port, pollInterval="0.1s")
    server = ThreadServer(Daemon(config).app, port).start()
    url = f"http://127.0.0.1:{port}"
    wait_for(
        lambda: httpx.get(f"{url}/api/v1/strategies/guestbook").json()["reconciledAt"],
        what="a first reconcile",
    )
    yield url
    server.stop()


def page_event_id(url: str, path: str) -> str:
    html = httpx.get(f"{url}{path}", headers=HTML).text
    found = re.search(r'<main id="live"[^>]* data-event-id="(page:[^"]+)"', html)
    assert found, "the page carries no event id"
    return found.group(1)


def first_blocks(url: str, last_id: str, count: int = 2) -> list[str]:
    """The first ``count`` blocks of ``/events`` opened from ``last_id``."""
    blocks: list[str] = []
    lines: list[str] = []
    headers = {"accept": "text/event-stream", "last-event-id": last_id}
    with httpx.stream("GET", f"{url}/events", headers=headers, timeout=10) as answer:
        assert answer.status_code == 200
        for line in answer.iter_lines():
            if line:
                lines.append(line)
                continue
            blocks.append("\n".join(lines))
            lines = []
            if len(blocks) == count:
                break
    return blocks


def test_a_stream_started_from_the_page_is_told_what_changed_since_the_page(
    url: str, gitops: GitOpsRepo
) -> None:
    path = "/dashboard/guestbook"
    made = page_event_id(url, path)
    retry, first = first_blocks(url, made)
    assert retry.startswith("retry:")
    assert first.startswith("id: ") and "event:" not in first, "nothing changed, yet told"

    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    wait_for(lambda: page_event_id(url, path) != made, what="the daemon to see the change")
    _, first = first_blocks(url, made)
    assert "event: change" in first.splitlines()
    assert '{"strategies": ["guestbook"]}' in first


def test_the_overview_carries_no_page_id(url: str) -> None:
    """It would cost a digest of every view (a second at 10,000 strategies, the first
    time); the overview is refreshed at the next change anywhere instead."""
    html = httpx.get(f"{url}/", headers=HTML).text
    assert 'data-event-id=""' in html


def test_a_page_whose_stream_starts_after_a_change_shows_the_change(
    url: str, gitops: GitOpsRepo, browser: webdriver.Chrome
) -> None:
    """The page is made, then the daemon sees a push, then the page's stream starts
    (held back here by blocking ``/events`` in the browser until the daemon has seen
    the push): the page shows the push without another change to wake it."""
    browser.execute_cdp_cmd("Network.enable", {})
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": ["*/events*"]})
    browser.get(f"{url}/dashboard/guestbook")
    WebDriverWait(browser, 10).until(lambda b: text_of(b, "#live-state") == "reconnecting")
    before = page_event_id(url, "/dashboard/guestbook")
    gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    wait_for(
        lambda: page_event_id(url, "/dashboard/guestbook") != before,
        what="the daemon to see the push",
    )
    assert "1.1.0" not in text_of(browser, f'[id="env-{DEV}"] .proposed')
    browser.execute_cdp_cmd("Network.setBlockedURLs", {"urls": []})
    WebDriverWait(browser, 10).until(lambda b: text_of(b, "#live-state") == "live")
    WebDriverWait(browser, 5).until(lambda b: "1.1.0" in text_of(b, f'[id="env-{DEV}"] .proposed'))
