"""ACLs: list, create and delete them, and decide what a principal may do the way Kafka's authorizer does.

The pure part comes first: an ACL binding is a principal, a host, an operation, a permission and a resource
pattern (type, name, LITERAL or PREFIXED); a filter has the same fields with "any" allowed, and a MATCH pattern
that finds every rule that applies to one resource name (literal, wildcard ``*`` and prefixes of it). Input is
checked before anything is sent: a principal with a typo'd type prefix (``user:alice``, ``Usr:alice``), an
operation that the resource type does not have (WRITE on a group), a cluster resource not named
``kafka-cluster``, a host that is not ``*`` or an IP address.

What a principal may do with these ACLs, decided as Kafka's authorizers decide, is broker/security/authorizer.py.

The requests (DescribeAcls, CreateAcls, DeleteAcls) go through kafka-python's protocol layer so Kafka's own
error messages reach the user; a cluster without an authorizer answers SECURITY_DISABLED, which becomes
NoAuthorizer. Deleting sends one exact filter per binding that was previewed, so a deletion removes exactly
what the preview showed, whatever was added in between.
"""

from __future__ import annotations

import csv
import difflib
import io
import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.protocol.admin import CreateAclsRequest, DeleteAclsRequest, DescribeAclsRequest

from broker.client.connection import ClusterConnection, send_request
from broker.errors import InvalidInput, KafkaRefused, NotSupported

# Kafka's codes (org.apache.kafka.common.resource / acl); ANY and MATCH only in filters.
RESOURCE_CODES = {
    "ANY": 1,
    "TOPIC": 2,
    "GROUP": 3,
    "CLUSTER": 4,
    "TRANSACTIONAL_ID": 5,
    "DELEGATION_TOKEN": 6,
    "USER": 7,
}
OPERATION_CODES = {
    "ANY": 1,
    "ALL": 2,
    "READ": 3,
    "WRITE": 4,
    "CREATE": 5,
    "DELETE": 6,
    "ALTER": 7,
    "DESCRIBE": 8,
    "CLUSTER_ACTION": 9,
    "DESCRIBE_CONFIGS": 10,
    "ALTER_CONFIGS": 11,
    "IDEMPOTENT_WRITE": 12,
    "CREATE_TOKENS": 13,
    "DESCRIBE_TOKENS": 14,
}
PERMISSION_CODES = {"ANY": 1, "DENY": 2, "ALLOW": 3}
PATTERN_CODES = {"ANY": 1, "MATCH": 2, "LITERAL": 3, "PREFIXED": 4}
_NAMES = {
    "resource": {v: k for k, v in RESOURCE_CODES.items()},
    "operation": {v: k for k, v in OPERATION_CODES.items()},
    "permission": {v: k for k, v in PERMISSION_CODES.items()},
    "pattern": {v: k for k, v in PATTERN_CODES.items()},
}

# The operations each resource type has (Kafka's AclEntry.supportedOperations); ALL on any of them.
OPERATIONS: dict[str, tuple[str, ...]] = {
    "TOPIC": ("READ", "WRITE", "CREATE", "DESCRIBE", "DELETE", "ALTER", "DESCRIBE_CONFIGS", "ALTER_CONFIGS"),
    "GROUP": ("READ", "DESCRIBE", "DELETE"),
    "CLUSTER": (
        "CREATE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
        "ALTER",
        "DESCRIBE",
    ),
    "TRANSACTIONAL_ID": ("DESCRIBE", "WRITE"),
    "DELEGATION_TOKEN": ("DESCRIBE",),
    "USER": ("CREATE_TOKENS", "DESCRIBE_TOKENS"),
}
RESOURCE_TYPES = tuple(OPERATIONS)
# Every operation an ACL can name, the everyday ones first.
ALL_OPERATIONS = (
    "READ",
    "WRITE",
    "DESCRIBE",
    "CREATE",
    "DELETE",
    "ALTER",
    "DESCRIBE_CONFIGS",
    "ALTER_CONFIGS",
    "CLUSTER_ACTION",
    "IDEMPOTENT_WRITE",
    "CREATE_TOKENS",
    "DESCRIBE_TOKENS",
    "ALL",
)
PATTERN_TYPES = ("LITERAL", "PREFIXED")
PERMISSIONS = ("ALLOW", "DENY")
CLUSTER_NAME = "kafka-cluster"
WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"
PRINCIPAL_TYPES = ("User",)
# An allowed operation that also allows another (Kafka's implied operations).
IMPLIED_BY = {"DESCRIBE": ("READ", "WRITE", "DELETE", "ALTER"), "DESCRIBE_CONFIGS": ("ALTER_CONFIGS",)}
CSV_COLUMNS = ("principal", "host", "operation", "permission", "resource_type", "resource_name", "pattern_type")


