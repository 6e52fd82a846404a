"""Worker threads: take a key from the queue, reconcile it, schedule its retry or requeue.

Errors decide the retry (the tree is drawn in ``promoter.errors``), and each failure is
logged once, here: ``ScmRateLimited`` waits its ``retry_after`` (no add can jump it); a
lasting refusal (``ScmConflict`` with ``lasting``: a conflict, branch protection) waits
the cap; other temporary errors back off exponentially (capped), among them
``ScmNotFound``, which means that what the promoter knew was wrong: it is read again. A
permanent error (``PermanentError``: bad credentials, a missing permission) parks the
strategy: it is not retried until a webhook, a moved ref or a configuration change wakes
it (``WorkQueue.park``). An unexpected crash backs off too, so that nothing is lost.
``NotOwner`` (Kubernetes mode: the repository's shard moved to another replica) drops the
key: it is not ours to retry.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable

from promoter.activity import ACTIVITY
from promoter.daemon.acting.outcome import Outcome
from promoter.daemon.loop.queue import ShutDown, WorkQueue
from promoter.errors import (
    NotOwner,
    PermanentError,
    RateBudgetWait,
    ScmBusy,
    ScmConflict,
    ScmRateLimited,
    TemporaryError,
)
from promoter.logs import reconcile_context

log = logging.getLogger("promoter.workers")


class Workers:
    def __init__(
        self, queue: WorkQueue, reconcile: Callable[[str], Outcome], *, count: int
    ) -> None:
        self.queue = queue
        self._reconcile = reconcile
        self._threads = [
            threading.Thread(target=self._run, name=f"promoter-worker-{i}", daemon=True)
            for i in range(count)
        ]
        self.busy = 0
        self._busy_lock = threading.Lock()

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self, timeout: float = 30.0) -> bool:
        """Stop taking keys; wait up to ``timeout`` seconds in all (not per thread) for the
        reconciles in flight. True when all finished."""
        self.queue.shutdown()
        deadline = time.monotonic() + timeout
        for thread in self._threads:
            if thread.is_alive():
                thread.join(max(0.0, deadline - time.monotonic()))
        return not any(t.is_alive() for t in self._threads)

    def _run(self) -> None:
        while True:
            try:
                key = self.queue.get()
            except ShutDown:
                return
            if key is None:
                continue
            with self._busy_lock:
                self.busy += 1
            try:
                with reconcile_context(key):  # its lines and the reconciler's: one reconcile id
                    self.process(key)
            finally:
                with self._busy_lock:
                    self.busy -= 1
                self.queue.done(key)

    def process(self, key: str) -> None:
        """Reconcile one key and schedule what follows; never raises."""
        try:
            with ACTIVITY.working(key):
                outcome = self._reconcile(key)
        except NotOwner as exc:
            log.info("not ours any more: dropped", extra={"strategy": key, "error": str(exc)})
            self.queue.forget(key)
            return
        except ScmRateLimited as exc:
            extra = {"strategy": key, "retry_after": exc.retry_after}
            if isinstance(exc, RateBudgetWait):  # our own pacing, not a refusal
                log.debug("rate budget: waiting", extra=extra)
            else:
                log.warning("rate limited", extra=extra)
            self.queue.not_before(key, exc.retry_after)
            self.queue.add(key)
            return
        except TemporaryError as exc:
            if isinstance(exc, ScmBusy) and exc.delay is not None:
                delay = exc.delay  # when the lock can be cleared: no sooner, no later
            else:
                delay = max(self.queue.backoff(key), exc.delay or 0.0)
            if isinstance(exc, ScmConflict) and exc.lasting:
                delay = max(delay, self.queue.max_delay)
            log.warning(
                "reconcile failed", extra={"strategy": key, "delay": delay, "error": str(exc)}
            )
            self.queue.add_after(key, delay, firm=True)
            return
        except PermanentError as exc:
            self.queue.park(key, str(exc))
            log.error(
                "reconcile failed",
                extra={"strategy": key, "parked": True, "error": str(exc)},
            )
            return
        except Exception:
            delay = self.queue.backoff(key)
            log.exception("reconcile crashed", extra={"strategy": key, "delay": delay})
            self.queue.add_after(key, delay, firm=True)
            return
        self.queue.forget(key)
        if outcome.requeue_after is not None:
            self.queue.add_after(key, outcome.requeue_after)
