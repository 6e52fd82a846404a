"""How a promotion PR that passes its gates reaches its environment: kept mergeable (the
"ours" merge), merged through a merge queue, reviewers requested, and reported to the SCM
as a deployment.

Above ``gates`` and ``core``; it knows nothing of reverts. Callers outside the engine
import these names from ``promoter.engine``.
"""

__all__: list[str] = []
