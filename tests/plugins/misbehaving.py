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

Off the happy path: ``outage`` (methods answered with the error ``outageCode``, default
-32004 ``unavailable``, with ``retryAfter`` when given: its SCM is down), ``wrongId``
(methods answered with an id 1000 past the request's), ``flood`` (``[line, count]``:
written to stdout before each answer, count times), ``stderrFlood`` (lines written to
stderr before each answer), ``tooLong`` (``pullRequests/findOpen`` answered with a line
of that many MiB, naming its id), ``echo`` (``before`` or ``after`` its answer: each
write is reported back as the event an SCM would send; ``echoChange`` names the
methods whose echo says another state: the PR closed, the status failed).
"""

from __future__ import annotations

import json
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

UNAVAILABLE = -32004
WRITES = ("commitStatuses/set", "pullRequests/open", "pullRequests/update")
PR_WRITES = ("pullRequests/merge", "pullRequests/close")


def main() -> None:
    settings: dict[str, Any] = {}
    credentials = 0
    prs: dict[int, dict[str, Any]] = {}
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
        misbehave(settings, method)
        if method in settings.get("slow", [method]):
            time.sleep(float(settings.get("delay", 0)))
        if method in settings.get("outage", []):
            if settings.get("echo") == "before" and method in WRITES + PR_WRITES:
                write(prs, method, params)  # done, but answered as a failure (a 502 after it)
                for event in echoes(prs, method, params, settings):
                    print(json.dumps(event), flush=True)
            data: dict[str, Any] = {"type": "unavailable", "temporary": True}
            if "retryAfter" in settings:
                data["retryAfter"] = settings["retryAfter"]
            code = settings.get("outageCode", UNAVAILABLE)
            error = {"code": code, "message": "GET /api: 503 the SCM is down", "data": data}
            print(json.dumps({"jsonrpc": "2.0", "id": ident, "error": error}), flush=True)
            continue
        if method in settings.get("wrongId", []):
            answer(ident + 1000, None)
            continue
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
        elif method == "pullRequests/findOpen" and settings.get("tooLong"):
            filler = "x" * int(float(settings["tooLong"]) * 1024 * 1024)
            answer(ident, filler)
        elif method == "commitStatuses/get":
            answer(ident, [])
        elif method == "events/subscribe":
            for event_method, event in settings.get("notify", []):
                print(json.dumps({"jsonrpc": "2.0", "method": event_method, "params": event}))
            answer(ident, None)
        elif method in WRITES or method in PR_WRITES:
            result = write(prs, method, params)
            echo = echoes(prs, method, params, settings)
            events = echo if settings.get("echo") else []
            for event in events if settings.get("echo") == "before" else []:
                print(json.dumps(event), flush=True)
            answer(ident, result)
            for event in events if settings.get("echo") == "after" else []:
                print(json.dumps(event), flush=True)
        else:
            answer(ident, None)


def misbehave(settings: dict[str, Any], method: str) -> None:
    if settings.get("flood"):
        text, count = settings["flood"]
        sys.stdout.write((text + "\n") * int(count))
        sys.stdout.flush()
    if settings.get("stderrFlood"):
        sys.stderr.write(
            "".join(f"looping on an error {i}\n" for i in range(settings["stderrFlood"]))
        )
        sys.stderr.flush()


def pull(number: int, head: str, base: str, state: str) -> dict[str, Any]:
    return {
        "id": str(number),
        "number": number,
        "headBranch": head,
        "baseBranch": base,
        "headSha": f"{number:040x}",
        "state": state,
        "mergeSha": f"{number + 7:040x}" if state == "merged" else None,
    }


def write(prs: dict[int, dict[str, Any]], method: str, params: dict[str, Any]) -> Any:
    if method == "pullRequests/open":
        number = len(prs) + 1
        prs[number] = pull(number, params["head"], params["base"], "open")
        return prs[number]
    if method == "pullRequests/update":
        return prs[params["number"]]
    if method == "pullRequests/merge":
        pr = prs[params["number"]] = {**prs[params["number"]], "state": "merged"}
        pr["mergeSha"] = f"{pr['number'] + 7:040x}"
        return {"mergeSha": pr["mergeSha"]}
    if method == "pullRequests/close":
        prs[params["number"]] = {**prs[params["number"]], "state": "closed"}
    return None


def echoes(
    prs: dict[int, dict[str, Any]], method: str, params: dict[str, Any], settings: dict[str, Any]
) -> list[dict[str, Any]]:
    """The events an SCM sends for this write (changed as ``echoChange`` says)."""
    other = method in settings.get("echoChange", [])
    repository = params["repository"]["name"]
    if method == "commitStatuses/set":
        status = {**params["status"], "phase": "failure" if other else params["status"]["phase"]}
        event = {"repository": repository, "sha": params["sha"], "status": status}
        return [{"jsonrpc": "2.0", "method": "events/statusChanged", "params": event}]
    number = params.get("number") or len(prs)
    pr = {**prs[number], "state": "closed"} if other else prs[number]
    found = [{"repository": repository, "pullRequest": pr}]
    if method == "pullRequests/merge":
        moved = {"repository": repository, "ref": f"refs/heads/{pr['baseBranch']}",
                 "before": "b" * 40, "after": pr["mergeSha"]}  # fmt: skip
        return [
            {"jsonrpc": "2.0", "method": "events/pullRequestChanged", "params": found[0]},
            {"jsonrpc": "2.0", "method": "events/refMoved", "params": moved},
        ]
    return [{"jsonrpc": "2.0", "method": "events/pullRequestChanged", "params": found[0]}]


def answer(ident: int, result: Any) -> None:
    print(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}), flush=True)


if __name__ == "__main__":
    main()
