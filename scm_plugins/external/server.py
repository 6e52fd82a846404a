"""Serving a Python ``ScmPlugin`` as a ``promoter.scm/v1`` plugin process on stdin/stdout.

``serve(build, name=..., version=...)`` is the whole main loop of a Python plugin:
it answers ``initialize`` (building the plugin from the provider's settings and
secrets), runs the other methods on a few worker threads (answers may leave in any
order; the host matches them by id), maps ``promoter.errors`` to typed error codes,
and writes log records to stderr as JSON lines, which the promoter logs as its own.
A handshake with no settings and no secrets (``promoter plugins list``'s) is answered
even when ``build`` refuses it; every call after it is then refused with ``build``'s words.
"""

from __future__ import annotations

import json
import logging
import sys
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from pydantic import BaseModel, ValidationError

from promoter.errors import ScmError
from scm_plugins.external import errors as e
from scm_plugins.external import messages as m
from scm_plugins.external import wire
from scm_plugins.protocol import Reviews, ScmPlugin

Builder = Callable[[m.InitializeParams], ScmPlugin]


class _JsonLines(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        data: dict[str, Any] = {"level": record.levelname.lower(), "msg": record.getMessage()}
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                data[key] = value if isinstance(value, str | int | float | bool) else str(value)
        return json.dumps(data)


_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message"}


def _dispatch(plugin: ScmPlugin, provider: str, method: str, params: BaseModel) -> Any:
    repo = params.repository.repository(provider)  # type: ignore[attr-defined]
    p: Any = params
    if method == "pullRequests/findOpen":
        return plugin.find_open_pull_request(repo=repo, head=p.head, base=p.base)
    if method == "pullRequests/open":
        return plugin.open_pull_request(
            repo=repo, head=p.head, base=p.base, title=p.title, body=p.body, labels=tuple(p.labels)
        )
    if method == "pullRequests/update":
        return plugin.update_pull_request(
            repo=repo, number=p.number, title=p.title, body=p.body, labels=tuple(p.labels)
        )
    if method == "pullRequests/merge":
        sha = plugin.merge_pull_request(
            repo=repo, number=p.number, expected_head_sha=p.expected_head_sha, message=p.message
        )
        return m.MergeResult(merge_sha=sha)
    if method == "pullRequests/close":
        return plugin.close_pull_request(repo=repo, number=p.number, comment=p.comment)
    if method == "pullRequests/comment":
        return plugin.comment_pull_request(repo=repo, number=p.number, body=p.body)
    if method == "pullRequests/reviews":
        assert isinstance(plugin, Reviews)  # by _Server.handle
        return plugin.get_reviews(repo=repo, number=p.number, teams=tuple(p.teams))
    if method == "commitStatuses/get":
        return plugin.get_commit_statuses(repo=repo, sha=p.sha, keys=p.keys)
    if method == "commitStatuses/set":
        return plugin.set_commit_status(repo=repo, sha=p.sha, status=p.status)
    if method == "git/environment":
        return m.GitEnvironmentResult(env=dict(plugin.git_environment(repo=repo)))
    raise AssertionError(method)


class _Server:
    def __init__(
        self, build: Builder, name: str, version: str, capabilities: m.Capabilities, out: BinaryIO
    ) -> None:
        self.build, self.name, self.version = build, name, version
        self.capabilities = capabilities
        self.out = out
        self.write_lock = threading.Lock()
        self.plugin: ScmPlugin | None = None
        self.refusal: dict[str, Any] | None = None
        """Started without settings, which ``build`` refused: every call answers this."""
        self.provider = ""
        self.v1 = False
        """The promoter picked promoter.scm/v1: answers leave out v1.1's members."""

    def send(self, message: dict[str, Any]) -> None:
        data = wire.encode(message)
        with self.write_lock:
            self.out.write(data)
            self.out.flush()

    def fail(self, ident: Any, code: int, message: str) -> None:
        kind, temporary = e.TYPES[code]
        obj = {"code": code, "message": message, "data": {"type": kind, "temporary": temporary}}
        self.send(wire.error(ident, obj))

    def initialize(self, ident: Any, raw: Any) -> None:
        try:
            params = m.InitializeParams.model_validate(raw)
        except ValidationError as exc:
            self.fail(ident, e.INVALID_PARAMS, f"initialize: {exc.error_count()} invalid field(s)")
            return
        chosen = next((v for v in params.protocol_versions if v in wire.SUPPORTED), None)
        if chosen is None:
            self.fail(
                ident,
                e.UNSUPPORTED_VERSION,
                f"{self.name} speaks {', '.join(wire.SUPPORTED)}, "
                f"not {', '.join(params.protocol_versions)}",
            )
            return
        try:
            self.plugin = self.build(params)
        except Exception as exc:
            if params.settings or params.secrets:
                self.send(wire.error(ident, e.error_object(exc)))
                return
            self.refusal = e.error_object(exc)  # a bare handshake: say who we are, refuse later
        self.provider = params.provider
        self.v1 = chosen == wire.V1
        info = m.InitializeResult(
            name=self.name,
            version=self.version,
            protocol_version=chosen,
            capabilities=self.capabilities.as_v1() if self.v1 else self.capabilities,
        )
        self.send(wire.result(ident, m.dump(info)))

    def handle(self, ident: Any, method: str, raw: Any) -> None:
        if self.refusal is not None:
            self.send(wire.error(ident, self.refusal))
            return
        if self.plugin is None:
            self.fail(ident, e.INVALID_REQUEST, "initialize first")
            return
        if method == "pullRequests/reviews" and not isinstance(self.plugin, Reviews):
            self.fail(ident, e.METHOD_NOT_FOUND, f"{self.name} reads no reviews")
            return
        try:
            params = m.METHODS[method][0].model_validate(raw if raw is not None else {})
        except ValidationError as exc:
            self.fail(ident, e.INVALID_PARAMS, f"{method}: {exc.error_count()} invalid field(s)")
            return
        try:
            value = _dispatch(self.plugin, self.provider, method, params)
        except Exception as exc:
            if not isinstance(exc, ScmError):
                logging.getLogger("plugin").exception("method failed", extra={"method": method})
            self.send(wire.error(ident, e.error_object(exc)))
            return
        self.send(wire.result(ident, m.dump(value, v1=self.v1)))


def serve(
    build: Builder,
    *,
    name: str,
    version: str,
    capabilities: m.Capabilities | None = None,
    stdin: BinaryIO | None = None,
    stdout: BinaryIO | None = None,
    workers: int = 4,
) -> int:
    """Run the plugin until ``shutdown`` or end of input; the process's exit code."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonLines())
    logging.basicConfig(level=logging.INFO, handlers=[handler], force=True)
    source = stdin or sys.stdin.buffer
    server = _Server(
        build, name, version, capabilities or m.Capabilities(), stdout or sys.stdout.buffer
    )
    with ThreadPoolExecutor(max_workers=workers, thread_name_prefix="plugin") as pool:
        while True:
            try:
                message = wire.read_message(source)
            except wire.FramingError as exc:
                server.fail(None, e.PARSE_ERROR, str(exc))
                continue
            if message is None:
                break
            ident, method = message.get("id"), message.get("method")
            if not isinstance(method, str):
                server.fail(ident, e.INVALID_REQUEST, "no method")
            elif method == "initialize":
                server.initialize(ident, message.get("params"))
            elif method == "shutdown":
                pool.shutdown(wait=True)
                server.send(wire.result(ident, None))
                break
            elif method not in m.METHODS or method == "events/subscribe":
                server.fail(ident, e.METHOD_NOT_FOUND, f"no method {method}")
            else:
                pool.submit(server.handle, ident, method, message.get("params"))
    if server.plugin is not None:
        server.plugin.close()
    return 0
