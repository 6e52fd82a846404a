"""Where a sign-in sends the browser back to, on its own (``local_path``): a path of this
daemon, or ``/`` for anything a browser could read as another site or another page: no
leading slash, two or three of them, a scheme, a backslash, a control character."""

from __future__ import annotations

import pytest

from promoter.http.access.sign_in import local_path


@pytest.mark.parametrize(
    "path", ["/", "/strategies/guestbook", "/strategies/a?env=dev#top", "/search?q=guest book"]
)
def test_a_path_of_this_daemon_is_where_the_browser_goes_back_to(path: str) -> None:
    assert local_path(path) == path


@pytest.mark.parametrize(
    "path",
    [
        "strategies/guestbook",
        "evil.example/steal",
        "https://evil.example/steal",
        "//evil.example/steal",
        "///evil.example/steal",
        "/\\evil.example/steal",
        "/\t/evil.example/steal",
        "/strategies\x01",
        "",
    ],
    ids=[
        "relative",
        "host-like",
        "scheme",
        "two-slashes",
        "three-slashes",
        "backslash",
        "tab",
        "control",
        "empty",
    ],
)
def test_anything_a_browser_could_read_as_another_site_goes_back_to_the_root(path: str) -> None:
    assert local_path(path) == "/"
