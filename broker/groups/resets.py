"""Planning consumer-group offset resets, the way ``kafka-consumer-groups --reset-offsets`` does.

This module is pure: no Kafka client, no Django. The caller fetches, per partition, the group's
committed offset, the log start and end offsets and (for the time-based strategies) the first offset
at or after the target time, then ``plan`` computes the new offset of every partition and explains,
in ``PlannedReset.note``, every clamp and every fallback.

Strategies (``STRATEGIES``) and how each new offset is chosen:

``earliest``     the log start.
``latest``       the log end.
``current``      the committed offset, kept as it is even when it lies outside the log (Kafka's tool does
                 not clamp ``--to-current`` either; a note says the consumer will apply
                 ``auto.offset.reset``). With no committed offset: the log end, with a note (as Kafka's tool).
``to-offset``    the given offset, clamped into [log start, log end], with a note when clamped.
``shift-by``     the committed offset plus the shift, clamped into [log start, log end]. With no committed
                 offset the shift starts from the log end, with a note. (Kafka's tool refuses to shift a
                 partition without a committed offset; a console planning a whole group is more useful
                 when it still proposes something and says why.)
``to-datetime``  the first offset at or after the time, or the log end when no message is that late, with
                 a note; clamped too.
``by-duration``  as ``to-datetime`` for the time ``now - duration`` (never before 1970).

Decisions about input:

* A date in the future is accepted, not refused: no message is that late (unless producers stamped
  messages ahead of time), so every partition resolves to the log end with a note saying the date is in
  the future (``plan`` needs ``now_ms`` for that wording). That is what Kafka's tool does too.
* A naive date-time is UTC. Epoch milliseconds are accepted for ``to-datetime`` as well.
* Negative offsets, negative epoch values, dates before 1970 and negative durations are refused:
  Kafka gives negative timestamps a special meaning (-1 latest, -2 earliest) in its offset look-ups.
* Durations are ISO 8601 as Java's ``Duration.parse`` reads them (``PT1H30M``, ``P1DT2H``, ``PT0.5S``;
  days, hours, minutes and seconds only) or shorthand (``15m``, ``2h``, ``1d``, ``90s``, ``500ms``,
  ``1h30m``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from broker.errors import InvalidInput

STRATEGIES = ("earliest", "latest", "current", "to-offset", "shift-by", "to-datetime", "by-duration")

MAX_OFFSET = 2**63 - 1  # Kafka offsets are signed 64-bit integers
MAX_VALUE_LENGTH = 100
# The latest instant Python's datetime can show: 9999-12-31T23:59:59.999Z.
MAX_TIMESTAMP_MS = 253_402_300_799_999

_NO_VALUE = frozenset({"earliest", "latest", "current"})
_ALIASES = {"to-earliest": "earliest", "to-latest": "latest", "to-current": "current"}
_WHAT_IS_NEEDED = {
    "to-offset": "an offset, like 1200",
    "shift-by": "a number of messages to shift by, like -100 or 50",
    "to-datetime": "a date-time, like 2026-11-01T12:00:00.000 (UTC) or 2026-11-01T12:00:00+02:00",
    "by-duration": "a duration, like PT1H30M, P1DT2H or 15m",
}

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)
_INTEGER = re.compile(r"[+-]?[0-9]+")
_DIGITS = re.compile(r"[0-9]+")
_NEGATIVE_DIGITS = re.compile(r"-[0-9]+")
_ISO_DURATION = re.compile(
    r"P(?:(?P<d>[0-9]+)D)?"
    r"(?:T(?:(?P<h>[0-9]+)H)?(?:(?P<m>[0-9]+)M)?(?:(?P<s>[0-9]+)(?:[.,](?P<f>[0-9]{1,9}))?S)?)?"
)
_SHORTHAND_DURATION = re.compile(r"(?:[0-9]+\s*(?:ms|[dhms])\s*)+")
_SHORTHAND_PART = re.compile(r"([0-9]+)\s*(ms|[dhms])")
_UNIT_MS = {"d": 86_400_000, "h": 3_600_000, "m": 60_000, "s": 1000, "ms": 1}
_DURATION_EXAMPLES = "ISO 8601 like PT1H30M, P1DT2H or PT15M, or shorthand like 15m, 2h, 1d or 90s"
_DATETIME_EXAMPLES = (
    "ISO 8601 like 2026-11-01T12:00:00.000 (UTC) or 2026-11-01T12:00:00.000+02:00 or ...Z, or epoch milliseconds"
)


class ResetError(InvalidInput):
    """A reset strategy or value that cannot be used; the message says why and is shown to the user."""


@dataclass(frozen=True)
class ResetSpec:
    """What to reset to: a strategy from ``STRATEGIES`` and the one value it needs, if any."""

    strategy: str
    offset: int | None = None  # to-offset
    shift: int | None = None  # shift-by (may be negative)
    datetime_ms: int | None = None  # to-datetime (epoch ms)
    duration_ms: int | None = None  # by-duration: the target time is now - duration


@dataclass(frozen=True)
class PartitionState:
    """What the caller fetched from Kafka about one partition of the group."""

    topic: str
    partition: int
    committed: int | None  # None: the group has no committed offset here
    log_start: int
    log_end: int
    # The first offset whose timestamp is at or after the spec's time (to-datetime/by-duration);
    # None if no message is that late.
    offset_for_time: int | None = None


@dataclass(frozen=True)
class PlannedReset:
    """The offset one partition would be reset to, and why when it is not simply what was asked for."""

    topic: str
    partition: int
    current: int | None  # committed now
    new: int
    log_start: int
    log_end: int
    note: str | None  # why it was clamped or how it was chosen


# ---------------------------------------------------------------------------------------------------
# Parsing what the user typed


def parse_spec(strategy: str, value: str | None, now_ms: int) -> ResetSpec:
    """Turn a strategy name and the text the user gave for it into a ``ResetSpec``.

    ``strategy`` is one of ``STRATEGIES`` (case-insensitive; Kafka's option names such as ``--to-earliest``
    or ``to-latest`` are accepted too). ``value`` is the strategy's argument: blank or ``None`` for
    earliest/latest/current. ``now_ms`` is the caller's clock, kept in the signature for symmetry with
    ``time_target_ms``; parsing does not use it, because dates in the future are accepted (see the module
    docstring) and ``plan(..., now_ms=...)`` is what notes them.

    Raises ``ResetError`` with a readable reason for an unknown strategy, a missing, malformed or
    out-of-range value, or a value given to a strategy that takes none.
    """
    del now_ms  # future dates are allowed: plan() explains them, given the same clock
    name = _normalise_strategy(strategy)
    text = (value or "").strip()
    if len(text) > MAX_VALUE_LENGTH:
        raise ResetError(f"the value for {name} is too long ({len(text)} characters, at most {MAX_VALUE_LENGTH})")
    if name in _NO_VALUE:
        if text:
            raise ResetError(f"{name} takes no value, but got {_show(text)}")
        return ResetSpec(name)
    if not text:
        raise ResetError(f"{name} needs {_WHAT_IS_NEEDED[name]}")
    if name == "to-offset":
        spec = ResetSpec(name, offset=_parse_integer(text, "the offset"))
    elif name == "shift-by":
        spec = ResetSpec(name, shift=_parse_integer(text, "the shift"))
    elif name == "to-datetime":
        spec = ResetSpec(name, datetime_ms=_parse_datetime_ms(text))
    else:
        spec = ResetSpec(name, duration_ms=_parse_duration_ms(text))
    validate_spec(spec)
    return spec


def _normalise_strategy(strategy: str) -> str:
    name = strategy.strip().lower().replace("_", "-").removeprefix("--")
    name = _ALIASES.get(name, name)
    if name not in STRATEGIES:
        raise ResetError(f"unknown reset strategy {_show(strategy.strip())}: use one of {', '.join(STRATEGIES)}")
    return name


def _show(text: str) -> str:
    """The user's text quoted for a message, shortened if long."""
    return repr(text if len(text) <= 40 else text[:37] + "...")


