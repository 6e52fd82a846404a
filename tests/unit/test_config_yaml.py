"""Bad YAML in promoter.yaml gets a clear problem at its line, never a traceback or a
silent guess: empty sections, merge keys, duplicate keys, booleans for numbers, alias bombs."""

from __future__ import annotations

from pathlib import Path

import pytest

from promoter.cli.main import main
from promoter.config import parse_config
from promoter.config.yaml_tree import MAX_ALIASED_NODES
from promoter.errors import ConfigError

STRATEGY = """\
repositories: [{name: r, url: /srv/gitops.git, scmProvider: l}]
promotionStrategies:
  - {name: s, repository: r, environments: [{branch: environment/dev}]}
"""


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as caught:
        parse_config(text, source="p.yaml")
    return caught.value.problems


def test_an_empty_section_is_an_empty_section() -> None:
    config = parse_config(f"scmProviders:\n  - name: l\n    local:\n{STRATEGY}daemon:\n")
    assert config.scm_providers[0].kind == "local"
    assert config.daemon.port == 8080


def test_an_empty_list_value_is_an_empty_list_and_an_empty_environments_list_says_so() -> None:
    text = "scmProviders:\nrepositories:\npromotionStrategies:\n  - {name: s, repository: r}\n"
    found = problems(text.replace("repository: r}", "repository: r, environments: }"))
    assert any("environments" in p and "at least 1" in p for p in found), found


def test_merge_keys_are_expanded_and_the_keys_written_beside_them_win() -> None:
    text = (
        "scmProviders: [{name: l, local: {}}]\n"
        "repositories: [{name: r, url: /srv/gitops.git, scmProvider: l}]\n"
        "promotionStrategies:\n"
        "  - name: s\n"
        "    repository: r\n"
        "    environments:\n"
        "      - &env {branch: environment/dev, autoMerge: false}\n"
        "      - <<: *env\n"
        "        branch: environment/prod\n"
    )
    strategy = parse_config(text).promotion_strategies[0]
    assert [(e.branch, e.auto_merge) for e in strategy.environments] == [
        ("environment/dev", False),
        ("environment/prod", False),
    ]


def test_a_key_written_twice_is_a_problem_at_the_second_with_the_first_line() -> None:
    assert problems("daemon:\n  port: 1\n  port: 2\n") == [
        "p.yaml:3:3: duplicate key 'port' (first written at line 2, column 3)"
    ]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("daemon: {port: true}", "daemon.port: a number, not true"),
        ("daemon: {workers: false}", "daemon.workers: a number, not false"),
    ],
)
def test_a_boolean_is_never_read_as_a_number(line: str, expected: str) -> None:
    assert problems(line + "\n") == [f"p.yaml:1:10: {expected}"]


def test_a_number_or_a_word_is_never_read_as_a_boolean() -> None:
    text = STRATEGY.replace("{branch: environment/dev}", "{branch: environment/dev, autoMerge: 1}")
    found = problems("scmProviders: [{name: l, local: {}}]\n" + text)
    assert found == ["p.yaml:4:71: promotionStrategies[0].environments[0].autoMerge: true or false"]


def test_an_alias_bomb_is_refused_at_once() -> None:
    lines = ['a0: &a0 ["lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol", "lol"]']
    lines += [f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 9) + "]" for i in range(1, 6)]
    found = problems("\n".join(lines) + "\n")  # 9 ** 6 nodes if expanded: refused instead
    assert len(found) == 1 and f"more than {MAX_ALIASED_NODES}" in found[0], found
    assert found[0].startswith("p.yaml:"), found


def test_text_that_is_not_yaml_is_a_problem_at_its_line() -> None:
    assert problems("daemon:\n  port: [1\n")[0].startswith("p.yaml:3:1: not valid YAML")


def test_validate_warns_about_an_empty_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    empty = tmp_path / "promoter.yaml"
    empty.write_text("")
    assert main(["validate", "--offline", str(empty)]) == 0
    err = capsys.readouterr().err
    assert f"{empty}: warning: no promotionStrategies" in err


@pytest.mark.parametrize(
    "text",
    ["scmProviders:\n  - name: l\n    local:\n", "daemon:\n", "<<: {daemon: {}}\n", "a: 1\na: 2\n"],
)
def test_validate_answers_every_bad_yaml_without_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str
) -> None:
    path = tmp_path / "promoter.yaml"
    path.write_text(text)
    code = main(["validate", "--offline", str(path)])
    out = capsys.readouterr()
    assert "Traceback" not in out.err
    assert code in (0, 2)
    assert code == 0 or out.err.startswith(f"{path}:")
