"""What a principal may do, decided as Kafka's standard authorizers decide it from the ACLs (pure), and the
brokers' settings that take part.

``decide`` evaluates a request as ``AclAuthorizer`` (ZooKeeper mode) and ``StandardAuthorizer`` (KRaft) both
do: a super user may do everything; otherwise the rules that match the resource (a literal rule on its name,
a literal rule on ``*``, a prefixed rule on a prefix of its name) and the principal (itself or ``User:*``)
and host (itself or ``*``) are taken: a DENY for the operation (or ALL) wins, then an ALLOW for the operation,
ALL, or one that implies it (READ, WRITE, DELETE or ALTER imply DESCRIBE; ALTER_CONFIGS implies
DESCRIBE_CONFIGS); when no rule at all exists for the resource, ``allow.everyone.if.no.acl.found`` decides;
else it is denied. Kafka hides the authorizer's own settings (``super.users``, ...) from DescribeConfigs,
so ``get_authorizer_settings`` says which it could not read.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafka import KafkaAdminClient

from broker.client.connection import ClusterConnection
from broker.security.acls import (
    IMPLIED_BY,
    OPERATIONS,
    RESOURCE_TYPES,
    WILDCARD,
    WILDCARD_PRINCIPAL,
    AclBinding,
    pattern_matches,
)


@dataclass(frozen=True)
class Decision:
    """Whether a request is allowed, why, and the rule that decided it (None for a super user or the
    no-ACL default)."""

    allowed: bool
    reason: str
    rule: AclBinding | None = None

    def as_dict(self) -> dict[str, Any]:
        return {"allowed": self.allowed, "reason": self.reason, "rule": self.rule.as_dict() if self.rule else None}


@dataclass(frozen=True)
class AuthorizerSettings:
    """What besides the ACLs decides: the super users and ``allow.everyone.if.no.acl.found``."""

    super_users: tuple[str, ...] = ()
    allow_if_no_acl: bool = False
    known: bool = True  # False when they could not be read (the page says so)
    # Those Kafka did not show: the authorizer's own settings are not KafkaConfig's, so DescribeConfigs marks
    # them sensitive and leaves their value out (super.users always, once set in the file).
    hidden: tuple[str, ...] = ()


def _principal_matches(rule: AclBinding, principal: str) -> bool:
    return rule.principal in (principal, WILDCARD_PRINCIPAL)


def _host_matches(rule: AclBinding, host: str | None) -> bool:
    return rule.host == WILDCARD or (host is not None and rule.host == host)


def decide(
    bindings: Iterable[AclBinding],
    principal: str,
    operation: str,
    resource_type: str,
    resource_name: str,
    host: str | None = None,
    settings: AuthorizerSettings | None = None,
) -> Decision:
    """May ``principal`` connecting from ``host`` (None: a host no host-specific rule names) do ``operation``
    on the resource? Decided as Kafka's standard authorizers decide (see the module's docstring)."""
    settings = settings or AuthorizerSettings()
    if principal in settings.super_users:
        return Decision(True, f"{principal} is a super user")
    on_resource = [b for b in bindings if b.resource_type == resource_type and pattern_matches(b, resource_name)]
    mine = [b for b in on_resource if _principal_matches(b, principal) and _host_matches(b, host)]
    for rule in sorted(mine):
        if rule.permission == "DENY" and rule.operation in (operation, "ALL"):
            return Decision(False, f"denied by {rule.label()}", rule)
    allowing = (operation, "ALL", *IMPLIED_BY.get(operation, ()))
    for rule in sorted(mine, key=lambda r: (allowing.index(r.operation) if r.operation in allowing else 99, r)):
        if rule.permission == "ALLOW" and rule.operation in allowing:
            return Decision(True, f"allowed by {rule.label()}", rule)
    if not on_resource:
        if settings.allow_if_no_acl:
            return Decision(True, "no ACL on this resource, and allow.everyone.if.no.acl.found is true")
        return Decision(False, "no ACL on this resource (allow.everyone.if.no.acl.found is false)")
    return Decision(False, f"no rule allows {principal} to {operation}")


@dataclass(frozen=True)
class ResourceRights:
    """What a principal may do on one resource pattern it has rules for: each operation's decision."""

    resource_type: str
    resource_name: str
    pattern_type: str
    label: str
    decisions: dict[str, Decision] = field(default_factory=dict)

    @property
    def allowed(self) -> list[str]:
        return [op for op, d in self.decisions.items() if d.allowed]

    @property
    def denied(self) -> list[str]:
        return [op for op, d in self.decisions.items() if not d.allowed]

    def as_dict(self) -> dict[str, Any]:
        return {
            "resource_type": self.resource_type,
            "resource_name": self.resource_name,
            "pattern_type": self.pattern_type,
            "allowed": self.allowed,
            "denied": self.denied,
            "decisions": {op: d.as_dict() for op, d in self.decisions.items()},
        }


