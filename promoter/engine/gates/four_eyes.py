"""Four eyes: whose approval of a promotion PR does not count, and why. Pure.

The PR's author never approves their own pull request. With ``excludeChangeAuthors``
(the default) neither do the authors and co-authors of the dry commits being promoted (a
co-author is any ``Co-authored-by:`` line anywhere in a message, in any case, blank line
before it or not: the mirror reads them so, leaning to exclusion).
A reviewer is known by the SCM login (and, where the SCM gives it, a display name); a
dry commit's author by git's name and e-mail. They are taken for the same person when,
ignoring case:

- the e-mail's local part is the login, after an SCM's numeric prefix (GitHub's
  ``12345+ada@users.noreply.github.com``, GitLab's ``12345-ada@users.noreply.gitlab.com``;
  Forgejo's ``ada@noreply.example.org`` and a plain ``ada@example.com`` need none);
- or the whole e-mail is the login (Azure DevOps names a person by the unique name they
  sign in with, ``ada@example.com``);
- or the author's name is the login, or the reviewer's display name.

A wrong match only leaves an approval out (more approvals are needed); a missed one
would let an author approve their own change, so the rule leans to matching.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from promoter.models import Author, PullRequest, Review

_SCM_PREFIX = re.compile(r"^\d+[+-]")
"""The numeric user id GitHub (``+``) and GitLab (``-``) put before a noreply address's login."""


def _fold(text: str) -> str:
    return text.strip().casefold()


def login_of(email: str) -> str:
    """The login an e-mail address stands for: its local part, without an SCM's id prefix."""
    local = email.strip().rpartition("@")[0] if "@" in email else ""
    return _fold(_SCM_PREFIX.sub("", local))


def is_author(review: Review, author: Author) -> bool:
    """Whether ``review``'s reviewer is taken for ``author`` (see the module's rules)."""
    return same_person(review.user, author, review.name)


def same_person(user: str, author: Author, name: str = "") -> bool:
    """Whether the SCM user ``user`` (display name ``name``) is taken for ``author``."""
    login = _fold(user)
    if not login:
        return False
    names = {login, _fold(name)} - {""}
    email = _fold(author.email)
    return login_of(author.email) == login or email == login or _fold(author.name) in names


def not_asked(user: str, pr: PullRequest | None, authors: Iterable[Author] | None) -> str | None:
    """Why ``user`` is not asked to review ``pr`` (their approval would not count), or None:
    the PR's opener, or (as far as the change's authors are known) one of them."""
    if pr is not None and pr.author and _fold(pr.author) == _fold(user):
        return "opened the pull request"
    if any(same_person(user, author) for author in authors or ()):
        return "wrote a change being promoted"
    return None


def not_counted(
    review: Review, pr: PullRequest | None, authors: Iterable[Author] | None
) -> str | None:
    """Why ``review`` does not count toward the approval gate (a phrase), or None."""
    if pr is not None and pr.author and _fold(pr.author) == _fold(review.user):
        return f"{review.user} opened the pull request"
    for author in authors or ():
        if is_author(review, author):
            return f"{review.user} wrote a change being promoted"
    return None
