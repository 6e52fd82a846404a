"""The OpenID Connect provider, as a client with the authorization code and PKCE sees it:
its discovery document, the URL a browser is sent to, the code exchanged for tokens, and
the ID token verified (a signature by one of the provider's keys, ``iss``, ``aud``,
``exp``, ``iat``, the ``nonce`` of this sign-in).

Every call has a deadline (``oidc.timeout``) and is blocking: run it in the thread pool.
Anything the provider answers that is not what the protocol says is a ``Refused`` with
words a person can act on; no token, code or secret is ever put in one.
"""

from __future__ import annotations

import hmac
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import httpx
import jwt

from promoter.config.transport import is_loopback_host

ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "ES512")
"""The signatures an ID token may carry: the provider's keys, never ``none`` nor a MAC."""
LEEWAY = 60.0
"""Seconds of clock skew allowed on ``exp`` and ``iat``."""
DISCOVERY_TTL = 3600.0
FAMILIES = {"RS": "RSA", "PS": "RSA", "ES": "EC"}
"""The type of key (``kty``) each family of ``ALGORITHMS`` signs with."""
KEYS_REFRESH = 60.0
"""An unknown ``kid`` fetches the provider's keys again, at most this often."""
MAX_DOCUMENT = 512 * 1024


class Refused(Exception):
    """A sign-in that cannot go on, and why (shown to the person, logged)."""


@dataclass(frozen=True)
class Endpoints:
    """What the discovery document says: where to send the browser, the code and for keys."""

    issuer: str
    authorization: str
    token: str
    jwks: str
    basic_auth: bool
    """The client authenticates with HTTP Basic (else with its secret in the form)."""


