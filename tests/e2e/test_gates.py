"""Built-in gates end to end on the local SCM: a window that opens, an approval, an HTTP check."""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import responses
import yaml
from starlette.testclient import TestClient

from promoter.daemon import ActionEvent
from promoter.wiring import Daemon
from tests.e2e.test_local_promotion import active_dry, env_view, set_status, wait_state
from tests.people import access_yaml, bearer
from tests.support import ENVIRONMENTS, GitOpsRepo, local_config, wait_for


class MovableClock:
    """Real time from a chosen instant; ``jump`` moves it, as if hours went by."""

    def __init__(self, start: datetime) -> None:
        self._lock = threading.Lock()
        self._start, self._t0 = start, time.monotonic()

    def __call__(self) -> datetime:
        with self._lock:
            return self._start + timedelta(seconds=time.monotonic() - self._t0)

    def jump(self, to: datetime) -> None:
        with self._lock:
            self._start, self._t0 = to, time.monotonic()


def run_daemon(
    gitops: GitOpsRepo, tmp_path: Path, prod: str, *, dev: str = "", **kw: Any
) -> Iterator[TestClient]:
    events: list[tuple[ActionEvent, datetime]] = []
    clock = kw.pop("clock", None)
    extra = {"clock": clock} if clock is not None else {}
    access = kw.pop("access", "")
    daemon = Daemon(
        local_config(
            gitops.path,
            tmp_path / "state",
            environments={"prod": prod, "dev": dev},
            access=access,
        ),
        observers=[lambda e: events.append((e, clock() if clock else datetime.now(UTC)))],
        **extra,
    )
    with TestClient(daemon.app) as client:
        client.events = events  # type: ignore[attr-defined]
        wait_state(client, "environment/prod", "up-to-date")
        for branch in ENVIRONMENTS:
            set_status(client, gitops.tip(branch), "health")
        yield client


def to_staging(client: TestClient, gitops: GitOpsRepo, change: str) -> dict[str, Any]:
    """Promote ``change`` through dev and staging; the prod PR's environment view."""
    for branch in ENVIRONMENTS[:2]:
        env = wait_for(lambda b=branch: (e := env_view(client, b))["pullRequest"] and e)
        set_status(client, env["proposed"]["hydratedSha"], "ci")
        wait_for(lambda b=branch: active_dry(client, b) == change, what=f"{branch} at the change")
        set_status(client, gitops.tip(branch), "health")
    prod = wait_for(lambda: (e := env_view(client, "environment/prod"))["pullRequest"] and e)
    set_status(client, prod["proposed"]["hydratedSha"], "ci")
    return prod


@pytest.fixture
def clock() -> MovableClock:
    return MovableClock(datetime(2026, 11, 23, 6, 0, tzinfo=UTC))


@pytest.fixture
def windowed(gitops: GitOpsRepo, tmp_path: Path, clock: MovableClock) -> Iterator[TestClient]:
    prod = "gates: [{window: {allow: [{cron: '0 9 * * *', duration: 1h}]}}]"
    yield from run_daemon(gitops, tmp_path, prod, clock=clock)


def test_prod_waits_for_its_window_and_merges_the_moment_it_opens(
    windowed: TestClient, gitops: GitOpsRepo, clock: MovableClock
) -> None:
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    to_staging(windowed, gitops, change)

    def blocked_on_the_window() -> dict[str, Any] | None:
        env = env_view(windowed, "environment/prod")
        return env if "window opens Mon 09:00 UTC" in env["reason"] else None

    prod = wait_for(blocked_on_the_window, what="prod to wait for its window")
    assert prod["state"] == "blocked"
    assert active_dry(windowed, "environment/prod") != change
    statuses = {s["key"]: s for s in prod["proposed"]["commitStatuses"]}
    assert statuses["promoter/window"]["phase"] == "pending"

    # Three hours later, two seconds before the window opens: one look, then no event at all.
    clock.jump(datetime(2026, 11, 23, 8, 59, 58, tzinfo=UTC))
    windowed.post("/api/v1/refresh", json={"strategy": "guestbook"})
    wait_for(
        lambda: active_dry(windowed, "environment/prod") == change, timeout=15, what="the merge"
    )
    merged_at = next(
        at
        for event, at in windowed.events  # type: ignore[attr-defined]
        if event.kind == "merged" and event.environment == "environment/prod"
    )
    assert (
        datetime(2026, 11, 23, 9, 0, tzinfo=UTC)
        <= merged_at
        < datetime(2026, 11, 23, 9, 0, 5, tzinfo=UTC)
    )


