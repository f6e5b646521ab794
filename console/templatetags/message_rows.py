"""The rows of a list of messages (a partition's page, search results, find by key, the live tail), drawn in
Python: the template language cost ~0.15 ms a row (variable lookups, includes, number formatting), more
than reading the message did. templates/messages/_message_row.html calls :func:`message_row`, so the pages
and the websocket pushes that include it draw the same markup; a transaction's pill, the masked note and a
marker's row stay templates of their own (drawn only for the rows that have them).

Everything that comes from a message is escaped here with ``html.escape`` (what Django's autoescape does)."""

from __future__ import annotations

from collections.abc import Iterable
from html import escape

from django import template
from django.template.loader import get_template
from django.utils.safestring import SafeString, mark_safe
from django.utils.text import Truncator

from broker.decode import Decoded
from console.present.messages import ShownMessage

register = template.Library()


def message_cell(decoded: Decoded, text: str, is_value: bool = False) -> str:
    """A key or value in a list: its kind when not plain text, a decoding error, then one wrapped line
    (``text``, the preview), as HTML."""
    if decoded.kind == "null":
        return f'<span class="pill pill-muted">{"null (tombstone)" if is_value else "null"}</span>'
    if decoded.kind == "empty":
        return '<span class="pill pill-muted">empty</span>'
    badge = f'<span class="pill pill-muted">binary · {decoded.size} B</span> ' if decoded.kind == "binary" else ""
    if decoded.schema is not None and decoded.kind != "binary":  # read with a schema registry's schema
        badge = f'<span class="pill pill-muted" title="schema id {decoded.schema.get("id")}">{decoded.kind}</span> '
    error = ""
    if decoded.error:
        why = escape(decoded.error)
        error = f'<span class="decode-error" title="{why}">{why}</span> '
    return f'{badge}{error}<code class="preview">{escape(text)}</code>'


@register.simple_tag
def message_row(
    s: ShownMessage, show_partition: object = False, oob: object = False, expandable: object = False
) -> SafeString:
    """One record's row (a marker's is :func:`message_rows`'s); ``oob``: swapped in place of its row;
    ``expandable``: with a button that opens the whole record under the row (static/js/kazami.js)."""
    m = s.message
    tx = m.transaction
    out = [f'\n<tr id="msg-{m.partition}-{m.offset}"']
    if oob:
        out.append(' hx-swap-oob="true"')
    out.append(f' class="message-row tx-{escape(tx)}">' if tx else ' class="message-row">')
    out.append('\n  <td class="num">')
    if expandable:
        out.append(
            f'<button type="button" class="expand" aria-expanded="false" data-expand="{escape(s.url)}?part=expanded"'
            f' aria-label="show the whole message {m.partition}:{m.offset} here" title="show it all here">▸</button> '
        )
    out.append(f'<a href="{escape(s.url)}" title="open this message">{m.offset}</a>')
    if show_partition:
        out.append(f'<div class="muted small">p{m.partition}</div>')
    if tx:
        out.append(f"<div>{get_template('messages/_transaction.html').render({'m': m})}</div>")
    out.append('</td>\n  <td class="time">')
    if m.timestamp is not None:
        when = escape(s.time_utc)
        out.append(
            f'<time data-epoch-ms="{m.timestamp}" data-format="datetime" title="{when}">{when}</time>'
            f'<div class="muted small">{escape(m.timestamp_type)}</div>'
        )
    else:
        out.append('<span class="muted">none</span>')
    out.append(f'</td>\n  <td class="key">{message_cell(s.key, s.key_preview)}</td>')
    out.append(f'\n  <td class="value">{message_cell(s.value, s.value_preview, True)}\n    ')
    if s.headers:
        out.append('<div class="headers">')
        for h in s.headers:
            shown = "null" if h.value.kind == "null" else escape(Truncator(h.value.text).chars(80))
            out.append(f'<span class="header"><span class="mono">{escape(h.name)}</span>=')
            out.append(f'<span class="mono">{shown}</span></span>')
        out.append("</div>")
    out.append("\n    ")
    masked = s.masked
    out.append(get_template("messages/_masked.html").render({"masked": masked}) if masked else "\n")
    out.append(f'\n  </td>\n  <td class="num">{m.size}</td>\n</tr>\n')
    return mark_safe("".join(out))  # noqa: S308 - what comes from the message is escaped above


@register.simple_tag
def message_rows(
    shown: Iterable[ShownMessage], show_partition: object = False, expandable: object = False
) -> SafeString:
    """The rows of a list: :func:`message_row` for records, templates/messages/_marker_row.html for markers."""
    out = []
    for s in shown:
        if s.message.control:
            out.append(get_template("messages/_marker_row.html").render({"s": s, "show_partition": show_partition}))
        else:
            out.append(message_row(s, show_partition, False, expandable))
    return mark_safe("".join(out))  # noqa: S308 - each row escapes what it draws