class Provider:
    """One issuer, for one client."""

    def __init__(
        self,
        *,
        issuer: str,
        client_id: str,
        client_secret: str | None,
        redirect_uri: str,
        scopes: list[str],
        timeout: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.issuer = issuer
        self.client_id = client_id
        self._secret = client_secret
        self.redirect_uri = redirect_uri
        self.scopes = ["openid", *(s for s in scopes if s != "openid")]
        self._timeout = timeout
        self._clock = clock
        self._lock = threading.Lock()
        self._endpoints: tuple[float, Endpoints] | None = None
        self._keys: tuple[float, list[Key]] | None = None

    def authorization_url(self, *, state: str, nonce: str, challenge: str) -> str:
        """Where the browser signs in: the code flow, PKCE with S256."""
        found = self.endpoints()
        query = urlencode(
            {
                "response_type": "code",
                "client_id": self.client_id,
                "redirect_uri": self.redirect_uri,
                "scope": " ".join(self.scopes),
                "state": state,
                "nonce": nonce,
                "code_challenge": challenge,
                "code_challenge_method": "S256",
            }
        )
        joiner = "&" if urlsplit(found.authorization).query else "?"
        return f"{found.authorization}{joiner}{query}"

    def endpoints(self) -> Endpoints:
        """The discovery document's endpoints, read again after an hour."""
        with self._lock:
            if self._endpoints is not None and self._endpoints[0] > self._clock():
                return self._endpoints[1]
        document = self._get(self.issuer.rstrip("/") + "/.well-known/openid-configuration")
        found = _endpoints(document, self.issuer)
        with self._lock:
            self._endpoints = (self._clock() + DISCOVERY_TTL, found)
        return found

    def exchange(self, *, code: str, verifier: str) -> str:
        """The ID token the provider gives for ``code`` (Refused when it will not)."""
        found = self.endpoints()
        form = {
            "grant_type": "authorization_code",
            "code": code,
            "redirect_uri": self.redirect_uri,
            "code_verifier": verifier,
            "client_id": self.client_id,
        }
        auth: tuple[str, str] | None = None
        if self._secret is not None:
            if found.basic_auth:
                auth = (_form(self.client_id), _form(self._secret))
            else:
                form["client_secret"] = self._secret
        answer = self._call("POST", found.token, data=form, auth=auth)
        body = _json(answer, "the token endpoint")
        if answer.status_code != 200:
            error = str(body.get("error") or answer.status_code)[:100]
            said = str(body.get("error_description") or "")[:200]
            raise Refused(f"the provider refused the code ({error}{': ' + said if said else ''})")
        token = body.get("id_token")
        if not isinstance(token, str) or not token:
            raise Refused("the provider's answer carries no ID token (is 'openid' a scope?)")
        return token

    def verify(self, token: str, *, nonce: str) -> dict[str, Any]:
        """The ID token's claims, once its signature, issuer, audience, times and nonce
        are what this sign-in expects."""
        try:
            header = jwt.get_unverified_header(token)
        except jwt.InvalidTokenError as exc:
            raise Refused("the ID token is not a JWT") from exc
        algorithm = header.get("alg")
        if algorithm not in ALGORITHMS:
            raise Refused(f"the ID token is signed with {str(algorithm)[:20]!r}, not a key's")
        key = self._key(str(header.get("kid") or ""), algorithm)
        try:
            claims: dict[str, Any] = jwt.decode(
                token,
                key=key.key,
                algorithms=[algorithm],
                audience=self.client_id,
                issuer=self.issuer,
                leeway=LEEWAY,
                options={"require": ["exp", "iat", "iss", "aud", "sub"]},
            )
        except jwt.ExpiredSignatureError as exc:
            raise Refused("the ID token has expired") from exc
        except jwt.InvalidAudienceError as exc:
            raise Refused("the ID token is for another client (aud)") from exc
        except jwt.InvalidIssuerError as exc:
            raise Refused("the ID token comes from another issuer (iss)") from exc
        except jwt.InvalidSignatureError as exc:
            raise Refused("the ID token's signature does not verify") from exc
        except jwt.PyJWTError as exc:
            raise Refused(f"the ID token is not valid: {str(exc)[:200]}") from exc
        audiences = claims["aud"] if isinstance(claims["aud"], list) else [claims["aud"]]
        if len(audiences) > 1 and claims.get("azp") != self.client_id:
            raise Refused("the ID token names other audiences and is not for this client (azp)")
        given = claims.get("nonce")
        if not isinstance(given, str) or not hmac.compare_digest(given, nonce):
            raise Refused("the ID token's nonce is not this sign-in's")
        return claims

    def _key(self, kid: str, algorithm: str) -> jwt.PyJWK:
        """The provider's key ``kid`` that signs with ``algorithm`` (its keys read again
        once when there is none)."""
        for fresh in (False, True):
            found = [k for k in self._key_set(fresh) if (k.jwk.key_id or "") == kid or not kid]
            usable = [k.jwk for k in found if k.signs(algorithm)]
            if (kid and usable) or (not kid and len(usable) == 1):
                return usable[0]
            if not kid and len(usable) > 1:
                raise Refused("the ID token names no key (kid) and the provider has several")
        raise Refused(f"the ID token is signed by a key the provider does not list ({kid[:40]})")

    def _key_set(self, fresh: bool) -> list[Key]:
        with self._lock:
            kept = self._keys
        now = self._clock()
        if kept is not None and (not fresh or kept[0] > now - KEYS_REFRESH):
            return kept[1]
        document = self._get(self.endpoints().jwks)
        keys = _keys(document)
        if not keys:
            raise Refused("the provider's keys (jwks_uri) hold no usable key")
        with self._lock:
            self._keys = (now, keys)
        return keys

    def _get(self, url: str) -> dict[str, Any]:
        answer = self._call("GET", url)
        if answer.status_code != 200:
            raise Refused(f"the provider answered {answer.status_code} for {_where(url)}")
        return _json(answer, _where(url))

    def _call(self, method: str, url: str, **kwargs: Any) -> httpx.Response:
        try:
            with httpx.Client(timeout=self._timeout, follow_redirects=False) as client:
                answer = client.request(method, url, **kwargs)
        except httpx.TimeoutException as exc:
            raise Refused(f"the provider did not answer in {self._timeout:g}s") from exc
        except httpx.HTTPError as exc:
            raise Refused(f"the provider cannot be reached ({type(exc).__name__})") from exc
        if len(answer.content) > MAX_DOCUMENT:
            raise Refused(f"the provider's answer from {_where(url)} is too large")
        return answer


@dataclass(frozen=True)
class Key:
    """One of the provider's keys, and the algorithm it names (many name none)."""

    jwk: jwt.PyJWK
    named: str | None

    def signs(self, algorithm: str) -> bool:
        """Whether an ID token signed with ``algorithm`` may be checked with this key:
        the algorithm it names, else any algorithm of its type of key."""
        if self.named:
            return self.named == algorithm
        return self.jwk.key_type == FAMILIES.get(algorithm[:2])


def _keys(document: dict[str, Any]) -> list[Key]:
    """The usable keys of a JWKS (a key of a type or curve not supported is left out)."""
    found = []
    for raw in document.get("keys") or []:
        if not isinstance(raw, dict) or raw.get("use", "sig") != "sig":
            continue
        try:
            jwk = jwt.PyJWK(raw)
        except (jwt.PyJWTError, TypeError):  # TypeError: an "alg" that is a list or object
            continue
        named = raw.get("alg")
        found.append(Key(jwk, named if isinstance(named, str) else None))
    return found


def _endpoints(document: dict[str, Any], issuer: str) -> Endpoints:
    said = str(document.get("issuer") or "")
    if said.rstrip("/") != issuer.rstrip("/"):
        raise Refused(f"the discovery document names another issuer ({said[:100]!r})")
    urls = {}
    for field in ("authorization_endpoint", "token_endpoint", "jwks_uri"):
        url = document.get(field)
        if not isinstance(url, str) or not _safe(url):
            raise Refused(f"the discovery document's {field} is missing or not https")
        urls[field] = url
    methods = document.get("code_challenge_methods_supported")
    if isinstance(methods, list) and "S256" not in methods:
        raise Refused("the provider does not take PKCE with S256")
    auth = document.get("token_endpoint_auth_methods_supported")
    basic = not isinstance(auth, list) or "client_secret_basic" in auth
    return Endpoints(
        issuer=said,
        authorization=urls["authorization_endpoint"],
        token=urls["token_endpoint"],
        jwks=urls["jwks_uri"],
        basic_auth=basic,
    )


def _safe(url: str) -> bool:
    """https, or http on loopback (a provider on this machine, in tests)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return False
    return parts.scheme == "https" or (parts.scheme == "http" and is_loopback_host(parts.hostname))


def _json(answer: httpx.Response, where: str) -> dict[str, Any]:
    try:
        body = answer.json()
    except ValueError as exc:
        raise Refused(f"the provider's answer from {where} is not JSON") from exc
    if not isinstance(body, dict):
        raise Refused(f"the provider's answer from {where} is not a JSON object")
    return body


def _where(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.netloc}{parts.path}"[:120]


def _form(text: str) -> str:
    """RFC 6749 2.3.1: the client's id and secret are form-encoded inside HTTP Basic."""
    return urlencode({"": text})[1:]
