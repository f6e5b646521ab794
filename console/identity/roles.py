"""What an identity provider's groups make of a user: the role map (``group=role,...``) and the strongest role a
user's groups give. Pure, read by the settings too (no Django models here)."""

from __future__ import annotations

from typing import Any

# Weakest first: console.access's roles (console.access.grants orders them alike; this module is read by the settings,
# before Django's models may be imported).
ROLE_ORDER = ("viewer", "operator", "admin")


def parse_role_map(text: str) -> dict[str, str]:
    """``group=role,group=role`` (``*`` for anyone the provider signs in) as a dict; raises ValueError naming a bad
    entry."""
    found: dict[str, str] = {}
    for entry in (e.strip() for e in text.split(",")):
        if not entry:
            continue
        group, sep, role = entry.rpartition("=")
        if not sep or not group.strip() or role.strip() not in ROLE_ORDER:
            raise ValueError(
                f"KAZAMI_OIDC_ROLE_MAP: {entry!r} is not group=role with a role of {', '.join(ROLE_ORDER)}."
            )
        found[group.strip()] = role.strip()
    return found


def groups_in(claims: dict[str, Any], claim: str) -> list[str]:
    """The group names in ``claims[claim]`` (a list, or one name)."""
    given = claims.get(claim)
    if isinstance(given, str):
        return [given]
    if isinstance(given, list):
        return [g for g in given if isinstance(g, str)]
    return []


def role_from_claims(claims: dict[str, Any], claim: str, role_map: dict[str, str]) -> str | None:
    """The strongest role ``role_map`` gives the groups in ``claims[claim]`` (a list, or one name); None for none."""
    groups = groups_in(claims, claim)
    roles = {role_map[g] for g in groups if g in role_map}
    if "*" in role_map:
        roles.add(role_map["*"])
    return max(roles, key=ROLE_ORDER.index) if roles else None