def _parse_integer(text: str, what: str) -> int:
    if not _INTEGER.fullmatch(text):
        raise ResetError(f"{what} must be a whole number, not {_show(text)}")
    return int(text)


def _parse_datetime_ms(text: str) -> int:
    """Epoch milliseconds of an ISO 8601 date-time (naive = UTC) or of a plain epoch-milliseconds number."""
    if _NEGATIVE_DIGITS.fullmatch(text):
        raise ResetError(f"the date-time {_show(text)} is negative: epoch milliseconds start at 0 (1970-01-01)")
    if _DIGITS.fullmatch(text):
        return int(text)
    iso = text[:-1] + "Z" if text.endswith("z") else text
    try:
        parsed = datetime.fromisoformat(iso)
    except ValueError as exc:
        reason = str(exc)
        detail = "" if reason.startswith("Invalid isoformat") else f" ({reason})"
        raise ResetError(f"{_show(text)} is not a date-time{detail}: use {_DATETIME_EXAMPLES}") from None
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=UTC)
    millis = (parsed - _EPOCH) // _ONE_MS
    if millis < 0:
        raise ResetError(f"the date-time {_show(text)} is before 1970-01-01T00:00:00Z, where Kafka timestamps start")
    return millis


def _parse_duration_ms(text: str) -> int:
    """Milliseconds of an ISO 8601 duration (``PT1H30M``) or a shorthand one (``1h30m``)."""
    if "-" in text:
        raise ResetError(
            f"the duration {_show(text)} is negative: by-duration looks back from now, so give a positive one like PT1H"
        )
    upper = text.upper()
    if upper.startswith("P"):
        return _parse_iso_duration_ms(text, upper)
    lower = text.lower()
    if _DIGITS.fullmatch(lower):
        raise ResetError(f"the duration {_show(text)} has no unit: write {text}s, {text}m, {text}h or {text}d")
    if not _SHORTHAND_DURATION.fullmatch(lower):
        raise ResetError(f"{_show(text)} is not a duration: use {_DURATION_EXAMPLES}")
    total = 0
    seen: set[str] = set()
    for amount, unit in _SHORTHAND_PART.findall(lower):
        if unit in seen:
            raise ResetError(f"the duration {_show(text)} gives {unit} twice")
        seen.add(unit)
        total += int(amount) * _UNIT_MS[unit]
    return total


