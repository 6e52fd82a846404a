"""The CRDs in manifests/crds/ are generated from the models and valid for Kubernetes."""

from __future__ import annotations

from pathlib import Path

import kubernetes_validate
import yaml

from promoter.cli import main
from promoter.kube.resources.crds import KINDS, rendered

CRDS = Path(__file__).resolve().parents[3] / "manifests" / "crds"


def test_manifests_crds_are_current_with_the_models() -> None:
    on_disk = {p.name: p.read_text(encoding="utf-8") for p in CRDS.glob("*.yaml")}
    assert on_disk == rendered(), "manifests/crds/ is stale: run `promoter crds`"


def test_promoter_crds_writes_one_file_per_kind(tmp_path: Path) -> None:
    assert main(["crds", "--out", str(tmp_path)]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(k.crd_name + ".yaml" for k in KINDS)


def test_every_crd_validates_against_the_kubernetes_schema() -> None:
    for text in rendered().values():
        crd = yaml.safe_load(text)
        kubernetes_validate.validate(crd, "1.30.0", strict=True)


def test_the_strategy_spec_has_every_field_of_promoter_yaml_but_name_and_repository() -> None:
    from promoter.config import PromotionStrategy

    crd = yaml.safe_load(rendered()["promotionstrategies.promoter.argoproj.io.yaml"])
    version = crd["spec"]["versions"][0]
    spec = version["schema"]["openAPIV3Schema"]["properties"]["spec"]
    yaml_keys = {f.alias for f in PromotionStrategy.model_fields.values()} - {"name", "repository"}
    assert set(spec["properties"]) == yaml_keys | {"gitRepositoryRef"}
    assert version["subresources"] == {"status": {}}
    assert [c["name"] for c in version["additionalPrinterColumns"]] == [
        "Repository",
        "Ready",
        "Age",
    ]


def test_durations_are_int_or_string_and_optionals_nullable() -> None:
    crd = yaml.safe_load(rendered()["gitrepositories.promoter.argoproj.io.yaml"])
    spec = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
    poll = spec["properties"]["pollInterval"]
    assert poll["x-kubernetes-int-or-string"] is True
    assert poll["nullable"] is True
