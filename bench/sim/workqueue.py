"""client-go's work queue and token bucket, in asyncio.

The queue holds a key once however often it is added, never hands one key to
two workers at once, and re-queues a key added while it was being processed.
The bucket is the API client's rate limiter: ``qps`` tokens a second, ``burst``
at most, waiters served in arrival order.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable

MAX_BACKOFF_SECONDS = 1000.0
FIRST_BACKOFF_SECONDS = 0.005


class WorkQueue:
    """Keys to reconcile, with delayed adds and per-key exponential backoff after failures."""

    def __init__(self) -> None:
        self._ready: asyncio.Queue[str] = asyncio.Queue()
        self._dirty: set[str] = set()
        self._processing: set[str] = set()
        self._failures: dict[str, int] = {}
        self._timers: set[asyncio.TimerHandle] = set()

    def add(self, key: str) -> None:
        if key in self._dirty:
            return
        self._dirty.add(key)
        if key not in self._processing:
            self._ready.put_nowait(key)

    def add_after(self, key: str, seconds: float) -> None:
        if seconds <= 0:
            self.add(key)
            return
        loop = asyncio.get_running_loop()
        handle: asyncio.TimerHandle

        def fire() -> None:
            self._timers.discard(handle)
            self.add(key)

        handle = loop.call_later(seconds, fire)
        self._timers.add(handle)

    def add_rate_limited(self, key: str) -> None:
        """Retry after 5 ms, doubling per consecutive failure (client-go's default item backoff)."""
        failures = self._failures.get(key, 0)
        self._failures[key] = failures + 1
        self.add_after(key, min(FIRST_BACKOFF_SECONDS * 2**failures, MAX_BACKOFF_SECONDS))

    def forget(self, key: str) -> None:
        self._failures.pop(key, None)

    async def get(self) -> str:
        key = await self._ready.get()
        self._dirty.discard(key)
        self._processing.add(key)
        return key

    def done(self, key: str) -> None:
        self._processing.discard(key)
        if key in self._dirty:
            self._ready.put_nowait(key)

    @property
    def busy(self) -> bool:
        """Anything queued or being processed (delayed adds not counted)."""
        return bool(self._dirty or self._processing)

    def close(self) -> None:
        for handle in self._timers:
            handle.cancel()
        self._timers.clear()


Reconcile = Callable[[str], Awaitable[None]]


class Workers:
    """``count`` workers taking keys from ``queue``; a failed reconcile is retried with backoff."""

    def __init__(self, name: str, queue: WorkQueue, reconcile: Reconcile, count: int) -> None:
        self.name = name
        self.queue = queue
        self.reconcile = reconcile
        self.count = count
        self.failures = 0
        self.last_error: BaseException | None = None
        self._tasks: list[asyncio.Task[None]] = []

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._work(), name=f"{self.name} {i}") for i in range(self.count)]

    async def stop(self) -> None:
        self.queue.close()
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
        self._tasks.clear()

    async def _work(self) -> None:
        while True:
            key = await self.queue.get()
            try:
                await self.reconcile(key)
            except asyncio.CancelledError:
                raise
            except Exception as error:  # a controller logs, backs off and retries; so does this one
                self.failures += 1
                self.last_error = error
                self.queue.add_rate_limited(key)
            else:
                self.queue.forget(key)
            finally:
                self.queue.done(key)


class TokenBucket:
    """``qps`` tokens a second up to ``burst``; ``take`` waits its turn for one."""

    def __init__(self, qps: float, burst: int) -> None:
        self.qps = qps
        self.burst = burst
        self._tokens = float(burst)
        self._stamp = time.monotonic()
        self._lock = asyncio.Lock()
        self.waited_seconds = 0.0

    def _refill(self) -> None:
        now = time.monotonic()
        self._tokens = min(float(self.burst), self._tokens + (now - self._stamp) * self.qps)
        self._stamp = now

    async def take(self) -> None:
        async with self._lock:  # asyncio.Lock is FIFO: first come, first served
            self._refill()
            if self._tokens < 1.0:
                wait = (1.0 - self._tokens) / self.qps
                self.waited_seconds += wait
                await asyncio.sleep(wait)
                self._refill()
            self._tokens -= 1.0
