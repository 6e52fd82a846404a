"""The Kubernetes API as the promoter uses it: one small wrapper over the official client.

Every call goes through here, so that the client's exceptions are translated once
(``KubeError`` with the HTTP status, the original as ``__cause__``) and patches use
content types that custom resources accept (merge patch and JSON patch, named
explicitly: a strategic merge patch, the client's default for a dict, is refused for CRs).
A call made within a write's hold (a sharded replica's status write or Event, see
``scm_plugins.hold``) is checked against the hold right before it is sent, and its
deadline ends before the hold does.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator, Sequence
from typing import Any

from kubernetes import client as k8s
from kubernetes.client.exceptions import ApiException
from kubernetes.watch.watch import iter_resp_lines
from urllib3.exceptions import HTTPError

from promoter.errors import PromoterError
from promoter.kube.client.group import GROUP, VERSION
from scm_plugins import hold

_PLURALS = ("promotionstrategies", "gitrepositories", "scmproviders", "commitstatuses")

Obj = dict[str, Any]

log = logging.getLogger("promoter.kube")

PERMISSIONS = frozenset(
    {(GROUP, plural, verb) for plural in _PLURALS for verb in ("list", "watch")}
    | {(GROUP, f"{plural}/status", "patch") for plural in _PLURALS}
    | {
        (GROUP, "promotionstrategies", "patch"),  # the refreshedAt annotation
        ("", "events", "create"),
        ("", "secrets", "get"),
        ("coordination.k8s.io", "leases", "get"),
        ("coordination.k8s.io", "leases", "list"),
        ("coordination.k8s.io", "leases", "watch"),
        ("coordination.k8s.io", "leases", "create"),
        ("coordination.k8s.io", "leases", "update"),
        ("coordination.k8s.io", "leases", "delete"),
        ("authentication.k8s.io", "tokenreviews", "create"),  # access.kubernetes.tokenReview
    }
)
"""(API group, resource, verb) of every call below: manifests/rbac.yaml grants exactly these."""

REQUEST_TIMEOUT = (5.0, 30.0)
"""(connect, read) seconds of every call that does not give its own (a watch does)."""
LIST_PAGE = 500
"""Objects a list of custom resources asks for at a time (``limit``), as client-go's
pager does: a starting replica never reads a whole fleet in one response."""


class KubeError(PromoterError):
    """A failed API call; ``status`` is the HTTP status (0 when the server was unreachable)."""

    def __init__(self, message: str, status: int = 0) -> None:
        super().__init__(message)
        self.status = status


class Kube:
    """Calls on the promoter's resources, Leases, Events and Secrets."""

    def __init__(self, client: k8s.ApiClient) -> None:
        self.client = client
        self.custom = k8s.CustomObjectsApi(client)
        self.core = k8s.CoreV1Api(client)
        self.coordination = k8s.CoordinationV1Api(client)
        self.authentication = k8s.AuthenticationV1Api(client)

    def _call(self, what: str, func: Any, *args: Any, **kwargs: Any) -> Any:
        kwargs["_request_timeout"] = _within_hold(kwargs.get("_request_timeout", REQUEST_TIMEOUT))
        try:
            return func(*args, **kwargs)
        except ApiException as exc:
            raise KubeError(f"{what}: {exc.status} {exc.reason}", exc.status or 0) from exc
        except (HTTPError, OSError) as exc:
            raise KubeError(f"{what}: API server unreachable: {exc}") from exc

    # --- custom resources ------------------------------------------------------------

    def list(self, plural: str, namespace: str | None, *, page: int = LIST_PAGE) -> Obj:
        """Every object, as one list: read in pages of ``page`` (``limit`` and
        ``continue``), all from the snapshot of the first page, whose resourceVersion the
        list carries (a watch from it misses nothing). A snapshot compacted away before
        the last page (410) is listed again whole, as client-go's pager does."""
        items: list[Obj] = []
        token = ""
        while True:
            try:
                listed = self._list_page(plural, namespace, page, token)
            except KubeError as exc:
                if exc.status != 410 or not token:
                    raise
                log.info(
                    "list snapshot expired, listing again whole",
                    extra={"resource": plural, "read": len(items)},
                )
                return self._list_page(plural, namespace, 0, "")
            items.extend(listed.get("items") or [])
            previous, token = token, (listed.get("metadata") or {}).get("continue") or ""
            if not token:
                listed["items"] = items
                return listed
            if token == previous:  # it would never end
                raise KubeError(f"list {plural}: the API server gave the same continue twice")

    def _list_page(self, plural: str, namespace: str | None, page: int, token: str) -> Obj:
        paging: dict[str, Any] = {}
        if page > 0:
            paging["limit"] = page
        if token:
            paging["_continue"] = token
        if namespace:
            return self._call(  # type: ignore[no-any-return]
                f"list {plural}",
                self.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                plural,
                **paging,
            )
        return self._call(  # type: ignore[no-any-return]
            f"list {plural}",
            self.custom.list_cluster_custom_object,
            GROUP,
            VERSION,
            plural,
            **paging,
        )

    def open_watch(
        self, plural: str, namespace: str | None, resource_version: str, timeout: int
    ) -> Any:
        """An open watch response from ``resource_version`` (read it with ``events``)."""
        kwargs: dict[str, Any] = {
            "watch": True,
            "resource_version": resource_version,
            "allow_watch_bookmarks": True,
            "timeout_seconds": timeout,
            "_preload_content": False,
            "_request_timeout": (10, timeout + 10),
        }
        if namespace:
            return self._call(
                f"watch {plural}",
                self.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                namespace,
                plural,
                **kwargs,
            )
        return self._call(
            f"watch {plural}",
            self.custom.list_cluster_custom_object,
            GROUP,
            VERSION,
            plural,
            **kwargs,
        )

    @staticmethod
    def events(response: Any) -> Iterator[Obj]:
        """The watch events (dicts) of an open response, until the server ends it."""
        try:
            for line in iter_resp_lines(response):  # type: ignore[no-untyped-call]
                if line:
                    yield json.loads(line)
        except (HTTPError, OSError, ValueError, AttributeError) as exc:
            raise KubeError(f"watch stream broken: {exc}") from exc
        finally:
            response.close()
            response.release_conn()

    def patch_status(self, plural: str, namespace: str, name: str, status: Obj) -> Obj:
        """Replace ``.status`` wholesale through the status subresource (a JSON patch)."""
        body = [{"op": "add", "path": "/status", "value": status}]
        result = self._call(
            f"patch {plural}/{name}/status",
            self.custom.patch_namespaced_custom_object_status,
            GROUP,
            VERSION,
            namespace,
            plural,
            name,
            body,
            _content_type="application/json-patch+json",
        )
        return result  # type: ignore[no-any-return]

    def annotate(self, plural: str, namespace: str, name: str, annotations: dict[str, str]) -> Obj:
        """Set annotations with a merge patch (the others stay)."""
        result = self._call(
            f"annotate {plural}/{name}",
            self.custom.patch_namespaced_custom_object,
            GROUP,
            VERSION,
            namespace,
            plural,
            name,
            {"metadata": {"annotations": annotations}},
            _content_type="application/merge-patch+json",
        )
        return result  # type: ignore[no-any-return]

    # --- core and coordination -------------------------------------------------------

    def secret_data(self, namespace: str, name: str) -> dict[str, str]:
        """A Secret's ``data`` (base64 values); KeyError when it does not exist."""
        try:
            secret = self._call("read secret", self.core.read_namespaced_secret, name, namespace)
        except KubeError as exc:
            if exc.status == 404:
                raise KeyError(f"Secret {name} not found") from exc
            raise
        return dict(secret.data or {})

    def review_token(self, token: str, audiences: Sequence[str]) -> Obj:
        """The API server's TokenReview of ``token``: its ``status`` (``authenticated``,
        ``user``), as a dict."""
        body = k8s.V1TokenReview(
            spec=k8s.V1TokenReviewSpec(token=token, audiences=list(audiences) or None)
        )
        review = self._call(
            "review a token", self.authentication.create_token_review, body, _request_timeout=10
        )
        status, user = review.status, getattr(review.status, "user", None)
        return {
            "authenticated": bool(getattr(status, "authenticated", False)),
            "user": {
                "username": getattr(user, "username", None),
                "groups": list(getattr(user, "groups", None) or []),
            },
        }

    def create_event(self, namespace: str, event: k8s.CoreV1Event) -> None:
        self._call("create event", self.core.create_namespaced_event, namespace, event)

    def read_lease(self, namespace: str, name: str) -> k8s.V1Lease | None:
        try:
            lease: k8s.V1Lease = self._call(
                "read lease", self.coordination.read_namespaced_lease, name, namespace
            )
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        return lease

    def create_lease(self, namespace: str, lease: k8s.V1Lease) -> k8s.V1Lease:
        created: k8s.V1Lease = self._call(
            "create lease", self.coordination.create_namespaced_lease, namespace, lease
        )
        return created

    def replace_lease(self, namespace: str, lease: k8s.V1Lease) -> k8s.V1Lease:
        """Replace with the lease's resourceVersion: KubeError 409 when someone wrote first."""
        assert lease.metadata is not None
        replaced: k8s.V1Lease = self._call(
            "replace lease",
            self.coordination.replace_namespaced_lease,
            lease.metadata.name,
            namespace,
            lease,
        )
        return replaced

    def get_lease(self, namespace: str, name: str) -> Obj | None:
        """A Lease as the API server sends it (JSON), or None when there is none."""
        try:
            response = self._call(
                "read lease",
                self.coordination.read_namespaced_lease,
                name,
                namespace,
                _preload_content=False,
            )
        except KubeError as exc:
            if exc.status == 404:
                return None
            raise
        return json.loads(response.data)  # type: ignore[no-any-return]

    def list_leases(self, namespace: str, selector: str) -> Obj:
        """The Leases of ``namespace`` whose labels match ``selector`` (``key=value,...``),
        as the API server sends them (a LeaseList: JSON, camelCase)."""
        response = self._call(
            "list leases",
            self.coordination.list_namespaced_lease,
            namespace,
            label_selector=selector,
            _preload_content=False,
        )
        return json.loads(response.data)  # type: ignore[no-any-return]

    def open_lease_watch(
        self, namespace: str, selector: str, resource_version: str, timeout: int
    ) -> Any:
        """An open watch of those Leases from ``resource_version`` (read it with ``events``)."""
        return self._call(
            "watch leases",
            self.coordination.list_namespaced_lease,
            namespace,
            label_selector=selector,
            watch=True,
            resource_version=resource_version,
            allow_watch_bookmarks=True,
            timeout_seconds=timeout,
            _preload_content=False,
            _request_timeout=(10, timeout + 10),
        )

    def write_lease(
        self, namespace: str, body: Obj, *, create: bool, timeout: float | None = None
    ) -> Obj:
        """Create a Lease, or replace one with the resourceVersion ``body`` names (KubeError
        409 when someone wrote first); the Lease as written (JSON). ``timeout``: seconds
        to connect and to read, at most (a renewal answered after the hold it was for
        would be of no use)."""
        name = body["metadata"]["name"]
        limit = (
            REQUEST_TIMEOUT if timeout is None else tuple(min(t, timeout) for t in REQUEST_TIMEOUT)
        )
        if create:
            response = self._call(
                "create lease",
                self.coordination.create_namespaced_lease,
                namespace,
                body,
                _preload_content=False,
                _request_timeout=limit,
            )
        else:
            response = self._call(
                "replace lease",
                self.coordination.replace_namespaced_lease,
                name,
                namespace,
                body,
                _preload_content=False,
                _request_timeout=limit,
            )
        return json.loads(response.data)  # type: ignore[no-any-return]

    def delete_lease(self, namespace: str, name: str) -> None:
        """Delete a Lease; one already gone is not an error."""
        try:
            self._call("delete lease", self.coordination.delete_namespaced_lease, name, namespace)
        except KubeError as exc:
            if exc.status != 404:
                raise


def _within_hold(timeout: Any) -> Any:
    """A call's ``_request_timeout``, cut to end before the hold of the write it is made
    in (if any); raises when that hold lapsed."""
    if hold.current() is None:
        return timeout
    if isinstance(timeout, tuple):
        return tuple(hold.deadline(float(t)) for t in timeout)
    return hold.deadline(float(timeout))
