"""Stop means stop on GitLab's merge trains, end to end (daemon, GitLab plugin, fake GitLab,
real git): a freeze, a hold or a pin takes the promotion MR off its train (its auto-merge
cancelled), says so on the MR and in the API, and nothing merges while it lasts, not even
when the train's pipeline passes; lifted, the MR is added to the train again, once. A
train that merged before the cancel landed is a race: in the ledger, the API and the MR."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from promoter.config.loader import parse_config
from promoter.wiring import Daemon
from tests.support import GitOpsRepo, wait_for

from . import fake_gitlab_trains
from .conftest import PROJECT, TOKEN, TOKEN_ENV
from .fake_gitlab import FakeGitLab
from .test_end_to_end import HOOK_ENV, HOOK_TOKEN, PROJECT_ID, Harness, config_text

DEV = "environment/dev"
OPS = "/api/v1/strategies/guestbook/"
CANCEL = "cancel_merge_when_pipeline_succeeds"
Request = Callable[[Harness], None]


def post(h: Harness, path: str, body: dict[str, Any]) -> None:
    answer = h.client.post(path, json=body)
    assert answer.status_code == 200, answer.text


def pin(h: Harness) -> None:
    post(h, OPS + "pin", {"environment": "dev", "drySha": h.active_dry(DEV), "reason": "keep"})


def freeze(h: Harness) -> None:
    body = {"strategy": "guestbook", "environment": "dev", "reason": "incident"}
    post(h, "/api/v1/freeze", body)


STOPS: dict[str, tuple[Request, Request, str]] = {
    "freeze": (
        freeze,
        lambda h: post(h, "/api/v1/unfreeze", {"strategy": "guestbook", "environment": "dev"}),
        "frozen by",
    ),
    "hold": (
        lambda h: post(h, OPS + "hold", {"environment": "dev", "reason": "bad build"}),
        lambda h: post(h, OPS + "release", {"environment": "dev"}),
        "is held in environment/dev",
    ),
    "pin": (pin, lambda h: post(h, OPS + "unpin", {"environment": "dev"}), "is pinned to"),
}


@pytest.fixture
def riding(
    tmp_path: Path, genuine_fixtures: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[tuple[Harness, int]]:
    """The daemon over a project with merge trains, dev's MR of 1.1.0 on the train."""
    monkeypatch.setenv(TOKEN_ENV, TOKEN)
    monkeypatch.setenv(HOOK_ENV, HOOK_TOKEN)
    gitops = GitOpsRepo.create(tmp_path)
    fake = FakeGitLab(fixtures=genuine_fixtures, token=TOKEN)
    fake.add_project(PROJECT, git_dir=gitops.path, project_id=PROJECT_ID).merge_trains = True
    hook = json.loads(
        (genuine_fixtures / "gitlab" / "webhooks" / "go-gitlab" / "pipeline.json").read_text()
    )
    with fake:
        daemon = Daemon(parse_config(config_text(gitops.path, tmp_path / "state", fake.url)))
        with TestClient(daemon.app) as client:
            h = Harness(daemon.runtime, client, fake, gitops, hook)
            h.wait_state("environment/prod", "up-to-date")
            gitops.change("1.1.0", "Bump guestbook to 1.1.0")
            mr = h.open_mr(DEV)
            h.pipeline(DEV, "success")
            project = fake.projects[PROJECT]
            wait_for(lambda: mr["iid"] in project.train, what="the MR on the train")
            yield h, mr["iid"]


def requests(h: Harness, tail: str) -> int:
    return sum(1 for m, p in h.fake.requests if m == "POST" and p.endswith(tail))


def notes(h: Harness, iid: int) -> list[str]:
    return [n["body"] for n in h.fake.projects[PROJECT].notes if n["noteable_iid"] == iid]


@pytest.mark.parametrize("kind", list(STOPS))
def test_a_stop_takes_the_mr_off_the_train_and_lifting_it_adds_it_once(
    riding: tuple[Harness, int], kind: str
) -> None:
    h, iid = riding
    stop, lift, words = STOPS[kind]
    project = h.fake.projects[PROJECT]
    stop(h)
    wait_for(lambda: iid not in project.train, what="off the train")
    env = wait_for(
        lambda: ((e := h.env(DEV))["mergeQueue"] or {}).get("withdrawn") and e,
        what="the API says so",
    )
    assert env["state"] == "blocked" and words in env["reason"]
    assert f"pull request #{iid} is out of the merge queue until every gate" in env["reason"]
    told = wait_for(lambda: notes(h, iid), what="the MR told")
    assert "took this pull request out of the merge queue" in told[-1] and words in told[-1]
    fake_gitlab_trains.pipeline_done(h.fake, project, iid, "success")  # off: nothing merges
    h.settle()
    assert project.mrs[iid]["state"] == "opened"
    assert requests(h, CANCEL) == 1

    lift(h)
    wait_for(lambda: iid in project.train, what="on the train again")
    h.settle()
    assert requests(h, f"/merge_trains/merge_requests/{iid}") == 2  # at first, and lifted
    change = h.env(DEV)["proposed"]["drySha"]
    fake_gitlab_trains.pipeline_done(h.fake, project, iid, "success")
    wait_for(lambda: h.active_dry(DEV) == change, what="dev promoted by the train")
    assert requests(h, f"/merge_trains/merge_requests/{iid}") == 2


def test_a_train_that_merged_before_the_cancel_landed_is_a_race_shown_everywhere(
    riding: tuple[Harness, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    h, iid = riding
    project = h.fake.projects[PROJECT]
    cancel = fake_gitlab_trains.cancel

    def merged_first(project: Any, number: int) -> Any:
        fake_gitlab_trains.pipeline_done(h.fake, project, number, "success")
        return cancel(project, number)  # nothing left to cancel

    monkeypatch.setattr(fake_gitlab_trains, "cancel", merged_first)
    freeze(h)
    env = wait_for(lambda: (e := h.env(DEV))["queueRaces"] and e, what="the race in the API")
    assert env["queueRaces"][0]["pr"] == iid and "frozen by" in env["queueRaces"][0]["reason"]
    assert project.mrs[iid]["state"] == "merged"
    told = wait_for(lambda: notes(h, iid), what="the MR told")
    assert "merged this pull request before the promoter could take it out" in told[-1]
