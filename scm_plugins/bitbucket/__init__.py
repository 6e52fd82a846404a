"""What the two Bitbucket plugins share: the REST client, errors, build states, git's auth.

``scm_plugins.bitbucket_cloud`` and ``scm_plugins.bitbucket_datacenter`` import this
package; it imports neither of them (the ``plugins-independent`` contract).
"""

from scm_plugins.bitbucket.errors import BitbucketHTTPError, translate
from scm_plugins.bitbucket.gitauth import basic, git_environment, http_origin
from scm_plugins.bitbucket.rest import BitbucketApi
from scm_plugins.bitbucket.states import STATES, phase_of, same_commit

__all__ = [
    "STATES",
    "BitbucketApi",
    "BitbucketHTTPError",
    "basic",
    "git_environment",
    "http_origin",
    "phase_of",
    "same_commit",
    "translate",
]
