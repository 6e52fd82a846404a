"""The words of a promotion PR (``pr_text``): its body lists the changes and the gates,
escapes what a commit's subject could hide, stays the same while gates flip, and carries
metadata that reads back, or reads as nothing from garbage."""

from __future__ import annotations

import pytest

from promoter.engine import read_metadata
from promoter.engine.core import pr_text
from promoter.models import DryCommit

from ..strategies import Env, build, dry, short
from ..test_decide import promotable

# --- pr_text ----------------------------------------------------------------------------


def test_the_pr_body_lists_the_changes_and_the_gates_and_carries_metadata() -> None:
    snapshot = build(Env("dev", active=1, proposed=3), promotable("staging", active=1, proposed=3))
    text = pr_text.for_environment(snapshot, 1, dry_sha=dry(3), active_dry_sha=dry(1))
    assert f"- `{short(3)}` change 3 (Ada)" in text.body
    assert f"- `{short(2)}` change 2 (Ada)" in text.body
    assert "- `ci`\n- `promoter/previous-environment`" in text.body
    assert read_metadata(text.body) == {
        "strategy": "demo",
        "environment": "environment/staging",
        "drySha": dry(3),
        "activeDrySha": dry(1),
    }


def test_the_pr_body_links_commits_and_keeps_subjects_from_hiding_the_rest() -> None:
    commits = [
        DryCommit(sha=dry(2), subject="Bump <chart> <!-- x", author="Ada", url="https://x/2"),
        DryCommit(sha=dry(3), subject="cc @acme/sre [docs](https://evil.example)", author="Eve"),
    ]
    text = pr_text.body(
        strategy="demo",
        branch="environment/dev",
        dry_sha=dry(2),
        active_dry_sha=dry(1),
        changelog=commits,
        required_keys=(),
    )
    assert f"- [`{short(2)}`](https://x/2) Bump \\<chart\\> \\<\\!\\-\\- x (Ada)" in text
    assert text.count("<!--") == 1
    # Nor can a subject mention a team or link: "@" is followed by a zero-width space.
    assert "@acme" not in text and "@\u200bacme" in text
    assert "](https://evil" not in text and "\\[docs\\]\\(https\\:" in text


def test_the_pr_body_does_not_change_when_a_gate_flips() -> None:
    def body_with(ci: str) -> str:
        snapshot = build(promotable(proposed_statuses={"ci": ci}))
        return pr_text.for_environment(snapshot, 0, dry_sha=dry(3), active_dry_sha=dry(1)).body

    assert body_with("pending") == body_with("success") == body_with("failure")


@pytest.mark.parametrize(
    "text",
    [
        "",
        "no metadata here",
        "<!-- promoter:metadata {not json} -->",
        "<!-- promoter:metadata [1, 2] -->",
        '<!-- promoter:metadata {"drySha": "abc"}',
        "<!-- promoter:metadata " + "[" * 100_000 + " -->",
    ],
)
def test_reading_metadata_from_garbage_gives_none(text: str) -> None:
    assert read_metadata(text) is None
