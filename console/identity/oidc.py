"""OpenID Connect sign-in (authorization code with PKCE), through mozilla-django-oidc, with any standard provider.

The provider is named by its issuer alone (KAZAMI_OIDC_ISSUER): its endpoints come from its discovery document
(``<issuer>/.well-known/openid-configuration``), read when first needed and kept DISCOVERY_TTL_S. The ID token is
checked against the provider's keys (RS256, its JWKS), with a nonce.

Roles come from a claim (KAZAMI_OIDC_ROLES_CLAIM, ``groups`` by default: a list, or one name) through a map
(KAZAMI_OIDC_ROLE_MAP, ``kafka-admins=admin,kafka-ops=operator,*=viewer``; ``*`` for anyone the provider signs
in). The strongest mapped role is given at every sign-in, so the provider stays the source of truth; someone it
maps to no role is refused. A user signed in this way has no password here. A local account with a password is
never taken over by a provider's user of the same name: that sign-in is refused.

KAZAMI_OIDC_ONLY refuses local logins but those named in KAZAMI_OIDC_LOCAL_USERS (a break-glass admin).
Logging out also ends the provider's session where it offers an end-session endpoint.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

from django.conf import settings
from django.contrib import messages
from django.contrib.auth.models import User
from django.core.exceptions import SuspiciousOperation
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import reverse
from mozilla_django_oidc.auth import OIDCAuthenticationBackend
from mozilla_django_oidc.utils import import_from_settings
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from broker.errors import KazamiError
from console import access
from console.access import grants
from console.identity.roles import groups_in, parse_role_map, role_from_claims

log = logging.getLogger(__name__)

DISCOVERY_TTL_S = 600.0
DISCOVERY_TIMEOUT_S = 10.0
# mozilla-django-oidc's settings for the provider's endpoints, and the discovery document's names for them.
ENDPOINTS = {
    "OIDC_OP_AUTHORIZATION_ENDPOINT": "authorization_endpoint",
    "OIDC_OP_TOKEN_ENDPOINT": "token_endpoint",
    "OIDC_OP_USER_ENDPOINT": "userinfo_endpoint",
    "OIDC_OP_JWKS_ENDPOINT": "jwks_uri",
}


class ProviderUnavailable(KazamiError):
    """The identity provider's discovery document could not be read; the message says why."""


def enabled() -> bool:
    return bool(settings.KAZAMI_OIDC_ISSUER)


_lock = threading.Lock()
_discovered: dict[str, tuple[float, dict[str, Any]]] = {}


def discovery(issuer: str | None = None) -> dict[str, Any]:
    """The provider's discovery document (kept DISCOVERY_TTL_S). Raises ProviderUnavailable."""
    issuer = (issuer or settings.KAZAMI_OIDC_ISSUER).rstrip("/")
    with _lock:
        kept = _discovered.get(issuer)
        if kept is not None and kept[0] > time.monotonic():
            return kept[1]
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        with urllib.request.urlopen(url, timeout=DISCOVERY_TIMEOUT_S) as answer:  # noqa: S310 - the configured issuer
            document = json.loads(answer.read())
    except (OSError, ValueError) as exc:
        raise ProviderUnavailable(f"The identity provider at {issuer} did not give its configuration: {exc}") from None
    if not isinstance(document, dict) or any(not document.get(name) for name in ENDPOINTS.values()):
        raise ProviderUnavailable(f"The identity provider at {issuer} gave a configuration without its endpoints.")
    if document.get("issuer", "").rstrip("/") != issuer:
        raise ProviderUnavailable(
            f"The identity provider at {issuer} names another issuer: {document.get('issuer')!r}."
        )
    with _lock:
        _discovered[issuer] = (time.monotonic() + DISCOVERY_TTL_S, document)
    return document


def discovered_setting(attr: str, *default: Any) -> Any:
    """A mozilla-django-oidc setting: the provider's endpoints from its discovery document, the rest as set."""
    if attr in ENDPOINTS:
        return discovery()[ENDPOINTS[attr]]
    return import_from_settings(attr, *default)


