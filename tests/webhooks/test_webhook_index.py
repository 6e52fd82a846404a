"""The strategy index: which configured repository an event names, and which strategies it wakes."""

from __future__ import annotations

import pytest

from tests.webhooks.helpers import make_config
from webhooks.events import RepoIdentity
from webhooks.index import StrategyIndex, normalise_url


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("https://github.com/Codertocat/Hello-World.git", "github.com/codertocat/hello-world"),
        ("https://github.com/Codertocat/Hello-World", "github.com/codertocat/hello-world"),
        ("git@github.com:Codertocat/Hello-World.git", "github.com/codertocat/hello-world"),
        ("ssh://git@github.com:22/Codertocat/Hello-World.git", "github.com/codertocat/hello-world"),
        ("git://github.com/Codertocat/Hello-World.git", "github.com/codertocat/hello-world"),
        ("https://user:pw@gitlab.example:8443/a/b/c.git/", "gitlab.example/a/b/c"),
        ("/srv/git/demo.git", None),
        ("./demo", None),
        ("https://github.com/", None),
    ],
)
def test_remote_urls_are_normalised_to_host_and_path(url: str, normal: str | None) -> None:
    assert normalise_url(url) == normal


def _github(path: str = "", *urls: str) -> RepoIdentity:
    return RepoIdentity("github", path, None, urls)


def test_a_repository_is_found_by_url_then_by_path() -> None:
    index = StrategyIndex(make_config())
    assert index.repositories(_github("", "git@github.com:codertocat/hello-world.git")) == (
        "hello",
    )
    assert index.repositories(_github("CODERTOCAT/hello-world")) == ("hello",)
    assert index.repositories(_github("codertocat/other", "https://github.com/x/y.git")) == ()


def test_a_gitlab_event_never_matches_a_github_repository_of_the_same_path() -> None:
    index = StrategyIndex(make_config())
    assert index.repositories(RepoIdentity("gitlab", "Codertocat/Hello-World")) == ()
    assert index.repositories(RepoIdentity("gitlab", "mike/diaspora")) == ("diaspora",)


def test_two_configured_repositories_with_one_url_are_both_found() -> None:
    config = make_config()
    twin = config.repositories[0].model_copy(update={"name": "hello-twin"})
    config = config.model_copy(update={"repositories": [*config.repositories, twin]})
    index = StrategyIndex(config)
    assert index.repositories(_github("Codertocat/Hello-World")) == ("hello", "hello-twin")


def test_branches_map_to_the_strategies_that_watch_them() -> None:
    index = StrategyIndex(make_config())
    assert index.for_push("hello", "master") == {"hello-app"}
    assert index.for_push("hello", "environment/dev-next") == {"hello-app"}
    assert index.for_push("hello", "infra/dev") == {"hello-infra"}
    assert index.for_push("hello", "feature") == frozenset()
    assert index.strategies("hello") == {"hello-app", "hello-infra"}


def test_promotion_and_revert_pull_requests_map_to_their_strategy() -> None:
    index = StrategyIndex(make_config())
    assert index.for_pull_request("hello", "environment/dev-next", "environment/dev") == {
        "hello-app"
    }
    assert index.for_pull_request("hello", "environment/prod-revert-abc1234", "x") == {"hello-app"}
    assert index.for_pull_request("hello", "feature", "master") == set()


def test_the_pipeline_gate_key_comes_from_the_repositorys_gitlab_provider() -> None:
    index = StrategyIndex(make_config())
    assert index.pipeline_gate_key("gitlab-test") == "ci"
    assert index.pipeline_gate_key("hello-gl") == "pipeline"
