"""A plugin process for tests, run as a script: it misbehaves as its ``settings`` say.

Standard library only, one request at a time (like the Node.js example). Settings:
``failCredentials`` (the first N ``git/environment`` calls fail as unavailable),
``expiresIn`` (seconds: the credentials' ``expiresAt``), ``delay`` (seconds every call
but ``initialize`` takes, or only the methods listed in ``slow``), ``garbage`` (a line
written instead of the answer to ``pullRequests/findOpen``), ``protocol`` (the version
it picks; default: the promoter's first), ``record`` (a file that gets one line per
method called), ``events`` (it offers events; after ``events/subscribe`` it writes the
notifications listed in ``notify``, ``[method, params]`` each, before its answer;
with ``early``, also before its answer to ``initialize``).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

UNAVAILABLE = -32004


def main() -> None:
    settings: dict[str, Any] = {}
    credentials = 0
    for line in sys.stdin:
        message = json.loads(line)
        ident, method, params = message["id"], message["method"], message.get("params") or {}
        if settings.get("record"):
            with open(settings["record"], "a") as out:
                out.write(method + "\n")
        if method == "initialize":
            settings = params["settings"]
            result = {
                "name": "misbehaving",
                "version": "0.0.1",
                "protocolVersion": settings.get("protocol") or params["protocolVersions"][0],
                "capabilities": {"events": True} if settings.get("events") else {},
            }
            for method, event in settings.get("notify", []) if settings.get("early") else []:
                print(json.dumps({"jsonrpc": "2.0", "method": method, "params": event}))
            answer(ident, result)
            continue
        if method == "shutdown":
            answer(ident, None)
            return
        if method in settings.get("slow", [method]):
            time.sleep(float(settings.get("delay", 0)))
        if method == "git/environment":
            credentials += 1
            if credentials <= int(settings.get("failCredentials", 0)):
                error = {"code": UNAVAILABLE, "message": "token service down"}
                print(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}), flush=True)
                continue
            env: dict[str, Any] = {"env": {"GIT_TERMINAL_PROMPT": "0"}}
            if "expiresIn" in settings:
                when = datetime.now(UTC) + timedelta(seconds=float(settings["expiresIn"]))
                env["expiresAt"] = when.isoformat()
            answer(ident, env)
        elif method == "pullRequests/findOpen" and settings.get("garbage"):
            print(settings["garbage"], flush=True)
        elif method == "commitStatuses/get":
            answer(ident, [])
        elif method == "events/subscribe":
            for event_method, event in settings.get("notify", []):
                print(json.dumps({"jsonrpc": "2.0", "method": event_method, "params": event}))
            answer(ident, None)
        else:
            answer(ident, None)


def answer(ident: int, result: Any) -> None:
    print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)


if __name__ == "__main__":
    main()