# A name no literal or prefixed rule covers, standing for "a resource with no rule of its own" under a wildcard.
_UNNAMED = "\x00"


def principal_rights(
    bindings: Sequence[AclBinding], principal: str, host: str | None = None, settings: AuthorizerSettings | None = None
) -> list[ResourceRights]:
    """For every resource pattern with a rule naming ``principal`` or ``User:*``, the decision on each of its
    type's operations, made against all of ``bindings`` (a deny elsewhere that covers the pattern counts). A
    prefixed pattern is decided for a name that is exactly its prefix, a wildcard for a name without rules
    of its own: narrower rules may decide otherwise for some names (check one with ``decide``)."""
    patterns = sorted(
        {(b.resource_type, b.resource_name, b.pattern_type) for b in bindings if _principal_matches(b, principal)},
        key=lambda p: (RESOURCE_TYPES.index(p[0]) if p[0] in RESOURCE_TYPES else 99, p[2], p[1]),
    )
    found = []
    for kind, name, pattern in patterns:
        if kind not in OPERATIONS:
            continue
        example = AclBinding(kind, name, pattern, principal, WILDCARD, "ALL", "ALLOW")
        asked = _UNNAMED if example.is_wildcard else name
        decisions = {op: decide(bindings, principal, op, kind, asked, host, settings) for op in OPERATIONS[kind]}
        found.append(ResourceRights(kind, name, pattern, example.resource_label, decisions))
    return found


def settings_from_configs(raw: Mapping[str, Mapping[str, Any]]) -> AuthorizerSettings:
    """AuthorizerSettings from describe_configs' entries of one broker (pure): a value Kafka hides (sensitive)
    or leaves out is named in ``hidden``; allow.everyone.if.no.acl.found then counts as its default, false."""
    hidden = []
    values: dict[str, str] = {}
    for key in ("super.users", "allow.everyone.if.no.acl.found"):
        entry = raw.get(key) or {}
        if entry.get("value") is None and (entry.get("is_sensitive") or not entry):
            if entry:
                hidden.append(key)
            continue
        values[key] = str(entry.get("value") or "")
    supers = tuple(s.strip() for s in values.get("super.users", "").split(";") if s.strip())
    allow = values.get("allow.everyone.if.no.acl.found", "false").strip().lower() == "true"
    return AuthorizerSettings(supers, allow, hidden=tuple(hidden))


def get_authorizer_settings(conn: ClusterConnection) -> AuthorizerSettings:
    """``super.users`` and ``allow.everyone.if.no.acl.found`` of one live broker (DescribeConfigs), as far as
    Kafka shows them; unknown (``known`` False) when they cannot be read."""
    from kafka.admin import ConfigResource, ConfigResourceType

    from broker.client.connection import live_brokers

    def ask(admin: KafkaAdminClient) -> AuthorizerSettings:
        broker = min(b["broker_id"] for b in live_brokers(admin, conn))
        resource = ConfigResource(
            ConfigResourceType.BROKER, str(broker), configs=["super.users", "allow.everyone.if.no.acl.found"]
        )
        answer = admin.describe_configs([resource], config_filter="all")
        return settings_from_configs(answer.get("broker", {}).get(str(broker), {}))

    try:
        return conn.call(ask, "authorizer settings", requests=2, retry=True)
    except Exception:  # noqa: BLE001 - a page without them still shows the ACLs, and says so
        return AuthorizerSettings(known=False)