class NoAuthorizer(NotSupported):
    """The cluster has no authorizer (Kafka answered SECURITY_DISABLED): no ACLs to list or change."""


NO_AUTHORIZER = (
    "This cluster has no authorizer: Kafka answers SECURITY_DISABLED, so there are no ACLs to show or change and "
    "every authenticated client may do everything. Set authorizer.class.name on its brokers (and controllers) to "
    "use ACLs."
)


@dataclass(frozen=True, order=True)
class AclBinding:
    """One ACL: ``principal`` may (ALLOW) or may not (DENY) do ``operation`` from ``host`` on the resources
    ``resource_type`` + ``resource_name`` + ``pattern_type`` (LITERAL, or PREFIXED: every name starting with it)."""

    resource_type: str
    resource_name: str
    pattern_type: str
    principal: str
    host: str
    operation: str
    permission: str

    @property
    def is_wildcard(self) -> bool:
        return self.pattern_type == "LITERAL" and self.resource_name == WILDCARD

    @property
    def resource_label(self) -> str:
        """``topic orders``, ``topics starting with app-``, ``every topic``, ``the cluster``."""
        kind = self.resource_type.lower().replace("_", " ")
        if self.resource_type == "CLUSTER":
            return "the cluster"
        if self.is_wildcard:
            return f"every {kind}"
        if self.pattern_type == "PREFIXED":
            return f"{kind}s starting with {self.resource_name}"
        return f"{kind} {self.resource_name}"

    def as_dict(self) -> dict[str, str]:
        return asdict(self)

    @property
    def encoded(self) -> str:
        """The binding as JSON (a form's hidden field carries it back)."""
        return json.dumps(self.as_dict(), sort_keys=True)

    def label(self) -> str:
        where = "" if self.host == WILDCARD else f" from {self.host}"
        return f"{self.permission} {self.principal} {self.operation} on {self.resource_label}{where}"


@dataclass(frozen=True)
class AclFilter:
    """Which bindings to list or delete; None and ANY match everything. ``pattern_type`` MATCH with a name
    finds every rule that applies to a resource of that name (literal, wildcard and prefixes)."""

    principal: str | None = None
    host: str | None = None
    operation: str = "ANY"
    permission: str = "ANY"
    resource_type: str = "ANY"
    resource_name: str | None = None
    pattern_type: str = "ANY"

    @property
    def is_everything(self) -> bool:
        return self == AclFilter()

    def matches(self, b: AclBinding) -> bool:
        """As Kafka matches a binding against a filter (DescribeAcls and DeleteAcls)."""
        if self.principal is not None and self.principal != b.principal:
            return False
        if self.host is not None and self.host != b.host:
            return False
        if self.operation != "ANY" and self.operation != b.operation:
            return False
        if self.permission != "ANY" and self.permission != b.permission:
            return False
        if self.resource_type != "ANY" and self.resource_type != b.resource_type:
            return False
        if self.pattern_type == "MATCH":
            if self.resource_name is None:
                return True
            return pattern_matches(b, self.resource_name)
        if self.pattern_type != "ANY" and self.pattern_type != b.pattern_type:
            return False
        return self.resource_name is None or self.resource_name == b.resource_name

    def query(self) -> dict[str, str]:
        """The filter as the list page's query parameters (only those set)."""
        found = {
            "principal": self.principal or "",
            "host": self.host or "",
            "operation": "" if self.operation == "ANY" else self.operation,
            "permission": "" if self.permission == "ANY" else self.permission,
            "resource_type": "" if self.resource_type == "ANY" else self.resource_type,
            "resource_name": self.resource_name or "",
            "pattern_type": "" if self.pattern_type == "ANY" else self.pattern_type,
        }
        return {k: v for k, v in found.items() if v}

    def as_dict(self) -> dict[str, str | None]:
        return asdict(self)


