"""``python -m hooks`` serves the hooks with uvicorn (settings from SHARDDB_* variables);
``python -m hooks render FILE`` previews their answer for a manifest, offline.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from .service.settings import Settings, SettingsError

USAGE = """\
usage: python -m hooks                  serve the hooks (settings from SHARDDB_* variables)
       python -m hooks render FILE [--stage new|ready|available|deleting]
                                        print, as YAML, the children and status the hooks
                                        would answer for each ShardDB in FILE (offline)"""


def serve() -> int:
    try:
        settings = Settings.from_env()
        from .service.app import create_app
        from .service.serving import HookServer, config

        app = create_app(settings)
    except SettingsError as error:
        print(f"sharddb-hooks: {error}", file=sys.stderr)
        return 2
    server = HookServer(config(app, settings), health=app.state.health, delay=settings.shutdown_delay_seconds)
    server.run()
    return 0 if server.started else 1


def main(argv: Sequence[str] | None = None) -> int:
    """No arguments: serve, exactly as the image's entry point does. ``render``: the offline preview."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:
        return serve()
    if args[0] == "render":
        # Imported only here: serving never loads the preview or its YAML library.
        from .cli.preview import main as render

        return render(args[1:])
    if args[0] in ("-h", "--help"):
        print(USAGE)
        return 0
    print(f"sharddb-hooks: unknown command {args[0]!r}\n{USAGE}", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
