"""The engine's terms, its input and its output: the snapshot, the actions and the decision,
the environments' graph, the ledger's values, the words of a PR and the one merge builder.

The lowest room of the engine: it imports no other room. Callers outside the engine import
these names from ``promoter.engine``.
"""

__all__: list[str] = []
