"""The documentation says what the code does: states, the test command, API call figures."""

from __future__ import annotations

import re
from pathlib import Path

from promoter.config import PromotionStrategy
from promoter.engine import EnvState
from promoter.http import strategy_json
from tests.scm_github.test_end_to_end import FIRST_ENVIRONMENT_CALLS, LATER_ENVIRONMENT_CALLS

ROOT = Path(__file__).resolve().parents[2]


def words(path: Path) -> str:
    return " ".join(path.read_text().split())


def test_every_state_an_environment_shows_is_documented() -> None:
    text = (ROOT / "docs/api.md").read_text()
    paragraph = text[text.index("An environment's `state`") :].split("\n\n")[0]
    strategy = PromotionStrategy.model_validate(
        {"name": "s", "repository": "r", "environments": [{"branch": "environment/dev"}]}
    )
    not_reconciled = strategy_json(strategy, None)["environments"][0]["state"]
    for state in [*(s.value for s in EnvState), not_reconciled]:
        assert f"`{state}`" in paragraph, state


def test_the_readme_says_which_tests_make_test_runs_and_how_to_run_the_rest() -> None:
    makefile = (ROOT / "Makefile").read_text()
    target = makefile[makefile.index("\ntest:") :].split("\n\n")[0]
    selection = re.search(r'-m "([^"]+)"', target)
    assert selection is not None
    readme = words(ROOT / "README.md")
    assert f'-m "{selection.group(1)}"' in readme
    assert "whole suite" not in readme
    assert "\ntest-slow:" in makefile and "make test-slow" in readme


def test_the_github_guide_states_the_calls_the_end_to_end_test_measures() -> None:
    guide = words(ROOT / "docs/github.md")
    first, later = FIRST_ENVIRONMENT_CALLS, LATER_ENVIRONMENT_CALLS
    assert f"the first environment costs {first[0]} to {first[1]} charged calls" in guide
    assert f"Every later environment costs {later[0]} to {later[1]}" in guide


def test_the_webhook_guide_names_every_kind_of_invalid_request_and_no_dashboard() -> None:
    guide = (ROOT / "docs/webhooks.md").read_text()
    row = next(line for line in guide.splitlines() if line.startswith("| 400 |"))
    for kind in ("`Content-Length`", "content type", "`payload` field", "not JSON", "missing"):
        assert kind in row, kind
    assert "dashboard" not in guide  # the daemon serves status pages, not a dashboard
