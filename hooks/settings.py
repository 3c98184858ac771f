"""Service settings, read once from the environment at start."""

from __future__ import annotations

import os
from dataclasses import dataclass

DEFAULT_MAX_BODY_BYTES = 16 * 1024 * 1024


@dataclass(frozen=True)
class Settings:
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    log_level: str = "INFO"

    @classmethod
    def from_env(cls) -> Settings:
        return cls(
            max_body_bytes=int(os.environ.get("SHARDDB_MAX_BODY_BYTES", DEFAULT_MAX_BODY_BYTES)),
            log_level=os.environ.get("SHARDDB_LOG_LEVEL", "INFO"),
        )
