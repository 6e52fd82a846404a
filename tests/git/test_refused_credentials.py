"""A token the remote refuses reads as that, not as git's prompt message."""

from __future__ import annotations

from promoter.git.runner import git_error


def test_git_asking_for_a_username_is_told_as_a_refused_token() -> None:
    stderr = (
        "fatal: could not read Username for 'https://gitlab.example.com': terminal prompts disabled"
    )
    error = git_error(["fetch", "origin"], 128, stderr, [])
    assert "the SCM refused the git credentials" in str(error)
    assert "could not read Username" in str(error)  # what git said, for the curious


def test_other_failures_keep_git_s_own_words() -> None:
    error = git_error(["fetch"], 128, "fatal: repository 'x' not found", [])
    assert "refused" not in str(error)
