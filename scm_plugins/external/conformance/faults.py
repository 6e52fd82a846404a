"""The conformance kit's checks of a plugin off the happy path: bare handshake, ids, an outage.

- ``bare_handshake``: started with no settings and no secrets (as ``promoter plugins
  list`` starts it), the plugin still answers ``initialize`` with its name, version and
  protocol (it may refuse its calls afterwards);
- ``ids``: a request whose id is far from the sequence (past 32 bits) is answered with
  that id, and one for a method the plugin does not know is answered with an error
  (``methodNotFound``), not left unanswered: the promoter's call would wait its whole
  time limit;
- ``outage``: the plugin started again with every HTTP(S) proxy variable pointing at a
  closed port of this machine, so that its SCM cannot be reached: each of more calls than
  make a plugin hung must be answered promptly with ``unavailable`` or ``temporary`` (a
  time-out is taken for a hung plugin, a permanent error parks the strategies), and the
  process must stay up. A plugin that answers anyway (a local SCM, or an HTTP client that
  ignores the proxy variables) shows ``n/a``.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Mapping

from promoter.config import ExternalPlugin, Repository, ScmProvider
from promoter.errors import ScmError, ScmOutage
from scm_plugins.external.conformance.events import Failed, NotOffered
from scm_plugins.external.errors import METHOD_NOT_FOUND, CallTimedOut, PluginError
from scm_plugins.external.health import HUNG_AFTER_TIMEOUTS, MAX_PAUSE
from scm_plugins.external.host import ExternalScm
from scm_plugins.external.messages import GetStatusesParams, RepositoryRef, dump

FAR_ID = 2**40 + 7
"""An id no plugin counting its own requests would reach: answered as sent, or not at all."""
PROXIES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


def bare_handshake(plugin: ExternalPlugin, state_dir: str, environ: Mapping[str, str]) -> str:
    bare = plugin.model_copy(update={"settings": {}, "secrets": {}})
    host = ExternalScm(
        provider=ScmProvider(name="conformance-bare", plugin=bare),
        state_dir=state_dir,
        environ=environ,
    )
    try:
        info = host.info
        if info is None:
            raise Failed("no initialize result")
        return f"{info.name} {info.version}, {info.protocol_version}"
    finally:
        host.close()


def ids(host: ExternalScm, repo: Repository, sha: str) -> str:
    process = host.process
    if process is None:
        raise Failed("no process")
    params = dump(GetStatusesParams(repository=RepositoryRef.of(repo), sha=sha))
    try:
        process.call("commitStatuses/get", params, timeout=host.timeout, ident=FAR_ID)
    except CallTimedOut:
        raise Failed(f"the request with id {FAR_ID} was not answered with that id") from None
    try:
        process.call("conformance/noSuchMethod", {}, timeout=host.timeout, ident=FAR_ID + 1)
    except CallTimedOut:
        raise Failed("a request for an unknown method was not answered") from None
    except PluginError as exc:
        if exc.code != METHOD_NOT_FOUND:
            raise Failed(f"an unknown method was answered {exc.code}, not -32601") from None
        return f"id {FAR_ID} answered as sent; an unknown method: methodNotFound"
    raise Failed("an unknown method was answered with a result")


class _Clock:
    """Monotonic time that the kit moves past each outage pause, so that every call of the
    outage check reaches the plugin."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset


def outage(
    plugin: ExternalPlugin, repo: Repository, sha: str, state_dir: str, environ: Mapping[str, str]
) -> str:
    closed = socket.socket()  # bound, never listening: every connection to it is refused
    closed.bind(("127.0.0.1", 0))
    proxy = f"http://127.0.0.1:{closed.getsockname()[1]}"
    env = {**environ, **dict.fromkeys(PROXIES, proxy), "NO_PROXY": "", "no_proxy": ""}
    clock = _Clock()
    host = ExternalScm(
        provider=ScmProvider(name="conformance-outage", plugin=plugin),
        state_dir=state_dir,
        environ=env,
        clock=clock,
    )
    process = host.process
    answered: list[str] = []
    try:
        for _ in range(HUNG_AFTER_TIMEOUTS + 1):
            try:
                host.get_commit_statuses(repo=repo, sha=sha)
            except ScmOutage:
                answered.append("unavailable")
            except CallTimedOut:
                raise Failed(
                    f"no answer within {host.timeout:g}s while its SCM was unreachable:"
                    " the promoter takes that for a hung plugin; answer unavailable"
                ) from None
            except ScmError as exc:
                if host.starts != 1 or process is None or not process.alive:
                    raise Failed(
                        "the plugin exited while its SCM was unreachable: answer unavailable"
                        f" and keep running ({str(exc)[:120]})"
                    ) from None
                raise Failed(
                    f"answered {type(exc).__name__} while its SCM was unreachable: answer"
                    f" unavailable or temporary ({str(exc)[:120]})"
                ) from None
            else:
                answered.append("ok")
            clock.offset += MAX_PAUSE + 1
        if "unavailable" not in answered:
            raise NotOffered("n/a: the plugin reached its SCM with every proxy closed")
        if host.starts != 1 or process is None or not process.alive:
            raise Failed("the plugin was restarted or stopped during the outage")
        return f"{len(answered)} calls answered unavailable; the process kept"
    finally:
        host.close()
        closed.close()
