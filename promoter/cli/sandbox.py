"""The sandbox the demo, the benchmarks and the tests share: a local GitOps repository
(commits written without a working tree, hydrated by ``promoter hydrate``) and its config."""

from __future__ import annotations

import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from promoter.cli.hydrate import MetadataStyle, hydrate
from promoter.git.identity import identity_env
from promoter.git.process.runner import run_git


@cache
def _identity() -> dict[str, str]:
    return identity_env()


def git(
    repo: Path, *args: str, env: Mapping[str, str] | None = None, stdin: str | None = None
) -> str:
    """``git args`` in ``repo`` with a fallback identity; its stripped output."""
    return run_git(args, cwd=repo, env={**_identity(), **(env or {})}, stdin=stdin)[1].strip()


def init_bare(path: Path, *, initial_branch: str = "main") -> Path:
    path.mkdir(parents=True, exist_ok=True)
    git(path, "init", "--bare", "--quiet", f"--initial-branch={initial_branch}")
    return path


def commit_files(repo: Path, branch: str, files: Mapping[str, str | None], message: str) -> str:
    """Commit ``files`` (path -> content, None deletes) on top of ``branch``; returns the SHA."""
    parent = (
        git(repo, "rev-parse", "--verify", "--quiet", f"refs/heads/{branch}^{{commit}}")
        if _has_branch(repo, branch)
        else ""
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = {"GIT_INDEX_FILE": str(Path(tmp) / "index")}
        if parent:
            git(repo, "read-tree", parent, env=env)
        for name, content in files.items():
            if content is None:
                removal = f"0 {'0' * 40}\t{name}\n"
                git(repo, "update-index", "--index-info", env=env, stdin=removal)
                continue
            blob_file = Path(tmp) / "blob"
            blob_file.write_text(content, encoding="utf-8")
            blob = git(repo, "hash-object", "-w", str(blob_file))
            git(repo, "update-index", "--add", "--cacheinfo", f"100644,{blob},{name}", env=env)
        tree = git(repo, "write-tree", env=env)
    args = ["commit-tree", tree, "-m", message] + (["-p", parent] if parent else [])
    sha = git(repo, *args)
    git(repo, "update-ref", f"refs/heads/{branch}", sha, parent or "0" * 40)
    return sha


def _has_branch(repo: Path, branch: str) -> bool:
    ref = f"refs/heads/{branch}"
    return run_git(["rev-parse", "--verify", "--quiet", ref], cwd=repo, ok=(0, 1))[0] == 0


ENVIRONMENTS = ["environment/dev", "environment/staging", "environment/prod"]
"""The sandbox's environments, in promotion order."""

STRATEGY = "guestbook"
VALUES = "apps/guestbook/values.yaml"


@dataclass
class GitOpsRepo:
    """A bare repository with a dry ``main`` hydrated onto each environment's ``-next``.

    The demo, the benchmarks and the tests all build their sandbox with it.
    """

    path: Path
    metadata: MetadataStyle = "file"
    """What the hydrator writes (``promoter.cli.hydrate``): file and note, Argo CD's, note only."""

    @classmethod
    def create(
        cls,
        root: Path,
        environments: list[str] | None = None,
        *,
        values: str | None = None,
        metadata: MetadataStyle = "file",
    ) -> GitOpsRepo:
        repo = cls(init_bare(root / "gitops.git"), metadata)
        repo.change("1.0.0", "Add guestbook 1.0.0", environments, values=values)
        return repo

    def change(
        self,
        version: str,
        message: str,
        environments: list[str] | None = None,
        *,
        values: str | None = None,
    ) -> str:
        """Commit a new dry version of the guestbook and hydrate it; the dry SHA."""
        content = values if values is not None else f"image: guestbook:{version}\n"
        sha = commit_files(self.path, "main", {VALUES: content}, message)
        hydrate(
            repo=self.path,
            dry_ref="main",
            branches=environments or ENVIRONMENTS,
            metadata=self.metadata,
        )
        return sha

    def tip(self, branch: str) -> str:
        return git(self.path, "rev-parse", f"refs/heads/{branch}")


def sandbox_config(
    repo: Path,
    state: Path,
    *,
    auto_revert: str = "",
    environments: Mapping[str, str] | None = None,
    extra_strategy: str = "",
    daemon: Mapping[str, object] | None = None,
    access: str = "",
) -> str:
    """promoter.yaml for the guestbook strategy on ``repo`` with the local SCM.

    ``auto_revert`` (e.g. ``"{enabled: true, settleTime: 1s}"``) is set on staging and
    prod; ``environments`` adds settings to an environment by its short name (e.g.
    ``{"prod": "gates: [{soak: {duration: 5s}}]"}``); ``extra_strategy`` is YAML appended
    to ``promotionStrategies``; ``daemon`` holds the daemon's settings besides ``stateDir``;
    ``access`` is the YAML of an ``access:`` section's body, indented by two spaces.
    """
    revert = f", autoRevert: {auto_revert}" if auto_revert else ""
    extra = {name: f", {text}" for name, text in (environments or {}).items()}
    daemon_yaml = "".join(f"\n  {key}: {value}" for key, value in (daemon or {}).items())
    return f"""\
scmProviders:
  - name: local
    local: {{}}
repositories:
  - name: gitops
    url: {repo}
    scmProvider: local
promotionStrategies:
  - name: {STRATEGY}
    repository: gitops
    activeCommitStatuses: [{{key: health}}]
    proposedCommitStatuses: [{{key: ci}}]
    environments:
      - {{branch: environment/dev{extra.get("dev", "")}}}
      - {{branch: environment/staging{revert}{extra.get("staging", "")}}}
      - {{branch: environment/prod{revert}{extra.get("prod", "")}}}
{extra_strategy}
daemon:
  stateDir: {state}{daemon_yaml}
""" + (f"access:\n{access}\n" if access else "")
