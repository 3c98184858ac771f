"""The floor: the least a JSON hook can do on the same framework and server.

It reads the body, parses it with the standard library, and returns a canned
answer of the hook's size. Beating it means the hook's own work costs less
than one stdlib parse. ``python -m bench.floor`` serves it with the hook
service's own uvicorn configuration (``hooks.service.serving.config``); answers come from ``SHARDDB_FLOOR_ANSWERS``
(a directory of ``<shards>.json`` files), each served at ``POST /sync/<shards>``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable
from pathlib import Path

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import Response

from hooks.service.serving import config
from hooks.service.settings import Settings

JSON = "application/json"


def create_floor(answers: dict[str, bytes]) -> FastAPI:
    app = FastAPI(title="floor", docs_url=None, redoc_url=None)

    def route(canned: bytes) -> Callable[[Request], Awaitable[Response]]:
        async def floor(request: Request) -> Response:
            json.loads(await request.body())
            return Response(canned, media_type=JSON)

        return floor

    for key, canned in answers.items():
        app.add_api_route(f"/sync/{key}", route(canned), methods=["POST"])

    @app.get("/readyz")
    async def readyz() -> Response:
        return Response(b'{"status":"ok"}', media_type=JSON)

    return app


def _answers_from_env() -> dict[str, bytes]:
    folder = Path(os.environ.get("SHARDDB_FLOOR_ANSWERS", "."))
    return {path.stem: path.read_bytes() for path in sorted(folder.glob("*.json"))}


def main() -> None:
    """Serve with the hook service's own uvicorn configuration, so only the app differs."""
    uvicorn.Server(config(create_floor(_answers_from_env()), Settings.from_env())).run()


if __name__ == "__main__":
    main()
