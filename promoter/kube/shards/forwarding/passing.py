"""A request about another replica's strategy, passed to that replica, and received there.

The replica a request reaches (the entry) passes it on whole: its method, path, body
and headers (the caller's credentials, a proxy's identity header, the browser's
``Origin`` and ``Sec-Fetch-*``, the ``Host`` it was sent to), so that the owner applies
the same checks it would to the caller itself: the Host, the browser's (a write must be
same-origin and JSON), who calls and the role it needs, and the audit. Two headers say
what the owner cannot see: the entry replica (``x-promoter-passed-by``) and the caller's
address (``x-promoter-passed-for``), which the owner takes as the request's client
(a proxy's identity header is believed from the proxy's addresses only, the audit
records where the call came from). The call is signed with the replicas' shared secret
for the owner it goes to (``signing``): the method, the path, the caller's address, the
body, a timestamp and a nonce, and every header passed on with its value. A passed
request whose signature does not hold is refused (403): nobody else can claim to be a
replica or to call from another address, a captured one sent again (to the same owner
or another), late, or with another identity header is refused, and none is passed a
second time. The owner answers it with the headers the signature names, and no other.
"""

from __future__ import annotations

import httpx
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from promoter.http import HEADERS, MOVED, BodyTooLarge, read_body
from promoter.kube.shards.forwarding.signing import SIGNATURE, Verifier, sign

PASSED = "x-promoter-passed-by"
"""The entry replica's identity, on a request passed to the owner."""
FOR = "x-promoter-passed-for"
"""The caller's address as the entry replica saw it."""
DROPPED = frozenset(
    {
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "te",
        "trailer",
        "upgrade",
        "content-length",
        PASSED,
        FOR,
        SIGNATURE,
    }
)
"""Headers of the caller's request not passed on (hop by hop, or ours to set)."""
KEPT = ("content-type", "retry-after", "www-authenticate", "cache-control", MOVED)
"""Headers of the owner's answer given to the caller (the entry adds its own security
headers, as to every answer); ``MOVED`` tells the replica that passed a write on that the
owner wrote nothing, its shard moving (``promoter.kube.shards.routes``)."""


def _signed(method: str, target: str, client: str) -> str:
    return f"{method} {target} for {client}"


def _target(scope: Scope) -> str:
    query = scope.get("query_string", b"").decode("latin-1")
    path: str = scope["path"]
    return f"{path}?{query}" if query else path


def unavailable(why: str) -> JSONResponse:
    return JSONResponse(
        {"error": f"{why}; try again"}, status_code=503, headers={"Retry-After": "1"}
    )


async def pass_on(
    client: httpx.AsyncClient, request: Request, address: str, *, identity: str, token: str | None
) -> Response:
    """``request`` answered by the replica at ``address``."""
    if not token:
        return unavailable(
            "the replica that works on it is another one, and no replica secret is set"
        )
    try:
        body = await read_body(request)
    except BodyTooLarge:
        return JSONResponse({"error": "the body is too large"}, status_code=413)
    caller = request.client.host if request.client else ""
    target = _target(request.scope)
    headers = {k.lower(): v for k, v in request.headers.items() if k.lower() not in DROPPED}
    headers[PASSED] = identity
    headers[FOR] = caller
    what = _signed(request.method, target, caller)
    headers[SIGNATURE] = sign(token, body, what=what, to=address, headers=headers)
    raw = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in headers.items()]
    try:
        answer = await client.request(
            request.method, address.rstrip("/") + target, content=body, headers=raw
        )
    except httpx.ConnectError:  # nothing was sent: it stopped or died, its shards move
        refused = unavailable("the replica that works on it did not answer")
        refused.headers[MOVED] = "1"
        return refused
    except httpx.HTTPError:
        return unavailable("the replica that works on it did not answer")
    kept = {k: v for k, v in answer.headers.items() if k.lower() in KEPT}
    return Response(answer.content, status_code=answer.status_code, headers=kept)


async def receive_passed(
    scope: Scope, receive: Receive, send: Send, *, app: ASGIApp, verifier: Verifier
) -> None:
    """A request another replica passed here: answered by ``app`` as if the caller had
    sent it here, from its own address, with the headers signed and no other; refused
    (403) when the signature does not hold (``Verifier``)."""
    request = Request(scope, receive)
    try:
        body = await read_body(request)
    except BodyTooLarge:
        body = None
    caller = request.headers.get(FOR, "")
    what = _signed(request.method, _target(scope), caller)
    signature = request.headers.get(SIGNATURE, "")
    names = None
    if body is not None:
        names = verifier.verify(signature, body, what=what, headers=request.headers)
    if body is None or names is None or FOR not in names:
        refusal = JSONResponse({"error": "not passed on by a replica"}, status_code=403)
        refusal.raw_headers.extend(HEADERS)
        await refusal(scope, receive, send)
        return
    passed = dict(scope)
    passed["client"] = (caller, 0) if caller else None
    signed = [(n.encode("latin-1"), request.headers.get(n, "").encode("latin-1")) for n in names]
    if n_body := len(body):
        signed.append((b"content-length", str(n_body).encode()))
    passed["headers"] = signed
    await app(passed, replay(body), send)


def replay(body: bytes) -> Receive:
    """A ``receive`` that gives ``body`` once, then waits as a connection that stays open."""
    sent = False

    async def receive() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return {"type": "http.disconnect"}

    return receive
