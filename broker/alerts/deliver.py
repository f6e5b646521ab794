"""How an alert leaves the console: a webhook POST, as plain JSON or in Slack's or Microsoft Teams' incoming-webhook
format, or an email through the console's mail server, each with a time-out. A webhook on a loopback, private,
link-local or otherwise internal address is refused unless allowed (``allow``: "loopback", or "all"), so that a
rule cannot be used to reach the services beside the console; the address is checked each time it is sent to,
not only when the channel is saved."""

from __future__ import annotations

import ipaddress
import json
import re
import smtplib
import socket
import ssl
import urllib.error
import urllib.request
from dataclasses import dataclass
from email.message import EmailMessage
from typing import Any
from urllib.parse import urlsplit

from broker.errors import InvalidInput

FORMATS = ("json", "slack", "teams")
ALLOW = ("", "loopback", "all")
TIMEOUT_S = 5.0
_FIRING_COLOURS = {"critical": "C62828", "warning": "EF8F00", "info": "1565C0"}
_RESOLVED_COLOUR = "2E7D32"


class DeliveryFailed(Exception):
    """The target did not take the alert: refused, unreachable, timed out, or answered with an error."""


def check_target(url: Any, allow: str = "", resolve: bool = True) -> str:
    """``url`` if it is an http(s) address an alert may be sent to; raises InvalidInput saying why not. With
    ``resolve``, the host's addresses are looked up and every one must be public (or allowed)."""
    if not isinstance(url, str) or not url.strip():
        raise InvalidInput("A webhook needs a url (http:// or https://).")
    text = url.strip()
    parts = urlsplit(text)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidInput(f"A webhook's url is http:// or https:// with a host, not {text[:80]!r}.")
    if len(text) > 2000:
        raise InvalidInput("A webhook's url is at most 2,000 characters.")
    if not resolve or allow == "all":
        return text
    try:
        infos = socket.getaddrinfo(parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    except (OSError, UnicodeError) as exc:
        raise InvalidInput(f"The webhook's host {parts.hostname!r} cannot be resolved: {exc}.") from None
    for info in infos:
        address = ipaddress.ip_address(str(info[4][0]).split("%", 1)[0])
        if address.is_loopback and allow == "loopback":
            continue
        if not address.is_global or address.is_multicast:
            raise InvalidInput(
                f"The webhook's host {parts.hostname!r} is at {address}, an internal address: alerts are not sent "
                "there unless KAZAMI_ALERT_PRIVATE_TARGETS allows it (loopback, or all)."
            )
    return text


def body(fmt: str, alert: dict[str, Any]) -> bytes:
    """What is posted for ``alert`` (the plain JSON form: rule, state, severity, cluster, subject, value, since,
    link, text) in format ``fmt``."""
    if fmt == "json":
        return json.dumps(alert).encode()
    state = alert.get("state", "firing")
    title = f"[{state.upper()}] {alert.get('rule')} on {alert.get('cluster')}"
    line = f"{alert.get('text', '')}"
    link = alert.get("link") or ""
    if fmt == "slack":
        return json.dumps({"text": f"*{title}*\n{line}" + (f"\n<{link}|open in Kazami>" if link else "")}).encode()
    colour = _RESOLVED_COLOUR if state == "resolved" else _FIRING_COLOURS.get(alert.get("severity", ""), "C62828")
    card: dict[str, Any] = {
        "@type": "MessageCard",
        "@context": "https://schema.org/extensions",
        "summary": title,
        "themeColor": colour,
        "title": title,
        "text": line,
    }
    if link:
        card["potentialAction"] = [
            {"@type": "OpenUri", "name": "Open in Kazami", "targets": [{"os": "default", "uri": link}]}
        ]
    return json.dumps(card).encode()


def send(url: str, fmt: str, alert: dict[str, Any], allow: str = "", timeout: float = TIMEOUT_S) -> int:
    """POST ``alert`` to ``url`` in ``fmt``; returns the HTTP status (2xx). Raises DeliveryFailed."""
    try:
        target = check_target(url, allow)
    except InvalidInput as exc:
        raise DeliveryFailed(str(exc)) from None
    request = urllib.request.Request(  # noqa: S310 - http(s) only, checked above
        target,
        data=body(fmt, alert),
        headers={"Content-Type": "application/json", "User-Agent": "Kazami-alerts"},
        method="POST",
    )
    opener = urllib.request.build_opener(_NoRedirect)  # a redirect could lead past the address check
    try:
        with opener.open(request, timeout=timeout) as answer:
            return int(answer.status)
    except urllib.error.HTTPError as exc:
        raise DeliveryFailed(f"the webhook answered HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        reason = getattr(exc, "reason", exc)
        raise DeliveryFailed(f"the webhook could not be reached: {reason}") from None


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


@dataclass(frozen=True)
class Smtp:
    """The mail server alerts by email go through (the console's settings, never a channel's: its credentials
    stay out of the database and the audit log)."""

    host: str
    port: int = 25
    tls: str = ""  # "" (none), "starttls" or "ssl"
    user: str = ""
    password: str = ""
    sender: str = "kazami@localhost"


ADDRESS = re.compile(r"^[^@\s<>,;]+@[^@\s<>,;]+$")


def check_recipients(value: Any) -> list[str]:
    """An email channel's recipients (a list, or text separated by commas), checked; raises InvalidInput."""
    items = value.split(",") if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(a, str) for a in items):
        raise InvalidInput("to is a list of email addresses.")
    found = [a.strip() for a in items if a.strip()]
    bad = [a for a in found if not ADDRESS.match(a) or len(a) > 254]
    if bad or not found or len(found) > 50:
        raise InvalidInput(f"to must name 1 to 50 email addresses; not an address: {', '.join(bad)[:120]!r}.")
    return found


def mail(alert: dict[str, Any], to: list[str], sender: str) -> EmailMessage:
    state = str(alert.get("state", "firing")).upper()
    message = EmailMessage()
    message["Subject"] = f"[{state}] {alert.get('rule')} on {alert.get('cluster')}: {alert.get('text', '')}"[:250]
    message["From"] = sender
    message["To"] = ", ".join(to)
    lines = [
        str(alert.get("text", "")),
        "",
        f"Rule: {alert.get('rule')} ({alert.get('kind')}, {alert.get('severity')})",
        f"Cluster: {alert.get('cluster')}",
        f"Subject: {alert.get('subject')}",
        f"Since: {alert.get('since')}",
    ]
    if alert.get("link"):
        lines.append(f"Open it: {alert['link']}")
    message.set_content("\n".join(lines) + "\n")
    return message


def send_mail(smtp: Smtp, to: list[str], alert: dict[str, Any], timeout: float = TIMEOUT_S) -> None:
    """Send ``alert`` to ``to`` through ``smtp``. Raises DeliveryFailed."""
    if not smtp.host:
        raise DeliveryFailed("no mail server is set (KAZAMI_SMTP_HOST)")
    try:
        client: smtplib.SMTP
        if smtp.tls == "ssl":
            client = smtplib.SMTP_SSL(smtp.host, smtp.port, timeout=timeout, context=ssl.create_default_context())
        else:
            client = smtplib.SMTP(smtp.host, smtp.port, timeout=timeout)
        with client:
            if smtp.tls == "starttls":
                client.starttls(context=ssl.create_default_context())
            if smtp.user:
                client.login(smtp.user, smtp.password)
            client.send_message(mail(alert, to, smtp.sender))
    except (smtplib.SMTPException, OSError) as exc:
        raise DeliveryFailed(f"the mail server {smtp.host}:{smtp.port} did not take it: {exc}") from None
