"""promoter: a GitOps promoter daemon that moves hydrated changes through environments by PR.

Layers, innermost first: ``models``/``errors`` (shared values), ``config``, ``engine``
(pure rules), ``git``, ``state``, ``daemon``, ``http``, ``cli``; ``wiring`` composes them.
See docs/architecture.md.
"""

__all__ = ["__version__"]

__version__ = "0.1.0"
