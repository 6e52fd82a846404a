"""The sign-in routes: ``GET /auth/login`` sends the browser to the company's identity
provider, ``GET /auth/callback`` takes it back and starts a session, ``POST /auth/logout``
ends it (same origin only, with the session's CSRF token: the header's form sends it).

Every refusal is a page that says why and offers to sign in again; it is logged with its
reason (never a code, a token or a cookie). Without ``access.oidc`` each route says that
sign-in is not configured (404).
"""

from __future__ import annotations

import logging
from html import escape
from urllib.parse import parse_qs, urlencode

from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import HTMLResponse, RedirectResponse, Response

from promoter.http.access import AccessControl, NoRole, Refused, cross_site, local_path
from promoter.http.pages import dashboard_html as h

log = logging.getLogger("promoter.sign_in")

MAX_FORM = 4096


class SignInPages:
    """The three routes of a sign-in, over ``access.sign_in``."""

    def __init__(self, access: AccessControl) -> None:
        self.access = access

    async def login(self, request: Request) -> Response:
        sign_in = self.access.sign_in
        if sign_in is None:
            return _not_configured()
        next_path = local_path(request.query_params.get("next", "/"))
        try:
            url, cookie = await run_in_threadpool(sign_in.begin, next_path)
        except Refused as exc:
            log.warning("sign-in unavailable", extra={"reason": str(exc)})
            return _failed(502, f"The identity provider cannot be used now: {exc}.", next_path)
        answer = RedirectResponse(url, status_code=303)
        sign_in.sessions.set(answer, sign_in.sessions.pending_cookie, cookie, 600)
        answer.headers["cache-control"] = "no-store"
        return answer

    async def callback(self, request: Request) -> Response:
        sign_in = self.access.sign_in
        if sign_in is None:
            return _not_configured()
        try:
            done = await run_in_threadpool(sign_in.complete, request, self.access.policy)
        except Refused as exc:
            log.warning("sign-in refused", extra={"reason": str(exc)})
            status = 403 if isinstance(exc, NoRole) else 400
            refusal = _failed(status, f"Sign-in refused: {exc}.", "/")
            sign_in.sessions.clear(refusal, sign_in.sessions.pending_cookie)
            return refusal
        answer = RedirectResponse(done.next, status_code=303)
        sessions = sign_in.sessions
        sessions.set(answer, sessions.session_cookie, done.cookie, sessions.ttl)
        sessions.clear(answer, sessions.pending_cookie)
        answer.headers["cache-control"] = "no-store"
        return answer

    async def logout(self, request: Request) -> Response:
        sign_in = self.access.sign_in
        if sign_in is None:
            return _not_configured()
        why = cross_site(request, public_origin=self.access.public_origin)
        if why is not None and not _own_form(request):
            return _failed(403, f"Sign-out refused: {why}.", "/")
        session = sign_in.sessions.read(request)
        if session is not None:
            if not sign_in.sessions.csrf_ok(session, request, await _form_token(request)):
                return _failed(403, "Sign-out refused: it did not carry this session's token.", "/")
            sign_in.sessions.revoke(session)
            log.info("signed out", extra={"who": session.name, "via": "oidc"})
        answer = RedirectResponse("/", status_code=303)
        sign_in.sessions.clear(answer, sign_in.sessions.session_cookie)
        return answer


def _own_form(request: Request) -> bool:
    """A form of this daemon's own page: the browser says same-origin, and sends the Origin
    ``null`` (the pages' ``Referrer-Policy: no-referrer`` hides it from a form's POST). The
    session's CSRF token is checked all the same."""
    site = request.headers.get("sec-fetch-site", "").strip().lower()
    return site == "same-origin" and request.headers.get("origin", "").strip() == "null"


async def _form_token(request: Request) -> str:
    """The ``csrf`` field of a sign-out form (a small urlencoded body), else ""."""
    media = request.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if media != "application/x-www-form-urlencoded":
        return ""
    body = b""
    async for chunk in request.stream():
        body += chunk
        if len(body) > MAX_FORM:
            return ""
    try:
        found = parse_qs(body.decode("latin-1"), max_num_fields=8).get("csrf", [""])
    except ValueError:
        return ""
    return found[0]


def _failed(status: int, text: str, next_path: str) -> HTMLResponse:
    again = "/auth/login?" + urlencode({"next": next_path})
    body = (
        f"<h1>Not signed in</h1><p>{escape(text)}</p>"
        f'<p><a href="{escape(again)}">Sign in again</a> · <a href="/">the dashboard</a></p>'
    )
    return HTMLResponse(h.page("sign in", body), status_code=status)


def _not_configured() -> HTMLResponse:
    body = (
        "<h1>No sign-in here</h1><p>This daemon has no identity provider configured"
        " (<code>access.oidc</code>): it knows callers by API tokens or an authenticating"
        " proxy.</p>"
    )
    return HTMLResponse(h.page("sign in", body), status_code=404)
