"""The session cookie on its own: ``Secure`` with the ``__Host-`` prefix over https, an end
after its time (an injected clock), and nothing read from a changed or truncated value;
deleted with the attributes it was set with; signed alike by every daemon given the same
key, as compact JSON in unpadded URL-safe base64; the callback from the public URL."""

from __future__ import annotations

import hashlib
import hmac
from pathlib import Path

import pytest
from starlette.requests import Request
from starlette.responses import Response

from promoter.config import Oidc
from promoter.http.access import sessions as sessions_module
from promoter.http.access.sessions import Remembered, Sessions, Signer, _b64
from promoter.http.access.sign_in import SignIn

KEY = b"k" * 32


def request_with(cookies: dict[str, str]) -> Request:
    header = "; ".join(f"{k}={v}" for k, v in cookies.items()).encode()
    scope = {"type": "http", "method": "GET", "path": "/", "headers": [(b"cookie", header)]}
    return Request(scope)


def oidc(issuer: str = "https://idp.example.com") -> Oidc:
    return Oidc.model_validate({"issuer": issuer, "clientId": "promoter"})


def test_over_https_the_cookie_is_secure_host_only_httponly_and_lax() -> None:
    sign_in = SignIn.from_config(oidc(), public_url="https://promoter.example.com", grants=[])
    sessions = sign_in.sessions
    assert sessions.session_cookie == "__Host-promoter-session"
    assert sessions.pending_cookie == "__Host-promoter-sign-in"
    _, value = sessions.start("ana@example.com", ("release-managers",))
    response = Response()
    sessions.set(response, sessions.session_cookie, value, sessions.ttl)
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("__Host-promoter-session=")
    for attribute in (
        "Secure",
        "HttpOnly",
        "SameSite=lax",
        "Path=/",
        f"Max-Age={int(sessions.ttl)}",
    ):
        assert attribute in cookie
    assert "Domain" not in cookie


def test_a_cookie_is_deleted_with_the_attributes_it_was_set_with() -> None:
    sign_in = SignIn.from_config(oidc(), public_url="https://promoter.example.com", grants=[])
    response = Response()
    sign_in.sessions.clear(response, sign_in.sessions.session_cookie)
    cookie = response.headers["set-cookie"]
    assert cookie.startswith("__Host-promoter-session=") and "Max-Age=0" in cookie
    for attribute in ("Secure", "HttpOnly", "SameSite=lax", "Path=/"):
        assert attribute in cookie
    plain = SignIn.from_config(oidc(), public_url="http://127.0.0.1:8080", grants=[])
    response = Response()
    plain.sessions.clear(response, plain.sessions.session_cookie)
    assert "Secure" not in response.headers["set-cookie"]


def test_over_plain_http_the_cookie_is_not_marked_secure() -> None:
    sign_in = SignIn.from_config(oidc(), public_url="http://127.0.0.1:8080", grants=[])
    assert sign_in.sessions.session_cookie == "promoter-session"
    response = Response()
    sign_in.sessions.set(response, "promoter-session", "v", 60)
    assert "Secure" not in response.headers["set-cookie"]


def test_a_session_ends_after_its_time() -> None:
    now = [1_000.0]
    sessions = Sessions(KEY, ttl=60, secure=False, clock=lambda: now[0])
    session, value = sessions.start("ana@example.com", ())
    request = request_with({"promoter-session": value})
    assert sessions.read(request) == session
    now[0] += 59
    assert sessions.read(request) == session
    now[0] += 2
    assert sessions.read(request) is None
    assert sessions.sent(request)  # sent, but no session: the caller is told to sign in again


def test_a_changed_or_truncated_cookie_is_no_session() -> None:
    sessions = Sessions(KEY, ttl=60, secure=False)
    _, value = sessions.start("ana@example.com", ("viewers",))
    body, _, mac = value.partition(".")
    _, other = Sessions(KEY, ttl=60, secure=False).start("root@example.com", ("admins",))
    for forged in (
        f"{other.split('.')[0]}.{mac}",  # another payload under this one's MAC
        body,  # no MAC at all
        f"{body}.",
        f"{body}.{mac[:-2]}",
        "%%%.%%%",
        "",
    ):
        assert sessions.read(request_with({"promoter-session": forged})) is None, forged


