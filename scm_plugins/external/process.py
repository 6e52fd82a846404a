"""One running plugin process: requests multiplexed by id over its stdin/stdout, stderr logged.

Concurrency: any number of threads may ``call`` at once. Writes are serialised by a
lock (one whole line at a time); one reader thread matches each response to its
waiting caller by id, so answers may come in any order; a message without an id (an
event, ``promoter.scm/v1.1``) goes to ``notified`` on that thread. A caller that times
out stops waiting (``CallTimedOut``) and its late answer is dropped. When the process
exits, every waiting caller gets ``ScmUnavailable`` at once. A stdout line that is not a
protocol message, or an answer whose id no call waits for (never sent, or answered
already) fails at once the call it names (every call waiting when it names none), and
is counted and logged through the provider's ``LineAccount`` (at most once a minute per
kind). The process gets no secret on its command line; secrets travel in
``initialize`` (see ``host``).
"""

from __future__ import annotations

import itertools
import json
import logging
import re
import subprocess
import threading
import weakref
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import IO, Any

from promoter.errors import ScmUnavailable
from scm_plugins.external import wire
from scm_plugins.external.accounting import LineAccount, sample
from scm_plugins.external.errors import (
    CallTimedOut,
    PluginError,
    PluginTemporaryError,
    from_error_object,
)
from scm_plugins.external.stderr import log_stderr

log = logging.getLogger("promoter.plugins")
GARBAGE_SHOWN = 200
"""Characters of a malformed stdout line quoted in the error of the call it fails (what
looks like a credential blanked: ``accounting.sample``)."""
TIMED_OUT_KEPT = 1024
"""Ids of calls that timed out remembered at most, so that their late answers are known."""
_LEADING_ID = re.compile(rb'^\s*\{\s*(?:"jsonrpc"\s*:\s*"2\.0"\s*,\s*)?"id"\s*:\s*(\d{1,18})\b')


class _Pending:
    __slots__ = ("answer", "done", "garbage")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None
        self.garbage: tuple[str, str] | None = None
        """(what the plugin did, what of it to quote) when it wrote a line that is not a
        protocol message, or an answer with an id never sent, while this call waited."""


Notified = Callable[[str, Any], None]
"""Receives a notification the plugin wrote (method, params), on the reader thread."""


