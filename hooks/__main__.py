"""Serve the hooks with uvicorn: ``python -m hooks`` (settings from SHARDDB_* variables)."""

from __future__ import annotations

import os

import uvicorn


def main() -> None:
    uvicorn.run(
        "hooks.app:app",
        host=os.environ.get("SHARDDB_HOST", "127.0.0.1"),
        port=int(os.environ.get("SHARDDB_PORT", "8080")),
        log_level=os.environ.get("SHARDDB_LOG_LEVEL", "info").lower(),
        access_log=False,  # the app logs one structured line per hook call
        proxy_headers=False,
        server_header=False,
        timeout_keep_alive=int(os.environ.get("SHARDDB_KEEPALIVE_SECONDS", "75")),
    )


if __name__ == "__main__":
    main()