def test_a_signed_value_with_a_character_outside_base64url_added_or_swapped_is_no_session() -> None:
    """The decoder alone skips a dot, takes ``=`` anywhere and ``+`` or ``/`` for ``-`` or
    ``_``: the same MAC written another way is no value of ours."""
    payload = {"n": "ana@example.com", "g": [], "sid": "three", "csrf": "c", "exp": 2_000.0}
    value = Signer(KEY, "promoter session").dumps(payload)
    body, _, mac = value.partition(".")
    assert "-" in mac and "_" in mac
    sessions = Sessions(KEY, ttl=60, secure=False, clock=lambda: 1_000.0)
    assert sessions.read(request_with({"promoter-session": value})) is not None
    for written in (
        f"{value}..",
        f"{value}=",
        f"{value}=.=",
        f"{body}.{mac[:20]}..{mac[20:]}",
        f"{body}.{mac.replace('-', '+').replace('_', '/')}",
    ):
        assert sessions.read(request_with({"promoter-session": written})) is None, written


def test_a_sign_in_cookie_is_not_a_session_cookie_under_the_same_key() -> None:
    sessions = Sessions(KEY, ttl=60, secure=False)
    _, pending = sessions.begin("/dashboard")
    assert sessions.read(request_with({"promoter-session": pending})) is None


def test_a_sessions_id_and_csrf_token_are_sixteen_and_twenty_four_random_bytes() -> None:
    sessions = Sessions(KEY, ttl=60, secure=False)
    made = [sessions.start("ana@example.com", ())[0] for _ in range(3)]
    assert {(len(s.sid), len(s.csrf)) for s in made} == {(22, 32)}  # URL-safe base64
    assert len({s.sid for s in made}) == len({s.csrf for s in made}) == 3


def test_a_sign_ins_state_nonce_and_verifier_are_random_and_the_verifier_long_enough() -> None:
    sessions = Sessions(KEY, ttl=60, secure=False)
    made = [sessions.begin("/")[0] for _ in range(3)]
    # 24, 24 and 48 random bytes; RFC 7636 asks a verifier of 43 to 128 characters
    assert {(len(p.state), len(p.nonce), len(p.verifier)) for p in made} == {(32, 32, 64)}
    assert len({p.state for p in made}) == len({p.nonce for p in made}) == 3


def test_a_session_is_over_at_the_very_second_it_ends() -> None:
    now = [1_000.0]
    sessions = Sessions(KEY, ttl=60, secure=False, clock=lambda: now[0])
    _, value = sessions.start("ana@example.com", ())
    now[0] += 60
    assert sessions.read(request_with({"promoter-session": value})) is None


def test_a_value_signed_with_our_key_without_a_numeric_expiry_is_no_session() -> None:
    signer = Signer(KEY, "promoter session")
    sessions = Sessions(KEY, ttl=60, secure=False)
    fields = {"n": "ana@example.com", "g": [], "sid": "s", "csrf": "c"}
    for payload in ({**fields}, {**fields, "exp": "9999999999"}, {**fields, "exp": None}):
        value = signer.dumps(payload)
        assert sessions.read(request_with({"promoter-session": value})) is None, payload
    assert signer.loads(signer.dumps({**fields, "exp": 2e9}), now=1e9) is not None
    listed = signer._mac(_b64(b"[1]"))
    assert signer.loads(f"{_b64(b'[1]')}.{_b64(listed)}", now=0) is None  # not an object


def test_ids_are_remembered_until_their_expiry_and_a_full_table_drops_the_expired_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions_module, "MAX_REMEMBERED", 3)
    kept = Remembered()
    assert kept.add("a", until=10, now=0)
    assert not kept.add("a", until=10, now=9.5)  # still remembered: a second use
    assert kept.add("a", until=20, now=10)  # expired at 10: a fresh one
    assert kept.add("b", until=100, now=10) and kept.add("c", until=100, now=10)
    assert kept.add("d", until=100, now=25)  # full: "a", expired, goes first
    assert "a" not in kept and all(k in kept for k in "bcd")
    assert kept.add("e", until=100, now=25)  # full, none expired: the oldest goes
    assert "b" not in kept and all(k in kept for k in "cde")


