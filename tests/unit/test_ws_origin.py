"""Which origins may open a websocket (console.live.origin) and which spellings of a user name count as one at
the login (console.views.access.login_name). The integration tests drive both through a real console
(tests/integration/test_login_limits.py); these go through the corners a browser seldom sends."""

from __future__ import annotations

from typing import Any

import pytest

from console.live.origin import origin_allowed
from console.views.access import login_name


def scope(origin: str | None, host: str = "127.0.0.1:8888", scheme: str | None = None, **extra: Any) -> dict[str, Any]:
    headers = [(b"host", host.encode())]
    if origin is not None:
        headers.append((b"origin", origin.encode()))
    made: dict[str, Any] = {"type": "websocket", "headers": headers, **extra}
    if scheme is not None:
        made["scheme"] = scheme
    return made


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://127.0.0.1:8888", "127.0.0.1:8888", None),  # ASGI's default scheme is ws
        ("http://127.0.0.1:8888", "127.0.0.1:8888", "ws"),
        ("HTTP://LOCALHOST:8888", "localhost:8888", "ws"),
        ("http://localhost", "localhost:80", "ws"),  # default ports written or left out
        ("https://localhost", "localhost", "wss"),
        ("http://[::1]:8888", "[::1]:8888", "ws"),
    ],
)
def test_the_consoles_own_origin_is_allowed(origin: str, host: str, scheme: str | None) -> None:
    assert origin_allowed(scope(origin, host, scheme))


@pytest.mark.parametrize(
    ("origin", "host", "scheme"),
    [
        ("http://127.0.0.1:9999", "127.0.0.1:8888", "ws"),  # another port of the same host
        ("https://127.0.0.1:8888", "127.0.0.1:8888", "ws"),  # another scheme
        ("http://127.0.0.1:8888", "127.0.0.1:8888", "wss"),
        ("http://localhost:8888", "127.0.0.1:8888", "ws"),  # another host, allowed as it is
        ("http://evil.example:8888", "evil.example:8888", "ws"),  # same origin, but not an allowed host (rebinding)
        ("null", "127.0.0.1:8888", "ws"),
        ("http://127.0.0.1:8888/page", "127.0.0.1:8888", "ws"),
        ("http://u@127.0.0.1:8888", "127.0.0.1:8888", "ws"),
        ("ftp://127.0.0.1:8888", "127.0.0.1:8888", "ws"),
        ("http://127.0.0.1:88x8", "127.0.0.1:88x8", "ws"),
    ],
)
def test_other_origins_are_refused(origin: str, host: str, scheme: str) -> None:
    assert not origin_allowed(scope(origin, host, scheme))


def test_a_socket_without_an_origin_is_refused_unless_every_host_is_allowed(settings: Any) -> None:
    assert not origin_allowed(scope(None))
    settings.ALLOWED_HOSTS = ["*"]
    assert origin_allowed(scope(None))
    assert not origin_allowed(scope("http://127.0.0.1:9999"))  # every host, but still its own port


def test_two_origins_are_refused() -> None:
    both = scope("http://127.0.0.1:8888")
    both["headers"].append((b"origin", b"http://127.0.0.1:8888"))
    assert not origin_allowed(both)


def test_trusted_origins_are_allowed_with_their_scheme_and_port(settings: Any) -> None:
    settings.CSRF_TRUSTED_ORIGINS = ["https://kafka.example.com", "https://*.corp.example:8443"]
    assert origin_allowed(scope("https://kafka.example.com"))
    assert origin_allowed(scope("https://kafka.example.com:443"))
    assert origin_allowed(scope("https://a.corp.example:8443"))
    assert origin_allowed(scope("https://corp.example:8443"))
    assert not origin_allowed(scope("http://kafka.example.com"))
    assert not origin_allowed(scope("https://kafka.example.com:8443"))
    assert not origin_allowed(scope("https://a.corp.example"))
    assert not origin_allowed(scope("http://a.corp.example:8443"))
    assert not origin_allowed(scope("https://acorp.example:8443"))


def test_spellings_django_logs_in_as_one_user_are_one_name() -> None:
    spellings = ["sec-brute", "ｓec-brute", "sec－brute", "𝐬ec-brute", "SEC-BRUTE", "  Sec-Brute "]
    assert {login_name(s) for s in spellings} == {"sec-brute"}
    assert login_name("straße") == login_name("STRASSE")
    assert login_name("sec-brute2") != login_name("sec-brute")
