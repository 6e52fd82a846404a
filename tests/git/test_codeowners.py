"""CODEOWNERS rules as GitHub and GitLab read them: the last match wins, anchors, globs,
directories, sections; e-mail owners left out."""

from __future__ import annotations

from promoter.git.codeowners import owners

FILE = """\
# the whole tree
*                 @acme/platform
/apps/            @acme/apps
apps/**/prod/*    @ada @acme/sre   # prod values
*.md              docs@example.com
[Security]
/secrets/         @acme/security
"""


def test_the_last_matching_rule_wins_within_a_section() -> None:
    assert owners(FILE, ["apps/guestbook/prod/values.yaml"]) == ("ada", "acme/sre")
    assert owners(FILE, ["apps/guestbook/dev/values.yaml"]) == ("acme/apps",)
    assert owners(FILE, ["README.md"]) == ()  # an e-mail owner is left out
    assert owners(FILE, ["top.yaml"]) == ("acme/platform",)


def test_a_gitlab_section_adds_its_own_owners() -> None:
    assert owners(FILE, ["secrets/db.yaml"]) == ("acme/platform", "acme/security")


def test_owners_of_several_paths_come_once_each() -> None:
    found = owners(FILE, ["apps/a/prod/x", "apps/b/prod/y", "top.yaml"])
    assert found == ("ada", "acme/sre", "acme/platform")
