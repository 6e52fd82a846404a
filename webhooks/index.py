"""Maps what an event names (repository, branch) to the strategy keys it concerns.

Built once from the configuration. A repository is matched by clone/web URL first,
then by GitLab project id, then by path (GitHub ``full_name``, GitLab
``path_with_namespace``), always among repositories served by a provider of the
same kind (or by an external plugin, which may front either). The index never
changes after it is built; look-ups are dictionary reads plus a memo of recent
identities (a dict, whose single operations are atomic under the GIL), so it is
safe to share between threads.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable

from promoter.config import Config, Repository
from webhooks.events import RepoIdentity

DEFAULT_PIPELINE_KEY = "pipeline"
_ANY_KIND = "plugin"
_MEMO_SIZE = 4096


def normalise_url(url: str) -> str | None:
    """``host/path`` of a remote URL, lower case, without scheme, user, port or ``.git``.

    None for a local path.
    """
    url = url.strip()
    if "://" in url:
        rest = url.split("://", 1)[1]
        authority, _, path = rest.partition("/")
        host = authority.rsplit("@", 1)[-1]
        host = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    elif ":" in url and not url.startswith("/") and "/" not in url.split(":", 1)[0]:
        authority, _, path = url.partition(":")  # scp-like: git@host:owner/name.git
        host = authority.rsplit("@", 1)[-1]
    else:
        return None
    path = path.strip("/").removesuffix(".git").strip("/")
    if not host or not path:
        return None
    return f"{host.lower()}/{path.lower()}"


class StrategyIndex:
    """Repository identity → repository names; (repository, branch) → strategy names."""

    def __init__(self, config: Config) -> None:
        kinds = {p.name: p.kind for p in config.scm_providers}
        self._kind: dict[str, str] = {}
        self._by_url: dict[str, list[str]] = defaultdict(list)
        self._by_path: dict[str, list[str]] = defaultdict(list)
        self._by_project: dict[int, list[str]] = defaultdict(list)
        self._gate_key: dict[str, str] = {}
        self._memo: dict[RepoIdentity, tuple[str, ...]] = {}
        for repo in config.repositories:
            self._add_repository(repo, kinds.get(repo.scm_provider, _ANY_KIND), config)

        strategies: dict[str, set[str]] = defaultdict(set)
        push: dict[tuple[str, str], set[str]] = defaultdict(set)
        pr_base: dict[tuple[str, str], set[str]] = defaultdict(set)
        pr_head: dict[tuple[str, str], set[str]] = defaultdict(set)
        reverts: dict[str, list[tuple[str, str]]] = defaultdict(list)
        for strategy in config.promotion_strategies:
            owner, name = strategy.repository, strategy.name
            strategies[owner].add(name)
            push[(owner, strategy.dry_branch)].add(name)
            for env in strategy.environments:
                proposed = strategy.proposed_branch(env)
                push[(owner, env.branch)].add(name)
                push[(owner, proposed)].add(name)
                pr_base[(owner, env.branch)].add(name)
                pr_head[(owner, proposed)].add(name)
                reverts[owner].append((env.branch + "-revert-", name))
        # Most branches belong to one strategy: equal sets are one object (at 10,000
        # strategies, 80,000 sets of one name would be 17 MB).
        shared: dict[frozenset[str], frozenset[str]] = {}

        def once(names: set[str]) -> frozenset[str]:
            frozen = frozenset(names)
            return shared.setdefault(frozen, frozen)

        self._strategies = {k: frozenset(v) for k, v in strategies.items()}
        self._push = {k: once(v) for k, v in push.items()}
        self._pr_base = {k: once(v) for k, v in pr_base.items()}
        self._pr_head = {k: once(v) for k, v in pr_head.items()}
        self._reverts = dict(reverts)

    def _add_repository(self, repo: Repository, kind: str, config: Config) -> None:
        self._kind[repo.name] = kind
        url = normalise_url(repo.url)
        if url is not None:
            self._by_url[url].append(repo.name)
        if repo.project_id is not None:
            self._by_project[repo.project_id].append(repo.name)
        self._by_path[repo.full_path.lower()].append(repo.name)
        key = DEFAULT_PIPELINE_KEY
        provider = next((p for p in config.scm_providers if p.name == repo.scm_provider), None)
        if provider is not None and provider.gitlab is not None:
            key = provider.gitlab.pipeline_gate_key
        self._gate_key[repo.name] = key

    def repositories(self, ident: RepoIdentity) -> tuple[str, ...]:
        """Names of the configured repositories the event's repository is; empty when unknown."""
        found = self._memo.get(ident)
        if found is None:
            found = self._lookup(ident)
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()  # the index never changes: a cleared memo only costs time
            self._memo[ident] = found
        return found

    def _lookup(self, ident: RepoIdentity) -> tuple[str, ...]:
        for url in ident.urls:
            found = self._of_kind(self._by_url.get(normalise_url(url) or "", ()), ident.provider)
            if found:
                return found
        if ident.project_id is not None:
            found = self._of_kind(self._by_project.get(ident.project_id, ()), ident.provider)
            if found:
                return found
        if ident.full_path:
            return self._of_kind(self._by_path.get(ident.full_path.lower(), ()), ident.provider)
        return ()

    def _of_kind(self, names: Iterable[str], provider: str) -> tuple[str, ...]:
        return tuple(n for n in names if self._kind[n] in (provider, _ANY_KIND))

    def strategies(self, repo: str) -> frozenset[str]:
        """Every strategy of a repository."""
        return self._strategies.get(repo, frozenset())

    def for_push(self, repo: str, branch: str) -> frozenset[str]:
        """Strategies whose dry, proposed or active branch is ``branch``."""
        return self._push.get((repo, branch), frozenset())

    def for_pull_request(self, repo: str, head: str, base: str) -> set[str]:
        """Strategies for which this is a promotion PR (proposed → active) or a revert PR."""
        keys = set(self._pr_base.get((repo, base), ()))
        keys |= self._pr_head.get((repo, head), frozenset())
        keys |= {name for prefix, name in self._reverts.get(repo, ()) if head.startswith(prefix)}
        return keys

    def pipeline_gate_key(self, repo: str) -> str:
        """The gate key a GitLab pipeline is reported under for this repository."""
        return self._gate_key.get(repo, DEFAULT_PIPELINE_KEY)
