"""The Bitbucket Cloud SCM plugin: pull requests merged after their head is read again,
commit statuses, reviews, git over HTTPS.

``BitbucketCloudScm(provider=..., state_dir=...)`` is the factory the registry calls;
``promoter-scm-bitbucket-cloud`` serves it out of process.
"""

from scm_plugins.bitbucket_cloud.plugin import BitbucketCloudScm

__all__ = ["BitbucketCloudScm"]
