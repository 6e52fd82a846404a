"""The command line: ``promoter serve|status|validate|demo|hydrate|...`` and its helpers.

The outermost layer: it parses arguments, builds the daemon through ``promoter.wiring``,
or talks to a running one over HTTP.
"""

from promoter.cli.main import main

__all__ = ["main"]
