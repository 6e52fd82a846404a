"""Out-of-process SCM plugins in any language: ``promoter.scm/v1``, JSON-RPC 2.0 over stdio.

``ExternalScm`` is the host (what the registry builds for ``scmProviders[].plugin``);
``serve`` runs a Python ``ScmPlugin`` as a plugin process; ``conformance`` checks a
plugin against the whole contract. The protocol is described in docs/plugin-protocol.md.
"""

from scm_plugins.external.host import ExternalScm
from scm_plugins.external.wire import PROTOCOL, SUPPORTED

__all__ = ["PROTOCOL", "SUPPORTED", "ExternalScm"]
