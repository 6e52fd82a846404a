"""The fields each handled event is read for, as TypedDicts: decoding skips everything else.

A genuine payload is mostly what the promoter never reads (the sender, the commits'
trees, the repository's hundred settings). ``payload.decode_fields`` builds only the
fields named here, as plain dicts, and checks nothing about their values: the
normalisers do that as before. Each shape must name every field its normaliser reads
(a field left out would read as absent); ``tests/webhooks/providers/test_webhook_shapes.py``
checks every genuine payload and many mutated ones against a full decode.
"""

from __future__ import annotations

from typing import Any, TypedDict

# --- GitHub ------------------------------------------------------------------------------


class GitHubRepository(TypedDict, total=False):
    full_name: Any
    clone_url: Any
    ssh_url: Any
    git_url: Any
    html_url: Any
    svn_url: Any


class GitHubPing(TypedDict, total=False):
    action: Any


class GitHubHeadCommit(TypedDict, total=False):
    id: Any
    distinct: Any


class GitHubPush(TypedDict, total=False):
    action: Any
    repository: GitHubRepository | None
    ref: Any
    before: Any
    after: Any
    head_commit: GitHubHeadCommit | None


class GitHubStatus(TypedDict, total=False):
    action: Any
    repository: GitHubRepository | None
    state: Any
    sha: Any
    context: Any
    description: Any
    target_url: Any
    updated_at: Any
    created_at: Any


class GitHubOutput(TypedDict, total=False):
    title: Any


class GitHubCheckRunFields(TypedDict, total=False):
    status: Any
    conclusion: Any
    output: GitHubOutput | None
    head_sha: Any
    name: Any
    html_url: Any
    completed_at: Any
    started_at: Any


class GitHubCheckRun(TypedDict, total=False):
    action: Any
    repository: GitHubRepository | None
    check_run: GitHubCheckRunFields | None


class GitHubApp(TypedDict, total=False):
    slug: Any
    name: Any


class GitHubCheckSuiteFields(TypedDict, total=False):
    app: GitHubApp | None
    status: Any
    conclusion: Any
    head_sha: Any
    url: Any
    updated_at: Any
    created_at: Any


class GitHubCheckSuite(TypedDict, total=False):
    action: Any
    repository: GitHubRepository | None
    check_suite: GitHubCheckSuiteFields | None


class GitRef(TypedDict, total=False):
    """A pull request's head or base (GitHub, Forgejo)."""

    ref: Any
    sha: Any


class GitHubPullRequestFields(TypedDict, total=False):
    id: Any
    number: Any
    state: Any
    merged: Any
    merged_at: Any
    head: GitRef | None
    base: GitRef | None


class GitHubPullRequest(TypedDict, total=False):
    action: Any
    repository: GitHubRepository | None
    pull_request: GitHubPullRequestFields | None


class GitHubMergeGroupFields(TypedDict, total=False):
    base_ref: Any
    base_sha: Any


class GitHubMergeGroup(TypedDict, total=False):
    action: Any
    repository: GitHubRepository | None
    merge_group: GitHubMergeGroupFields | None


# --- GitLab ------------------------------------------------------------------------------


class GitLabProject(TypedDict, total=False):
    id: Any
    path_with_namespace: Any
    git_http_url: Any
    git_ssh_url: Any
    web_url: Any
    http_url: Any
    ssh_url: Any
    url: Any


class GitLabCommit(TypedDict, total=False):
    id: Any


class GitLabAttributes(TypedDict, total=False):
    """``object_attributes`` of a merge request or a pipeline."""

    action: Any
    state: Any
    id: Any
    iid: Any
    source_branch: Any
    target_branch: Any
    last_commit: GitLabCommit | None
    source: Any
    sha: Any
    url: Any
    status: Any
    finished_at: Any
    created_at: Any


class GitLabBuild(TypedDict, total=False):
    name: Any
    status: Any
    finished_at: Any
    started_at: Any
    created_at: Any


class GitLabEvent(TypedDict, total=False):
    """Every event the receiver handles (a system hook says which in ``object_kind``)."""

    object_kind: Any
    event_name: Any
    project: GitLabProject | None
    repository: GitLabProject | None
    project_id: Any
    ref: Any
    before: Any
    after: Any
    commits: list[GitLabCommit] | None
    object_attributes: GitLabAttributes | None
    builds: list[GitLabBuild] | None


# --- Forgejo / Gitea ---------------------------------------------------------------------


class ForgejoRepository(TypedDict, total=False):
    full_name: Any
    clone_url: Any
    ssh_url: Any
    html_url: Any


class ForgejoCommit(TypedDict, total=False):
    id: Any


class ForgejoPush(TypedDict, total=False):
    repository: ForgejoRepository | None
    ref: Any
    before: Any
    after: Any
    commits: list[ForgejoCommit] | None


class ForgejoStatus(TypedDict, total=False):
    repository: ForgejoRepository | None
    state: Any
    context: Any
    sha: Any
    description: Any
    target_url: Any
    updated_at: Any
    created_at: Any


class ForgejoPullRequestFields(TypedDict, total=False):
    id: Any
    number: Any
    state: Any
    merged: Any
    head: GitRef | None
    base: GitRef | None


class ForgejoPullRequest(TypedDict, total=False):
    action: Any
    number: Any
    repository: ForgejoRepository | None
    pull_request: ForgejoPullRequestFields | None


# --- Azure DevOps ------------------------------------------------------------------------


class AzureProject(TypedDict, total=False):
    name: Any


class AzureRepository(TypedDict, total=False):
    name: Any
    project: AzureProject | None
    remoteUrl: Any
    webUrl: Any
    sshUrl: Any


class AzureCommit(TypedDict, total=False):
    commitId: Any


class AzureRefUpdate(TypedDict, total=False):
    name: Any
    oldObjectId: Any
    newObjectId: Any


class AzureResource(TypedDict, total=False):
    """A push's (``refUpdates``, ``commits``) or a pull request's fields."""

    repository: AzureRepository | None
    refUpdates: list[AzureRefUpdate] | None
    commits: list[AzureCommit] | None
    pullRequestId: Any
    status: Any
    sourceRefName: Any
    targetRefName: Any
    lastMergeSourceCommit: AzureCommit | None


class AzureDelivery(TypedDict, total=False):
    """A service hook delivery: the event (``eventType``), its ids and its resource."""

    eventType: Any
    id: Any
    notificationId: Any
    subscriptionId: Any
    resource: AzureResource | None


class AzureIds(TypedDict, total=False):
    id: Any
    notificationId: Any
    subscriptionId: Any