def _parse_iso_duration_ms(text: str, upper: str) -> int:
    date_part = upper[1:].split("T", 1)[0]
    if any(unit in date_part for unit in "YMW"):
        raise ResetError(
            f"the duration {_show(text)} uses years, months or weeks, which have no fixed length: "
            "give days instead, like P30D"
        )
    match = _ISO_DURATION.fullmatch(upper)
    if match is None or upper.endswith("T") or not any(match.groupdict().values()):
        raise ResetError(f"{_show(text)} is not a duration: use {_DURATION_EXAMPLES}")
    days, hours, minutes, seconds = (int(match[group] or 0) for group in ("d", "h", "m", "s"))
    fraction_ms = int((match["f"] or "").ljust(3, "0")[:3])
    return (
        days * _UNIT_MS["d"] + hours * _UNIT_MS["h"] + minutes * _UNIT_MS["m"] + seconds * _UNIT_MS["s"] + fraction_ms
    )


# ---------------------------------------------------------------------------------------------------
# Checking a spec and finding its target time


def validate_spec(spec: ResetSpec) -> None:
    """Raise ``ResetError`` unless ``spec`` names a known strategy and carries the value it needs, in range."""
    if spec.strategy not in STRATEGIES:
        raise ResetError(f"unknown reset strategy {_show(spec.strategy)}: use one of {', '.join(STRATEGIES)}")
    if spec.strategy == "to-offset":
        if spec.offset is None:
            raise ResetError(f"to-offset needs {_WHAT_IS_NEEDED['to-offset']}")
        if spec.offset < 0:
            raise ResetError(f"the offset must not be negative, but got {spec.offset}")
        if spec.offset > MAX_OFFSET:
            raise ResetError(f"the offset {spec.offset} is larger than Kafka allows ({MAX_OFFSET})")
    elif spec.strategy == "shift-by":
        if spec.shift is None:
            raise ResetError(f"shift-by needs {_WHAT_IS_NEEDED['shift-by']}")
        if abs(spec.shift) > MAX_OFFSET:
            raise ResetError(f"the shift {spec.shift} is larger than Kafka allows (±{MAX_OFFSET})")
    elif spec.strategy == "to-datetime":
        if spec.datetime_ms is None:
            raise ResetError(f"to-datetime needs {_WHAT_IS_NEEDED['to-datetime']}")
        if spec.datetime_ms < 0:
            raise ResetError(f"the date-time must not be before 1970, but got {spec.datetime_ms} ms")
        if spec.datetime_ms > MAX_TIMESTAMP_MS:
            raise ResetError(f"the date-time {spec.datetime_ms} ms is after the year 9999")
    elif spec.strategy == "by-duration":
        if spec.duration_ms is None:
            raise ResetError(f"by-duration needs {_WHAT_IS_NEEDED['by-duration']}")
        if spec.duration_ms < 0:
            raise ResetError(f"the duration must not be negative, but got {spec.duration_ms} ms")


def time_target_ms(spec: ResetSpec, now_ms: int) -> int | None:
    """The timestamp to look offsets up for: the date of ``to-datetime``, ``now_ms - duration`` for
    ``by-duration`` (never below 0: a duration reaching before 1970 means "every message"), else ``None``.

    Raises ``ResetError`` for an invalid spec.
    """
    validate_spec(spec)
    if spec.strategy == "to-datetime":
        return spec.datetime_ms
    if spec.strategy == "by-duration":
        assert spec.duration_ms is not None  # validate_spec checked
        return max(0, now_ms - spec.duration_ms)
    return None


# ---------------------------------------------------------------------------------------------------
# Planning


def plan(states: list[PartitionState], spec: ResetSpec, *, now_ms: int | None = None) -> list[PlannedReset]:
    """The new offset of every partition in ``states``, sorted by (topic, partition).

    ``now_ms`` is optional and only sharpens the notes of the time strategies (a date in the future is
    called so; a by-duration note shows the time it looked back to). Raises ``ResetError`` for an invalid
    spec; never raises for the states themselves.
    """
    validate_spec(spec)
    ordered = sorted(states, key=lambda state: (state.topic, state.partition))
    return [_plan_one(state, spec, now_ms) for state in ordered]


