"""Numbers for people: durations (7 d, 60 s), sizes (100 MiB), "unlimited" for Kafka's no-limit values, and a
config value read by its name's unit (``retention.ms`` 604800000 is 7 d; ``segment.bytes`` 1073741824 is
1 GiB). The raw value stays one hover away on the pages (see templatetags/kazami.py ``config_value``)."""

from __future__ import annotations

LONG_MAX = 9_223_372_036_854_775_807  # Java's Long.MAX_VALUE: Kafka's "no limit" for many settings
INT_MAX = 2_147_483_647
UNLIMITED = "unlimited"

# Settings whose -1 means "no limit" (and, for the local ones, -2 "as the topic's whole retention").
_NO_LIMIT_AT_MINUS_ONE = ("retention.ms", "retention.bytes", "log.retention.ms", "log.retention.bytes")
_SIZE_SUFFIXES = (".bytes", ".bytes.per.second", "_byte_rate", ".byte.rate")
_DURATION_SUFFIXES = (".ms", ".ms.per.second")
_DURATION_UNITS = (("d", 86_400_000), ("h", 3_600_000), ("min", 60_000), ("s", 1000))


def duration(ms: int) -> str:
    """Milliseconds as people say them, exact: 604800000 -> "7 d", 5400000 -> "1 h 30 min", 60000 -> "1 min",
    1500 -> "1.5 s", 250 -> "250 ms"; at most two units, and never rounded (86400001 -> "86,400,001 ms")."""
    if ms < 0:
        return f"{ms:,} ms"
    if ms < 1000:
        return f"{ms} ms"
    for i, (unit, size) in enumerate(_DURATION_UNITS):
        if ms >= size:
            whole, rest = divmod(ms, size)
            if rest == 0:
                return f"{whole:,} {unit}"
            if i + 1 < len(_DURATION_UNITS):
                next_unit, next_size = _DURATION_UNITS[i + 1]
                if rest % next_size == 0:
                    return f"{whole:,} {unit} {rest // next_size} {next_unit}"
            if unit == "s":
                return f"{ms / 1000:g} s"
            return f"{ms:,} ms"  # not exact in two units: the milliseconds, rather than a rounded figure
    return f"{ms} ms"  # not reached


def size(n: int) -> str:
    """Bytes as people read them: 1073741824 -> "1 GiB", 104857600 -> "100 MiB", 1048588 -> "1,024 KiB"
    when exact in KiB, else two decimals: 1500000 -> "1.43 MiB"; under 1 KiB, bytes."""
    if n < 1024:
        return f"{n:,} B"
    units = ("KiB", "MiB", "GiB", "TiB", "PiB", "EiB")
    value, unit = float(n), "B"
    exact_in: str | None = None
    for candidate in units:
        if value < 1024:
            break
        value /= 1024
        unit = candidate
        if value == int(value):
            exact_in = candidate
    if value == int(value):
        return f"{int(value):,} {unit}"
    if exact_in is not None:  # exact in a smaller unit: say that, rather than round
        exponent = units.index(exact_in) + 1
        return f"{n // 1024**exponent:,} {exact_in}"
    return f"{value:,.2f} {unit}"


def config_value(name: str, value: str | None) -> str | None:
    """How a config value reads for people, by its name's unit; None when the raw value is as readable (text,
    lists, plain counts, anything that is not a whole number)."""
    if value is None:
        return None
    text = value.strip()
    if not text.lstrip("-").isdigit():
        return None
    number = int(text)
    if number == LONG_MAX:
        return UNLIMITED
    local = name.startswith(("local.", "log.local."))  # tiered storage's local part: the topic's, the broker's
    base = name.replace("local.", "", 1) if local else name
    if number == -1 and base in _NO_LIMIT_AT_MINUS_ONE:
        return UNLIMITED
    if number == -2 and local and base in _NO_LIMIT_AT_MINUS_ONE:
        return f"as {base}"
    if number < 0:
        return None
    if name.endswith(_DURATION_SUFFIXES):
        return duration(number)
    if name.endswith(_SIZE_SUFFIXES):
        return size(number) + ("/s" if "rate" in name or "per.second" in name else "")
    if number == INT_MAX:
        return UNLIMITED
    return f"{number:,}" if number >= 10_000 else None
