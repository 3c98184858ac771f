"""What one app holds for its routes, kept on ``app.state`` and read back here with its type.

The routes sit at module level, so what differs between two apps (a test builds many, each with its
own clock, counts and readiness) cannot be closed over: ``create_app`` puts it on the app with
``install``, and a route reaches it through ``request.app``.
"""

from __future__ import annotations

from starlette.applications import Starlette

from ..clock import Clock
from .health import Health
from .metrics import Metrics


def install(app: Starlette, clock: Clock, metrics: Metrics, health: Health) -> None:
    """Attaches the app's state; ``metrics`` and ``health`` are also read by the server (``serving``, ``__main__``)."""
    app.state.clock = clock
    app.state.metrics = metrics
    app.state.health = health


def clock(app: Starlette) -> Clock:
    """The clock the hooks read once per call; a test passes one it sets."""
    found: Clock = app.state.clock
    return found


def metrics(app: Starlette) -> Metrics:
    found: Metrics = app.state.metrics
    return found


def health(app: Starlette) -> Health:
    found: Health = app.state.health
    return found
