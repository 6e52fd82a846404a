"""The daemon's machinery: the work queue and workers, timers, and the reconcile loop.

A reconcile reads a strategy fresh (``reading``), asks the engine, and carries out its
actions (``acting``); manual operations go through the same path (``operations``). The
rooms, top to bottom: ``runtime`` (holds them all), ``operations``, ``loop``, ``acting``,
``reading``, then ``checks`` (gates that ask other systems, in the background) beside
``memory`` (what is kept between reconciles); a room imports only the rooms below it.

Callers outside the daemon import it from here, never from its modules.
``dora_counters`` is the namespace of the DORA counters' observer (``dora_counters.count``).
"""

from promoter.daemon.acting import dora_counters
from promoter.daemon.acting.events import ActionEvent, Observer
from promoter.daemon.acting.executor import Executor
from promoter.daemon.acting.outcome import Outcome
from promoter.daemon.checks.gate_calls import GateCalls, words_of
from promoter.daemon.loop.queue import ShutDown, WorkQueue
from promoter.daemon.loop.reconciler import Reconciler, StrategyView
from promoter.daemon.loop.scheduler import Scheduler, poll_interval
from promoter.daemon.loop.workers import Workers
from promoter.daemon.memory.kept import (
    KeptCommit,
    KeptDecision,
    KeptEnvironment,
    KeptSnapshot,
    KeptVerdict,
)
from promoter.daemon.operations.manual import OperationError, Operations
from promoter.daemon.operations.results import (
    ApproveChangeResult,
    ApproveResult,
    HoldResult,
    MergeResult,
    OperationResult,
    PinResult,
    PromoteResult,
    ReleaseResult,
    RevertResult,
    UnpinResult,
)
from promoter.daemon.reading.freezes import FreezeResult
from promoter.daemon.reading.queue_detection import QueueDetection
from promoter.daemon.reading.reader import SnapshotReader
from promoter.daemon.reading.scope import every_repository
from promoter.daemon.runtime import Runtime

__all__ = [
    "ActionEvent",
    "ApproveChangeResult",
    "ApproveResult",
    "Executor",
    "FreezeResult",
    "GateCalls",
    "HoldResult",
    "KeptCommit",
    "KeptDecision",
    "KeptEnvironment",
    "KeptSnapshot",
    "KeptVerdict",
    "MergeResult",
    "Observer",
    "OperationError",
    "OperationResult",
    "Operations",
    "Outcome",
    "PinResult",
    "PromoteResult",
    "QueueDetection",
    "Reconciler",
    "ReleaseResult",
    "RevertResult",
    "Runtime",
    "Scheduler",
    "ShutDown",
    "SnapshotReader",
    "StrategyView",
    "UnpinResult",
    "WorkQueue",
    "Workers",
    "dora_counters",
    "every_repository",
    "poll_interval",
    "words_of",
]
