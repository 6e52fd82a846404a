"""Gates judged by asking another system: an HTTP endpoint, Argo CD, Flux.

Each check returns a ``CommitStatus`` under the gate's key for one commit when the
backend answered, ``failure`` only where the answer says so. When it gave no usable
answer (no answer in time, a network or TLS error, 5xx, garbage, missing credentials)
a check raises ``GateTrouble``; it runs through ``GateCalls.judge``, which turns that,
and anything else raised, into a ``pending`` verdict in the backend's words.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

import jmespath
import requests

from promoter.config.gates import ArgoCd, GateSpec, HttpCheck
from promoter.daemon.checks.answers import json_of, read_body, secret, snippet, timeouts
from promoter.daemon.checks.gate_calls import Garbage, Unreachable, verdict
from promoter.models import CommitStatus, Phase


@dataclass(frozen=True)
class Target:
    """What a check is about: a strategy's environment and one of its commits."""

    strategy: str
    environment: str
    sha: str
    dry_sha: str


def _status(key: str, phase: Phase, description: str, url: str = "") -> CommitStatus:
    return verdict(key, phase, description, url)


def _fill(text: str, target: Target) -> str:
    return (
        text.replace("{sha}", target.sha)
        .replace("{drySha}", target.dry_sha)
        .replace("{environment}", target.environment)
    )


def backend_of(gate: GateSpec) -> tuple[str, str]:
    """``(backend, what)``: which system a gate asks (its calls are bounded together) and
    how its verdicts name it."""
    if gate.http is not None:
        parts = urlsplit(gate.http.url)
        return f"http {parts.scheme}://{parts.netloc}", "check"
    if gate.argocd is not None:
        return f"argocd {gate.argocd.server.rstrip('/')}", "Argo CD"
    return "kubernetes", "flux: Kubernetes API"


def _get(
    session: requests.Session,
    method: str,
    url: str,
    timeout: float,
    *,
    headers: Mapping[str, str],
    params: Mapping[str, str] | None = None,
    data: str | None = None,
) -> tuple[int, bytes]:
    """``(status, body)`` of one call, the whole answer within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    try:
        answer = session.request(
            method,
            url,
            headers=headers,
            params=params,
            data=data,
            timeout=timeouts(timeout),
            stream=True,
        )
    except requests.Timeout:
        raise Unreachable(f"no answer within {timeout:g}s") from None
    return answer.status_code, read_body(answer.raw, deadline)


def _unanswered(status: int, body: bytes) -> None:
    """``Unreachable`` for the answers that say "not now": 5xx and 429."""
    if status >= 500 or status == 429:
        raise Unreachable(f"answered {status}: {snippet(body)}")


def http_check(
    key: str, spec: HttpCheck, target: Target, session: requests.Session
) -> CommitStatus:
    """Ask the endpoint; judge by status code, then by the expression over the JSON answer.

    The expression may also answer a phase by name (``'pending'``, ``'success'``,
    ``'failure'``); otherwise truthy is success and falsy is failure.
    """
    url = _fill(spec.url, target)
    headers = {name: secret(ref) for name, ref in spec.headers.items()}
    body = _fill(spec.body, target) if spec.body is not None else None
    status, answer = _get(session, spec.method, url, spec.timeout, headers=headers, data=body)
    _unanswered(status, answer)
    if status not in spec.success_status:
        return _status(key, Phase.FAILURE, f"check answered {status}: {snippet(answer)}", url)
    if spec.expression is None:
        return _status(key, Phase.SUCCESS, f"check answered {status}", url)
    result = jmespath.search(spec.expression, json_of(answer))
    if isinstance(result, str) and result in {p.value for p in Phase}:
        return _status(key, Phase(result), f"check says {result}", url)
    if result:
        return _status(key, Phase.SUCCESS, f"check passed: {spec.expression}", url)
    return _status(key, Phase.FAILURE, f"check failed: {spec.expression}", url)


def _object(value: Any) -> dict[str, Any]:
    return value if isinstance(value, dict) else {}


def _targets_branch(app: dict[str, Any], branch: str) -> bool:
    spec = _object(app.get("spec"))
    sources = spec.get("sources") or [spec.get("source")]
    return isinstance(sources, list) and any(
        _object(s).get("targetRevision") == branch for s in sources
    )


def _applications(data: Any) -> list[dict[str, Any]]:
    """The Applications of Argo CD's answer; ``Garbage`` when it is no list of them."""
    items = data.get("items", ()) if isinstance(data, dict) else None
    if items is None and isinstance(data, dict):
        return []  # Argo CD says "items": null when no Application matches
    if not isinstance(items, list) or not all(isinstance(app, dict) for app in items):
        raise Garbage(f"not a list of Applications: {snippet(str(data).encode())}")
    return items


def argocd_check(key: str, spec: ArgoCd, target: Target, session: requests.Session) -> CommitStatus:
    """Every Application deploying the environment's branch is Synced to its commit and
    Healthy: success; any Degraded (or Missing): failure; otherwise pending."""
    url = f"{spec.server.rstrip('/')}/api/v1/applications"
    params = {"selector": spec.selector} if spec.selector else {}
    headers = {"Authorization": f"Bearer {secret(spec.token)}"}
    status, answer = _get(session, "GET", url, spec.timeout, headers=headers, params=params)
    _unanswered(status, answer)
    if status != 200:
        raise Unreachable(f"answered {status}: {snippet(answer)}")
    apps = [
        app
        for app in _applications(json_of(answer))
        if (not spec.applications or _object(app.get("metadata")).get("name") in spec.applications)
        and _targets_branch(app, target.environment)
    ]
    if not apps:
        return _status(key, Phase.PENDING, f"no Argo CD application deploys {target.environment}")
    degraded, waiting = [], []
    for app in apps:
        name = _object(app.get("metadata")).get("name", "?")
        status_of = _object(app.get("status"))
        health = _object(status_of.get("health")).get("status")
        sync = _object(status_of.get("sync"))
        more = sync.get("revisions")
        revisions = [sync.get("revision"), *(more if isinstance(more, list) else ())]
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
