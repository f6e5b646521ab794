"""Reads shared between callers: the live pollers and every page of a process ask the cluster the same
questions (the topic list, a topic, the groups and their lag), and under load each answer would be
asked for many times a second.

``SharedReads`` keeps each answer for ``max_age`` seconds and lets a caller that asks while the same
question is being answered wait for that answer (single flight) instead of asking again. A failure is
shared by those who waited for it but never kept. ``forget()`` drops every kept answer (after a change
made through this process). With ``max_age`` 0 nothing is kept; concurrent askers still share.

``Timestamps`` keeps the timestamp of the message at (topic, partition, offset): it never changes while
the message exists, so the lag-in-time lookup reads each one once rather than on every refresh.
"""

from __future__ import annotations

import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Hashable
from typing import Any, TypeVar

T = TypeVar("T")

# How long a caller waits for another's answer before asking for itself (a safety net: every answer is
# bounded by the connection's own time-outs, well below this).
WAIT_AT_MOST_S = 60.0


class _Flight:
    def __init__(self) -> None:
        self.done = threading.Event()
        self.value: Any = None
        self.error: BaseException | None = None


class SharedReads:
    def __init__(self, max_age: float, max_entries: int = 512) -> None:
        self.max_age = max_age
        self.max_entries = max_entries
        self._lock = threading.Lock()
        self._kept: OrderedDict[Hashable, tuple[float, Any]] = OrderedDict()  # key -> (answered at, value)
        self._flights: dict[Hashable, _Flight] = {}
        self._generation = 0  # bumped by forget(): an answer begun before a change is not kept
        self.asked = 0  # answers computed (not served from what was kept or shared)

    def get(self, key: Hashable, compute: Callable[[], T]) -> T:
        """The answer to ``key``: kept (younger than max_age), another caller's in flight, or ``compute()``."""
        with self._lock:
            kept = self._kept.get(key)
            if kept is not None and time.monotonic() - kept[0] < self.max_age:
                self._kept.move_to_end(key)
                return kept[1]  # type: ignore[no-any-return]
            flight = self._flights.get(key)
            leader = flight is None
            if flight is None:
                flight = self._flights[key] = _Flight()
                generation = self._generation
        if not leader:
            if flight.done.wait(WAIT_AT_MOST_S):
                if flight.error is not None:
                    raise flight.error
                return flight.value  # type: ignore[no-any-return]
            return compute()
        try:
            flight.value = compute()
        except BaseException as exc:
            flight.error = exc
            raise
        finally:
            with self._lock:
                self.asked += 1
                self._flights.pop(key, None)
                if flight.error is None and self.max_age > 0 and generation == self._generation:
                    self._kept[key] = (time.monotonic(), flight.value)
                    self._kept.move_to_end(key)
                    while len(self._kept) > self.max_entries:
                        self._kept.popitem(last=False)
            flight.done.set()
        return flight.value  # type: ignore[no-any-return]

    def forget(self) -> None:
        """Drop every kept answer: the next caller asks the cluster again."""
        with self._lock:
            self._kept.clear()
            self._generation += 1


class Timestamps:
    """Timestamps of messages by (topic, partition, offset), the most recently used ``max_entries``,
    each kept at most ``max_age`` seconds (a topic deleted and created again reuses its offsets)."""

    def __init__(self, max_entries: int = 20_000, max_age: float = 600.0) -> None:
        self.max_entries = max_entries
        self.max_age = max_age
        self._lock = threading.Lock()
        self._known: OrderedDict[tuple[str, int, int], tuple[float, int]] = OrderedDict()

    def known(self, wanted: list[tuple[str, int, int]]) -> dict[tuple[str, int, int], int]:
        now = time.monotonic()
        found = {}
        with self._lock:
            for key in wanted:
                entry = self._known.get(key)
                if entry is not None and now - entry[0] < self.max_age:
                    self._known.move_to_end(key)
                    found[key] = entry[1]
        return found

    def learn(self, stamps: dict[tuple[str, int, int], int]) -> None:
        now = time.monotonic()
        with self._lock:
            for key, stamp in stamps.items():
                self._known[key] = (now, stamp)
                self._known.move_to_end(key)
            while len(self._known) > self.max_entries:
                self._known.popitem(last=False)
