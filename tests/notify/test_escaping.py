"""What the promoter quotes (a hold reason, a commit subject, a person's name) shows as
written in every sink's markup, and links only where the promoter put a link: Slack's
mrkdwn, Teams' card, and Markdown (PR comments and revert PR bodies use the same
``markup.markdown``; tests/e2e/test_revert.py reads a break-glass comment) and GitHub
check runs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from markdown_it import MarkdownIt

from promoter import markup
from promoter.config.notifications import Notifications
from promoter.daemon import ActionEvent
from promoter.models import CommitStatus, Phase
from promoter.notify import Notifier
from scm_plugins.github.statuses import _check_run

HOSTILE = [
    "<!channel> deploy now",
    "<!here|here> and <@U024BE7LH>",
    "<https://evil.example|click here>",
    "tom & jerry <b>bold</b> &amp; &lt;",
    "[click here](https://evil.example) ![x](https://evil.example/x.png)",
    "<img src=x onerror=alert(1)> <script>alert(1)</script>",
    "# heading\n- a list\n> a quote\n```\ncode\n```",
    "*bold* _italic_ ~strike~ `code` <!-- hidden -->",
    "ping @acme/security and @ada, see www.evil.example or https://evil.example/x",
]
DASHBOARD = "http://promoter.test/dashboard/guestbook"


def slack_message(tmp_path: Path, reason: str) -> dict[str, Any]:
    config = Notifications.model_validate(
        {"sinks": [{"name": "s", "url": "http://127.0.0.1:9/h", "format": "slack"}]}
    )
    notifier = Notifier(config, state_dir=tmp_path, public_url="http://promoter.test")
    message = f"held {'a' * 7}: held by mallory: {reason}"
    notifier(ActionEvent("held", "guestbook", "environment/prod", message, "a" * 40, None))
    body: dict[str, Any] = json.loads(notifier.queue.pending()[0].body)
    return body


def test_slack_shows_a_hostile_reason_as_text_and_links_only_the_dashboard(
    tmp_path: Path,
) -> None:
    for reason in HOSTILE:
        body = slack_message(tmp_path / str(HOSTILE.index(reason)), reason)
        block = body["blocks"][0]["text"]
        assert block["type"] == "mrkdwn" and block["verbatim"] is True
        for text in (block["text"], body["text"]):
            control = text.replace(f"<{DASHBOARD}|dashboard>", "")
            assert "<" not in control and ">" not in control, text
            assert markup.slack(reason) in text
        assert block["text"].count("<") == 1  # the one link is the promoter's
        assert body["unfurl_links"] is False


def test_a_channel_ping_and_a_disguised_link_do_not_survive(tmp_path: Path) -> None:
    text = slack_message(tmp_path, "<!channel> <https://evil.example|click here>")["text"]
    assert "&lt;!channel&gt; &lt;https://evil.example|click here&gt;" in text


def test_teams_quotes_as_text_runs_that_no_markdown_reaches(tmp_path: Path) -> None:
    config = Notifications.model_validate(
        {"sinks": [{"name": "s", "url": "http://127.0.0.1:9/h", "format": "teams"}]}
    )
    notifier = Notifier(config, state_dir=tmp_path, public_url="http://promoter.test")
    reason = HOSTILE[4]
    notifier(ActionEvent("held", "guestbook", "environment/prod", reason, "a" * 40, None))
    card = json.loads(notifier.queue.pending()[0].body)["attachments"][0]["content"]
    assert {block["type"] for block in card["body"]} == {"RichTextBlock"}
    runs = [run for block in card["body"] for run in block["inlines"]]
    assert {run["type"] for run in runs} == {"TextRun"}
    assert runs[-1]["text"] == reason
    assert [a["url"] for a in card["actions"]] == [DASHBOARD]


MD = MarkdownIt("commonmark")


def rendered(text: str) -> str:
    html: str = MD.render(text)
    return html


@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=["Cs"]), max_size=80))
def test_markdown_escaping_keeps_any_text_as_written(text: str) -> None:
    html = rendered(f"quoted: {markup.markdown(text)}")
    for tag in ("<a ", "<img", "<em>", "<strong>", "<code>", "<h1", "<ul>", "<ol>", "<blockquote>"):
        assert tag not in html
    assert html.startswith("<p>quoted: ") or html.startswith("<p>quoted:")


def test_markdown_escaping_of_hostile_reasons() -> None:
    for reason in HOSTILE:
        escaped = markup.markdown(reason)
        html = rendered(escaped)
        assert "<a " not in html and "<img" not in html and "<script" not in html, html
        assert "://" not in escaped and "www." not in escaped.lower()
        assert "@acme" not in escaped and "@ada" not in escaped


def test_a_github_check_run_summary_is_markdown_made_harmless() -> None:
    status = CommitStatus(key="promoter/holds", phase=Phase.FAILURE, description=HOSTILE[4])
    summary = _check_run("a" * 40, status)["output"]["summary"]
    assert "<a " not in rendered(summary) and "<img" not in rendered(summary)
