"""A small OpenID Connect provider for the sign-in tests, served by uvicorn on 127.0.0.1:
discovery, its keys (JWKS), an authorization endpoint that signs in whoever the test says
(and sends the browser back with a code), and a token endpoint that checks the request as
a real provider does (RFC 6749 4.1.3, RFC 7636): the client's authentication, by HTTP
Basic or in the form as its discovery document says, once; the grant type; a code it
issued, taken once; the redirect URI of the code's authorization request; the PKCE
verifier whose S256 digest is the code's challenge. It answers an ID token signed with
RS256 (PyJWT and cryptography, as a real provider's library would), or a refusal such as
400 ``{"error": "invalid_grant"}``.

``mischief`` makes the next ID tokens wrong in one way (another audience or issuer, an
expired one, ``iat`` or ``exp`` this many seconds from now as a clock that is off would
say, a signature by a key it does not publish, another nonce, another algorithm such as
``none`` or a MAC, a required claim left out), its token endpoint's answer (``token``: a
status and a body), or its discovery document (garbage, a 503, another issuer, a
relative authorization endpoint); ``deny`` sends the browser back with
``access_denied`` and these words; ``keys_without_alg`` publishes its key without
``alg``, as many providers do, ``rotated`` an older key beside it, ``no_kid`` makes ID
tokens that name no key, and ``auth`` is the one way of client authentication it takes
(``client_secret_post``)."""

from __future__ import annotations

import base64
import hashlib
import secrets
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, unquote_plus, urlencode

import jwt
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import RSAAlgorithm
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from promoter.http import ThreadServer, free_port

CLIENT_ID = "promoter"
CLIENT_SECRET = "client-secret-of-the-promoter"


@dataclass
class Person:
    email: str
    groups: list[str] = field(default_factory=list)
    email_verified: bool = True

    @property
    def sub(self) -> str:
        return hashlib.sha256(self.email.encode()).hexdigest()[:16]


@dataclass
class Code:
    person: Person
    nonce: str
    challenge: str
    redirect_uri: str
    used: bool = False


