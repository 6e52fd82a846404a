"""The Kubernetes API stand-in (``fake_api.FakeKube``) in a process of its own, over HTTP:

    python -m tests.kube.fake_api_server --port 8001 [--preload objects.json]

``--preload`` creates the objects of a JSON list first (a benchmark's fleet),
``GET /debug/counts`` tells the requests, open watches and writes so far, and
``/debug/fault`` and ``/debug/journal`` break it and tell what was written when
(``fake_api_faults``).
"""

from __future__ import annotations

import argparse
import json

import uvicorn

from tests.kube.fake_api import FakeKube
from tests.kube.fake_api_faults import Faults


def main() -> None:
    """Serve the stand-in on 127.0.0.1 until stopped (SIGTERM or Ctrl-C)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--preload", help="a JSON file: a list of objects to create first")
    args = parser.parse_args()
    fake = FakeKube()
    if args.preload:
        with open(args.preload, encoding="utf-8") as file:
            fake.preload(json.load(file))
    uvicorn.run(Faults(fake).app, host="127.0.0.1", port=args.port, log_level="warning")


if __name__ == "__main__":
    main()