class Backend(OIDCAuthenticationBackend):
    """Users from the provider's claims: named by KAZAMI_OIDC_USERNAME_CLAIM, their role from the role map."""

    get_settings = staticmethod(discovered_setting)

    def verify_claims(self, claims: dict[str, Any]) -> bool:
        if not self._username(claims):
            log.warning("oidc: the provider's claims hold no %s", settings.KAZAMI_OIDC_USERNAME_CLAIM)
            return False
        return True

    def filter_users_by_claims(self, claims: dict[str, Any]) -> Any:
        users = self.UserModel.objects.filter(username=self._username(claims))
        for user in users:
            if user.has_usable_password():
                raise SuspiciousOperation(f"{user.username} is a local account: the provider may not sign in as it")
        return users

    def create_user(self, claims: dict[str, Any]) -> User | None:
        role, teams = self._role(claims), self._teams(claims)
        if role is None and not grants.team_grants_exist(teams):
            self._refused(claims)
            return None
        user: User = self.UserModel.objects.create_user(self._username(claims), email=claims.get("email") or "")
        access.signed_in_as(user, role, teams)
        return user

    def update_user(self, user: User, claims: dict[str, Any]) -> User | None:
        if not access.signed_in_as(user, self._role(claims), self._teams(claims)):
            self._refused(claims)
            return None
        if claims.get("email") and user.email != claims["email"]:
            user.email = claims["email"]
            user.save(update_fields=["email"])
        return user

    def _username(self, claims: dict[str, Any]) -> str:
        value = claims.get(settings.KAZAMI_OIDC_USERNAME_CLAIM)
        return str(value).strip()[:150] if value else ""

    def _role(self, claims: dict[str, Any]) -> str | None:
        return role_from_claims(claims, settings.KAZAMI_OIDC_ROLES_CLAIM, parse_role_map(settings.KAZAMI_OIDC_ROLE_MAP))

    def _teams(self, claims: dict[str, Any]) -> list[str]:
        """The groups in the roles claim: the user's teams, whose grants it holds."""
        return groups_in(claims, settings.KAZAMI_OIDC_ROLES_CLAIM)

    def _refused(self, claims: dict[str, Any]) -> None:
        log.info("oidc: %s signed in with no group the role map or a grant names: refused", self._username(claims))


class SignIn(OIDCAuthenticationRequestView):
    """The redirect to the provider (with the PKCE challenge and a nonce); its discovery read first."""

    get_settings = staticmethod(discovered_setting)

    def __init__(self, **kwargs: Any) -> None:
        self._unavailable: str | None = None
        try:
            super().__init__(**kwargs)
        except ProviderUnavailable as exc:
            self._unavailable = str(exc)

    def get(self, request: HttpRequest) -> HttpResponse:
        if self._unavailable is not None:
            messages.error(request, f"Single sign-on is not available: {self._unavailable}")
            return redirect(settings.LOGIN_URL)
        response: HttpResponse = super().get(request)
        return response


class Callback(OIDCAuthenticationCallbackView):
    """The provider's answer: the user signed in, or back to the login page saying why not."""

    get_settings = staticmethod(discovered_setting)

    @property
    def failure_url(self) -> str:
        return f"{settings.LOGIN_URL}?sso=refused"

    def get(self, request: HttpRequest) -> HttpResponse:
        if request.GET.get("error"):
            messages.error(
                request,
                f"The identity provider refused: {request.GET.get('error_description') or request.GET['error']}",
            )
            return redirect(settings.LOGIN_URL)
        try:
            response: HttpResponse = super().get(request)
        except ProviderUnavailable as exc:
            messages.error(request, f"Single sign-on is not available: {exc}")
            return redirect(settings.LOGIN_URL)
        return response


def logout_url(request: HttpRequest) -> str:
    """Where logging out goes: the provider's end-session endpoint when it has one (back to the login page after),
    else the login page."""
    back = request.build_absolute_uri(reverse("login"))
    try:
        end = discovery().get("end_session_endpoint")
    except ProviderUnavailable:
        end = None
    token = request.session.get("oidc_id_token")
    if not end or not token:
        return back
    query = urllib.parse.urlencode({"id_token_hint": token, "post_logout_redirect_uri": back})
    return f"{end}{'&' if '?' in end else '?'}{query}"


def local_login_allowed(username: str) -> bool:
    """Whether a local account may log in with its password (KAZAMI_OIDC_ONLY: only the break-glass names)."""
    if not (enabled() and settings.KAZAMI_OIDC_ONLY):
        return True
    return username.strip() in settings.KAZAMI_OIDC_LOCAL_USERS
