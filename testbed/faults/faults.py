"""Fault tooling: the campaign's faults, each component of a stack killed or slowed, then brought back.

A fault is one function that breaks one part of a running ``Stack`` and returns
after putting it back: SIGKILL of a partition's Metacontroller and a new one in
its place; the API server stopped and started; etcd killed with SIGKILL and
started on its data; the controller manager and the scheduler restarted (their
in-memory expectations and queues lost); the hooks killed, or frozen with
SIGSTOP so that Metacontroller's calls time out; the node agent restarted. A
``Schedule`` injects them at random moments from a thread, sometimes two at once.
"""

from __future__ import annotations

import os
import random
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from testbed.stack import Stack

# Processes of the control plane by the part of the stack they are (one fault at a time per part).
COMPONENTS = {
    "etcd": "etcd",
    "kube-apiserver": "apiserver",
    "kube-controller-manager": "controller",
    "kube-scheduler": "scheduler",
}
# Metacontroller's hook timeout in the shipped CompositeController: a frozen hook outlasts it.
HOOK_TIMEOUT_SECONDS = 10.0


@dataclass(frozen=True)
class Injected:
    """One fault as it happened: which, on what, from when until the part was back."""

    fault: str
    target: str
    started: float  # wall clock
    ended: float


@dataclass(frozen=True)
class Timing:
    """How long a killed part stays down, and how long frozen hooks stay frozen."""

    down: tuple[float, float] = (1.0, 5.0)
    frozen: tuple[float, float] = (HOOK_TIMEOUT_SECONDS + 2.0, HOOK_TIMEOUT_SECONDS + 8.0)


class Faults:
    """The faults a stack can be given; ``inject(name)`` runs one to the end and says what happened."""

    KINDS = (
        "metacontroller-killed",
        "apiserver-restarted",
        "etcd-killed",
        "controller-manager-restarted",
        "scheduler-restarted",
        "hooks-killed",
        "hooks-frozen",
        "node-agent-restarted",
    )

    def __init__(self, stack: Stack, rng: random.Random, timing: Timing | None = None) -> None:
        self.stack, self.rng, self.timing = stack, rng, timing or Timing()
        self.lock = threading.Lock()  # one fault at a time per component
        self.busy: set[str] = set()
        self.kinds: dict[str, Callable[[], str]] = {
            "metacontroller-killed": self.metacontroller,
            "apiserver-restarted": self.apiserver,
            "etcd-killed": self.etcd,
            "controller-manager-restarted": lambda: self.component("kube-controller-manager"),
            "scheduler-restarted": lambda: self.component("kube-scheduler"),
            "hooks-killed": self.hooks_killed,
            "hooks-frozen": self.hooks_frozen,
            "node-agent-restarted": self.node_agent,
        }
        assert tuple(self.kinds) == self.KINDS

    def inject(self, fault: str) -> Injected | None:
        """Run ``fault``; None when the part it would break is already broken by another."""
        component = fault.split("-")[0]
        with self.lock:
            if component in self.busy or (component in ("apiserver", "etcd") and self.busy & {"apiserver", "etcd"}):
                return None
            self.busy.add(component)
        started = time.time()
        try:
            target = self.kinds[fault]()
        finally:
            with self.lock:
                self.busy.discard(component)
        return Injected(fault, target, started, time.time())

    def _down(self) -> None:
        time.sleep(self.rng.uniform(*self.timing.down))

    def metacontroller(self) -> str:
        instance = self.rng.choice(self.stack.instances)
        self.stack.kill_metacontroller(instance.name)
        self._down()
        self.stack.start_metacontroller(instance)
        return instance.name

    def apiserver(self) -> str:
        plane = self.stack.control_plane
        plane.kill("kube-apiserver", signal.SIGTERM, grace=5.0)  # then SIGKILL, as a kubelet would
        self._down()
        plane.restart("kube-apiserver")
        return "kube-apiserver"

    def etcd(self) -> str:
        plane = self.stack.control_plane
        plane.kill("etcd", signal.SIGKILL)
        self._down()
        plane.restart("etcd")
        return "etcd"

    def component(self, name: str) -> str:
        plane = self.stack.control_plane
        plane.kill(name, signal.SIGKILL)
        self._down()
        plane.restart(name)
        return name

    def hooks_killed(self) -> str:
        hooks = self.stack.hooks
        assert hooks is not None
        hooks.process.kill()
        hooks.process.wait()
        self.stack.stop_hooks()
        self._down()
        self.stack.start_hooks()
        return "hooks"

    def hooks_frozen(self) -> str:
        hooks = self.stack.hooks
        assert hooks is not None
        os.kill(hooks.process.pid, signal.SIGSTOP)
        try:
            time.sleep(self.rng.uniform(*self.timing.frozen))
        finally:
            os.kill(hooks.process.pid, signal.SIGCONT)
        return "hooks"

    def node_agent(self) -> str:
        assert self.stack.agent is not None, "the node agent fault needs the stand-in node"
        self.stack.restart_node_agent(self.rng.uniform(*self.timing.down))
        return "node agent"


