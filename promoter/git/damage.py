"""What git says when it can no longer read a repository, as opposed to a refusal.

A mirror whose files were cut short or garbled (a full disk, a crash mid-write, a
person's mistake) fails every command with one of these, for ever; the mirror then
clones itself afresh (``RemoteCopy._heal``). An unknown commit, a refused push, a lock
or a read-only file system is no damage: those pass, or are retried as they are.
"""

from __future__ import annotations

SIGNS = (
    "not a git repository",
    "'origin' does not appear to be a git repository",
    "is corrupt",
    "corrupt loose object",
    "packfile",
    "index file",
    "unterminated line in",
    "unexpected line in",
    "bad config",
    "inflate:",
    "object file",
    "garbage at end of loose object",
    "unknown object type",
    "failed to read object",
    "invalid sha1 pointer",
    "bad tree object",
    "broken link from",
)
"""Parts of git's messages (lower case) that mean a repository's own files are damaged."""


def damaged(message: str) -> bool:
    """Whether git's ``message`` says the repository it ran in is damaged."""
    text = message.lower()
    return any(sign in text for sign in SIGNS)
