"""When an environment goes bad (DESIGN.md §3, rule 8): its health, reverts, holds and
pauses, what each ledger action writes, and the DORA figures read from that ledger.

Above ``gates`` and ``core``; it knows nothing of how a promotion is merged. Callers
outside the engine import these names from ``promoter.engine``.
"""

__all__: list[str] = []
