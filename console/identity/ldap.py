"""LDAP sign-in through the login form (django-python3-ldap, on the pure-Python ldap3): a user binds as
``<KAZAMI_LDAP_USER_ATTRIBUTE>=<name>,<KAZAMI_LDAP_USER_BASE>`` with their own password, over StartTLS or ldaps://
checked against KAZAMI_LDAP_CA_FILE. Their role comes from the groups (groupOfNames or groupOfUniqueNames under
KAZAMI_LDAP_GROUP_BASE) that name them as a member, through KAZAMI_LDAP_ROLE_MAP (``cn=role``, as for single
sign-on), given again at every sign-in.

Refused: an empty password (an LDAP server takes it as an anonymous bind), a user whose groups map to no role, a
user an admin disabled here (Users page), and any name that is a local account's (one with a password): the
directory cannot sign in as the local admin; local accounts are checked by Django's own backend after this one.
"""

from __future__ import annotations

import logging
from typing import Any

import ldap3
from django.conf import settings
from django.contrib.auth.models import User
from django.http import HttpRequest
from django_python3_ldap.auth import LDAPBackend
from ldap3.utils.conv import escape_filter_chars
from ldap3.utils.dn import escape_rdn

from console import access
from console.identity.roles import parse_role_map, role_from_claims

log = logging.getLogger(__name__)


def enabled() -> bool:
    return bool(settings.KAZAMI_LDAP_URL)


def bind_dn(fields: dict[str, Any]) -> str:
    """The DN a user binds as (django-python3-ldap's LDAP_AUTH_FORMAT_USERNAME)."""
    name = str(fields.get("username", ""))
    return f"{settings.KAZAMI_LDAP_USER_ATTRIBUTE}={escape_rdn(name)},{settings.KAZAMI_LDAP_USER_BASE}"


def group_names(connection: ldap3.Connection, dn: str) -> list[str]:
    """The cn of every group under KAZAMI_LDAP_GROUP_BASE that has ``dn`` as a member."""
    member = escape_filter_chars(dn)
    connection.search(
        search_base=settings.KAZAMI_LDAP_GROUP_BASE,
        search_filter=f"(|(&(objectClass=groupOfNames)(member={member}))"
        f"(&(objectClass=groupOfUniqueNames)(uniqueMember={member})))",
        search_scope=ldap3.SUBTREE,
        attributes=["cn"],
    )
    names: list[str] = []
    for entry in connection.response or []:
        cn = (entry.get("attributes") or {}).get("cn")
        names += [cn] if isinstance(cn, str) else [str(c) for c in cn or []]
    return names


def sync_roles(user: User, attributes: dict[str, Any], *, connection: ldap3.Connection, dn: str) -> None:
    """django-python3-ldap's LDAP_AUTH_SYNC_USER_RELATIONS: the role the user's groups map to (or none), and the
    groups as the user's teams, whose grants it holds."""
    groups = group_names(connection, dn)
    role = role_from_claims({"groups": groups}, "groups", parse_role_map(settings.KAZAMI_LDAP_ROLE_MAP))
    if not access.signed_in_as(user, role, groups):
        log.info(
            "ldap: %s is in no group the role map or a grant names (%s): refused", user.username, ", ".join(groups)
        )


class Backend(LDAPBackend):
    """The directory's users, never a local account; refused without a role or when disabled here."""

    def authenticate(
        self, request: HttpRequest | None, username: str | None = None, password: str | None = None, **kwargs: Any
    ) -> User | None:
        if not username or not password:
            return None
        name = username.strip()
        known = User.objects.filter(username=name).first()
        if known is not None and (known.has_usable_password() or not known.is_active):
            return None  # a local account (Django's backend checks it), or disabled by an admin
        user: User | None = super().authenticate(request, username=name, password=password)
        if user is None or not user.is_active or not access.scope_of(user).anything:
            return None
        return user
