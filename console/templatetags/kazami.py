"""Template helpers of the pages: lags in time, statuses, totals that leave partitions out, analytics (the rows of
a list of messages are drawn by message_rows.py)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from console.present import units

register = template.Library()


@register.filter
def duration(ms: int | None) -> str:
    """A lag in time as people say it: "—", "0 s", "42 s", "3 min 5 s", "2 h 10 min", "3 d 4 h"."""
    if ms is None:
        return "—"
    seconds = int(ms // 1000)
    if seconds < 60:
        return f"{seconds} s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes} min {seconds} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 48:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


@register.filter
def seconds(value: float | None) -> str:
    """A duration given in seconds, as :func:`duration` says it."""
    return duration(None if value is None else int(value * 1000))


@register.filter
def status_label(status: str) -> str:
    """A lag status as shown to people."""
    return "not judged yet" if status == "NOT_EVALUATED" else status


@register.simple_tag
def at_least(uncounted: int, why: str, why_plural: str = "") -> SafeString:
    """The "≥ " before a total that leaves out ``uncounted`` partitions (nothing when it leaves out none),
    saying why in its title: ``why`` for one partition, ``why_plural`` (else ``why``) for several."""
    if not uncounted:
        return mark_safe("")
    reason = why if uncounted == 1 else why_plural or why
    plural = "" if uncounted == 1 else "s"
    return format_html('<span title="{} partition{} not counted: {}">≥ </span>', uncounted, plural, reason)


# --- analytics -------------------------------------------------------------------------------------


@register.filter
def get_item(mapping: Any, key: str) -> Any:
    """``mapping[key]`` in a template (None when absent)."""
    return mapping.get(key) if isinstance(mapping, dict) else None


@register.filter
def percent(fraction: float | None) -> str:
    """0.0312 -> "3.1%"; None -> "—"."""
    if fraction is None:
        return "—"
    value = 100 * float(fraction)
    return f"{value:.0f}%" if value >= 10 or value == 0 else f"{value:.2g}%"


@register.filter
def total(counts: dict[str, int] | None) -> int:
    return sum((counts or {}).values())


@register.filter
def epoch_ms(moment: datetime | None) -> int | None:
    return None if moment is None else int(moment.timestamp() * 1000)


@register.filter
def iso_epoch_ms(iso: str) -> int:
    return int(datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000)


@register.filter
def as_text(value: Any) -> str:
    """A parameter or an offset as people read it: text as it is, numbers as written, and structures (a
    connector's source partition, a list of names) as compact JSON rather than Python's repr."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool) or value is None or isinstance(value, dict | list | tuple):
        return json.dumps(value, separators=(", ", ": "), ensure_ascii=False, default=str)
    return str(value)


@register.filter
def to_json(value: Any) -> str:
    """A value of a query's row (an object, a list) as compact JSON text."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False, default=str)


REASON_LABELS = {"not_json": "not JSON", "unknown_type": "of unknown type", "missing_field": "missing a field"}


@register.filter
def reason_label(reason: str) -> str:
    return REASON_LABELS.get(reason, reason)


@register.simple_tag
def range_text(params: dict[str, Any]) -> SafeString:
    """A job's time range as "2026-11-23 10:00 – 11:00" in the viewer's time zone (each end a <time> the page's
    script shows in local time, UTC on hover; UTC without it), "from the start to ..." or "everything"."""

    def shown(ms: int) -> SafeString:
        utc = datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M")
        return format_html('<time data-epoch-ms="{}" data-format="datetime" title="{} UTC">{} UTC</time>', ms, utc, utc)

    start, end = params.get("from_ms"), params.get("to_ms")
    offsets = params.get("offsets")
    if offsets:
        parts = ", ".join(f"{t}/{p}:{a}-{'' if b is None else b}" for t, p, a, b in offsets[:4])
        within = (
            ""
            if start is None and end is None
            else format_html(" within {}", range_text({"from_ms": start, "to_ms": end}))
        )
        return format_html("offsets {}{}{}", parts, " …" if len(offsets) > 4 else "", within)
    if start is not None and end is not None:
        return format_html("{} – {}", shown(start), shown(end))
    if end is not None:
        return format_html("up to {}", shown(end))
    if start is not None:
        return format_html("from {}", shown(start))
    return mark_safe("everything")


@register.filter
def seconds_text(seconds: float | None) -> str:
    """3725.2 -> "1 h 2 min"; 0 -> "—"."""
    if not seconds:
        return "—"
    return duration(int(seconds * 1000))


@register.filter
def column_label(name: str) -> str:
    """A result column's heading: "seconds_stall" -> "stall", "last_lag_ms" -> "last lag (time)"."""
    if name.startswith("seconds_"):
        return name[len("seconds_") :].replace("_", " ")
    return {"last_lag_ms": "last lag (time)", "bucket_start": "bucket", "last_at": "last sample"}.get(
        name, name.replace("_", " ")
    )


@register.filter
def quorum_role(quorum: Any, node_id: int) -> str:
    """``leader``, ``follower`` or ``observer``: a replica's role in a broker.cluster.quorum.Quorum."""
    return str(quorum.role_of(node_id))


@register.filter
def quorum_address(quorum: Any, node_id: int) -> str | None:
    """A quorum replica's address: a controller's endpoint, or a broker's client address."""
    return quorum.address_of(node_id)  # type: ignore[no-any-return]


@register.filter
def quorum_silent(quorum: Any, replica: Any) -> bool:
    """Whether the quorum leader has not heard from this replica lately."""
    return bool(quorum.silent(replica))


@register.simple_tag
def config_value(name: str, value: str | None) -> SafeString:
    """A config value for people (7 d, 1 GiB, unlimited) with the raw value on hover, or the raw value alone
    when it reads as well (console/present/units.py)."""
    human = units.config_value(name, value)
    if human is None:
        return format_html('<span class="mono">{}</span>', value)
    return format_html('<span class="mono" title="{}" data-raw="{}">{}</span>', value, value, human)


@register.filter
def bytes_rate(per_second: float | None) -> str:
    """Bytes per second as people read them: 1536.0 -> "1.50 KiB/s"."""
    if per_second is None:
        return ""
    return f"{units.size(round(per_second))}/s"


@register.filter
def size(n: Any) -> str:
    """Bytes as every page writes them (console.present.units.size: "1.50 KiB", "100 MiB"); "—" for None."""
    if n is None or n == "":
        return "—"
    return units.size(int(n))