def exact_filter(b: AclBinding) -> AclFilter:
    """The filter that matches ``b`` and nothing else."""
    return AclFilter(b.principal, b.host, b.operation, b.permission, b.resource_type, b.resource_name, b.pattern_type)


def pattern_matches(b: AclBinding, name: str) -> bool:
    """Does ``b``'s resource pattern cover a resource called ``name`` (literal, wildcard or prefix)?"""
    if b.pattern_type == "LITERAL":
        return b.resource_name in (name, WILDCARD)
    if b.pattern_type == "PREFIXED":
        return name.startswith(b.resource_name)
    return False


# ---------------------------------------------------------------- checks (pure)


def parse_principal(raw: Any, wildcard: bool = True) -> str:
    """``User:alice`` from ``raw``; ``User:*`` (every user) when ``wildcard``. Raises InvalidInput naming the
    mistake: no type, a type Kafka does not know (``user:``, ``Usr:``: it is case-sensitive), no name."""
    text = str(raw or "").strip()
    if not text:
        raise InvalidInput("Give a principal, like User:alice.")
    if ":" not in text:
        raise InvalidInput(f"A principal is a type and a name: User:{text}, not {text!r}.")
    kind, name = text.split(":", 1)
    if kind not in PRINCIPAL_TYPES:
        close = difflib.get_close_matches(kind.lower(), [t.lower() for t in PRINCIPAL_TYPES], n=1, cutoff=0.5)
        hint = f" Did you mean User:{name}?" if close or kind.lower().startswith("u") else ""
        raise InvalidInput(
            f"Unknown principal type {kind!r} in {text!r}: Kafka's principals are User:<name> "
            f"(the type is case-sensitive).{hint}"
        )
    name = name.strip()
    if not name:
        raise InvalidInput(f"The principal {text!r} has no name: User:<name>.")
    if name == WILDCARD and not wildcard:
        raise InvalidInput("User:* (every user) is not allowed here: name one user.")
    return f"{kind}:{name}"


def check_choice(raw: Any, allowed: Sequence[str], what: str) -> str:
    """``raw`` as one of ``allowed`` (case and ``-``/space for ``_`` forgiven); InvalidInput naming them."""
    value = str(raw or "").strip().upper().replace("-", "_").replace(" ", "_")
    if value not in allowed:
        raise InvalidInput(f"Unknown {what} {raw!r}: use {', '.join(allowed)}.")
    return value


def check_operation(resource_type: str, operation: Any) -> str:
    """``operation`` if the resource type has it (or it is ALL); else InvalidInput listing those it has."""
    op = str(operation or "").strip().upper().replace("-", "_").replace(" ", "_")
    valid = OPERATIONS[resource_type]
    if op == "ALL" or op in valid:
        return op
    kind = resource_type.lower().replace("_", " ")
    if op in OPERATION_CODES and op != "ANY":
        raise InvalidInput(f"A {kind} has no {op} operation: use {', '.join(valid)} or ALL.")
    raise InvalidInput(f"Unknown operation {operation!r} for a {kind}: use {', '.join(valid)} or ALL.")


def check_host(raw: Any) -> str:
    """``*`` (any host) or an IP address: Kafka compares the client's address, not a name."""
    host = str(raw or "").strip() or WILDCARD
    if host == WILDCARD:
        return host
    try:
        return str(ipaddress.ip_address(host))
    except ValueError:
        raise InvalidInput(
            f"The host must be * or an IP address (Kafka compares the client's address), not {raw!r}."
        ) from None


def parse_binding(raw: Mapping[str, Any]) -> AclBinding:
    """A binding from its fields (``principal``, ``host``, ``operation``, ``permission``, ``resource_type``,
    ``resource_name``, ``pattern_type``), every one checked. Raises InvalidInput."""
    resource_type = check_choice(raw.get("resource_type"), RESOURCE_TYPES, "resource type")
    pattern_type = check_choice(raw.get("pattern_type") or "LITERAL", PATTERN_TYPES, "pattern type")
    name = str(raw.get("resource_name") or "").strip()
    if resource_type == "CLUSTER":
        name = name or CLUSTER_NAME
        if name != CLUSTER_NAME or pattern_type != "LITERAL":
            raise InvalidInput(f"The cluster resource is always the literal {CLUSTER_NAME}, not {name!r}.")
    if not name:
        raise InvalidInput(f"Name the {resource_type.lower().replace('_', ' ')} (or * for every one).")
    if pattern_type == "PREFIXED" and name == WILDCARD:
        raise InvalidInput("A prefixed pattern of * means nothing: use the literal * for every resource.")
    return AclBinding(
        resource_type=resource_type,
        resource_name=name,
        pattern_type=pattern_type,
        principal=parse_principal(raw.get("principal")),
        host=check_host(raw.get("host")),
        operation=check_operation(resource_type, raw.get("operation")),
        permission=check_choice(raw.get("permission") or "ALLOW", PERMISSIONS, "permission"),
    )


