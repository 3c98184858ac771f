"""What the HTTP edge answers a caller it refuses: the status of each error the decision raises (which says
only what is wrong), and the words of the edge's own refusals (size, time, token).
"""

from __future__ import annotations

from ..errors import HookError, InvalidRequestError, NotJsonError

# Metacontroller records a non-200 answer as a Warning event and retries; a 4xx says the request is at fault.
STATUS: dict[type[HookError], int] = {NotJsonError: 400, InvalidRequestError: 422}
BAD_REQUEST = 400


def http_status(error: HookError) -> int:
    """400 for a body that is not JSON, 422 for a value the hooks cannot act on (any other refusal: 400)."""
    return next((STATUS[kind] for kind in type(error).__mro__ if kind in STATUS), BAD_REQUEST)


# --- refused at the edge, before a hook runs --------------------------------------------

MISSING_TOKEN = "missing bearer token"
INVALID_TOKEN = "invalid bearer token"
HEAD_TOO_LARGE = "request head too large"
HEAD_TOO_SLOW = "request head not received in time"


def body_too_large(limit: int) -> str:
    return f"request body exceeds {limit} bytes"


def body_too_slow(timeout: float) -> str:
    return f"request body not received within {timeout:g} seconds"


# --- 5xx: the details are in the log, never in the answer -------------------------------

INTERNAL_ERROR = "internal error; see the hook service log"
