"""The GitLab SCM plugin: merge requests, commit statuses and pipelines, git over HTTPS.

``GitLabScm(provider=..., state_dir=...)`` is the factory the registry calls.
"""

from scm_plugins.gitlab.plugin import GitLabScm

__all__ = ["GitLabScm"]