class PluginProcess:
    """A started plugin; ``call`` is thread-safe."""

    def __init__(
        self,
        argv: list[str],
        *,
        label: str,
        env: Mapping[str, str],
        notified: Notified | None = None,
        account: LineAccount | None = None,
    ) -> None:
        self.label = label
        self._notified = notified
        self.account = account or LineAccount(label, label)
        """Where the lines the promoter cannot use are counted (the provider's)."""
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            close_fds=True,
            start_new_session=True,
        )
        self._reaped = weakref.finalize(self, _reap, self.proc)
        """A process dropped without ``stop`` (its reader ended: it exited) is killed if
        still running, waited for and its pipes closed when the process is collected."""
        self._ids = itertools.count(1)
        self._timed_out: dict[int, None] = {}
        """Ids of calls that stopped waiting (oldest first): their answers come late. Any
        other id that no call waits for was never sent, or was answered already."""
        self._pending: dict[int, _Pending] = {}
        self._lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._exited = threading.Event()
        self._stopping = False
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self._reader = threading.Thread(
            target=self._read, args=(self.proc.stdout,), name=f"plugin-{label}-out", daemon=True
        )
        self._logger = threading.Thread(
            target=log_stderr,
            args=(self.proc.stderr,),
            kwargs={"fields": self._fields(), "account": self.account},
            name=f"plugin-{label}-err",
            daemon=True,
        )
        self._reader.start()
        self._logger.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self._exited.is_set() and self.proc.poll() is None

    def call(
        self, method: str, params: dict[str, Any], *, timeout: float, ident: int | None = None
    ) -> Any:
        """Send one request and wait for its answer: ``CallTimedOut`` when none comes in
        time, ``ScmUnavailable`` when the process exits. ``ident``: this id rather than the
        next one (the conformance kit's ids far from the sequence)."""
        pending = _Pending()
        with self._lock:
            if self._exited.is_set():
                raise ScmUnavailable(f"plugin {self.label} is not running")
            if ident is None:
                ident = next(self._ids)
            self._pending[ident] = pending
        try:
            self._send(wire.request(ident, method, params))
            if not pending.done.wait(timeout):
                self._gave_up(ident)
                raise CallTimedOut(
                    f"plugin {self.label} did not answer {method} within {timeout:g}s"
                )
        finally:
            with self._lock:
                self._pending.pop(ident, None)
        answer = pending.answer
        if answer is None and pending.garbage is not None:
            what, quoted = pending.garbage
            raise PluginTemporaryError(
                f"plugin {self.label} {what} while {method} waited for its answer: {quoted}"
            )
        if answer is None:
            raise ScmUnavailable(f"plugin {self.label} exited during {method}")
        if "error" in answer:
            raise from_error_object(answer["error"], plugin=self.label)
        if "result" not in answer:
            raise PluginError(
                f"plugin {self.label} answered {method} with neither result nor error"
            )
        return answer["result"]

    def _send(self, message: dict[str, Any]) -> None:
        data = wire.encode(message)
        stdin = self.proc.stdin
        assert stdin is not None
        try:
            with self._write_lock:
                stdin.write(data)
                stdin.flush()
        except (BrokenPipeError, ValueError, OSError) as exc:
            raise ScmUnavailable(f"plugin {self.label} is not running") from exc

    def _read(self, stream: IO[bytes]) -> None:
        try:
            while True:
                try:
                    message = wire.read_message(stream)
                except wire.FramingError as exc:
                    self._garbage(exc)
                    continue
                if message is None:
                    break
                if "id" not in message and isinstance(message.get("method"), str):
                    self._notification(message["method"], message.get("params"))
                    continue
                ident = message.get("id")
                number = ident if isinstance(ident, int) and not isinstance(ident, bool) else 0
                with self._lock:
                    pending = self._pending.get(number)
                    late = number in self._timed_out
                    self._timed_out.pop(number, None)
                if pending is not None:
                    pending.answer = message
                    pending.done.set()
                elif late:  # the answer of a call that timed out
                    self.account.note(
                        "late_answer",
                        "plugin answered a call that no longer waits",
                        level=logging.DEBUG,
                        id=ident,
                    )
                else:
                    self._unknown(ident)
        except (OSError, ValueError):
            pass
        finally:
            with self._lock:
                self._exited.set()
                waiting = list(self._pending.values())
            for pending in waiting:
                pending.done.set()
            if not self._stopping:
                log.warning("plugin exited", extra=self._fields(returncode=self.proc.poll()))

    def _gave_up(self, ident: int) -> None:
        with self._lock:
            self._timed_out[ident] = None
            while len(self._timed_out) > TIMED_OUT_KEPT:
                del self._timed_out[next(iter(self._timed_out))]

    def _notification(self, method: str, params: Any) -> None:
        """A message without ``id``: an event (v1.1), handed on; never fails the reader."""
        if self._notified is None:
            log.debug("plugin notification dropped", extra=self._fields(method=method[:100]))
            return
        try:
            self._notified(method, params)
        except Exception:
            log.exception("plugin notification failed", extra=self._fields(method=method[:100]))

    def _garbage(self, exc: wire.FramingError) -> None:
        """A stdout line that is not a protocol message fails at once the call it answered
        (the one its ``id`` names), or every call waiting when it names none: whichever
        it was, its answer will not come."""
        text = exc.line[: GARBAGE_SHOWN * 4].decode("utf-8", errors="replace").strip()
        self.account.note(
            "malformed", "plugin wrote a malformed message", text=text, error=str(exc)
        )
        ident = _id_in(exc.line)
        shown = repr(sample(text, GARBAGE_SHOWN))
        what = "wrote a line that is not a protocol message"
        self._fail_waiting((what, f"{shown} ({exc})"), ident)

    def _unknown(self, ident: object) -> None:
        """An answer naming an id no call waits for (never sent, or answered already): the
        call it meant still waits, and would wait its whole time limit; every call waiting
        fails at once instead (retried)."""
        shown = repr(ident)[:40]
        self.account.note("unknown_id", "plugin answered an id no call waits for", id=shown)
        what = f"answered with id {shown}, which no call waits for,"
        self._fail_waiting((what, "the answer a call waits for will not come"), None)

    def _fail_waiting(self, what: tuple[str, str], ident: int | None) -> None:
        """Fail the call ``ident`` names; none when it names one that no longer waits (its
        answer came too late); every call waiting when it names none, or one never sent."""
        with self._lock:
            named = self._pending.get(ident) if ident is not None else None
            if named is not None:
                failed = [named]
            elif ident is not None and ident in self._timed_out:
                failed = []
            else:
                failed = list(self._pending.values())
        for pending in failed:
            pending.garbage = what
            pending.done.set()

    def _fields(self, **fields: object) -> dict[str, object]:
        who = {"provider": self.account.provider, "plugin": self.label}
        return {**who, "pid": self.proc.pid, **fields}

    def stop(self, *, grace: float = 2.0) -> None:
        """Ask the plugin to shut down, close its stdin, and kill it if it lingers."""
        self._stopping = True
        if self.alive:
            with suppress(Exception):  # it may die meanwhile, or not answer: it is stopped anyway
                self.call("shutdown", {}, timeout=grace)
        if self.proc.stdin is not None:
            with suppress(OSError):
                self.proc.stdin.close()
        try:
            self.proc.wait(grace)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
        self._reader.join(grace)
        self._logger.join(grace)
        for stream in (self.proc.stdout, self.proc.stderr):
            if stream is not None:
                stream.close()
        self._reaped.detach()


def _reap(proc: subprocess.Popen[bytes]) -> None:
    """End a plugin process nobody stopped: its pipes closed, killed if it still runs,
    waited for (no zombie, no open file left to the collector)."""
    for stream in (proc.stdin, proc.stdout, proc.stderr):
        if stream is not None:
            with suppress(OSError):
                stream.close()
    if proc.poll() is None:
        proc.kill()
        proc.wait()


def _id_in(line: bytes) -> int | None:
    """The integer ``id`` of a line that is a JSON object but not a valid message (or,
    for a line cut short, the id its first members name)."""
    try:
        value = json.loads(line)
    except ValueError:
        found = _LEADING_ID.match(line)
        return int(found.group(1)) if found else None
    ident = value.get("id") if isinstance(value, dict) else None
    return ident if isinstance(ident, int) and not isinstance(ident, bool) else None
