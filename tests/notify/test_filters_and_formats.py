"""Which sinks a notification goes to, and the Slack and Teams bodies."""

from __future__ import annotations

import json
from pathlib import Path

from promoter.config.notifications import Notifications
from promoter.daemon.events import ActionEvent
from promoter.notify import Notifier


def notifier(tmp_path: Path, **sink: object) -> Notifier:
    config = Notifications.model_validate(
        {"sinks": [{"name": "s", "url": "http://127.0.0.1:9/h", **sink}], "blockedAfter": "60s"}
    )
    return Notifier(config, state_dir=tmp_path, public_url="http://promoter.test")


def event(kind: str, env: str = "environment/prod", strategy: str = "guestbook") -> ActionEvent:
    return ActionEvent(kind, strategy, env, f"{kind} happened", "a" * 40, 3)


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


def test_a_promotion_open_longer_than_the_threshold_is_reported_blocked_once(
    tmp_path: Path,
) -> None:
    n = notifier(tmp_path)
    n(event("opened", env="environment/dev"))
    n(event("opened", env="environment/staging"))
    n(event("merged", env="environment/staging"))
    opened = n._open[("guestbook", "environment/dev")].opened
    assert n.check_blocked(now=opened + 30) == []
    blocked = n.check_blocked(now=opened + 61)
    assert [(b.event, b.environment) for b in blocked] == [("promotion.blocked", "environment/dev")]
    assert n.check_blocked(now=opened + 120) == []


def test_slack_sinks_get_text_and_mrkdwn_blocks(tmp_path: Path) -> None:
    n = notifier(tmp_path, format="slack")
    n(event("merged"))
    body = json.loads(n.queue.pending()[0].body)
    assert body["text"].startswith("[guestbook] promotion.merged on environment/prod aaaaaaaa")
    assert body["blocks"][0]["text"]["type"] == "mrkdwn"
    assert (
        "<http://promoter.test/dashboard/guestbook|dashboard>" in body["blocks"][0]["text"]["text"]
    )


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
    assert card["actions"][0]["url"] == "http://promoter.test/dashboard/guestbook"
