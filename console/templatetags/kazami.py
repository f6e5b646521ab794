"""Template helpers for what is drawn many times per page (a cell per key and value of 500 messages)."""

from __future__ import annotations

from django import template
from django.utils.html import format_html
from django.utils.safestring import SafeString, mark_safe

from broker.decode import Decoded

register = template.Library()


@register.simple_tag
def message_cell(decoded: Decoded, text: str, is_value: bool = False) -> SafeString:
    """A key or value in a list: its kind when not plain text, a decoding error, then one wrapped line.

    Everything from the message is escaped by format_html.
    """
    if decoded.kind == "null":
        return format_html('<span class="pill pill-muted">{}</span>', "null (tombstone)" if is_value else "null")
    if decoded.kind == "empty":
        return mark_safe('<span class="pill pill-muted">empty</span>')
    badge = (
        format_html('<span class="pill pill-muted">binary · {} B</span> ', decoded.size)
        if decoded.kind == "binary"
        else ""
    )
    error = (
        format_html('<span class="decode-error" title="{}">{}</span> ', decoded.error, decoded.error)
        if decoded.error
        else ""
    )
    return format_html('{}{}<code class="preview">{}</code>', badge, error, text)


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
