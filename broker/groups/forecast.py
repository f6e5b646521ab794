"""When will a group catch up, and will its oldest unread records be deleted first?

From the lag history (the lag sampler's samples of each partition's committed offset and log end) over a recent
window: the rate records are written to the group's partitions (``rate_in``) and the rate the group commits
(``rate_out``), per partition and summed. The group catches up in lag / (rate_out - rate_in) when it gains, and
never at these rates when it does not. A partition is at risk when its oldest unread record (its lag in time)
reaches the topic's retention.ms before the group would read it: Kafka deletes it unread.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

# Rates need this much time between the first and last point of a partition.
MIN_SPAN_MS = 1_000


@dataclass(frozen=True)
class Point:
    at_ms: int
    committed: int
    log_end: int


@dataclass(frozen=True)
class RetentionRisk:
    topic: str
    partition: int
    deleted_in_s: float  # until its oldest unread record is older than retention.ms (0: deleted already)
    catch_up_s: float | None  # when the group would read up to it at these rates (None: never)

    def as_dict(self) -> dict[str, Any]:
        return {
            "topic": self.topic,
            "partition": self.partition,
            "deleted_in_s": round(self.deleted_in_s, 1),
            "catch_up_s": round(self.catch_up_s, 1) if self.catch_up_s is not None else None,
        }


@dataclass(frozen=True)
class Forecast:
    lag: int
    rate_in: float  # records a second written to the group's partitions
    rate_out: float  # records a second the group commits
    catch_up_s: float | None  # None: not gaining at these rates
    over_s: float  # the span the rates were measured over (the longest partition's)
    retention_risk: RetentionRisk | None

    def as_dict(self) -> dict[str, Any]:
        return {
            "lag": self.lag,
            "rate_in": round(self.rate_in, 3),
            "rate_out": round(self.rate_out, 3),
            "catch_up_s": round(self.catch_up_s, 1) if self.catch_up_s is not None else None,
            "over_s": round(self.over_s, 1),
            "retention_risk": self.retention_risk.as_dict() if self.retention_risk else None,
        }


def _catch_up(lag: int, rate_in: float, rate_out: float) -> float | None:
    if lag <= 0:
        return 0.0
    gain = rate_out - rate_in
    return lag / gain if gain > 1e-9 else None


def forecast(
    history: dict[tuple[str, int], list[Point]],
    lag_ms: dict[tuple[str, int], int | None],
    retention_ms: dict[str, int],
) -> Forecast | None:
    """The group's forecast from each partition's points (oldest first; the newest is now), its partitions' lag
    in time, and its topics' retention.ms. None when no partition has two points far enough apart."""
    rate_in = rate_out = 0.0
    over = 0
    measured = False
    lag = 0
    risks: list[RetentionRisk] = []
    for tp, points in history.items():
        if not points:
            continue
        first, last = points[0], points[-1]
        lag_p = max(0, last.log_end - last.committed)
        lag += lag_p
        span = last.at_ms - first.at_ms
        if span < MIN_SPAN_MS:
            continue
        measured = True
        over = max(over, span)
        in_p = max(0, last.log_end - first.log_end) * 1000 / span
        out_p = max(0, last.committed - first.committed) * 1000 / span
        rate_in += in_p
        rate_out += out_p
        retention = retention_ms.get(tp[0])
        age = lag_ms.get(tp)
        if retention is not None and retention > 0 and age is not None and lag_p > 0:
            deleted_in = max(0.0, (retention - age) / 1000)
            catch_up_p = _catch_up(lag_p, in_p, out_p)
            if catch_up_p is None or catch_up_p > deleted_in:
                risks.append(RetentionRisk(tp[0], tp[1], deleted_in, catch_up_p))
    if not measured:
        return None
    risk = min(risks, key=lambda r: (r.deleted_in_s, r.topic, r.partition)) if risks else None
    return Forecast(lag, rate_in, rate_out, _catch_up(lag, rate_in, rate_out), over / 1000, risk)
