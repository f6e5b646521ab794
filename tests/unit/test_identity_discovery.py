"""The provider's discovery document (console.identity.oidc.discovery), served by a real HTTP server on loopback:
its endpoints read, and a provider that cannot be used refused with the reason."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from console.identity import oidc

DOCUMENTS: dict[str, Any] = {}


class Handler(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        issuer = self.path.removesuffix("/.well-known/openid-configuration")
        body = DOCUMENTS.get(issuer)
        if body is None:
            self.send_response(404)
            self.end_headers()
            return
        data = json.dumps(body).encode() if not isinstance(body, bytes) else body
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def document(issuer: str, **changes: Any) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{issuer}/authorize",
        "token_endpoint": f"{issuer}/token",
        "userinfo_endpoint": f"{issuer}/userinfo",
        "jwks_uri": f"{issuer}/jwks",
        **changes,
    }


def test_the_endpoints_come_from_the_providers_discovery_document(server: str) -> None:
    issuer = f"{server}/good"
    DOCUMENTS["/good"] = document(issuer)
    found = oidc.discovery(issuer)
    assert found["token_endpoint"] == f"{issuer}/token"
    assert oidc.discovery(issuer + "/") is found  # kept, whatever the trailing slash


@pytest.mark.parametrize(
    ("path", "body", "reason"),
    [
        ("/no-jwks", "no-jwks", "without its endpoints"),
        ("/other", "other", "names another issuer"),
        ("/missing", None, "did not give its configuration"),
        ("/garbled", b"<html>", "did not give its configuration"),
    ],
)
def test_a_provider_that_cannot_be_used_is_refused_with_the_reason(
    server: str, path: str, body: Any, reason: str
) -> None:
    issuer = f"{server}{path}"
    if body == "no-jwks":
        DOCUMENTS[path] = document(issuer, jwks_uri="")
    elif body == "other":
        DOCUMENTS[path] = document("https://elsewhere.example")
    elif body is not None:
        DOCUMENTS[path] = body
    with pytest.raises(oidc.ProviderUnavailable, match=reason):
        oidc.discovery(issuer)


def test_an_unreachable_provider_is_refused_at_once() -> None:
    with pytest.raises(oidc.ProviderUnavailable, match="did not give its configuration"):
        oidc.discovery("http://127.0.0.1:1/nobody")
