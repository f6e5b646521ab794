"""Which pages may open the console's websockets: the ``Origin`` a browser sends must be the console's own (scheme,
host and port, as the browser reached it) or one of ``CSRF_TRUSTED_ORIGINS``, the rule Django's CSRF check applies
to a form's ``POST``. Any other socket is accepted and closed at once with :data:`CLOSE_ORIGIN`, before anything
reads its session."""

from __future__ import annotations

from typing import Any
from urllib.parse import SplitResult, urlsplit

from channels.generic.websocket import AsyncWebsocketConsumer
from django.conf import settings
from django.http.request import split_domain_port, validate_host
from django.utils.http import is_same_domain

from console.live.sessions import CLOSE_ORIGIN

DEFAULT_PORTS = {"http": 80, "https": 443}
# The scheme of the page that opens a socket, by the socket's own scheme.
PAGE_SCHEMES = {"ws": "http", "wss": "https"}

Origin = tuple[str, str, int]  # scheme, host, port


class SameOrigin:
    """ASGI middleware for websockets: passes a socket opened by a page of an allowed origin on to ``application``,
    and answers any other with :class:`OriginRefused`."""

    def __init__(self, application: Any) -> None:
        self.application = application

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> Any:
        if scope["type"] == "websocket" and not origin_allowed(scope):
            return await OriginRefused.as_asgi()(scope, receive, send)
        return await self.application(scope, receive, send)


class OriginRefused(AsyncWebsocketConsumer):  # type: ignore[misc]  # channels ships no types
    """Accepts, then closes with :data:`CLOSE_ORIGIN`: a refusal before the handshake would reach the page as a bare
    HTTP 403, without a reason it can read."""

    async def connect(self) -> None:
        await self.accept()
        await self.close(code=CLOSE_ORIGIN)


def origin_allowed(scope: dict[str, Any]) -> bool:
    """Whether the socket's ``Origin`` header names the console's own origin or a trusted one. Without an ``Origin``
    (no browser sends none) only when ``ALLOWED_HOSTS`` holds ``*``, as Channels' AllowedHostsOriginValidator did."""
    sent = _headers(scope, b"origin")
    if not sent:
        return "*" in _allowed_hosts()
    if len(sent) > 1:
        return False
    origin = sent[0]
    parsed = _origin(origin)
    if parsed is None:
        return False
    own = own_origin(scope)
    return (own is not None and parsed == own) or trusted(origin, parsed)


def own_origin(scope: dict[str, Any]) -> Origin | None:
    """The origin of the console's pages as this socket's browser reached them: the page scheme of the socket's
    scheme (ws: http, wss: https) and its ``Host`` header, or None when that host is not one of ``ALLOWED_HOSTS``."""
    hosts = _headers(scope, b"host")
    if len(hosts) != 1:
        return None
    domain, _ = split_domain_port(hosts[0])
    if not domain or not validate_host(domain, _allowed_hosts()):
        return None
    scheme = PAGE_SCHEMES.get(str(scope.get("scheme") or "ws"))
    return None if scheme is None else _origin(f"{scheme}://{hosts[0]}")


def trusted(origin: str, parsed: Origin) -> bool:
    """Whether ``CSRF_TRUSTED_ORIGINS`` lists the origin: as it is (default ports may be written or left out), or
    under a pattern such as ``https://*.example.com`` (any subdomain, with that scheme and the pattern's port)."""
    for pattern in settings.CSRF_TRUSTED_ORIGINS:
        if "*" not in pattern:
            if _origin(pattern) == parsed:
                return True
            continue
        split, sent = _split(pattern), _split(origin)
        if split and sent and split.scheme == sent.scheme and is_same_domain(sent.netloc, split.netloc[1:]):
            return True
    return False


def _origin(text: str) -> Origin | None:
    """``scheme://host[:port]`` as (scheme, host, port), the port filled in for http and https; None when it is
    not such an origin (a path, a user, an unknown scheme, ``null``)."""
    split = _split(text)
    if split is None or split.scheme not in DEFAULT_PORTS or not split.hostname:
        return None
    if split.path or split.query or split.fragment or split.username is not None:
        return None
    try:
        port = split.port
    except ValueError:
        return None
    return split.scheme, split.hostname, port if port is not None else DEFAULT_PORTS[split.scheme]


def _split(text: str) -> SplitResult | None:
    try:
        return urlsplit(text.strip().lower())
    except ValueError:
        return None


def _headers(scope: dict[str, Any], name: bytes) -> list[str]:
    return [value.decode("latin1") for key, value in scope.get("headers", []) if key.lower() == name]


def _allowed_hosts() -> list[str]:
    """``ALLOWED_HOSTS``, or what Django allows in debug mode when it is empty."""
    hosts = list(settings.ALLOWED_HOSTS)
    if settings.DEBUG and not hosts:
        hosts = [".localhost", "127.0.0.1", "[::1]"]
    return hosts
