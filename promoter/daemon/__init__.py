"""The daemon's machinery: the work queue and workers, timers, and the reconcile loop.

A reconcile reads a strategy fresh (``reader``), asks the engine, and carries out its
actions (``executor``); manual operations go through the same path (``operations``).
"""

from promoter.daemon.acting.events import ActionEvent, Observer
from promoter.daemon.acting.executor import Executor
from promoter.daemon.acting.outcome import Outcome
from promoter.daemon.loop.queue import ShutDown, WorkQueue
from promoter.daemon.loop.reconciler import Reconciler, StrategyView
from promoter.daemon.loop.scheduler import Scheduler
from promoter.daemon.loop.workers import Workers
from promoter.daemon.operations.manual import OperationError, Operations
from promoter.daemon.reading.reader import SnapshotReader
from promoter.daemon.runtime import Runtime

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
