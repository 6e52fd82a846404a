"""The Bitbucket Data Center SCM plugin: pull requests merged under their version, build
statuses, reviews, git over HTTPS with a bearer token.

``BitbucketDataCenterScm(provider=..., state_dir=...)`` is the factory the registry calls;
``promoter-scm-bitbucket-datacenter`` serves it out of process.
"""

from scm_plugins.bitbucket_datacenter.plugin import BitbucketDataCenterScm

__all__ = ["BitbucketDataCenterScm"]
