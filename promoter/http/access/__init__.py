"""Who calls and what they may do: the caller's identity (tokens, a trusted proxy, a
TokenReview), the roles a write needs on the environments it touches, the access rules
put together from the configuration, and the browser's checks (Host, headers, same-origin
JSON writes). It knows neither the API's routes nor the pages.
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
from promoter.http.access.roles import OPERATION_ROLES, Forbidden, Scope

__all__ = [
    "HEADERS",
    "OPERATION_ROLES",
    "AccessControl",
    "BrowserGuard",
    "Credentials",
    "Forbidden",
    "Forwarding",
    "Hosts",
    "Identity",
    "Scope",
    "TokenReview",
    "Unauthenticated",
    "cross_site",
    "json_only",
    "peer",
]