def _plan_one(state: PartitionState, spec: ResetSpec, now_ms: int | None) -> PlannedReset:
    new, note = _choose(state, spec, now_ms)
    return PlannedReset(
        topic=state.topic,
        partition=state.partition,
        current=state.committed,
        new=new,
        log_start=state.log_start,
        log_end=state.log_end,
        note=note,
    )


def _choose(state: PartitionState, spec: ResetSpec, now_ms: int | None) -> tuple[int, str | None]:
    """The new offset of one partition and its note."""
    start, end = state.log_start, state.log_end
    strategy = spec.strategy
    if strategy == "earliest":
        return start, None
    if strategy == "latest":
        return end, None
    if strategy == "current":
        return _choose_current(state)
    if strategy == "to-offset":
        assert spec.offset is not None  # validate_spec checked
        return _clamp(spec.offset, start, end, f"offset {spec.offset} is")
    if strategy == "shift-by":
        assert spec.shift is not None
        return _choose_shift(state, spec.shift)
    return _choose_by_time(state, spec, now_ms)


def _choose_current(state: PartitionState) -> tuple[int, str | None]:
    committed, start, end = state.committed, state.log_start, state.log_end
    if committed is None:
        return end, f"no committed offset: latest, the end {end}"
    fallback = "kept as Kafka's tool keeps it; the consumer will apply its auto.offset.reset"
    if committed > end:
        return committed, f"committed {committed} is past the end {end}: {fallback}"
    if committed < start:
        return committed, f"committed {committed} is below the start {start} (deleted by retention): {fallback}"
    return committed, None


def _choose_shift(state: PartitionState, shift: int) -> tuple[int, str | None]:
    start, end = state.log_start, state.log_end
    if state.committed is None:
        base, label = end, f"the end {end}"
        prefix: str | None = f"no committed offset to shift from: shifted from the end {end}"
    else:
        base, label = state.committed, f"committed {state.committed}"
        prefix = None
    target = base + shift
    new, clamp_note = _clamp(target, start, end, f"{label} shifted by {shift:+d} is {target},")
    return new, _join(prefix, clamp_note)


def _choose_by_time(state: PartitionState, spec: ResetSpec, now_ms: int | None) -> tuple[int, str | None]:
    start, end = state.log_start, state.log_end
    if spec.strategy == "to-datetime":
        assert spec.datetime_ms is not None
        when = _format_ms(spec.datetime_ms)
        phrase = f"at or after {when}"
        if state.offset_for_time is None and now_ms is not None and spec.datetime_ms > now_ms:
            return end, f"{when} is in the future and no message is that late: the end {end}"
    else:
        assert spec.duration_ms is not None
        phrase = f"in the last {_format_duration(spec.duration_ms)}"
        if now_ms is not None:
            phrase += f" (since {_format_ms(max(0, now_ms - spec.duration_ms))})"
    if state.offset_for_time is None:
        return end, f"no message {phrase}: the end {end}"
    return _clamp(
        state.offset_for_time, start, end, f"the first message {phrase} is at offset {state.offset_for_time},"
    )


def _clamp(value: int, start: int, end: int, subject: str) -> tuple[int, str | None]:
    """``value`` moved into [start, end] the way Kafka's tool does (the end is checked first), and, when it
    moved, the note ``"<subject> past the end 120: clamped to the end"`` (or ``below the start``).

    ``subject`` reads into the note: ``"offset 900 is"``, ``"committed 100 shifted by +50 is 150,"``.
    """
    if value > end:
        return end, f"{subject} past the end {end}: clamped to the end"
    if value < start:
        return start, f"{subject} below the start {start}: clamped to the start"
    return value, None


def _join(*parts: str | None) -> str | None:
    present = [part for part in parts if part]
    return "; ".join(present) if present else None


def _format_ms(millis: int) -> str:
    """An epoch-milliseconds timestamp as ISO 8601 UTC, e.g. ``2026-11-01T12:00:00.000Z``."""
    try:
        moment = _EPOCH + timedelta(milliseconds=millis)
    except OverflowError:
        return f"{millis} ms after 1970"
    return moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{millis % 1000:03d}Z"


def _format_duration(millis: int) -> str:
    """A duration for people: ``1d 2h 30m``, ``90s`` shown as ``1m 30s``, ``0s`` for nothing."""
    parts = []
    rest = millis
    for unit in ("d", "h", "m", "s", "ms"):
        amount, rest = divmod(rest, _UNIT_MS[unit])
        if amount:
            parts.append(f"{amount}{unit}")
    return " ".join(parts) or "0s"
