"""One running plugin process: requests multiplexed by id over its stdin/stdout, stderr logged.

Concurrency: any number of threads may ``call`` at once. Writes are serialised by a
lock (one whole line at a time); one reader thread matches each response to its
waiting caller by id, so answers may come in any order; a message without an id (an
event, ``promoter.scm/v1.1``) goes to ``notified`` on that thread. A caller that times
out stops waiting and its late answer is dropped. When the process exits, every waiting
caller gets ``ScmUnavailable`` at once; a stdout line that is not a protocol message
fails at once the call it was written for, with the line in the error. The process
gets no secret on its command line; secrets travel in ``initialize`` (see ``host``).
"""

from __future__ import annotations

import itertools
import json
import logging
import subprocess
import threading
from collections.abc import Callable, Mapping
from contextlib import suppress
from typing import IO, Any

from promoter.errors import ScmUnavailable
from scm_plugins.external import wire
from scm_plugins.external.errors import PluginError, PluginTemporaryError, from_error_object

log = logging.getLogger("promoter.plugins")
GARBAGE_SHOWN = 200
"""Characters of a malformed stdout line quoted in the error and the log."""
_LEVELS = {"debug": 10, "info": 20, "warning": 30, "warn": 30, "error": 40}


class _Pending:
    __slots__ = ("answer", "done", "garbage")

    def __init__(self) -> None:
        self.done = threading.Event()
        self.answer: dict[str, Any] | None = None
        self.garbage: str | None = None
        """A line that is not a protocol message, written while this call waited."""


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
    ) -> None:
        self.label = label
        self._notified = notified
        self.proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=dict(env),
            close_fds=True,
            start_new_session=True,
        )
        self._ids = itertools.count(1)
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
            target=self._log, args=(self.proc.stderr,), name=f"plugin-{label}-err", daemon=True
        )
        self._reader.start()
        self._logger.start()

    @property
    def pid(self) -> int:
        return self.proc.pid

    @property
    def alive(self) -> bool:
        return not self._exited.is_set() and self.proc.poll() is None

    def call(self, method: str, params: dict[str, Any], *, timeout: float) -> Any:
        """Send one request and wait for its answer; ScmUnavailable on timeout or exit."""
        ident = next(self._ids)
        pending = _Pending()
        with self._lock:
            if self._exited.is_set():
                raise ScmUnavailable(f"plugin {self.label} is not running")
            self._pending[ident] = pending
        try:
            self._send(wire.request(ident, method, params))
            if not pending.done.wait(timeout):
                raise ScmUnavailable(
                    f"plugin {self.label} did not answer {method} within {timeout:g}s"
                )
        finally:
            with self._lock:
                self._pending.pop(ident, None)
        answer = pending.answer
        if answer is None and pending.garbage is not None:
            raise PluginTemporaryError(
                f"plugin {self.label} wrote a line that is not a protocol message while"
                f" {method} waited for its answer: {pending.garbage!r}"
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
                with self._lock:
                    pending = self._pending.get(ident) if isinstance(ident, int) else None
                if pending is None:
                    log.debug("plugin answer dropped", extra=self._fields(id=ident))
                    continue
                pending.answer = message
                pending.done.set()
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
        text = exc.line.decode("utf-8", errors="replace").strip()[:GARBAGE_SHOWN]
        log.warning(
            "plugin wrote a malformed message", extra=self._fields(error=str(exc), line=text)
        )
        ident = _id_in(exc.line)
        with self._lock:
            named = self._pending.get(ident) if ident is not None else None
            failed = [named] if named is not None else list(self._pending.values())
        for pending in failed:
            pending.garbage = text
            pending.done.set()

    def _log(self, stream: IO[bytes]) -> None:
        """Each stderr line becomes a log line tagged with the plugin (JSON lines keep a level)."""
        for raw in iter(stream.readline, b""):
            line = raw.decode("utf-8", errors="replace").rstrip()
            if not line:
                continue
            level, text, fields = logging.INFO, line, {}
            if line.startswith("{"):
                try:
                    data = json.loads(line)
                except ValueError:
                    data = None
                if isinstance(data, dict):
                    level = _LEVELS.get(str(data.pop("level", "info")).lower(), logging.INFO)
                    text = str(data.pop("msg", data.pop("message", "")))
                    fields = {f"plugin_{k}": v for k, v in data.items() if isinstance(k, str)}
            log.log(level, "plugin log", extra=self._fields(line=text[:4000], **fields))

    def _fields(self, **fields: object) -> dict[str, object]:
        return {"plugin": self.label, "pid": self.proc.pid, **fields}

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


def _id_in(line: bytes) -> int | None:
    """The integer ``id`` of a line that is a JSON object but not a valid message."""
    try:
        value = json.loads(line)
    except ValueError:
        return None
    ident = value.get("id") if isinstance(value, dict) else None
    return ident if isinstance(ident, int) else None