class OidcProvider:
    """The provider; ``start`` serves it, ``url`` is its issuer."""

    def __init__(self, redirect_uri: str) -> None:
        self.redirect_uri = redirect_uri
        self.redirect_uris = [redirect_uri]
        """The client's registered redirect URIs: a code may be asked for any of them."""
        self.client_secret = CLIENT_SECRET
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.other_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.ec_key = ec.generate_private_key(ec.SECP256R1())
        """Signs when ``mischief["alg"]`` is an ES algorithm: a key it does not publish."""
        self.person: Person | None = None
        """Who signs in at the authorization endpoint next."""
        self.codes: dict[str, Code] = {}
        self.mischief: dict[str, Any] = {}
        self.token_requests = 0
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.app = Starlette(
            routes=[
                Route("/.well-known/openid-configuration", self.discovery),
                Route("/jwks", self.jwks),
                Route("/authorize", self.authorize),
                Route("/token", self.token, methods=["POST"]),
            ]
        )
        self._server: ThreadServer | None = None

    def start(self) -> OidcProvider:
        self._server = ThreadServer(self.app, self.port, name="oidc-provider").start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.stop()

    async def discovery(self, request: Request) -> Response:
        broken = self.mischief.get("discovery")
        if broken == "garbage":
            return Response("<html>a login page</html>", media_type="text/html")
        if broken == "5xx":
            return JSONResponse({"error": "down for maintenance"}, status_code=503)
        if broken == "issuer":
            return JSONResponse({"issuer": "https://idp.example.com", "jwks_uri": self.url})
        base = "" if broken == "relative" else self.url
        return JSONResponse(
            {
                "issuer": self.url,
                "authorization_endpoint": f"{base}/authorize",
                "token_endpoint": f"{self.url}/token",
                "jwks_uri": f"{self.url}/jwks",
                "response_types_supported": ["code"],
                "subject_types_supported": ["public"],
                "id_token_signing_alg_values_supported": ["RS256"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": [
                    self.mischief.get("auth", "client_secret_basic")
                ],
            }
        )

    async def jwks(self, request: Request) -> Response:
        public = RSAAlgorithm.to_jwk(self.key.public_key(), as_dict=True)
        named = {} if "keys_without_alg" in self.mischief else {"alg": "RS256"}
        keys = [{**public, "kid": "k1", "use": "sig", **named}]
        if "rotated" in self.mischief:
            older = RSAAlgorithm.to_jwk(self.other_key.public_key(), as_dict=True)
            keys.insert(0, {**older, "kid": "k0", "use": "sig", **named})
        return JSONResponse({"keys": keys})

    async def authorize(self, request: Request) -> Response:
        params = request.query_params
        redirect_uri = params.get("redirect_uri")
        if params.get("client_id") != CLIENT_ID or redirect_uri not in self.redirect_uris:
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if params.get("response_type") != "code" or params.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "unsupported_response_type"}, status_code=400)
        if "openid" not in params.get("scope", "").split() or self.person is None:
            return JSONResponse({"error": "invalid_scope"}, status_code=400)
        if "deny" in self.mischief:  # the person declined: sent back with the error
            said = self.mischief["deny"]
            words = {"error_description": said} if said else {}
            back = {"error": "access_denied", **words, "state": params.get("state", "")}
            return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", status_code=302)
        code = secrets.token_urlsafe(16)
        self.codes[code] = Code(
            self.person, params["nonce"], params["code_challenge"], params["redirect_uri"]
        )
        back = {"code": code, "state": params.get("state", "")}
        return RedirectResponse(f"{redirect_uri}?{urlencode(back)}", status_code=302)

    async def token(self, request: Request) -> Response:
        self.token_requests += 1
        fields = parse_qs((await request.body()).decode(), keep_blank_values=True)
        if any(len(values) > 1 for values in fields.values()):
            return refusal("invalid_request", "a parameter is sent more than once")
        form = {k: v[0] for k, v in fields.items()}
        refused = self.client_refusal(form, request.headers.get("authorization"))
        if refused is not None:
            return refused
        if form.get("grant_type") != "authorization_code":
            return refusal("unsupported_grant_type", "the grant type is not authorization_code")
        code = self.codes.get(form.get("code", ""))
        if code is None or code.used:
            return refusal("invalid_grant", "the code is unknown or used")
        code.used = True
        if form.get("redirect_uri") != code.redirect_uri:
            return refusal("invalid_grant")
        digest = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
        if base64.urlsafe_b64encode(digest).rstrip(b"=").decode() != code.challenge:
            return refusal("invalid_grant", "PKCE verification failed")
        if "token" in self.mischief:
            status, body = self.mischief["token"]
            if isinstance(body, str):
                return Response(body, status_code=status, media_type="text/html")
            return JSONResponse(body, status_code=status)
        return JSONResponse(
            {"access_token": "opaque", "token_type": "Bearer", "id_token": self.id_token(code)}
        )

    def client_refusal(self, form: dict[str, str], authorization: str | None) -> Response | None:
        """401 ``invalid_client`` unless the client authenticates, the one way the discovery
        document says; ``invalid_request`` when it authenticates in two ways at once."""
        if self.mischief.get("auth") == "client_secret_post":
            if authorization is not None:
                return refusal("invalid_request", "more than one client authentication")
            if form.get("client_id") == CLIENT_ID and form.get("client_secret") == (
                self.client_secret
            ):
                return None
            return refusal("invalid_client", "client authentication failed", status=401)
        if "client_secret" in form:
            return refusal("invalid_request", "more than one client authentication")
        scheme, _, encoded = (authorization or "").partition(" ")
        try:
            pair = base64.b64decode(encoded, validate=True).decode()
        except ValueError:
            pair = ""
        client, _, secret = pair.partition(":")
        client, secret = unquote_plus(client), unquote_plus(secret)
        if scheme.lower() != "basic" or (client, secret) != (CLIENT_ID, self.client_secret):
            return refusal("invalid_client", "client authentication failed", status=401)
        if form.get("client_id", client) != client:
            return refusal("invalid_request", "the form's client_id is not the client's")
        return None

    def id_token(self, code: Code) -> str:
        now = int(time.time())
        claims = {
            "iss": self.url,
            "sub": code.person.sub,
            "aud": CLIENT_ID,
            "iat": now,
            "exp": now + 300,
            "nonce": code.nonce,
            "email": code.person.email,
            "email_verified": code.person.email_verified,
            "groups": code.person.groups,
        }
        trick = self.mischief
        claims.update({k: v for k, v in trick.items() if k in ("aud", "azp", "iss", "nonce")})
        claims.update({k: now + trick[k] for k in ("iat", "exp") if k in trick})
        for name in trick.get("drop", ()):
            del claims[name]
        if "expired" in trick:
            claims["exp"], claims["iat"] = now - 3600, now - 7200
        key: Any = self.other_key if "other_key" in trick else self.key
        algorithm = str(trick.get("alg", "RS256"))
        if algorithm == "none":
            key = None
        elif algorithm.startswith("ES"):
            key = self.ec_key
        elif algorithm.startswith("HS"):
            key = b"a secret anyone could have chosen, 32+ bytes"
        named = {} if "no_kid" in trick else {"kid": "k1"}
        return jwt.encode(claims, key, algorithm=algorithm, headers=named)


def refusal(error: str, description: str = "", *, status: int = 400) -> Response:
    """The token endpoint's refusal (RFC 6749 5.2): the error and, when said, its words."""
    body = {"error": error, **({"error_description": description} if description else {})}
    return JSONResponse(body, status_code=status, headers={"cache-control": "no-store"})
