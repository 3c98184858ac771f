"""Structured logs: every line the service writes is one JSON object, ours and uvicorn's alike.

One handler on the root logger formats every record, so a line's shape never depends
on which library logged it: ``time``, ``level``, ``msg``, then any fields of our own.
"""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

import orjson

LOGGER_NAME = "sharddb.hooks"
# uvicorn logs startup, shutdown and protocol errors under "uvicorn.error", and calls under "uvicorn.access".
UVICORN_LOGGER_NAME = "uvicorn"


class JSONFormatter(logging.Formatter):
    """``time`` (UTC), ``level`` and ``msg``, then the record's ``fields``, then any traceback as ``error``."""

    def __init__(self) -> None:
        super().__init__()
        self.converter = time.gmtime  # every time ends in Z, whatever the host's zone

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S") + f".{int(record.msecs):03d}Z",
            "level": record.levelname.lower(),
            "msg": record.getMessage(),
        }
        fields = getattr(record, "fields", None)
        if isinstance(fields, dict):
            entry.update(fields)
        if record.exc_info:
            entry["error"] = self.formatException(record.exc_info)
        return orjson.dumps(entry, default=str).decode()


def setup(level: str = "INFO") -> logging.Logger:
    """Idempotent: JSON lines on stdout from the root logger; ours and uvicorn's log at ``level``.

    uvicorn must be started with ``log_config=None`` (``serving.config`` does), so that its
    records reach this handler instead of plain-text handlers of its own.
    """
    root = logging.getLogger()
    if not any(isinstance(handler.formatter, JSONFormatter) for handler in root.handlers):
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(JSONFormatter())
        root.addHandler(handler)
    logging.getLogger(UVICORN_LOGGER_NAME).setLevel(level.upper())
    logger = logging.getLogger(LOGGER_NAME)
    logger.setLevel(level.upper())
    return logger
