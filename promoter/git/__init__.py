"""Git for the promoter: the bare mirror per repository, hydrator metadata and the lineage
of commits that merges made, running git.

Every git process goes through ``run_git``; reads of objects go through the mirror's
persistent ``cat-file``.
"""

from promoter.git.credentials import redact, strip_credentials
from promoter.git.identity import FALLBACK_EMAIL, FALLBACK_NAME, identity_env
from promoter.git.lineage import LINEAGE_REF, Lineage
from promoter.git.metadata import (
    METADATA_FILE,
    NOTES_REF,
    find_note,
    parse_metadata,
    read_metadata,
    render_metadata,
)
from promoter.git.mirror import GitMirror, NotesMoved, PushRejected
from promoter.git.runner import git_error, run_git

__all__ = [
    "FALLBACK_EMAIL",
    "FALLBACK_NAME",
    "LINEAGE_REF",
    "METADATA_FILE",
    "NOTES_REF",
    "GitMirror",
    "Lineage",
    "NotesMoved",
    "PushRejected",
    "find_note",
    "git_error",
    "identity_env",
    "parse_metadata",
    "read_metadata",
    "redact",
    "render_metadata",
    "run_git",
    "strip_credentials",
]
