"""The controller of Kubernetes mode: watches -> ``Config`` -> runtime (``controller``),
and what it is given and watches (``settings``)."""

from promoter.kube.controller.controller import Controller
from promoter.kube.controller.settings import KubeSettings

__all__ = ["Controller", "KubeSettings"]
