"""A fake of Bitbucket's OAuth token endpoint (``POST /site/oauth2/access_token``) on
127.0.0.1: the client-credentials grant, the consumer checked by basic auth, the given
tokens handed out in turn (the last one again when they run out)."""

from __future__ import annotations

import base64
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs


class FakeTokenEndpoint:
    def __init__(self, client_id: str, client_secret: str, *, tokens: list[str]) -> None:
        self.tokens = list(tokens)
        self.issued = 0
        expected = "Basic " + base64.b64encode(f"{client_id}:{client_secret}".encode()).decode()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                """Quiet."""

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                form = parse_qs(self.rfile.read(length).decode())
                if self.headers.get("Authorization") != expected:
                    status, body = 401, {"error": "invalid_client"}
                elif form.get("grant_type") != ["client_credentials"]:
                    status, body = 400, {"error": "unsupported_grant_type"}
                else:
                    token = fake.tokens[min(fake.issued, len(fake.tokens) - 1)]
                    fake.issued += 1
                    status = 200
                    body = {"access_token": token, "expires_in": 7200, "token_type": "bearer"}
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/site/oauth2/access_token"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> FakeTokenEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