def parse_filter(raw: Mapping[str, Any]) -> AclFilter:
    """A filter from query parameters; empty fields match anything. Raises InvalidInput."""

    def text(key: str) -> str | None:
        value = str(raw.get(key) or "").strip()
        return value or None

    resource_type = check_choice(text("resource_type") or "ANY", ("ANY", *RESOURCE_TYPES), "resource type")
    operation = text("operation") or "ANY"
    if operation.upper() != "ANY":
        operation = (
            check_operation(resource_type, operation)
            if resource_type != "ANY"
            else check_choice(operation, [o for o in OPERATION_CODES if o != "ANY"], "operation")
        )
    else:
        operation = "ANY"
    principal = text("principal")
    host = text("host")
    return AclFilter(
        principal=parse_principal(principal) if principal else None,
        host=check_host(host) if host else None,
        operation=operation,
        permission=check_choice(text("permission") or "ANY", ("ANY", *PERMISSIONS), "permission"),
        resource_type=resource_type,
        resource_name=text("resource_name"),
        pattern_type=check_choice(text("pattern_type") or "ANY", tuple(PATTERN_CODES), "pattern type"),
    )


# ---------------------------------------------------------------- helpers for the usual cases (pure)


HELPERS = {
    "consumer": "Consumer of a topic in a group",
    "producer": "Producer to a topic",
    "transactional": "Transactional producer with a transactional id",
    "streams": "Kafka Streams application",
}


def _names(raw: Any, what: str) -> list[str]:
    items = raw if isinstance(raw, list | tuple) else str(raw or "").replace("\n", ",").split(",")
    names = [str(n).strip() for n in items if str(n).strip()]
    if not names:
        raise InvalidInput(f"Give the {what}.")
    return names


def _make(principal: str, host: str, kind: str, name: str, pattern: str, ops: Iterable[str]) -> list[AclBinding]:
    return [
        parse_binding(
            {
                "principal": principal,
                "host": host,
                "resource_type": kind,
                "resource_name": name,
                "pattern_type": pattern,
                "operation": op,
                "permission": "ALLOW",
            }
        )
        for op in ops
    ]


def helper_bindings(helper: str, params: Mapping[str, Any]) -> list[AclBinding]:
    """The ALLOW bindings for a usual case, as Kafka's ``kafka-acls --consumer/--producer`` make them:

    - ``consumer``: READ and DESCRIBE on each topic, READ on the group;
    - ``producer``: WRITE, DESCRIBE and CREATE on each topic;
    - ``transactional``: WRITE and DESCRIBE on each topic and on the transactional id;
    - ``streams``: READ and DESCRIBE on the input topics, WRITE and DESCRIBE on the output topics, ALL on the
      topics prefixed with the application id (its internal topics), READ on the group named after it, and
      WRITE and DESCRIBE on transactional ids prefixed with it (exactly-once).

    ``params``: ``principal``, ``host`` (default ``*``), ``topic`` (one or more, comma-separated),
    ``prefixed`` (the topic and group names are prefixes), ``group``, ``transactional_id``,
    ``application_id``, ``input_topics``, ``output_topics``. Raises InvalidInput."""
    if helper not in HELPERS:
        raise InvalidInput(f"Unknown helper {helper!r}: use {', '.join(HELPERS)}.")
    principal = parse_principal(params.get("principal"))
    host = check_host(params.get("host"))
    pattern = "PREFIXED" if str(params.get("prefixed") or "").lower() in ("1", "true", "on", "yes") else "LITERAL"
    found: list[AclBinding] = []
    if helper == "streams":
        app = str(params.get("application_id") or "").strip()
        if not app:
            raise InvalidInput("Give the Streams application id.")
        for topic in _names(params.get("input_topics"), "input topics"):
            found += _make(principal, host, "TOPIC", topic, "LITERAL", ("READ", "DESCRIBE"))
        for topic in _names(params.get("output_topics"), "output topics"):
            found += _make(principal, host, "TOPIC", topic, "LITERAL", ("WRITE", "DESCRIBE"))
        found += _make(principal, host, "TOPIC", app, "PREFIXED", ("ALL",))
        found += _make(principal, host, "GROUP", app, "LITERAL", ("READ",))
        found += _make(principal, host, "TRANSACTIONAL_ID", app, "PREFIXED", ("WRITE", "DESCRIBE"))
        return list(dict.fromkeys(found))
    topics = _names(params.get("topic"), "topic")
    if helper == "consumer":
        group = str(params.get("group") or "").strip()
        if not group:
            raise InvalidInput("Give the consumer group.")
        for topic in topics:
            found += _make(principal, host, "TOPIC", topic, pattern, ("READ", "DESCRIBE"))
        found += _make(principal, host, "GROUP", group, pattern, ("READ",))
    elif helper == "producer":
        for topic in topics:
            found += _make(principal, host, "TOPIC", topic, pattern, ("WRITE", "DESCRIBE", "CREATE"))
    else:
        txn = str(params.get("transactional_id") or "").strip()
        if not txn:
            raise InvalidInput("Give the transactional id.")
        for topic in topics:
            found += _make(principal, host, "TOPIC", topic, pattern, ("WRITE", "DESCRIBE"))
        found += _make(principal, host, "TRANSACTIONAL_ID", txn, pattern, ("WRITE", "DESCRIBE"))
    return list(dict.fromkeys(found))


