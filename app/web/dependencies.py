"""The service's dependencies (Redis, the database): whether each answers, and a circuit for Redis.

Each dependency has a state, ``up`` or ``down``. A change is logged once (a warning going down, an
info line coming back), exported as ``compute_advisor_dependency_up{name}`` (1 or 0) and shown in
``/health/ready``'s ``checks.dependencies``.

A ``Circuit`` stops calling a dependency that keeps failing: after ``failures`` failures in a row it
opens, and for ``open_seconds`` no call is made (the caller uses its fallback at once); then one call
is let through (half-open): its success closes the circuit, its failure opens it again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass

from app.web import metrics

log = logging.getLogger(__name__)


@dataclass(slots=True)
class DependencyState:
    """One dependency as readiness shows it."""

    name: str
    up: bool = True
    #: the last failure, while down
    reason: str | None = None
    #: what the service does instead while it is down
    fallback: str | None = None
    since: float | None = None


class Dependencies:
    """The dependencies' states: each change logged, exported and readable by ``/health/ready``."""

    def __init__(self, clock: Callable[[], float] = time.time) -> None:
        self._clock = clock
        self._states: dict[str, DependencyState] = {}

    def watch(self, name: str, fallback: str | None = None) -> DependencyState:
        """Start following ``name`` (up until it fails)."""
        state = self._states.setdefault(name, DependencyState(name, fallback=fallback))
        metrics.dependency_up(name, state.up)
        return state

    def mark(self, name: str, up: bool, reason: str | None = None) -> None:
        """Record whether ``name`` answers; a change is logged and exported."""
        state = self._states.get(name) or self.watch(name)
        if state.up == up:
            if not up:
                state.reason = reason
            return
        state.up, state.since = up, self._clock()
        state.reason = None if up else reason
        metrics.dependency_up(name, up)
        if up:
            log.info("dependency %s is up again", name)
        else:
            instead = f"; {state.fallback}" if state.fallback else ""
            log.warning("dependency %s is down: %s%s", name, reason, instead)

    def states(self) -> dict[str, dict[str, object]]:
        """Each dependency's state, for ``/health/ready``."""
        found: dict[str, dict[str, object]] = {}
        for name, s in sorted(self._states.items()):
            found[name] = {"state": "up" if s.up else "down"}
            if not s.up:
                found[name] |= {"reason": s.reason, "fallback": s.fallback}
        return found


class Circuit:
    """Calls to one dependency: open after ``failures`` failures in a row, retried after ``open_seconds``."""

    def __init__(
        self,
        name: str,
        dependencies: Dependencies,
        *,
        failures: int,
        open_seconds: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.name = name
        self._dependencies = dependencies
        self._threshold = failures
        self._open_seconds = open_seconds
        self._clock = clock
        self._failures = 0
        self._open_until: float | None = None
        #: calls not made because the circuit was open (for tests and logs)
        self.skipped = 0

    @property
    def open(self) -> bool:
        return self._open_until is not None

    def allow(self) -> bool:
        """Whether to call the dependency now: closed, or open and due for one trial call."""
        if self._open_until is None:
            return True
        if self._clock() >= self._open_until:
            self._open_until = self._clock() + self._open_seconds  # one trial per period
            return True
        self.skipped += 1
        return False

    def succeeded(self) -> None:
        self._failures = 0
        self._open_until = None
        self._dependencies.mark(self.name, True)

    def failed(self, exc: BaseException) -> None:
        self._failures += 1
        reason = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
        if self._failures >= self._threshold:
            self._open_until = self._clock() + self._open_seconds
            self._dependencies.mark(self.name, False, reason)
