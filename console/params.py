"""Query-string parameters, checked: a bad one is InvalidInput (HTTP 400) naming it and saying why."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from django.http import HttpRequest

from broker.errors import InvalidInput


def _values(source: HttpRequest | Mapping[str, Any]) -> Mapping[str, Any]:
    """Query parameters of a request, or a mapping of them already."""
    return source.GET if isinstance(source, HttpRequest) else source


def int_param(
    request: HttpRequest | Mapping[str, Any],
    name: str,
    default: int | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    """The integer parameter ``name``, ``default`` when absent or blank."""
    raw = str(_values(request).get(name, "")).strip()
    if raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw[:40]!r}.") from None
    if minimum is not None and value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, not {value}.")
    if maximum is not None and value > maximum:
        raise InvalidInput(f"{name} must be at most {maximum}, not {value}.")
    return value


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


def time_param(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "").strip()
    return parse_time(raw, name) if raw else None


def choice_param(request: HttpRequest | Mapping[str, Any], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = str(_values(request).get(name, "")).strip() or default
    if raw not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)}, not {raw[:40]!r}.")
    return raw
