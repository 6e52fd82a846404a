"""Who calls and what they may do: the caller's identity (tokens, a trusted proxy, a
TokenReview, a session after a sign-in with the company's identity provider), the roles a
write needs on the environments it touches, the access rules put together from the
configuration, and the browser's checks (Host, headers, same-origin JSON writes). It knows
neither the API's routes nor the pages.
"""

from promoter.http.access.access import AccessControl
from promoter.http.access.forwarded import Forwarding, peer
from promoter.http.access.guard import (
    HEADERS,
    BrowserGuard,
    Hosts,
    cross_site,
    json_only,
)
from promoter.http.access.identity import Credentials, Identity, TokenReview, Unauthenticated
from promoter.http.access.oidc import Refused
from promoter.http.access.roles import OPERATION_ROLES, Forbidden, Scope
from promoter.http.access.sessions import CSRF_HEADER, Session
from promoter.http.access.sign_in import CALLBACK, LOGIN, LOGOUT, NoRole, SignIn, local_path

__all__ = [
    "CALLBACK",
    "CSRF_HEADER",
    "HEADERS",
    "LOGIN",
    "LOGOUT",
    "OPERATION_ROLES",
    "AccessControl",
    "BrowserGuard",
    "Credentials",
    "Forbidden",
    "Forwarding",
    "Hosts",
    "Identity",
    "NoRole",
    "Refused",
    "Scope",
    "Session",
    "SignIn",
    "TokenReview",
    "Unauthenticated",
    "cross_site",
    "json_only",
    "local_path",
    "peer",
]
