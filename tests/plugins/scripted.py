"""Tiny plugin executables written by tests: a Python script answering initialize its own way."""

from __future__ import annotations

import sys
from pathlib import Path

TEMPLATE = """#!{python}
import json, os, sys
record = {record!r}
sys.stderr.write("hello from the plugin\\n")
sys.stderr.flush()
for line in sys.stdin:
    msg = json.loads(line)
    if msg["method"] == "initialize":
        if record:
            with open(record, "w") as f:
                json.dump({{"argv": sys.argv, "env": dict(os.environ), "params": msg["params"]}}, f)
        result = {{"name": "scripted", "version": "9.9.9", "protocolVersion": {version!r}}}
        print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": result}}), flush=True)
    elif msg["method"] == "shutdown":
        print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "result": None}}), flush=True)
        break
    else:
        error = {{"code": -32003, "message": "slow down", "data": {{"retryAfter": 7}}}}
        print(json.dumps({{"jsonrpc": "2.0", "id": msg["id"], "error": error}}), flush=True)
"""


def write_plugin(directory: Path, name: str, *, version: str, record: Path | None = None) -> Path:
    path = directory / f"promoter-scm-{name}"
    path.write_text(
        TEMPLATE.format(
            python=sys.executable, record=str(record) if record else "", version=version
        )
    )
    path.chmod(0o755)
    return path
