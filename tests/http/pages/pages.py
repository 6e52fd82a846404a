"""What the browser tests do with a page besides clicking: read its text in one step, check
it with axe-core (the npm registry's, installed by ``.ci/browser``, injected by the test
through WebDriver: never part of the pages the daemon serves, and not subject to their CSP),
and keep a screenshot at 1280x800 for review (``PROMOTER_SCREENSHOTS=docs/images`` writes
them where docs/dashboard.md shows them)."""

from __future__ import annotations

import os
import struct
from pathlib import Path
from typing import Any

from selenium import webdriver

ROOT = Path(__file__).resolve().parents[3]
AXE = ROOT / ".ci/axe/node_modules/axe-core/axe.min.js"
SIZE = (1280, 800)

RUN_AXE = """
const done = arguments[arguments.length - 1];
axe.run(document, {resultTypes: ["violations"]}).then(
  (r) => done(r.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.slice(0, 5).map((n) => n.target.join(" ")),
  }))),
  (e) => done([{id: "axe-failed", impact: "critical", help: String(e), nodes: []}]),
);
"""


def text_of(browser: webdriver.Chrome, css: str) -> str:
    """The element's visible text, read in one step (live updates replace elements)."""
    found = browser.execute_script(
        "const e = document.querySelector(arguments[0]); return e ? e.innerText : ''", css
    )
    return str(found)


def attribute(browser: webdriver.Chrome, css: str, name: str) -> str:
    found = browser.execute_script(
        "const e = document.querySelector(arguments[0]);"
        " return e ? (e.getAttribute(arguments[1]) || '') : ''",
        css,
        name,
    )
    return str(found)


def at_review_size(browser: webdriver.Chrome) -> None:
    """A 1280x800 viewport at scale 1, whatever the window is."""
    width, height = SIZE
    browser.execute_cdp_cmd(
        "Emulation.setDeviceMetricsOverride",
        {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
    )


def serious_violations(browser: webdriver.Chrome) -> list[dict[str, Any]]:
    """axe-core's serious and critical violations on the page as it is now."""
    assert AXE.is_file(), f"{AXE} is missing: run bash .ci/browser"
    if not browser.execute_script("return typeof window.axe === 'object'"):
        browser.execute_script(AXE.read_text(encoding="utf-8"))
    browser.set_script_timeout(60)
    found: list[dict[str, Any]] = browser.execute_async_script(RUN_AXE)
    return [v for v in found if v["impact"] in ("serious", "critical")]


def screenshot(browser: webdriver.Chrome, into: Path, name: str, at: str = "") -> Path:
    """The viewport (from the top, or from the element ``at``) as ``name``.png in
    ``PROMOTER_SCREENSHOTS`` (else ``into``), checked to be a 1280x800 PNG."""
    folder = Path(os.environ.get("PROMOTER_SCREENSHOTS") or into)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.png"
    browser.execute_script(
        "const e = arguments[0] && document.querySelector(arguments[0]);"
        " if (e) e.scrollIntoView(); else window.scrollTo(0, 0);",
        at,
    )
    assert browser.save_screenshot(str(path))
    head = path.read_bytes()[:24]
    assert head[:8] == b"\x89PNG\r\n\x1a\n"
    assert struct.unpack(">II", head[16:24]) == SIZE
    return path
