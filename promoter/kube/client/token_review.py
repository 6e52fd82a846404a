"""Callers named by Kubernetes: a bearer token no API token matches is asked about with a
TokenReview, and the API server's user and groups become the caller (``access.grants``
give them roles, e.g. to ``system:serviceaccounts:ci``).

Why not a SubjectAccessReview as well: roles are scoped per environment, and an
environment is no Kubernetes object, so RBAC could only say "this strategy"; the grants
say both, for Kubernetes users and groups as for tokens and proxies. A review that
fails (the API server down, a refusal) names nobody: the request is refused (401).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

from promoter.http import Identity
from promoter.kube.client.api import Kube, KubeError

log = logging.getLogger("promoter.kube.tokens")


class TokenReviewer:
    """``TokenReview`` of ``promoter.http``: a token's user, or None."""

    def __init__(self, kube: Kube, *, audiences: Sequence[str] = ()) -> None:
        self.kube = kube
        self.audiences = list(audiences)

    def __call__(self, token: str) -> Identity | None:
        try:
            status = self.kube.review_token(token, self.audiences)
        except KubeError as exc:
            log.warning("token review failed", extra={"error": str(exc), "status": exc.status})
            return None
        user = status.get("user") or {}
        name = str(user.get("username") or "")
        if not status.get("authenticated") or not name:
            return None
        groups = tuple(str(g) for g in user.get("groups") or ())
        return Identity(name, "kubernetes", groups)
