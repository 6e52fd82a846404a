"""Gates: what stands between a proposed commit and its environment (DESIGN.md §3, rules 3
to 5) and the checks that tell it on the PR. The commit-status gates, the built-in ones
(soak, windows, approvals and the four-eyes rule, commit messages, signatures), freezes,
staged rollouts, and the promoter's own published statuses.

Above ``core`` only. Callers outside the engine import these names from ``promoter.engine``.
"""

__all__: list[str] = []
