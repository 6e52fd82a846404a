"""Which sinks a notification goes to, and the Slack and Teams bodies."""

from __future__ import annotations

import json
from pathlib import Path

from promoter.config.notifications import Notifications
from promoter.daemon import ActionEvent
from promoter.notify import Notifier, from_action


def notifier(tmp_path: Path, **sink: object) -> Notifier:
    config = Notifications.model_validate(
        {"sinks": [{"name": "s", "url": "http://127.0.0.1:9/h", **sink}], "blockedAfter": "60s"}
    )
    return Notifier(config, state_dir=tmp_path, public_url="http://promoter.test")


def event(kind: str, env: str = "environment/prod", strategy: str = "guestbook") -> ActionEvent:
    return ActionEvent(
        kind,
        strategy,
        env,
        f"{kind} happened",
        "a" * 40,
        3,
        dry_sha="a" * 40,
        hydrated_sha="b" * 40,
        link="https://github.com/acme/gitops/pull/3",
    )


def events_queued(n: Notifier) -> list[str]:
    return [d.event for d in n.queue.pending()]


def test_a_sink_gets_only_the_events_strategies_and_environments_it_names(
    tmp_path: Path,
) -> None:
    n = notifier(
        tmp_path,
        events=["promotion.merged", "revert.opened"],
        strategies=["guestbook"],
        environments=["environment/prod"],
    )
    n(event("merged"))
    n(event("revert"))
    n(event("opened"))  # not subscribed
    n(event("merged", env="environment/dev"))  # other environment
    n(event("merged", strategy="other"))  # other strategy
    n(event("status"))  # never a notification
    assert events_queued(n) == ["promotion.merged", "revert.opened"]


def test_holds_pauses_and_reverts_merged_are_named_for_people(tmp_path: Path) -> None:
    n = notifier(tmp_path)
    for kind in ("held", "paused", "released", "reverted", "opened", "pinned", "announced"):
        n(event(kind))
    assert events_queued(n) == [
        "hold",
        "pause",
        "release",
        "revert.merged",
        "promotion.opened",
        "pin",
        "upcoming",
    ]


def test_a_revert_announces_the_holds_it_sets_as_well_as_itself(tmp_path: Path) -> None:
    n = notifier(tmp_path)
    n(event("revert", env="environment/staging"))
    assert events_queued(n) == ["revert.opened", "hold"]
    hold = json.loads(n.queue.pending()[1].body)["data"]
    assert hold["message"].startswith("held by the revert out of environment/staging")
    assert hold["drySha"] == "a" * 40


def test_every_event_carries_the_dry_and_the_hydrated_sha_and_the_links(tmp_path: Path) -> None:
    n = notifier(tmp_path)
    n(event("opened"))
    data = json.loads(n.queue.pending()[0].body)["data"]
    assert data["drySha"] == "a" * 40
    assert data["hydratedSha"] == "b" * 40
    assert data["pullRequestUrl"] == "https://github.com/acme/gitops/pull/3"
    assert data["url"] == "http://promoter.test/dashboard/guestbook"


def test_slack_sinks_get_text_and_mrkdwn_blocks(tmp_path: Path) -> None:
    n = notifier(tmp_path, format="slack")
    n(event("merged"))
    body = json.loads(n.queue.pending()[0].body)
    assert body["text"].startswith("[guestbook] promotion.merged on environment/prod aaaaaaaa")
    assert body["blocks"][0]["text"]["type"] == "mrkdwn"
    text = body["blocks"][0]["text"]["text"]
    assert "<https://github.com/acme/gitops/pull/3|PR #3>" in text
    assert "<http://promoter.test/dashboard/guestbook|dashboard>" in text


def test_teams_sinks_get_an_adaptive_card(tmp_path: Path) -> None:
    n = notifier(tmp_path, format="teams")
    n(event("revert"))
    body = json.loads(n.queue.pending()[0].body)
    attachment = body["attachments"][0]
    assert attachment["contentType"] == "application/vnd.microsoft.card.adaptive"
    card = attachment["content"]
    assert card["type"] == "AdaptiveCard"
    title = card["body"][0]["inlines"][0]["text"]
    assert title.startswith("[guestbook] revert.opened on environment/prod")
    assert [a["url"] for a in card["actions"]] == [
        "https://github.com/acme/gitops/pull/3",
        "http://promoter.test/dashboard/guestbook",
    ]


def test_a_digest_sink_gets_one_message_per_period_listing_its_events(tmp_path: Path) -> None:
    n = notifier(tmp_path, format="slack", digest="10m")
    n.publish(from_action(event("merged", env="environment/dev"), public_url="")[0], now=0.0)
    n.publish(from_action(event("held"), public_url="")[0], now=5.0)
    assert n.queue.pending() == []
    assert n.flush_digests(now=599.0) == []
    [delivery] = n.flush_digests(now=601.0)
    text = json.loads(delivery.body)["text"]
    assert "2 events" in text
    assert "promotion.merged guestbook environment/dev aaaaaaaa: merged happened" in text
    assert "hold guestbook environment/prod aaaaaaaa: held happened" in text
    assert n.flush_digests(now=1300.0) == []


def test_a_digest_not_yet_due_is_queued_when_the_daemon_stops(tmp_path: Path) -> None:
    n = notifier(tmp_path, digest="1h")
    n(event("merged"))
    assert n.queue.pending() == []
    n.close()
    assert [d.event for d in n.queue.pending()] == ["digest"]
