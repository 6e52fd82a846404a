"""The fleet view in a real Chromium at 1,000 strategies of four environments (``fleet_views``):
25 and more rows on a 1280x800 screen, sorting by state, age, repository and name, filtering
as one types (kept in the URL), counts that filter, the keyboard, no box overflowing at 360,
1280 and 2560 px on the fleet and on a strategy, and axe-core finding nothing serious."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import pytest
from selenium import webdriver
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import WebDriverWait

from promoter.http.pages.kinds import KINDS
from tests.http.pages.conftest import chromium
from tests.http.pages.fleet_views import STATES, Fleet, serve_fleet
from tests.http.pages.pages import (
    at_review_size,
    at_width,
    overflows,
    screenshot,
    serious_violations,
    text_of,
)

COUNT = 1000


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Fleet]:
    with serve_fleet(tmp_path_factory.mktemp("fleet"), COUNT) as served:
        yield served


@pytest.fixture(scope="module")
def chrome() -> Iterator[webdriver.Chrome]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def browser(chrome: webdriver.Chrome) -> webdriver.Chrome:
    at_review_size(chrome)
    return chrome


def names(browser: webdriver.Chrome) -> list[str]:
    found = browser.execute_script(
        "return [...document.querySelectorAll('tr.strategy a.row-link')].map((a) => a.text)"
    )
    return [str(n) for n in found]


def rows_data(browser: webdriver.Chrome, attribute: str) -> list[str]:
    found = browser.execute_script(
        "return [...document.querySelectorAll('tr.strategy')]"
        ".map((r) => r.getAttribute(arguments[0]) || '')",
        attribute,
    )
    return [str(v) for v in found]


def query(browser: webdriver.Chrome) -> dict[str, list[str]]:
    return parse_qs(urlsplit(browser.current_url).query)


def focused(browser: webdriver.Chrome) -> str:
    return str(browser.execute_script("return document.activeElement.textContent"))


def header(browser: webdriver.Chrome, column: int) -> WebElement:
    """The sorting link of a column (1: strategy, 2: repository, 3: environments, 4: age)."""
    return browser.find_element(By.CSS_SELECTOR, f"table.fleet thead th:nth-child({column}) a")


def reason_width(browser: webdriver.Chrome, row: int) -> float:
    found = browser.execute_script(
        "return document.querySelector(arguments[0]).getBoundingClientRect().width",
        f"tr.strategy:nth-child({row}) li.cell .reason",
    )
    return float(found)


def one_of_each_state(browser: webdriver.Chrome) -> list[str]:
    found = browser.execute_script(
        "const seen = {};"
        "for (const r of document.querySelectorAll('tr.strategy'))"
        "  seen[r.dataset.kind] = seen[r.dataset.kind] || r.querySelector('a').text;"
        "return Object.values(seen);"
    )
    assert len(found) == len(STATES), found
    return [str(n) for n in found]


def loaded(browser: webdriver.Chrome, url: str) -> None:
    browser.get(url)
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, "tr.strategy"))


def test_more_than_25_strategies_fit_a_1280x800_screen_one_cell_per_environment(
    fleet: Fleet, browser: webdriver.Chrome, tmp_path: Path
) -> None:
    loaded(browser, f"{fleet.url}/")
    seen = browser.execute_script(
        "return [...document.querySelectorAll('tr.strategy')]"
        ".filter((r) => r.getBoundingClientRect().bottom <= innerHeight).length"
    )
    assert seen >= 25
    cells = browser.find_elements(By.CSS_SELECTOR, "tr.strategy:first-child li.cell")
    assert [c.find_element(By.CSS_SELECTOR, ".where").text for c in cells] == [
        "dev",
        "staging",
        "prod-eu",
        "prod-us",
    ]
    title = str(cells[0].get_attribute("title"))
    assert title.startswith("dev: ") and " — " in title  # the reason, on hover
    assert f"{COUNT} of {COUNT} strategies" in text_of(browser, "#fleet-matched")
    counts = {k: text_of(browser, f'#fleet-counts a[href*="state={k}"] .count') for k in KINDS}
    assert int(counts["error"]) == 4 * COUNT // len(STATES)  # every environment of a fifth
    assert serious_violations(browser) == []
    screenshot(browser, tmp_path, "dashboard-fleet")


def test_columns_sort_by_state_age_repository_and_name_both_ways(
    fleet: Fleet, browser: webdriver.Chrome
) -> None:
    loaded(browser, f"{fleet.url}/")
    assert names(browser) == sorted(names(browser))
    header(browser, 3).click()
    WebDriverWait(browser, 10).until(lambda b: query(b).get("sort") == ["state"])
    order = list(KINDS)
    WebDriverWait(browser, 10).until(lambda b: rows_data(b, "data-kind")[0] == "error")
    urgency = [order.index(k) for k in rows_data(browser, "data-kind")]
    assert urgency == sorted(urgency)
    assert browser.find_element(By.CSS_SELECTOR, "th[aria-sort]").text.startswith("environments")

    header(browser, 4).click()
    WebDriverWait(browser, 10).until(lambda b: query(b).get("sort") == ["age"])
    WebDriverWait(browser, 10).until(lambda b: "sort=age" in b.page_source)
    oldest = [t for t in rows_data(browser, "data-oldest") if t]
    assert oldest and oldest == sorted(oldest)  # the oldest waiting change first

    header(browser, 2).click()
    WebDriverWait(browser, 10).until(lambda b: query(b).get("sort") == ["repository"])
    repos = [r.text for r in browser.find_elements(By.CSS_SELECTOR, "tr.strategy td.repo")]
    assert repos == sorted(repos) and repos[0] == "repo-00"
    header(browser, 2).click()  # again: the other way
    WebDriverWait(browser, 10).until(lambda b: query(b).get("dir") == ["desc"])
    WebDriverWait(browser, 10).until(
        lambda b: b.find_element(By.CSS_SELECTOR, "tr.strategy td.repo").text == "repo-11"
    )
    assert (
        browser.find_element(By.CSS_SELECTOR, "th[aria-sort]").get_attribute("aria-sort")
        == "descending"
    )


def test_typing_filters_at_once_and_the_url_and_the_counts_keep_it(
    fleet: Fleet, browser: webdriver.Chrome
) -> None:
    loaded(browser, f"{fleet.url}/")
    browser.execute_script("window.notReloaded = true")
    search = browser.find_element(By.ID, "q")
    search.send_keys("app-0010")
    WebDriverWait(browser, 10).until(lambda b: query(b).get("q") == ["app-0010"])
    ten = [f"app-0010{i}" for i in range(10)]
    WebDriverWait(browser, 10).until(lambda b: names(b) == ten)
    assert "10 of 1000 strategies match" in text_of(browser, "#fleet-matched")
    search.send_keys(" state:failing env:dev")
    failing = [n for n in ten if fleet.views.states[n] == "failing"]
    assert failing  # the fleet has some of them failing
    WebDriverWait(browser, 10).until(lambda b: names(b) == failing)
    assert browser.execute_script("return window.notReloaded") is True  # no page load
    assert browser.execute_script("return document.activeElement.id") == "q"

    browser.get(browser.current_url)  # the URL holds the filter: a bookmark shows the same
    WebDriverWait(browser, 10).until(lambda b: names(b) == failing)
    typed = browser.find_element(By.ID, "q").get_attribute("value")
    assert typed == "app-0010 state:failing env:dev"

    loaded(browser, f"{fleet.url}/")
    browser.find_element(By.CSS_SELECTOR, '#fleet-counts a[href*="state=paused"]').click()
    WebDriverWait(browser, 10).until(lambda b: query(b).get("state") == ["paused"])
    WebDriverWait(browser, 10).until(lambda b: set(rows_data(b, "data-kind")) == {"paused"})
    assert "200 of 1000 strategies match" in text_of(browser, "#fleet-matched")
    current = browser.find_element(By.CSS_SELECTOR, "#fleet-counts a[aria-current]")
    assert "paused" in current.text
    assert browser.find_element(By.NAME, "state").get_attribute("value") == "paused"
    current.click()  # again: every state
    WebDriverWait(browser, 10).until(lambda b: "state" not in query(b))
    WebDriverWait(browser, 10).until(lambda b: len(set(rows_data(b, "data-kind"))) > 1)


def test_the_keyboard_searches_moves_through_rows_shows_reasons_opens_and_lists_the_keys(
    fleet: Fleet, browser: webdriver.Chrome
) -> None:
    loaded(browser, f"{fleet.url}/")
    first, second, third = names(browser)[:3]
    body = browser.find_element(By.TAG_NAME, "body")
    body.send_keys("/")
    assert browser.execute_script("return document.activeElement.id") == "q"
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    assert focused(browser) == first
    browser.switch_to.active_element.send_keys("j")
    browser.switch_to.active_element.send_keys("j")
    assert focused(browser) == third
    browser.switch_to.active_element.send_keys("k")
    assert focused(browser) == second
    browser.switch_to.active_element.send_keys(Keys.ARROW_DOWN)
    assert focused(browser) == third
    assert reason_width(browser, 3) > 20  # the focused row shows its reasons
    assert reason_width(browser, 4) <= 1  # the others keep them for hover and screen readers
    browser.switch_to.active_element.send_keys("x")
    assert "open" in str(
        browser.find_element(By.CSS_SELECTOR, "tr.strategy:nth-child(3)").get_attribute("class")
    )
    browser.switch_to.active_element.send_keys("?")
    WebDriverWait(browser, 5).until(lambda b: b.find_element(By.ID, "keys").is_displayed())
    assert "j or ↓" in text_of(browser, "#keys")
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    WebDriverWait(browser, 5).until(lambda b: not b.find_element(By.ID, "keys").is_displayed())
    assert focused(browser) == third  # the list of keys gave the focus back to the row
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    WebDriverWait(browser, 10).until(lambda b: b.current_url.endswith(f"/dashboard/{third}"))
    WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, "section.env"))
    browser.find_element(By.TAG_NAME, "body").send_keys("j")
    assert focused(browser).startswith("environment/dev")
    browser.switch_to.active_element.send_keys("j")
    assert focused(browser).startswith("environment/staging")
    for _ in range(40):  # Tab from the environment reaches its operations
        browser.switch_to.active_element.send_keys(Keys.TAB)
        if browser.execute_script("return document.activeElement.matches('button[data-op]')"):
            break
    button = browser.switch_to.active_element
    assert button.get_attribute("data-env") == "environment/staging", button.text
    button.send_keys(Keys.ENTER)  # it asks before it does anything
    WebDriverWait(browser, 5).until(expected_conditions.alert_is_present())
    asked = browser.switch_to.alert
    assert "environment/staging" in asked.text
    asked.dismiss()


@pytest.mark.parametrize("width", [360, 1280, 2560])
def test_no_box_overflows_on_the_fleet_or_a_strategy_of_four_environments(
    fleet: Fleet, browser: webdriver.Chrome, width: int, tmp_path: Path
) -> None:
    at_width(browser, width)
    loaded(browser, f"{fleet.url}/")
    assert overflows(browser) == []
    browser.find_element(By.TAG_NAME, "body").send_keys("j")  # a row open shows its reasons
    assert overflows(browser) == []
    assert serious_violations(browser) == []
    for name in one_of_each_state(browser):
        browser.get(f"{fleet.url}/dashboard/{name}")
        WebDriverWait(browser, 10).until(lambda b: b.find_elements(By.CSS_SELECTOR, "section.env"))
        assert overflows(browser) == [], name
        if width == 1280 and fleet.views.states[name] == "waiting":
            at_review_size(browser)
            screenshot(browser, tmp_path, "dashboard-strategy")
    assert serious_violations(browser) == []
