"""``ExternalScm``: the promoter's side of an out-of-process plugin, an ordinary ``ScmPlugin``.

It starts the executable (found by name or given as a command), handshakes
(``initialize``), refuses a plugin that speaks no protocol version we speak, and
then forwards each ``ScmPlugin`` method as one JSON-RPC call with a time limit
(``methods``), counted in ``promoter_scm_calls_total`` under the provider's name like a
built-in's calls. A plugin that sends events (v1.1) is told which repositories to report
(``subscribe``), again after every restart; its events go to the subscription's sink
(``subscription``), except the echoes of the promoter's own writes (``echoes``).

A crashed plugin is restarted on the next call, with a backoff between attempts
(none for the first crash, then 0.5 s doubling to 30 s); calls in flight when it
died fail with ``ScmUnavailable``, so the reconcile that made them is retried by
the work queue and reads everything fresh: an action is never half-applied by the
promoter (a plugin call either returned or is repeated from a fresh read). Its health is
judged from what it says (``health``): three time-outs in a row mean a hung plugin, which
is killed and restarted; an ``unavailable`` or ``temporary`` answer is an outage of its
SCM, which pauses the provider's calls and never restarts a process that answers. Secrets
go to the plugin in ``initialize`` only, never on its command line or in a log; the
variables they were read from are left out of the plugin's environment. Every log line
names the provider and the plugin.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from promoter.config import Repository, ScmProvider
from promoter.errors import ConfigError, ScmError, ScmOutage, ScmUnavailable
from scm_plugins.calls import ScmCalls
from scm_plugins.external import messages as m
from scm_plugins.external.accounting import LineAccount
from scm_plugins.external.credentials import CredentialCache
from scm_plugins.external.discovery import PREFIX, command_line
from scm_plugins.external.echoes import OwnWrites, Settled, Write
from scm_plugins.external.errors import CallTimedOut, PluginError
from scm_plugins.external.events import EventSink
from scm_plugins.external.health import PluginHealth
from scm_plugins.external.methods import Learn, PluginMethods
from scm_plugins.external.process import PluginProcess
from scm_plugins.external.subscription import Subscription
from scm_plugins.external.wire import SUPPORTED, V1_1

log = logging.getLogger("promoter.plugins")

FIRST_BACKOFF = 0.5
MAX_BACKOFF = 30.0
CALM_AFTER = 60.0
"""A crash longer than this after the previous one starts the backoff again from zero."""


def _translate(exc: BaseException) -> ScmError | None:
    if isinstance(exc, ValidationError):
        return PluginError(
            f"a plugin answered with an invalid message: {exc.error_count()} error(s)"
        )
    if isinstance(exc, OSError):
        return ScmUnavailable(f"cannot start the plugin: {exc}")
    return None


class ExternalScm(PluginMethods):
    """The ``plugin`` SCM kind: one long-lived plugin process per configured provider."""

    @staticmethod
    def preflight(
        *, provider: ScmProvider, repositories: Iterable[Repository]
    ) -> Iterator[tuple[str | None, str]]:
        """The plugin's executable is found (``registry.preflight``); nothing is started."""
        assert provider.plugin is not None
        try:
            argv = command_line(provider.plugin, environ=os.environ)
        except ConfigError as exc:
            for problem in exc.problems:
                yield None, problem
            return
        if shutil.which(argv[0]) is None:
            yield None, f"the plugin command {argv[0]} is not an executable file"

    def __init__(
        self,
        *,
        provider: ScmProvider,
        state_dir: str,
        environ: Mapping[str, str] | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        spec = provider.plugin
        if spec is None:
            raise PluginError(f"provider {provider.name} has no plugin section")
        self.provider = provider
        environ = dict(os.environ if environ is None else environ)
        self.argv = command_line(spec, environ=environ)
        sources = {ref.from_env for ref in spec.secrets.values() if ref.from_env}
        self._environ = {k: v for k, v in environ.items() if k not in sources}  # the plugin's
        self.name = spec.name or Path(self.argv[0]).name.removeprefix(PREFIX)
        """The plugin's name (from its handshake when found by command), beside the provider's
        in every log line: two providers running one plugin are told apart."""
        self._settings = dict(spec.settings)
        self._secrets = {key: ref.resolve() for key, ref in spec.secrets.items()}
        self._state_dir = Path(state_dir) / "plugins" / provider.name
        self.timeout = spec.timeout
        self._clock = clock
        self._calls = ScmCalls(provider.name, _translate)
        """Counted under the provider's name: two providers running one plugin stay apart."""
        self._credentials = CredentialCache(clock=clock)
        self.health = PluginHealth(provider.name, self.name, clock=clock)
        self.lines = LineAccount(provider.name, self.name, clock=clock)
        """The lines of this provider's plugin the promoter could not use, counted."""
        self._own = OwnWrites(clock=clock)
        self._lock = threading.Lock()
        self._process: PluginProcess | None = None
        self._crashes = 0
        self._last_crash = float("-inf")
        self._not_before = float("-inf")
        self.info: m.InitializeResult | None = None
        self.starts = 0
        self._subscription: Subscription | None = None
        self._ensure()

    # --- life cycle ------------------------------------------------------------------

    @property
    def process(self) -> PluginProcess | None:
        return self._process

    def _ensure(self) -> PluginProcess:
        with self._lock:
            process = self._process
            if process is not None and process.alive:
                return process
            now = self._clock()
            if process is not None:
                self._crashes = 1 if now - self._last_crash > CALM_AFTER else self._crashes + 1
                self._last_crash = now
                delay = 0.0 if self._crashes == 1 else FIRST_BACKOFF * 2 ** (self._crashes - 2)
                self._not_before = now + min(delay, MAX_BACKOFF)
                self._process = None
                process.stop(grace=0.5)
                log.warning("plugin crashed", extra={**self._who(), "crashes": self._crashes})
            if now < self._not_before:
                wait = self._not_before - now
                raise ScmUnavailable(
                    f"plugin {self.name} of {self.provider.name} restarts in {wait:.1f}s",
                    delay=wait,
                )
            self._process = self._start()
            return self._process

    def _start(self) -> PluginProcess:
        self._state_dir.mkdir(parents=True, exist_ok=True)
        process = PluginProcess(
            self.argv,
            label=self.name,
            env=self._environ,
            notified=self._notified,
            account=self.lines,
        )
        params = m.InitializeParams(
            protocol_versions=list(SUPPORTED),
            provider=self.provider.name,
            settings=self._settings,
            secrets=self._secrets,
            state_dir=str(self._state_dir),
        )
        try:
            raw = process.call("initialize", m.dump(params), timeout=self.timeout)
            info = m.InitializeResult.model_validate(raw)
        except (ScmError, ValidationError) as exc:
            process.stop(grace=0.5)
            if isinstance(exc, ValidationError):
                raise PluginError(f"plugin {self.name} answered initialize wrongly") from exc
            raise
        if info.protocol_version not in SUPPORTED:
            process.stop(grace=0.5)
            raise PluginError(
                f"plugin {self.name} {info.version} speaks {info.protocol_version}; "
                f"this promoter speaks {', '.join(SUPPORTED)}"
            )
        if self.provider.plugin is not None and self.provider.plugin.name is None:
            self.name = self.health.plugin = self.lines.plugin = process.label = info.name
        self.info = info
        self.starts += 1
        self.health.restarted()
        self._credentials.clear()
        self._subscribe(process)  # again after a restart: the new process knows nothing
        log.info(
            "plugin started",
            extra={
                **self._who(),
                "pid": process.pid,
                "version": info.version,
                "protocol": info.protocol_version,
            },
        )
        return process

    # --- events (promoter.scm/v1.1) ----------------------------------------------------

    @property
    def sends_events(self) -> bool:
        """The plugin speaks v1.1 and says it sends events."""
        info = self.info
        return info is not None and info.protocol_version == V1_1 and info.capabilities.events

    def subscribe(self, repositories: Iterable[Repository], sink: EventSink) -> bool:
        """Ask for events about ``repositories`` (again after each restart), delivered to
        ``sink``; whether the plugin sends any (``EventSource``)."""
        self._subscription = Subscription(
            self.provider.name,
            tuple(repositories),
            sink,
            own=self._own,
            account=self.lines,
            clock=self._clock,
        )
        process = self._process
        return process is not None and process.alive and self._subscribe(process)

    def _subscribe(self, process: PluginProcess) -> bool:
        subscription = self._subscription
        if subscription is None or not self.sends_events:
            return False
        refs = [m.RepositoryRef.of(r) for r in subscription.repositories]
        try:
            process.call(
                "events/subscribe",
                m.dump(m.SubscribeParams(repositories=refs)),
                timeout=self.timeout,
            )
        except ScmError as exc:  # events are hints: the resync still reads everything
            log.warning("plugin refused events", extra={**self._who(), "error": str(exc)})
            return False
        return True

    def _notified(self, method: str, params: object) -> None:
        subscription = self._subscription
        if subscription is None or not self.sends_events:
            self.lines.note(
                "early_event",
                "plugin event before events/subscribe, dropped",
                level=logging.INFO,
                event=method[:100],
            )
            return
        subscription.deliver(method, params)

    @property
    def event_results(self) -> dict[tuple[str, str], int]:
        """(event, result) of the events since the last ``subscribe``."""
        subscription = self._subscription
        return dict(subscription.results) if subscription is not None else {}

    def close(self) -> None:
        with self._lock:
            process, self._process = self._process, None
        if process is not None:
            process.stop()

    # --- calls -----------------------------------------------------------------------

    def _call(self, operation: str, method: str, params: m.Message, **fields: object) -> Any:
        try:
            self.health.before_call()
        except ScmOutage:
            self._calls.refused(operation)
            raise
        with self._calls.call(operation, **fields) as receipt:
            process = self._ensure()
            timeout = receipt.deadline(self.timeout)  # within a write's hold: ends before it
            try:
                raw = process.call(method, m.dump(params), timeout=timeout)
            except CallTimedOut:
                # a call cut short by its write's hold is no sign of a hung plugin
                if process.alive and timeout >= self.timeout and self.health.timed_out():
                    log.warning(
                        "plugin hung, killing it", extra={**self._who(), "pid": process.pid}
                    )
                    process.proc.kill()
                raise
            except ScmOutage as exc:  # the plugin answered: its SCM is out, not the plugin
                raise self.health.outage(exc) from exc
            except ScmError as exc:
                if process.alive and not isinstance(exc, ScmUnavailable):
                    self.health.answered()
                raise
            self.health.answered()
            return m.METHODS[method][1].validate_python(raw)

    def _write(
        self,
        write: Write,
        learn: Learn,
        operation: str,
        method: str,
        params: m.Message,
        **fields: object,
    ) -> Any:
        self._own.begin(write)
        try:
            answer = self._call(operation, method, params, **fields)
        except BaseException:
            self._settle(self._own.failed(write))
            raise
        self._settle(self._own.answered(write, **learn(answer)))
        return answer

    def _settle(self, settled: Settled) -> None:
        subscription = self._subscription
        if subscription is not None:
            subscription.settle(settled)

    def _who(self) -> dict[str, object]:
        return {"provider": self.provider.name, "plugin": self.name}

    @property
    def folded_gate_keys(self) -> frozenset[str]:
        return frozenset(self.info.capabilities.folded_gate_keys if self.info else ())

    @property
    def reads_reviews(self) -> bool:
        """The plugin speaks v1.1 and says it answers ``pullRequests/reviews``."""
        info = self.info
        return info is not None and info.protocol_version == V1_1 and info.capabilities.reviews
