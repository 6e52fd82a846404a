"""The daemon's machinery: the work queue and workers, timers, and the reconcile loop.

A reconcile reads a strategy fresh (``reader``), asks the engine, and carries out its
actions (``executor``); manual operations go through the same path (``operations``).
"""

from promoter.daemon.events import ActionEvent, Observer
from promoter.daemon.executor import Executor
from promoter.daemon.operations import OperationError, Operations
from promoter.daemon.outcome import Outcome
from promoter.daemon.queue import ShutDown, WorkQueue
from promoter.daemon.reader import SnapshotReader
from promoter.daemon.reconciler import Reconciler, StrategyView
from promoter.daemon.runtime import Runtime
from promoter.daemon.scheduler import Scheduler
from promoter.daemon.workers import Workers

__all__ = [
    "ActionEvent",
    "Executor",
    "Observer",
    "OperationError",
    "Operations",
    "Outcome",
    "Reconciler",
    "Runtime",
    "Scheduler",
    "ShutDown",
    "SnapshotReader",
    "StrategyView",
    "WorkQueue",
    "Workers",
]