def test_a_full_table_drops_an_id_at_the_very_second_it_expires(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sessions_module, "MAX_REMEMBERED", 2)
    kept = Remembered()
    assert kept.add("oldest", until=100, now=0) and kept.add("ending", until=10, now=0)
    assert kept.add("new", until=100, now=10)  # "ending" is over at 10: it goes, not "oldest"
    assert "ending" not in kept and "oldest" in kept and "new" in kept


def test_a_session_that_fills_its_cookie_exactly_is_made_and_one_more_character_is_not(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    sessions = Sessions(KEY, ttl=60, secure=False, clock=lambda: 1_000.0)
    _, value = sessions.start("ana@example.com", ("sre",))
    monkeypatch.setattr(sessions_module, "MAX_COOKIE", len(value))
    sessions.start("ana@example.com", ("sre",))
    monkeypatch.setattr(sessions_module, "MAX_COOKIE", len(value) - 1)
    with pytest.raises(ValueError, match=r"^the session does not fit in a cookie$"):
        sessions.start("ana@example.com", ("sre",))
    monkeypatch.undo()
    with pytest.raises(ValueError):
        sessions.start("ana@example.com", tuple(f"group-{i}" for i in range(400)))


def test_a_configured_session_key_signs_alike_in_every_daemon_that_reads_it(
    tmp_path: Path,
) -> None:
    key = tmp_path / "session-key"
    key.write_text("a session key shared by the replicas, long enough")
    config = Oidc.model_validate(
        {
            "issuer": "https://idp.example.com",
            "clientId": "promoter",
            "sessionKey": {"fromFile": str(key)},
        }
    )
    one, other = (
        SignIn.from_config(config, public_url="https://promoter.example.com", grants=[]).sessions
        for _ in range(2)
    )
    _, value = one.start("ana@example.com", ())
    request = request_with({one.session_cookie: value})
    found = other.read(request)
    assert found is not None and found.name == "ana@example.com"


@pytest.mark.parametrize(
    ("public_url", "callback"),
    [
        ("https://promoter.example.com/", "https://promoter.example.com/auth/callback"),
        ("https://ci.example.com/DEVBOX", "https://ci.example.com/DEVBOX/auth/callback"),
        (None, "/auth/callback"),
    ],
)
def test_the_callback_is_the_public_url_s_and_its_final_slash_is_not_doubled(
    public_url: str | None, callback: str
) -> None:
    sign_in = SignIn.from_config(oidc(), public_url=public_url, grants=[])
    assert sign_in.provider.redirect_uri == callback


def test_a_signed_value_is_compact_json_in_unpadded_url_safe_base64() -> None:
    # unpadded; "AAAX" ends in a letter a stripped padding must leave; URL-safe letters
    assert _b64(b"a") == "YQ" and _b64(b"\x00\x00\x17") == "AAAX" and _b64(b"\xfb\xff") == "-_8"
    value = Signer(KEY, "session").dumps({"exp": 1, "n": "a"})
    assert value.split(".")[0] == _b64(b'{"exp":1,"n":"a"}')


def test_each_cookie_is_signed_with_the_key_made_for_its_purpose() -> None:
    sessions = Sessions(KEY, ttl=60, secure=False)
    for purpose, cookie in (
        (b"promoter session", sessions.session_cookie),
        (b"promoter sign-in", sessions.pending_cookie),
    ):
        value = sessions.begin("/")[1] if purpose.endswith(b"in") else sessions.start("a", ())[1]
        body, mac = value.split(".")
        key = hmac.new(KEY, purpose, hashlib.sha256).digest()
        assert _b64(hmac.new(key, body.encode(), hashlib.sha256).digest()) == mac, cookie
