"""Whether the service should get traffic: the state ``/readyz`` reports and SIGTERM flips."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Health:
    """Ready between lifespan start and the first shutdown signal (``draining``)."""

    started: bool = False
    draining: bool = False

    @property
    def ready(self) -> bool:
        return self.started and not self.draining
