"""The content-security policy every response carries: scripts, styles and connections come
from this console only, so a payload that slipped into a page as markup still could not run."""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse


def content_security_policy(host: str | None) -> str:
    provider = _provider_origin()
    directives = {
        "default-src": "'self'",
        "script-src": "'self'",
        "style-src": "'self'",
        "img-src": "'self' data:",
        "font-src": "'self'",
        # The live views' websockets go to this same host (older browsers do not count ws: as 'self').
        "connect-src": f"'self' ws://{host} wss://{host}" if host else "'self'",
        "object-src": "'none'",
        "base-uri": "'none'",
        # Logging out ends the identity provider's session too: the logout form's answer redirects there, and
        # browsers hold a form's redirects to form-action.
        "form-action": f"'self' {provider}".rstrip(),
        "frame-ancestors": "'none'",
    }
    return "; ".join(f"{name} {value}" for name, value in directives.items())


def _provider_origin() -> str:
    """The OpenID Connect provider's origin (scheme://host[:port]), or "" when sign-on is off."""
    issuer = settings.KAZAMI_OIDC_ISSUER
    if not issuer:
        return ""
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"


class ContentSecurityPolicyMiddleware:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if "Content-Security-Policy" not in response:
            host: str | None
            try:
                host = request.get_host()
            except Exception:  # noqa: BLE001 - a disallowed Host header: the policy without websockets
                host = None
            response["Content-Security-Policy"] = content_security_policy(host)
        return response