# ---------------------------------------------------------------- CSV (pure)


def to_csv(bindings: Iterable[AclBinding]) -> str:
    """The bindings as CSV with a header row (CSV_COLUMNS). A cell a spreadsheet would take for a formula (it
    begins with =, +, -, @, a tab or a carriage return), or that begins with a single quote, gets a leading
    single quote (OWASP's advice on CSV injection); from_csv takes it off again."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for b in sorted(bindings):
        writer.writerow([_escaped(str(getattr(b, c))) for c in CSV_COLUMNS])
    return out.getvalue()


def from_csv(text: str) -> list[AclBinding]:
    """Bindings from CSV with a header row naming CSV_COLUMNS (any order; host, permission and pattern_type
    may be left out: ``*``, ALLOW, LITERAL). Every row is checked; the first bad one raises InvalidInput
    with its line number, so nothing is imported from a file with a mistake."""
    reader = csv.DictReader(io.StringIO(text.lstrip("\ufeff")))
    header = [h.strip() for h in reader.fieldnames or []]
    missing = [c for c in ("principal", "operation", "resource_type", "resource_name") if c not in header]
    if missing:
        raise InvalidInput(
            f"The CSV has no {', '.join(missing)} column: its header must name {', '.join(CSV_COLUMNS)}."
        )
    found: list[AclBinding] = []
    for row in reader:
        values = {str(k).strip(): _unescaped((v or "").strip()) for k, v in row.items() if k is not None}
        if not any(values.values()):
            continue
        try:
            found.append(parse_binding(values))
        except InvalidInput as exc:
            raise InvalidInput(f"Line {reader.line_num}: {exc}") from None
    if not found:
        raise InvalidInput("The CSV holds no ACL.")
    return list(dict.fromkeys(found))


_QUOTED_STARTS = ("=", "+", "-", "@", "\t", "\r", "'")


def _escaped(value: str) -> str:
    return "'" + value if value.startswith(_QUOTED_STARTS) else value


def _unescaped(value: str) -> str:
    return value[1:] if value.startswith("'") else value


# ---------------------------------------------------------------- requests


def _send(admin: KafkaAdminClient, request: Any) -> Any:
    return send_request(admin, request)


def _error(code: int, message: str | None) -> str:
    name = str(getattr(kafka.errors.kafka_errors.get(code), "message", "") or f"error {code}")
    return name.replace("_", " ").lower() + (f": {message}" if message else "")


_SECURITY_DISABLED = 54
_CLUSTER_AUTHORIZATION_FAILED = 31


def _check(code: int, message: str | None, what: str) -> None:
    if code == _SECURITY_DISABLED:
        raise NoAuthorizer(NO_AUTHORIZER)
    if code == _CLUSTER_AUTHORIZATION_FAILED:
        raise KafkaRefused(f"Kafka refused to {what}: the console's principal lacks the cluster permission for it.")
    if code:
        raise KafkaRefused(f"Kafka refused to {what}: {_error(code, message)}.")


def _filter_fields(f: AclFilter) -> dict[str, Any]:
    return {
        "resource_type_filter": RESOURCE_CODES[f.resource_type],
        "resource_name_filter": f.resource_name,
        "pattern_type_filter": PATTERN_CODES[f.pattern_type],
        "principal_filter": f.principal,
        "host_filter": f.host,
        "operation": OPERATION_CODES[f.operation],
        "permission_type": PERMISSION_CODES[f.permission],
    }


def _binding(resource_type: int, name: str, pattern: int, acl: Any) -> AclBinding:
    return AclBinding(
        resource_type=_NAMES["resource"].get(resource_type, str(resource_type)),
        resource_name=name,
        pattern_type=_NAMES["pattern"].get(pattern, str(pattern)),
        principal=acl.principal,
        host=acl.host,
        operation=_NAMES["operation"].get(acl.operation, str(acl.operation)),
        permission=_NAMES["permission"].get(acl.permission_type, str(acl.permission_type)),
    )


def _describe(admin: KafkaAdminClient, acl_filter: AclFilter) -> list[AclBinding]:
    answer = _send(admin, DescribeAclsRequest(**_filter_fields(acl_filter)))
    _check(answer.error_code, answer.error_message, "list the ACLs")
    return sorted(
        _binding(r.resource_type, r.resource_name, r.pattern_type, acl) for r in answer.resources for acl in r.acls
    )


def list_acls(conn: ClusterConnection, acl_filter: AclFilter | None = None) -> list[AclBinding]:
    """The bindings ``acl_filter`` matches (all when None), sorted, in one DescribeAcls. Raises NoAuthorizer
    when the cluster has none, KafkaRefused when the console's principal may not describe them."""
    return conn.call(lambda admin: _describe(admin, acl_filter or AclFilter()), "ACL list", retry=True)


