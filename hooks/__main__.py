"""Serve the hooks with uvicorn: ``python -m hooks`` (settings from SHARDDB_* variables)."""

from __future__ import annotations

import sys

from .settings import Settings, SettingsError


def main() -> int:
    try:
        settings = Settings.from_env()
        from .app import create_app
        from .serving import HookServer, config

        app = create_app(settings)
    except SettingsError as error:
        print(f"sharddb-hooks: {error}", file=sys.stderr)
        return 2
    server = HookServer(config(app, settings), health=app.state.health, delay=settings.shutdown_delay_seconds)
    server.run()
    return 0 if server.started else 1


if __name__ == "__main__":
    sys.exit(main())
