"""git's smart HTTP for the fake Forgejo: ``/{owner}/{name}.git/...``, by ``git http-backend``.

As Forgejo does, git over HTTP needs the token: HTTP basic auth whose password is the
token (the user is any name), else 401 with ``WWW-Authenticate``. The request goes to
``git http-backend`` as CGI, over the bare repository the fake serves for that name.
"""

from __future__ import annotations

import base64
import os
import re
import subprocess
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import urlsplit

PATH = re.compile(r"^/([^/]+/[^/]+?)\.git(/.*)$")


def repository_of(target: str) -> tuple[str, str] | None:
    """(full name, path inside the repository) of a git request, None for another one."""
    found = PATH.match(urlsplit(target).path)
    return (found.group(1), found.group(2)) if found else None


def _authorised(header: str, token: str) -> bool:
    scheme, _, value = header.partition(" ")
    if scheme.lower() != "basic":
        return False
    try:
        _, _, password = base64.b64decode(value).decode().partition(":")
    except ValueError:
        return False
    return password == token


def serve(handler: BaseHTTPRequestHandler, repo: Path, inner: str, token: str) -> None:
    """Answer one git request of ``handler`` from the bare repository ``repo``."""
    if not _authorised(handler.headers.get("Authorization", ""), token):
        handler.send_response(401)
        handler.send_header("WWW-Authenticate", 'Basic realm="Gitea"')
        handler.send_header("Content-Length", "0")
        handler.end_headers()
        return
    length = int(handler.headers.get("Content-Length") or 0)
    body = handler.rfile.read(length) if length else b""
    url = urlsplit(handler.path)
    env = {
        "PATH": os.environ.get("PATH", ""),
        "GIT_PROJECT_ROOT": str(repo.parent),
        "GIT_HTTP_EXPORT_ALL": "1",
        "REMOTE_USER": "promoter-bot",
        "REQUEST_METHOD": handler.command,
        "PATH_INFO": f"/{repo.name}{inner}",
        "QUERY_STRING": url.query,
        "CONTENT_TYPE": handler.headers.get("Content-Type", ""),
        "CONTENT_LENGTH": str(len(body)),
    }
    done = subprocess.run(
        ["git", "http-backend"], input=body, env=env, capture_output=True, check=False
    )
    head, _, payload = done.stdout.partition(b"\r\n\r\n")
    status = 200
    headers: list[tuple[str, str]] = []
    for line in head.decode("latin-1").split("\r\n"):
        name, _, value = line.partition(":")
        if name.lower() == "status":
            status = int(value.strip().split()[0])
        elif name:
            headers.append((name, value.strip()))
    handler.send_response(status)
    for name, value in headers:
        handler.send_header(name, value)
    handler.send_header("Content-Length", str(len(payload)))
    handler.end_headers()
    handler.wfile.write(payload)