def do_create_acls(conn: ClusterConnection, bindings: Sequence[AclBinding]) -> list[AclBinding]:
    """Create ``bindings`` (already checked) in one CreateAcls; returns them. Creating one that exists
    changes nothing. Raises KafkaRefused with Kafka's reason for the first refused one (the others in the
    same request may have been created)."""
    if not bindings:
        raise InvalidInput("No ACL to create.")
    creation = CreateAclsRequest.AclCreation

    def create(admin: KafkaAdminClient) -> list[AclBinding]:
        request = CreateAclsRequest(
            creations=[
                creation(
                    resource_type=RESOURCE_CODES[b.resource_type],
                    resource_name=b.resource_name,
                    resource_pattern_type=PATTERN_CODES[b.pattern_type],
                    principal=b.principal,
                    host=b.host,
                    operation=OPERATION_CODES[b.operation],
                    permission_type=PERMISSION_CODES[b.permission],
                )
                for b in bindings
            ]
        )
        answer = _send(admin, request)
        for b, result in zip(bindings, answer.results, strict=False):
            _check(result.error_code, result.error_message, f"create {b.label()}")
        return list(bindings)

    return conn.call(create, "ACL creation")


def do_delete_acls(conn: ClusterConnection, bindings: Sequence[AclBinding]) -> list[AclBinding]:
    """Delete exactly ``bindings`` (one exact filter each, in one DeleteAcls); returns those Kafka removed
    (one already gone is not among them). Raises NoAuthorizer or KafkaRefused."""
    if not bindings:
        raise InvalidInput("No ACL to delete.")
    filters = [DeleteAclsRequest.DeleteAclsFilter(**_filter_fields(exact_filter(b))) for b in bindings]

    def delete(admin: KafkaAdminClient) -> list[AclBinding]:
        answer = _send(admin, DeleteAclsRequest(filters=filters))
        removed: list[AclBinding] = []
        for result in answer.filter_results:
            _check(result.error_code, result.error_message, "delete the ACLs")
            for acl in result.matching_acls:
                _check(acl.error_code, acl.error_message, "delete the ACL")
                removed.append(_binding(acl.resource_type, acl.resource_name, acl.pattern_type, acl))
        return sorted(set(removed))

    return conn.call(delete, "ACL deletion")
