"""The words of a promotion: PR title, body and labels, closing comments (a merge's message
is ``merging.merge_action``'s).

Everything here is deterministic for identical input, so that the reconciler can
compare the desired text with the PR's and update it only when it really changed.
The body ends with a hidden metadata block that ``read_metadata`` parses back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import NamedTuple

from promoter.engine.core.actions import PREVIOUS_ENVIRONMENT_KEY
from promoter.engine.core.dag import upstreams_of
from promoter.engine.core.snapshot import Snapshot
from promoter.markup import markdown
from promoter.models import DryCommit

METADATA_MARKER = "<!-- promoter:metadata"
MAX_CHANGELOG_ENTRIES = 100
"""More entries than this are summarised, to stay far below the SCMs' body limits."""

_WHITESPACE = re.compile(r"\s+")


class PullRequestText(NamedTuple):
    """What a promotion PR should say."""

    title: str
    body: str
    labels: tuple[str, ...]


def short(sha: str) -> str:
    """The first 7 characters of a SHA: how every message names a commit."""
    return sha[:7]


def unique(keys: Iterable[str]) -> tuple[str, ...]:
    """``keys`` without repeats, first occurrence wins (global and per-environment keys)."""
    return tuple(dict.fromkeys(keys))


def title(*, dry_sha: str, branch: str) -> str:
    return f"Promote {short(dry_sha)} to {branch}"


def required_gates(snapshot: Snapshot, index: int) -> tuple[str, ...]:
    """The gates a promotion into environment ``index`` waits for, by key (no live state)."""
    keys = list(snapshot.environments[index].proposed_keys)
    if upstreams_of(snapshot, index):
        keys.append(PREVIOUS_ENVIRONMENT_KEY)
    return unique(keys)


def body(
    *,
    strategy: str,
    branch: str,
    dry_sha: str,
    active_dry_sha: str,
    changelog: Sequence[DryCommit],
    required_keys: Sequence[str],
) -> str:
    """A markdown changelog, the required gates and the hidden metadata block."""
    lines = [
        f"Promotes `{short(dry_sha)}` to `{branch}`, which is on `{short(active_dry_sha)}`.",
        "",
        "### Changes",
        "",
    ]
    lines.extend(_changelog_line(commit) for commit in changelog[:MAX_CHANGELOG_ENTRIES])
    if len(changelog) > MAX_CHANGELOG_ENTRIES:
        lines.append(f"- … and {len(changelog) - MAX_CHANGELOG_ENTRIES} more commits")
    if not changelog:
        lines.append("- (no dry commits listed)")
    lines += ["", "### Required gates", ""]
    lines.extend(f"- `{key}`" for key in required_keys)
    if not required_keys:
        lines.append("- (none)")
    metadata = {
        "strategy": strategy,
        "environment": branch,
        "drySha": dry_sha,
        "activeDrySha": active_dry_sha,
    }
    lines += ["", f"{METADATA_MARKER} {_metadata_json(metadata)} -->", ""]
    return "\n".join(lines)


def for_environment(
    snapshot: Snapshot, index: int, *, dry_sha: str, active_dry_sha: str
) -> PullRequestText:
    """The title, body and labels of the promotion PR of environment ``index``.

    The labels are the strategy's, less those the SCM did not keep lately
    (``snapshot.unheld_labels``): asking for one again on every pass would rewrite the PR
    in a loop; it is asked for again once its backoff ends.
    """
    env = snapshot.environments[index]
    return PullRequestText(
        title=title(dry_sha=dry_sha, branch=env.branch),
        body=body(
            strategy=snapshot.strategy,
            branch=env.branch,
            dry_sha=dry_sha,
            active_dry_sha=active_dry_sha,
            changelog=env.changelog,
            required_keys=required_gates(snapshot, index),
        ),
        labels=unique(n for n in snapshot.labels if n not in snapshot.unheld_labels),
    )


def closing_comment(reason: str) -> str:
    """The comment left on a PR the promoter closes; ``reason`` is a plain sentence."""
    return f"{reason[:1].upper()}{reason[1:]}. The promoter closed this pull request."


def same_body(left: str, right: str) -> bool:
    """Bodies compare equal across the SCMs' line-ending and trailing-space rewrites."""
    return _normalise(left) == _normalise(right)


def read_metadata(text: str | None) -> dict[str, object] | None:
    """The metadata block of a PR body, or None when there is none or it is unreadable."""
    if not isinstance(text, str):
        return None
    start = text.rfind(METADATA_MARKER)
    if start < 0:
        return None
    end = text.find("-->", start)
    if end < 0:
        return None
    try:
        value = json.loads(text[start + len(METADATA_MARKER) : end])
    except (ValueError, RecursionError):
        return None
    if not isinstance(value, dict):
        return None
    return {str(key): item for key, item in value.items()}


def _changelog_line(commit: DryCommit) -> str:
    sha = f"[`{short(commit.sha)}`]({commit.url})" if commit.url else f"`{short(commit.sha)}`"
    subject = _one_line(commit.subject) or "(no subject)"
    author = _one_line(commit.author)
    return f"- {sha} {subject}" + (f" ({author})" if author else "")


def _one_line(text: str) -> str:
    """Whitespace collapsed, then escaped for Markdown (``promoter.markup``): a subject or
    an author shows as written and can neither open an HTML comment, link nor mention."""
    return markdown(_WHITESPACE.sub(" ", text).strip())


def _metadata_json(metadata: dict[str, str]) -> str:
    # '<' and '>' only occur inside JSON strings, where \u escapes keep them from
    # ending the HTML comment early.
    text = json.dumps(metadata, separators=(",", ":"), ensure_ascii=True)
    return text.replace("<", "\\u003c").replace(">", "\\u003e")


def _normalise(text: str) -> str:
    lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
    return "\n".join(line.rstrip() for line in lines).strip()
