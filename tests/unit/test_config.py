"""Loading promoter.yaml: every error with its place, secrets never inline, docs complete."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from promoter.cli.main import main
from promoter.config.loader import json_schema, load_config, parse_config
from promoter.errors import ConfigError

ROOT = Path(__file__).resolve().parents[2]

BAD = """\
scmProviders:
  - name: gh
    github: {token: abc}
repositories:
  - name: demo
    url: /tmp/x
    scmProvider: nope
promotionStrategies:
  - name: s
    repository: demo2
    environments:
      - branch: environment/dev
        autoMerge: maybe
      - branch: environment/dev
daemon:
  resyncInterval: 5 minutes
"""


def test_the_example_config_is_valid() -> None:
    config = load_config(ROOT / "examples" / "promoter.yaml")
    strategy = config.promotion_strategies[0]
    assert strategy.proposed_branch(strategy.environments[0]) == "environment/dev-next"
    assert strategy.proposed_keys(strategy.environments[2]) == ["lint", "security-scan"]


def test_every_problem_is_reported_with_its_line_and_column() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config(BAD, source="p.yaml")
    problems = caught.value.problems
    assert any(p.startswith("p.yaml:3:") and "never written inline" in p for p in problems)
    assert any(p.startswith("p.yaml:13:9:") and "autoMerge" in p for p in problems)
    assert any(p.startswith("p.yaml:16:") and "not a duration" in p for p in problems)
    assert any(p.startswith("p.yaml:7:") and "'nope'" in p for p in problems)
    assert any(p.startswith("p.yaml:10:") and "'demo2'" in p for p in problems)
    assert any(p.startswith("p.yaml:14:") and "appears twice" in p for p in problems)
    assert len(problems) == 6


def test_validate_exits_2_and_prints_every_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "promoter.yaml"
    path.write_text(BAD)
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count(str(path)) == 7
    assert "6 problem(s)" in err


def test_broken_yaml_is_reported_with_its_place() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_config("daemon:\n  port: [1,\n", source="p.yaml")
    assert caught.value.problems[0].startswith("p.yaml:3:")


def test_durations_accept_numbers_and_units() -> None:
    config = parse_config("daemon: {resyncInterval: 1h30m, pollInterval: 250ms, maxBackoff: 7}")
    assert config.daemon.resync_interval == 5400
    assert config.daemon.poll_interval == 0.25
    assert config.daemon.max_backoff == 7


def test_a_secret_comes_from_the_environment_or_a_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "t").write_text("from-file\n")
    monkeypatch.setenv("PROMOTER_TEST_TOKEN", "from-env")
    config = parse_config(
        f"""
scmProviders:
  - {{name: a, gitlab: {{token: {{fromEnv: PROMOTER_TEST_TOKEN}}}}}}
  - {{name: b, gitlab: {{token: {{fromFile: {tmp_path / "t"}}}}}}}
"""
    )
    tokens = [p.gitlab.token.resolve() for p in config.scm_providers if p.gitlab]
    assert tokens == ["from-env", "from-file"]
    monkeypatch.delenv("PROMOTER_TEST_TOKEN")
    with pytest.raises(ConfigError, match="PROMOTER_TEST_TOKEN is not set"):
        config.scm_providers[0].gitlab.token.resolve()  # type: ignore[union-attr]


def test_schema_prints_valid_json_with_the_camel_case_fields(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert "promotionStrategies" in schema["properties"]


def test_every_configuration_field_is_documented() -> None:
    doc = (ROOT / "docs" / "configuration.md").read_text()
    schema = json_schema()
    fields: set[str] = set()

    def walk(node: object) -> None:
        if isinstance(node, dict):
            for name in node.get("properties") or {}:
                fields.add(name)
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(schema)
    blocks = re.findall(r"```.*?```", doc, flags=re.S)
    prose = re.sub(r"```.*?```", "", doc, flags=re.S)
    spans = [*blocks, *re.findall(r"`([^`]+)`", prose)]
    documented = {word for span in spans for word in re.findall(r"\w+", span)}
    assert fields - documented == set()


def test_copies_of_a_config_each_find_their_own_strategies_by_name() -> None:
    """Kubernetes mode assembles each new configuration as a copy of one base: a strategy
    whose spec changed, the count unchanged, must be found as it is now."""
    from promoter.config import Config, PromotionStrategy

    def strategy(*branches: str) -> PromotionStrategy:
        spec = {"name": "app", "repository": "r", "environments": [{"branch": b} for b in branches]}
        return PromotionStrategy.model_validate(spec)

    base = Config.model_validate({})
    before = base.model_copy(update={"promotion_strategies": [strategy("dev")]})
    after = base.model_copy(update={"promotion_strategies": [strategy("dev", "prod")]})
    assert [e.branch for e in before.strategy("app").environments] == ["dev"]  # type: ignore[union-attr]
    assert [e.branch for e in after.strategy("app").environments] == ["dev", "prod"]  # type: ignore[union-attr]
    assert [e.branch for e in before.strategy("app").environments] == ["dev"]  # type: ignore[union-attr]
    after.promotion_strategies.append(strategy("qa").model_copy(update={"name": "other"}))
    assert after.strategy("other") is not None
    assert base.strategy("app") is None
