"""Times as users write them: epoch milliseconds or ISO-8601 (no zone means UTC)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

from broker.errors import InvalidInput

# Kafka carries timestamps as int64 milliseconds since 1970-01-01T00:00:00Z; negative ones are its sentinels
# (latest, earliest, ...), never a time a user means.
MAX_TIME_MS = 2**63 - 1


def parse_time(raw: str, name: str = "timestamp") -> int:
    """Epoch milliseconds from a number of milliseconds or an ISO date / date-time (naive means UTC), within
    0..2**63-1 (InvalidInput outside, or for anything else)."""
    raw = raw.strip()
    if _WHOLE.fullmatch(raw):
        if raw.startswith("-"):
            raise InvalidInput(f"{name} must not be negative.")
        value = int(raw) if len(raw) <= 19 else MAX_TIME_MS + 1
        if value > MAX_TIME_MS:
            raise InvalidInput(f"{name} must be at most {MAX_TIME_MS} (epoch milliseconds), not {raw[:40]}.")
        return value
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{name} must be epoch milliseconds or a date like 2026-11-01T12:30:00Z, not {raw[:40]!r}."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    millis = (moment - datetime(1970, 1, 1, tzinfo=UTC)) // _ONE_MS
    if millis < 0:
        raise InvalidInput(f"{name} must not be before 1970-01-01T00:00:00Z, where Kafka's timestamps start.")
    return millis


def as_datetime(ms: int, name: str = "timestamp") -> datetime:
    """The UTC date-time of epoch milliseconds; InvalidInput past 9999-12-31, the last date Python draws."""
    if not 0 <= ms <= _LAST_MS:
        raise InvalidInput(f"{name} must be between 0 and {_LAST_MS} (epoch milliseconds, up to year 9999).")
    return datetime.fromtimestamp(ms / 1000, UTC)


_WHOLE = re.compile(r"-?[0-9]+")
_ONE_MS = datetime(1970, 1, 1, 0, 0, 0, 1000, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)
_LAST_MS = (datetime(9999, 12, 31, 23, 59, 59, 999000, tzinfo=UTC) - datetime(1970, 1, 1, tzinfo=UTC)) // _ONE_MS