@pytest.fixture
def approving(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    """Prod waits for ada; ada and mallory approve with their own tokens, and this
    machine's caller without a token is the local admin that runs everything else."""
    people = {"ada": ["role: approver"], "mallory": ["role: approver"]}
    access = access_yaml(tmp_path / "tokens", people, anonymous="admin")
    prod = "gates: [{approval: {count: 1, users: [ada]}}]"
    yield from run_daemon(gitops, tmp_path, prod, access=access)


def test_prod_merges_once_the_named_person_approves(
    approving: TestClient, gitops: GitOpsRepo
) -> None:
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    to_staging(approving, gitops, change)
    waiting = wait_for(
        lambda: (e := env_view(approving, "environment/prod"))["reason"].count("approval") and e,
        what="prod to wait for an approval",
    )
    assert "waiting for 1 approval from ada" in waiting["reason"]
    posing = approving.post(
        "/api/v1/strategies/guestbook/approve",
        json={"environment": "prod", "user": "ada"},
        headers=bearer("mallory"),
    )
    assert posing.status_code == 422  # a name in the body is never the approver
    refused = approving.post(
        "/api/v1/strategies/guestbook/approve",
        json={"environment": "prod"},
        headers=bearer("mallory"),
    )
    assert refused.status_code == 200  # an approval is recorded, but mallory does not count
    assert refused.json()["user"] == "mallory"
    time.sleep(0.5)
    assert active_dry(approving, "environment/prod") != change
    answer = approving.post(
        "/api/v1/strategies/guestbook/approve", json={"environment": "prod"}, headers=bearer("ada")
    )
    assert answer.status_code == 200, answer.text
    assert answer.json()["user"] == "ada"
    wait_for(lambda: active_dry(approving, "environment/prod") == change, what="the merge")


def test_approving_with_no_open_pull_request_is_refused(approving: TestClient) -> None:
    answer = approving.post(
        "/api/v1/strategies/guestbook/approve", json={"environment": "prod"}, headers=bearer("ada")
    )
    assert answer.status_code == 409
    assert "no open pull request" in answer.json()["error"]


CHECK = re.compile(r"http://checks\.example\.invalid/verify/([0-9a-f]{40})")


@pytest.fixture
def checked(gitops: GitOpsRepo, tmp_path: Path) -> Iterator[TestClient]:
    url = "http://checks.example.invalid/verify/{sha}"
    prod = f"gates: [{{name: smoke, http: {{url: '{url}', expression: verdict, interval: 0.2s}}}}]"
    asked: list[str] = []

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        match = CHECK.match(request.url)
        assert match is not None
        asked.append(match.group(1))
        verdict = "pending" if len(asked) < 3 else "success"
        return 200, {"content-type": "application/json"}, json.dumps({"verdict": verdict})

    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.GET, CHECK, answer)
        for client in run_daemon(gitops, tmp_path, prod):
            client.asked = asked  # type: ignore[attr-defined]
            yield client


def test_prod_merges_when_its_http_check_turns_green(
    checked: TestClient, gitops: GitOpsRepo
) -> None:
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    prod = to_staging(checked, gitops, change)
    head = prod["proposed"]["hydratedSha"]
    wait_for(lambda: active_dry(checked, "environment/prod") == change, what="the merge")
    asked: list[str] = checked.asked  # type: ignore[attr-defined]
    assert len(asked) >= 3 and set(asked) == {head}  # asked about the proposed commit only


ARGOCD_APP = Path(__file__).resolve().parent.parent / "fixtures/argocd/application.yaml"


@pytest.fixture
def argo_watched(
    gitops: GitOpsRepo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[TestClient]:
    """dev's health also comes from Argo CD: the genuine Application, pointed at dev."""
    monkeypatch.setenv("ARGOCD_TOKEN", "t0ken-for-argocd")
    app = yaml.safe_load(ARGOCD_APP.read_text())
    app["spec"]["source"]["targetRevision"] = "environment/dev"
    state = {"app": app}
    dev = (
        "gates: [{argocd: {server: 'https://argocd.example.com',"
        " token: {fromEnv: ARGOCD_TOKEN}, interval: 0.2s}}]"
    )

    def answer(request: Any) -> tuple[int, dict[str, str], str]:
        return 200, {"content-type": "application/json"}, json.dumps({"items": [state["app"]]})

    with responses.RequestsMock(assert_all_requests_are_fired=False) as mock:
        mock.add_callback(responses.GET, "https://argocd.example.com/api/v1/applications", answer)
        for client in run_daemon(gitops, tmp_path, "", dev=dev):
            client.argo = state  # type: ignore[attr-defined]
            yield client


def test_argo_cd_health_of_dev_gates_staging_and_is_published_on_dev(
    argo_watched: TestClient, gitops: GitOpsRepo
) -> None:
    state = argo_watched.argo  # type: ignore[attr-defined]
    change = gitops.change("1.1.0", "Bump guestbook to 1.1.0")
    dev = wait_for(lambda: (e := env_view(argo_watched, "environment/dev"))["pullRequest"] and e)
    set_status(argo_watched, dev["proposed"]["hydratedSha"], "ci")
    wait_for(
        lambda: active_dry(argo_watched, "environment/dev") == change, what="dev at the change"
    )
    running = gitops.tip("environment/dev")
    set_status(argo_watched, running, "health")
    state["app"]["status"]["sync"]["revision"] = running
    state["app"]["status"]["health"]["status"] = "Degraded"

    def staging_blocked_by_argo() -> dict[str, Any] | None:
        env = env_view(argo_watched, "environment/staging")
        failed = f"promoter/argocd failed on {running[:7]}, the commit environment/dev runs"
        return env if failed in env["reason"] else None

    wait_for(staging_blocked_by_argo, what="staging to wait for Argo CD's verdict on dev")
    dev_view = env_view(argo_watched, "environment/dev")
    published = {s["key"]: s for s in dev_view["active"]["commitStatuses"]}
    assert published["promoter/argocd"]["phase"] == "failure"
    assert "velero-test Degraded" in published["promoter/argocd"]["description"]

    state["app"]["status"]["health"]["status"] = "Healthy"
    staging = wait_for(
        lambda: (
            (e := env_view(argo_watched, "environment/staging"))["pullRequest"]
            and "promoter/argocd" not in e["reason"]
            and e
        ),
        what="staging to see dev healthy",
    )
    set_status(argo_watched, staging["proposed"]["hydratedSha"], "ci")
    wait_for(lambda: active_dry(argo_watched, "environment/staging") == change, what="staging")
