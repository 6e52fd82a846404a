"""Git access for the promoter: the bare mirror, the hydrator metadata, the git environment."""

from promoter.git.identity import (
    FALLBACK_EMAIL,
    FALLBACK_NAME,
    identity_env,
    redact,
    run_git,
    strip_credentials,
)
from promoter.git.metadata import (
    METADATA_FILE,
    NOTES_REF,
    find_note,
    parse_metadata,
    read_metadata,
    render_metadata,
)
from promoter.git.mirror import GitMirror, PushRejected

__all__ = [
    "FALLBACK_EMAIL",
    "FALLBACK_NAME",
    "METADATA_FILE",
    "NOTES_REF",
    "GitMirror",
    "PushRejected",
    "find_note",
    "identity_env",
    "parse_metadata",
    "read_metadata",
    "redact",
    "render_metadata",
    "run_git",
    "strip_credentials",
]
