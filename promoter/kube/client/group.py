"""The API group and version the promoter's custom resources are served under.

The client lists, watches and patches them there (``api``); their models and CRDs
(``promoter.kube.resources``) name it. Nothing else lives here, so that writing the CRDs
does not load the Kubernetes client.
"""

from __future__ import annotations

GROUP = "promoter.argoproj.io"
VERSION = "v1alpha1"
