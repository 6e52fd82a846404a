"""The fields each Bitbucket event is read for (Cloud and Data Center), as TypedDicts:
decoding skips everything else (see ``webhooks.providers.shapes``, whose rules these follow)."""

from __future__ import annotations

from typing import Any, TypedDict

# --- Bitbucket Cloud ---------------------------------------------------------------------


class CloudHref(TypedDict, total=False):
    href: Any


class CloudLinks(TypedDict, total=False):
    html: CloudHref | None


class CloudRepository(TypedDict, total=False):
    full_name: Any
    links: CloudLinks | None


class CloudHash(TypedDict, total=False):
    hash: Any


class CloudRefState(TypedDict, total=False):
    type: Any
    name: Any
    target: CloudHash | None


class CloudChange(TypedDict, total=False):
    new: CloudRefState | None
    old: CloudRefState | None
    commits: list[CloudHash] | None


class CloudPushFields(TypedDict, total=False):
    changes: list[CloudChange] | None


class CloudPush(TypedDict, total=False):
    repository: CloudRepository | None
    push: CloudPushFields | None


class CloudBranch(TypedDict, total=False):
    name: Any


class CloudEndpoint(TypedDict, total=False):
    branch: CloudBranch | None
    commit: CloudHash | None


class CloudPullRequestFields(TypedDict, total=False):
    id: Any
    state: Any
    source: CloudEndpoint | None
    destination: CloudEndpoint | None


class CloudPullRequest(TypedDict, total=False):
    repository: CloudRepository | None
    pullrequest: CloudPullRequestFields | None


class CloudStatusFields(TypedDict, total=False):
    key: Any
    state: Any
    name: Any
    description: Any
    url: Any
    created_on: Any
    updated_on: Any
    commit: CloudHash | None


class CloudStatus(TypedDict, total=False):
    repository: CloudRepository | None
    commit_status: CloudStatusFields | None


# --- Bitbucket Data Center ---------------------------------------------------------------


class DataCenterProject(TypedDict, total=False):
    key: Any


class DataCenterLink(TypedDict, total=False):
    href: Any


class DataCenterRepoLinks(TypedDict, total=False):
    clone: list[DataCenterLink] | None


class DataCenterRepository(TypedDict, total=False):
    slug: Any
    project: DataCenterProject | None
    links: DataCenterRepoLinks | None


class DataCenterRef(TypedDict, total=False):
    id: Any
    displayId: Any
    latestCommit: Any
    repository: DataCenterRepository | None


class DataCenterChange(TypedDict, total=False):
    ref: DataCenterRef | None
    refId: Any
    fromHash: Any
    toHash: Any
    type: Any


class DataCenterRefsChanged(TypedDict, total=False):
    repository: DataCenterRepository | None
    changes: list[DataCenterChange] | None


class DataCenterPullRequestFields(TypedDict, total=False):
    id: Any
    state: Any
    fromRef: DataCenterRef | None
    toRef: DataCenterRef | None


class DataCenterPullRequest(TypedDict, total=False):
    pullRequest: DataCenterPullRequestFields | None
