"""Gates judged by asking another system: an HTTP endpoint, Argo CD, Flux.

Each check returns a ``CommitStatus`` under the gate's key for one commit; a system
that cannot be reached gives ``pending`` (it may answer next time), never a crash.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import jmespath
import requests

from promoter.config.gates import ArgoCd, Flux, HttpCheck
from promoter.models import CommitStatus, Phase

SOURCE = "promoter"


@dataclass(frozen=True)
class Target:
    """What a check is about: a strategy's environment and one of its commits."""

    strategy: str
    environment: str
    sha: str
    dry_sha: str


def _status(key: str, phase: Phase, description: str, url: str = "") -> CommitStatus:
    return CommitStatus(key=key, phase=phase, description=description[:140], url=url, source=SOURCE)


def _fill(text: str, target: Target) -> str:
    return (
        text.replace("{sha}", target.sha)
        .replace("{drySha}", target.dry_sha)
        .replace("{environment}", target.environment)
    )


def http_check(
    key: str, spec: HttpCheck, target: Target, session: requests.Session
) -> CommitStatus:
    """Ask the endpoint; judge by status code, then by the expression over the JSON answer.

    The expression may also answer a phase by name (``'pending'``, ``'success'``,
    ``'failure'``); otherwise truthy is success and falsy is failure.
    """
    url = _fill(spec.url, target)
    headers = {name: secret.resolve() for name, secret in spec.headers.items()}
    body = _fill(spec.body, target) if spec.body is not None else None
    try:
        answer = session.request(spec.method, url, headers=headers, data=body, timeout=spec.timeout)
    except requests.RequestException as exc:
        return _status(key, Phase.PENDING, f"check not reachable: {type(exc).__name__}", url)
    if answer.status_code >= 500 or answer.status_code == 429:
        return _status(
            key, Phase.PENDING, f"check answered {answer.status_code}; asking again", url
        )
    if answer.status_code not in spec.success_status:
        return _status(key, Phase.FAILURE, f"check answered {answer.status_code}", url)
    if spec.expression is None:
        return _status(key, Phase.SUCCESS, f"check answered {answer.status_code}", url)
    try:
        data: Any = answer.json()
    except ValueError:
        return _status(key, Phase.FAILURE, "check answered no JSON for the expression", url)
    result = jmespath.search(spec.expression, data)
    if isinstance(result, str) and result in {p.value for p in Phase}:
        return _status(key, Phase(result), f"check says {result}", url)
    if result:
        return _status(key, Phase.SUCCESS, f"check passed: {spec.expression}", url)
    return _status(key, Phase.FAILURE, f"check failed: {spec.expression}", url)


def _targets_branch(app: dict[str, Any], branch: str) -> bool:
    spec = app.get("spec") or {}
    sources = spec.get("sources") or [spec.get("source") or {}]
    return any((s or {}).get("targetRevision") == branch for s in sources)


def argocd_check(key: str, spec: ArgoCd, target: Target, session: requests.Session) -> CommitStatus:
    """Every Application deploying the environment's branch is Synced to its commit and
    Healthy: success; any Degraded (or Missing): failure; otherwise pending."""
    url = f"{spec.server.rstrip('/')}/api/v1/applications"
    params = {"selector": spec.selector} if spec.selector else {}
    headers = {"Authorization": f"Bearer {spec.token.resolve()}"}
    try:
        answer = session.get(url, params=params, headers=headers, timeout=spec.timeout)
    except requests.RequestException as exc:
        return _status(key, Phase.PENDING, f"Argo CD not reachable: {type(exc).__name__}")
    if answer.status_code != 200:
        return _status(key, Phase.PENDING, f"Argo CD answered {answer.status_code}")
    items = (answer.json() or {}).get("items") or []
    apps = [
        app
        for app in items
        if (not spec.applications or app.get("metadata", {}).get("name") in spec.applications)
        and _targets_branch(app, target.environment)
    ]
    if not apps:
        return _status(key, Phase.PENDING, f"no Argo CD application deploys {target.environment}")
    degraded, waiting = [], []
    for app in apps:
        name = app.get("metadata", {}).get("name", "?")
        status = app.get("status") or {}
        health = (status.get("health") or {}).get("status")
        sync = status.get("sync") or {}
        revisions = [sync.get("revision"), *(sync.get("revisions") or [])]
        if health in ("Degraded", "Missing"):
            degraded.append(f"{name} {health}")
        elif sync.get("status") != "Synced" or target.sha not in revisions:
            waiting.append(f"{name} not synced to {target.sha[:7]}")
        elif health != "Healthy":
            waiting.append(f"{name} {health or 'Unknown'}")
    if degraded:
        return _status(key, Phase.FAILURE, "Argo CD: " + ", ".join(degraded))
    if waiting:
        return _status(key, Phase.PENDING, "Argo CD: " + ", ".join(waiting))
    return _status(key, Phase.SUCCESS, f"Argo CD: {len(apps)} synced to {target.sha[:7]}, Healthy")


FLUX_KINDS = (
    ("kustomize.toolkit.fluxcd.io", "v1", "kustomizations", "Kustomization"),
    ("helm.toolkit.fluxcd.io", "v2", "helmreleases", "HelmRelease"),
)


def flux_check(key: str, spec: Flux, target: Target, custom_objects: Any) -> CommitStatus:
    """Every named Kustomization / HelmRelease applied the environment's commit and is
    Ready. ``custom_objects`` is a ``kubernetes.client.CustomObjectsApi``."""
    wanted = [
        (group, version, plural, kind, name)
        for (group, version, plural, kind), names in zip(
            FLUX_KINDS, (spec.kustomizations, spec.helm_releases), strict=True
        )
        for name in names
    ]
    if not wanted:
        return _status(key, Phase.PENDING, "flux: no Kustomization or HelmRelease named")
    failed, waiting = [], []
    for group, version, plural, kind, name in wanted:
        try:
            obj = custom_objects.get_namespaced_custom_object(
                group, version, spec.namespace, plural, name
            )
        except Exception as exc:  # the kubernetes client raises ApiException and urllib3 errors
            waiting.append(f"{kind} {name} not readable ({type(exc).__name__})")
            continue
        status = obj.get("status") or {}
        applied = str(status.get("lastAppliedRevision") or "")
        ready = next((c for c in status.get("conditions") or [] if c.get("type") == "Ready"), None)
        if not applied.endswith(target.sha):
            waiting.append(f"{kind} {name} has not applied {target.sha[:7]}")
        elif ready is None or ready.get("status") == "Unknown":
            waiting.append(f"{kind} {name} not ready yet")
        elif ready.get("status") == "False":
            failed.append(f"{kind} {name}: {ready.get('reason') or 'not ready'}")
    if failed:
        return _status(key, Phase.FAILURE, "flux: " + "; ".join(failed))
    if waiting:
        return _status(key, Phase.PENDING, "flux: " + "; ".join(waiting))
    return _status(key, Phase.SUCCESS, f"flux: {len(wanted)} applied {target.sha[:7]}, Ready")