def ended(code: int | None) -> str:
    """A dead process's return code in words: its exit status, or the signal that killed it."""
    if code is None:
        return "gone"
    if code >= 0:
        return f"exit status {code}"
    try:
        return f"killed by {signal.Signals(-code).name}"
    except ValueError:
        return f"killed by signal {-code}"


class Supervisor:
    """What a kubelet or a Deployment does for a crashed component: starts it again, and says so.

    A part that dies on its own (not under a fault) is started again at once and
    recorded in ``crashed``: the campaign reports it as a finding.
    """

    def __init__(self, faults: Faults) -> None:
        self.faults = faults
        self.crashed: list[Injected] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="supervisor", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.wait(1.0):
            for name, component in self._dead():
                with self.faults.lock:
                    # Judged again under the lock: a fault holding the part may have put it back meanwhile.
                    if component in self.faults.busy or (name, component) not in self._dead():
                        continue
                    self.faults.busy.add(component)
                how = self._how_it_ended(name)
                started = time.time()
                try:
                    self._revive(name)
                    self.crashed.append(Injected("crashed", f"{name} ({how})", started, time.time()))
                finally:
                    with self.faults.lock:
                        self.faults.busy.discard(component)

    def _dead(self) -> list[tuple[str, str]]:
        stack = self.faults.stack
        plane = stack.control_plane
        dead = [
            (name, COMPONENTS[name])
            for name, process in plane.named.items()
            if name in COMPONENTS and process.poll() is not None
        ]
        dead += [
            (name, "metacontroller")
            for name in [i.name for i in stack.instances]
            if name not in stack.metacontrollers or stack.metacontrollers[name].poll() is not None
        ]
        if stack.hooks is not None and stack.hooks.process.poll() is not None:
            dead.append(("hooks", "hooks"))
        return dead

    def _how_it_ended(self, name: str) -> str:
        """Its exit status or the signal that ended it: what a crash report needs first."""
        stack = self.faults.stack
        process = stack.control_plane.named.get(name) or stack.metacontrollers.get(name)
        if process is None and name == "hooks" and stack.hooks is not None:
            process = stack.hooks.process
        return ended(process.poll() if process is not None else None)

    def _revive(self, name: str) -> None:
        stack = self.faults.stack
        instances = {i.name: i for i in stack.instances}
        if name in instances:
            stack.metacontrollers.pop(name, None)
            stack.start_metacontroller(instances[name])
        elif name == "hooks":
            stack.stop_hooks()
            stack.start_hooks()
        else:
            stack.control_plane.restart(name)


class Schedule:
    """Faults at random moments from a thread until ``stop()``; one in ``together`` comes with a second at once."""

    def __init__(
        self,
        faults: Faults,
        rng: random.Random,
        gap: tuple[float, float] = (5.0, 20.0),
        together: float = 0.25,
        kinds: tuple[str, ...] = (),
    ) -> None:
        self.faults, self.rng, self.gap, self.together = faults, rng, gap, together
        self.kinds = kinds or Faults.KINDS
        self.injected: list[Injected] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._running: list[threading.Thread] = []
        self._deck: list[str] = []

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="faults", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        """No new fault; returns once every fault in flight has put its part back."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        for thread in self._running:
            thread.join()
        self._running.clear()

    def _next(self) -> str:
        """Every kind once, in a random order, then again: each comes more than once over a long campaign."""
        if not self._deck:
            self._deck = list(self.kinds)
            self.rng.shuffle(self._deck)
        return self._deck.pop()

    def _run(self) -> None:
        while not self._stop.wait(self.rng.uniform(*self.gap)):
            count = 2 if self.rng.random() < self.together else 1
            for fault in {self._next() for _ in range(count)}:
                thread = threading.Thread(target=self._one, args=(fault,), name=f"fault-{fault}", daemon=True)
                thread.start()
                self._running.append(thread)
            self._running = [thread for thread in self._running if thread.is_alive()]

    def _one(self, fault: str) -> None:
        try:
            done = self.faults.inject(fault)
        except Exception as error:  # a part that would not come back is the campaign's finding
            self.errors.append(f"{fault}: {error!r}")
            return
        if done is not None:
            self.injected.append(done)
