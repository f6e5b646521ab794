"""Times as users write them: epoch milliseconds or ISO-8601 (no zone means UTC)."""

from __future__ import annotations

from datetime import UTC, datetime

from broker.errors import InvalidInput


def parse_time(raw: str, name: str = "timestamp") -> int:
    """Epoch milliseconds from a number of milliseconds or an ISO date / date-time (naive means UTC)."""
    raw = raw.strip()
    if raw.lstrip("-").isdigit():
        value = int(raw)
        if value < 0:
            raise InvalidInput(f"{name} must not be negative.")
        return value
    try:
        moment = datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise InvalidInput(
            f"{name} must be epoch milliseconds or a date like 2026-11-01T12:30:00Z, not {raw[:40]!r}."
        ) from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return int(moment.timestamp() * 1000)
