"""manifests/ renders offline with `kubectl kustomize`, and every object validates against
the Kubernetes OpenAPI schemas (kubernetes-validate) or, for custom resources, the CRDs."""

from __future__ import annotations

import shutil
import subprocess
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import kubernetes_validate
import yaml

from promoter.config import Config
from promoter.kube.client.api import PERMISSIONS
from promoter.kube.resources.config_source import SecretFiles, assemble, object_key
from promoter.kube.resources.crds import KINDS, crd

ROOT = Path(__file__).resolve().parents[3]
K8S_VERSION = "1.30.0"
CLUSTER_SCOPED = {"Namespace", "CustomResourceDefinition", "ClusterRole", "ClusterRoleBinding"}


def render(directory: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is part of the machine image (Debian package kubectl)"
    out = subprocess.run(
        [kubectl, "kustomize", str(directory)], capture_output=True, text=True, check=True
    ).stdout
    return [doc for doc in yaml.safe_load_all(out) if doc]


@cache
def installed() -> tuple[dict[str, Any], ...]:
    return tuple(render(ROOT / "manifests"))


def of_kind(kind: str) -> list[dict[str, Any]]:
    return [o for o in installed() if o["kind"] == kind]


def test_every_rendered_object_validates_against_the_kubernetes_schemas() -> None:
    kinds = sorted({o["kind"] for o in installed()})
    assert kinds == sorted(
        [
            "ClusterRole",
            "ClusterRoleBinding",
            "ConfigMap",
            "CustomResourceDefinition",
            "Deployment",
            "Namespace",
            "Role",
            "RoleBinding",
            "Service",
            "ServiceAccount",
        ]
    )
    for obj in installed():
        kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
        if obj["kind"] not in CLUSTER_SCOPED:
            assert obj["metadata"]["namespace"] == "promoter-system", obj["metadata"]
        assert obj["metadata"]["labels"]["app.kubernetes.io/name"] == "promoter"


def test_the_rendered_crds_are_the_generated_ones() -> None:
    rendered = {o["metadata"]["name"]: o for o in of_kind("CustomResourceDefinition")}
    assert set(rendered) == {k.crd_name for k in KINDS}
    for kind in KINDS:
        got = rendered[kind.crd_name]
        assert got["spec"] == crd(kind)["spec"]


def test_the_deployment_runs_two_hardened_replicas_with_probes_and_a_state_volume() -> None:
    (deployment,) = of_kind("Deployment")
    spec = deployment["spec"]
    pod = spec["template"]["spec"]
    (container,) = pod["containers"]
    assert spec["replicas"] == 2
    assert container["image"] == "ghcr.io/example/promoter:0.1.0"
    assert container["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    assert container["resources"]["requests"] == {"cpu": "100m", "memory": "256Mi"}
    assert pod["securityContext"]["runAsNonRoot"] is True
    assert container["securityContext"]["readOnlyRootFilesystem"] is True
    assert container["securityContext"]["allowPrivilegeEscalation"] is False
    volumes = {v["name"]: v for v in pod["volumes"]}
    mounts = {m["mountPath"]: m["name"] for m in container["volumeMounts"]}
    assert "emptyDir" in volumes[mounts["/var/lib/promoter"]]
    (config_map,) = of_kind("ConfigMap")
    daemon = Config.model_validate(yaml.safe_load(config_map["data"]["promoter.yaml"])).daemon
    assert daemon.state_dir == "/var/lib/promoter"
    assert "--kubernetes" in container["args"]
    annotations = spec["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/port"] == str(container["ports"][0]["containerPort"])
    dockerfile = (ROOT / "Dockerfile").read_text(encoding="utf-8")
    assert f"USER {pod['securityContext']['runAsUser']}" in dockerfile


def test_rbac_grants_exactly_the_calls_the_code_makes() -> None:
    granted = set()
    for role in of_kind("ClusterRole") + of_kind("Role"):
        for rule in role["rules"]:
            for group in rule["apiGroups"]:
                for resource in rule["resources"]:
                    granted.update((group, resource, verb) for verb in rule["verbs"])
    assert granted == set(PERMISSIONS)
    bound = {b["roleRef"]["name"] for b in of_kind("ClusterRoleBinding") + of_kind("RoleBinding")}
    assert bound == {r["metadata"]["name"] for r in of_kind("ClusterRole") + of_kind("Role")}


def test_the_examples_validate_against_the_crds_and_build_a_config(tmp_path: Path) -> None:
    examples = render(ROOT / "manifests" / "examples")
    schemas = {k.kind: crd(k)["spec"]["versions"][0]["schema"]["openAPIV3Schema"] for k in KINDS}
    objects = {}
    for obj in examples:
        if obj["kind"] == "Namespace":
            kubernetes_validate.validate(obj, K8S_VERSION, strict=True)
            continue
        jsonschema.validate(obj, schemas[obj["kind"]])
        objects[object_key(obj)] = obj
    assert {k[0] for k in objects} == {k.kind for k in KINDS} - {"CommitStatus"}
    # Applied by hand once its SHA is a commit of the repository: `apply -k` would post
    # a made-up SHA to the SCM (422).
    by_hand = yaml.safe_load((ROOT / "manifests/examples/commitstatus.yaml").read_text())
    jsonschema.validate(by_hand, schemas["CommitStatus"])
    assert by_hand["spec"]["gitRepositoryRef"]["name"] == "guestbook-gitops"

    def secret(namespace: str, name: str) -> dict[str, str]:
        assert (namespace, name) == ("guestbook", "github-credentials")
        return {"githubAppPrivateKey": "LS0tLS1CRUdJTi0tLS0t"}

    assembled = assemble(Config(), objects, SecretFiles(tmp_path, secret))
    assert assembled.problems == {}
    (strategy,) = assembled.config.promotion_strategies
    assert strategy.name == "guestbook.guestbook"
    assert [e.branch for e in strategy.environments][-1] == "environment/prod"
    provider = assembled.config.provider("guestbook.github")
    assert provider.github is not None and provider.github.app is not None
    assert (
        tmp_path / "guestbook.github-credentials.githubAppPrivateKey"
    ).stat().st_mode & 0o077 == 0
