"""The Flux health gate: Kustomizations and HelmReleases read through the Kubernetes API.

Every read carries a ``_request_timeout`` and its body is read within the gate's
``timeout``; an object the API says is not there waits with that reason, and anything
else that is not an answer (no kubeconfig, no answer, 5xx, TLS, garbage) raises
``GateTrouble`` for ``GateCalls.judge`` to turn into a pending verdict.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import urllib3

from promoter.config.gates import Flux
from promoter.daemon.checks.answers import json_of, read_body, snippet, timeouts
from promoter.daemon.checks.backends import Target
from promoter.daemon.checks.gate_calls import Garbage, Unreachable, verdict
from promoter.models import CommitStatus, Phase

FLUX_KINDS = (
    ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization"),
    ("helm.toolkit.fluxcd.io", "v2", "helmreleases", "HelmRelease"),
)


def kubernetes_custom_objects() -> Any:
    """A ``CustomObjectsApi`` from the in-cluster config, else the local kubeconfig, that
    never retries on its own (the gate's deadline and backoff decide)."""
    from kubernetes import client, config

    configuration = client.Configuration()
    try:
        config.load_incluster_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    except config.ConfigException:
        config.load_kube_config(client_configuration=configuration)  # type: ignore[no-untyped-call]
    configuration.retries = False
    return client.CustomObjectsApi(client.ApiClient(configuration))


class KubeClient:
    """The ``CustomObjectsApi`` the Flux gate reads through, built on first use; a
    failure to build it (no kubeconfig) is missing credentials, and is tried again."""

    def __init__(self, factory: Callable[[], Any] = kubernetes_custom_objects) -> None:
        self._factory = factory
        self._api: Any = None

    def get(self) -> Any:
        if self._api is None:
            try:
                self._api = self._factory()
            except Exception as exc:  # kubernetes.config raises ConfigException and OSError
                raise Unreachable(f"missing credentials: {exc}") from exc
        return self._api


def _read(api: Any, spec: Flux, wanted: tuple[str, str, str, str], deadline: float) -> Any:
    """One object as JSON, or None when the API says it does not exist."""
    from kubernetes.client.exceptions import ApiException

    group, version, plural, name = wanted
    left = max(deadline - time.monotonic(), 0.001)
    try:
        raw = api.get_namespaced_custom_object(
            group,
            version,
            spec.namespace,
            plural,
            name,
            _request_timeout=timeouts(left),
            _preload_content=False,
        )
    except urllib3.exceptions.TimeoutError:
        raise Unreachable(f"no answer within {spec.timeout:g}s") from None
    except ApiException as exc:
        if exc.status == 404:
            return None
        words = snippet(str(exc.body or "").encode()) if exc.body else str(exc.reason or "")
        raise Unreachable(f"answered {exc.status}: {words}" if exc.status else words) from exc
    return json_of(read_body(raw, deadline))


def _condition(status: dict[str, Any]) -> dict[str, Any] | None:
    conditions = status.get("conditions") or []
    if not isinstance(conditions, list):
        raise Garbage("status.conditions is not a list")
    return next((c for c in conditions if isinstance(c, dict) and c.get("type") == "Ready"), None)


def flux_check(key: str, spec: Flux, target: Target, custom_objects: Any) -> CommitStatus:
    """Every named Kustomization / HelmRelease applied the environment's commit and is
    Ready. ``custom_objects`` is a ``kubernetes.client.CustomObjectsApi``, or a
    ``KubeClient`` that builds one."""
    wanted = [
        (group, version, plural, kind, name)
        for (group, version, plural, kind), names in zip(
            FLUX_KINDS, (spec.kustomizations, spec.helm_releases), strict=True
        )
        for name in names
    ]
    if not wanted:
        return verdict(key, Phase.PENDING, "flux: no Kustomization or HelmRelease named")
    deadline = time.monotonic() + spec.timeout
    api = custom_objects.get() if isinstance(custom_objects, KubeClient) else custom_objects
    failed, waiting = [], []
    for group, version, plural, kind, name in wanted:
        obj = _read(api, spec, (group, version, plural, name), deadline)
        if obj is None:
            waiting.append(f"{kind} {name} not found in {spec.namespace}")
            continue
        if not isinstance(obj, dict):
            raise Garbage(f"{kind} {name} is not an object: {snippet(str(obj).encode())}")
        status = obj.get("status") or {}
        if not isinstance(status, dict):
            raise Garbage(f"{kind} {name} has a status that is not an object")
        applied = str(status.get("lastAppliedRevision") or "")
        ready = _condition(status)
        if not applied.endswith(target.sha):
            waiting.append(f"{kind} {name} has not applied {target.sha[:7]}")
        elif ready is None or ready.get("status") == "Unknown":
            waiting.append(f"{kind} {name} not ready yet")
        elif ready.get("status") == "False":
            failed.append(f"{kind} {name}: {ready.get('reason') or 'not ready'}")
    if failed:
        return verdict(key, Phase.FAILURE, "flux: " + "; ".join(failed))
    if waiting:
        return verdict(key, Phase.PENDING, "flux: " + "; ".join(waiting))
    return verdict(key, Phase.SUCCESS, f"flux: {len(wanted)} applied {target.sha[:7]}, Ready")
