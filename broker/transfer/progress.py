"""What every run that writes records shares: how far it got, how it ended, and its pace (a rate at the most, a
checkpoint every CHECKPOINT_RECORDS records or CHECKPOINT_S seconds)."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["CHECKPOINT_RECORDS", "CHECKPOINT_S", "Pace", "Reporter", "RunProgress"]

CHECKPOINT_RECORDS = 20_000
CHECKPOINT_S = 1.0


@dataclass
class RunProgress:
    total: int = 0
    written: int = 0  # records sent (a dry run: that would be)
    guarantee: str = ""  # "exactly-once" or "at-least-once"
    done: bool = False
    stopped: str | None = None  # "cancelled", or None when it went to the end
    error: str | None = None
    elapsed: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "written": self.written,
            "guarantee": self.guarantee,
            "done": self.done,
            "stopped": self.stopped,
            "error": self.error,
            "elapsed_s": round(self.elapsed, 3),
            "records_per_s": round(self.written / self.elapsed, 1) if self.elapsed > 0 else None,
        }


class Pace:
    """Keeps a run under ``rate`` records a second (None: as fast as it goes) and says when a checkpoint is due."""

    def __init__(self, rate: float | None) -> None:
        self.rate = rate
        self.started = self.last_checkpoint = time.monotonic()
        self.since_checkpoint = 0

    def one_more(self, written: int, count: int = 1) -> bool:
        """After a record (or ``count`` of them at once): wait if ahead of the rate; True when a checkpoint is due
        (then counted as done)."""
        self.since_checkpoint += count
        if self.rate:
            ahead = self.started + written / self.rate - time.monotonic()
            if ahead > 0:
                time.sleep(ahead)
        now = time.monotonic()
        if self.since_checkpoint >= CHECKPOINT_RECORDS or now - self.last_checkpoint >= CHECKPOINT_S:
            self.last_checkpoint, self.since_checkpoint = now, 0
            return True
        return False

    def elapsed(self) -> float:
        return time.monotonic() - self.started


class Reporter:
    """Hands ``progress`` to ``on_progress`` at most every ``every_s`` seconds (or when forced), its elapsed time
    set from ``pace``."""

    def __init__(
        self, progress: RunProgress, pace: Pace, on_progress: Callable[[Any], None] | None, every_s: float = 0.5
    ) -> None:
        self.progress, self.pace, self.on_progress, self.every_s = progress, pace, on_progress, every_s
        self.last = pace.started

    def __call__(self, force: bool = False) -> None:
        now = time.monotonic()
        if self.on_progress is not None and (force or now - self.last >= self.every_s):
            self.last = now
            self.progress.elapsed = now - self.pace.started
            self.on_progress(self.progress)
