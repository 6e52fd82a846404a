"""Fixtures for the dashboard's tests: a real GitOps repository in a temp dir, and Debian's
headless Chromium driven through ``chromium-driver`` and Selenium."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service

from tests.support import GitOpsRepo

CHROMIUM = "/usr/bin/chromium"
DRIVER = "/usr/bin/chromedriver"


@pytest.fixture
def gitops(tmp_path: Path) -> GitOpsRepo:
    """A real bare GitOps repository: dry main, hydrated dev, staging and prod."""
    return GitOpsRepo.create(tmp_path)


def chromium(*flags: str) -> webdriver.Chrome:
    """A headless Chromium with ``flags`` besides the usual ones."""
    assert shutil.which(CHROMIUM) and shutil.which(DRIVER), "apt-get install chromium-driver"
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    usual = ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1400,1000")
    for flag in (*usual, *flags):
        options.add_argument(flag)
    return webdriver.Chrome(service=Service(DRIVER), options=options)


@pytest.fixture
def browser() -> Iterator[webdriver.Chrome]:
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()
