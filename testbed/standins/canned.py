"""Stand-in: ``python -m testbed.standins.canned``, a hook server that gives one recorded answer to every call.

It lets a test put an answer of its choosing in front of the real Metacontroller
(for instance one a real Metacontroller once got, changed in one field) and watch
what Metacontroller does with it. Answers are read on each call from the folder in
``SHARDDB_CANNED_DIR``: ``sync.json``, ``finalize.json``, ``customize.json``,
each the JSON body to send for that hook, so a test may change them between calls.
"""

from __future__ import annotations

import json
import os
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path


def main() -> None:
    folder = Path(os.environ["SHARDDB_CANNED_DIR"])

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self._send(200, b"ok" if self.path in ("/healthz", "/readyz") else b"")

        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("content-length") or 0))
            answer = folder / f"{self.path.strip('/')}.json"
            if answer.is_file():
                self._send(200, answer.read_bytes())
            else:
                self._send(404, json.dumps({"detail": f"no answer for {self.path}"}).encode())

        def _send(self, status: int, body: bytes) -> None:
            self.send_response(status)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: object) -> None:
            print(
                json.dumps({"msg": "hook", "path": self.path, "line": format % args}, separators=(",", ":")), flush=True
            )

    host, port = os.environ.get("SHARDDB_HOST", "127.0.0.1"), int(os.environ["SHARDDB_PORT"])
    ThreadingHTTPServer((host, port), Handler).serve_forever()


if __name__ == "__main__":
    main()
