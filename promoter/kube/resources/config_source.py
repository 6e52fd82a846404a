"""Turns the custom resources into the same ``Config`` the YAML loader builds.

Names become ``<namespace>.<name>`` (a namespace has no dot, so the split is
unambiguous). An object that does not validate, or refers to one that is missing or
invalid, is left out and reported with its message; the rest still runs.
"""

from __future__ import annotations

import base64
import functools
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from promoter.config import Config, PromotionStrategy, Repository, ScmProvider
from promoter.kube.resources.specs import GitRepositorySpec, PromotionStrategySpec, ScmProviderSpec

Obj = dict[str, Any]
ObjKey = tuple[str, str, str]
"""(kind, namespace, name) of an object."""
ReadSecret = Callable[[str, str], Mapping[str, str]]
"""(namespace, name) -> the Secret's ``data`` (base64 values); KeyError when missing."""


def config_name(namespace: str, name: str) -> str:
    return f"{namespace}.{name}"


def split_name(key: str) -> tuple[str, str]:
    namespace, _, name = key.partition(".")
    return namespace, name


def object_key(obj: Obj) -> ObjKey:
    meta = obj.get("metadata", {})
    return (str(obj.get("kind", "")), str(meta.get("namespace", "")), str(meta.get("name", "")))


@dataclass
class Assembled:
    """The Config built from the objects, and why some objects were left out."""

    config: Config
    problems: dict[ObjKey, str] = field(default_factory=dict)


def _message(exc: ValidationError) -> str:
    parts = []
    for error in exc.errors():
        where = ".".join(str(p) for p in error["loc"]) or "spec"
        parts.append(f"{where}: {error['msg'].removeprefix('Value error, ')}")
    return "; ".join(parts)


class SecretFiles:
    """Secret values written as 0600 files under the state dir, referenced ``fromFile``."""

    def __init__(self, root: Path, read: ReadSecret) -> None:
        self.root = root
        self.read = read

    def ref(self, namespace: str, secret: str, key: str) -> dict[str, str]:
        data = self.read(namespace, secret)
        if key not in data:
            raise KeyError(f"Secret {secret} has no key {key!r}")
        self.root.mkdir(parents=True, exist_ok=True, mode=0o700)
        path = self.root / f"{namespace}.{secret}.{key}"
        value = base64.b64decode(data[key])
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(value)
        return {"fromFile": str(path)}


def _provider(obj: Obj, secrets: SecretFiles) -> ScmProvider:
    namespace, name = object_key(obj)[1:]
    spec = ScmProviderSpec.model_validate(obj.get("spec") or {})
    data: dict[str, Any] = {"name": config_name(namespace, name)}
    kinds = [k for k in ("github", "gitlab", "local", "plugin") if getattr(spec, k) is not None]
    if len(kinds) != 1:
        raise ValueError("give exactly one of github, gitlab, local or plugin")

    def secret(key: str) -> dict[str, str]:
        if spec.secret_ref is None:
            raise ValueError(f"secretRef is required (key {key!r})")
        return secrets.ref(namespace, spec.secret_ref.name, key)

    if spec.github is not None:
        github = spec.github.model_dump(exclude={"app_id", "installation_id"})
        if spec.github.app_id is not None:
            github["app"] = {
                "app_id": spec.github.app_id,
                "installation_id": spec.github.installation_id,
                "private_key": secret("githubAppPrivateKey"),
            }
        else:
            github["token"] = secret("token")
        data["github"] = github
    if spec.gitlab is not None:
        data["gitlab"] = {**spec.gitlab.model_dump(), "token": secret("token")}
    if spec.local is not None:
        data["local"] = {}
    if spec.plugin is not None:
        data["plugin"] = spec.plugin.model_dump()
    return ScmProvider.model_validate(data)


def _repository(obj: Obj) -> tuple[Repository, str]:
    namespace, name = object_key(obj)[1:]
    spec = GitRepositorySpec.model_validate(obj.get("spec") or {})
    provider = config_name(namespace, spec.scm_provider_ref.name)
    data = spec.model_dump(exclude={"scm_provider_ref"})
    repo = Repository.model_validate(
        {**data, "name": config_name(namespace, name), "scm_provider": provider}
    )
    return repo, provider


def _strategy(obj: Obj) -> PromotionStrategy:
    namespace, name = object_key(obj)[1:]
    spec = PromotionStrategySpec.model_validate(obj.get("spec") or {})
    data = spec.model_dump(exclude={"git_repository_ref"})
    ref = spec.git_repository_ref  # type: ignore[attr-defined]
    strategy = PromotionStrategy.model_validate(
        {
            **data,
            "name": config_name(namespace, name),
            "repository": config_name(namespace, ref.name),
        }
    )
    branches = [env.branch for env in strategy.environments]
    for branch in branches:
        if branches.count(branch) > 1:
            raise ValueError(f"environment branch {branch!r} appears twice")
        if branch == strategy.dry_branch:
            raise ValueError("an environment branch cannot be the dry branch")
    return strategy


def assemble(base: Config, objects: Mapping[ObjKey, Obj], secrets: SecretFiles) -> Assembled:
    """A Config with ``base``'s daemon and webhooks and every valid object of the cluster."""
    problems: dict[ObjKey, str] = {}

    def build(key: ObjKey, make: Callable[[], Any]) -> Any:
        try:
            return make()
        except ValidationError as exc:
            problems[key] = _message(exc)
        except KeyError as exc:  # str() of a KeyError is its argument's repr
            problems[key] = str(exc.args[0]) if exc.args else "missing"
        except ValueError as exc:
            problems[key] = str(exc)
        return None

    providers = {}
    for key, obj in sorted(objects.items()):
        if key[0] == "ScmProvider":
            provider = build(key, functools.partial(_provider, obj, secrets))
            if provider is not None:
                providers[provider.name] = provider
    repositories = {}
    for key, obj in sorted(objects.items()):
        if key[0] == "GitRepository":
            found = build(key, functools.partial(_repository, obj))
            if found is None:
                continue
            repo, provider_name = found
            if provider_name not in providers:
                problems[key] = f"ScmProvider {split_name(provider_name)[1]} is missing or invalid"
                continue
            repositories[repo.name] = repo
    strategies = []
    for key, obj in sorted(objects.items()):
        if key[0] == "PromotionStrategy":
            strategy = build(key, functools.partial(_strategy, obj))
            if strategy is None:
                continue
            if strategy.repository not in repositories:
                repo_name = split_name(strategy.repository)[1]
                problems[key] = f"GitRepository {repo_name} is missing or invalid"
                continue
            strategies.append(strategy)
    config = base.model_copy(
        update={
            "scm_providers": list(providers.values()),
            "repositories": list(repositories.values()),
            "promotion_strategies": strategies,
        }
    )
    return Assembled(config, problems)
