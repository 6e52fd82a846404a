"""A token the remote refuses reads as that, not as git's prompt message."""

from __future__ import annotations

from promoter.git.process.runner import git_error


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


def test_a_forbidden_answer_over_https_is_told_as_a_refused_token() -> None:
    stderr = (
        "remote: Write access to repository not granted.\n"
        "fatal: unable to access 'https://github.com/octo/gitops.git/':"
        " The requested URL returned error: 403"
    )
    error = git_error(["push", "origin"], 128, stderr, [])
    assert "the SCM refused the git credentials" in str(error)


def test_a_403_in_a_path_or_a_hook_s_message_keeps_git_s_own_words() -> None:
    """A refused push to a repository under ``/tmp/pytest-7403/``: the hook's reason stays."""
    stderr = (
        "remote: notes are protected\n"
        "To /tmp/pytest-of-root/pytest-7403/test_push0/gitops.git\n"
        " ! [remote rejected] refs/notes/promoter.ledger (pre-receive hook declined)\n"
        "error: failed to push some refs to '/tmp/pytest-of-root/pytest-7403/test_push0/gitops.git'"
    )
    error = git_error(["push", "origin"], 1, stderr, [])
    assert "refused the git credentials" not in str(error)
    assert "notes are protected" in str(error)
