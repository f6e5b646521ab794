"""The ACL domain's pure logic: principals, operations per resource type, filters, the authorizer's decision
(super users, deny wins, wildcard principal and resource, prefixes, hosts, implied operations), the helpers,
CSV, and SCRAM's input checks and salted password."""

from __future__ import annotations

import hashlib
import hmac

import pytest

from broker.errors import InvalidInput
from broker.security import acls, authorizer, scram
from broker.security.acls import AclBinding, AclFilter
from broker.security.authorizer import AuthorizerSettings, decide


def allow(principal: str, op: str, kind: str, name: str, pattern: str = "LITERAL", host: str = "*") -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, "ALLOW")


def deny(principal: str, op: str, kind: str, name: str, pattern: str = "LITERAL", host: str = "*") -> AclBinding:
    return AclBinding(kind, name, pattern, principal, host, op, "DENY")


# ---------------------------------------------------------------- principals


def test_a_principal_is_user_and_a_name() -> None:
    assert acls.parse_principal(" User:alice ") == "User:alice"
    assert acls.parse_principal("User:*") == "User:*"


@pytest.mark.parametrize("typo", ["user:alice", "Usr:alice", "USER:alice", "Uesr:alice"])
def test_a_typoed_principal_type_is_refused_with_the_right_spelling(typo: str) -> None:
    with pytest.raises(InvalidInput, match=r"Unknown principal type .*case-sensitive.*Did you mean User:alice\?"):
        acls.parse_principal(typo)


def test_a_principal_without_type_or_name_is_refused() -> None:
    with pytest.raises(InvalidInput, match="User:alice, not 'alice'"):
        acls.parse_principal("alice")
    with pytest.raises(InvalidInput, match="has no name"):
        acls.parse_principal("User:")
    with pytest.raises(InvalidInput, match="Unknown principal type 'Group'"):
        acls.parse_principal("Group:ops")


# ---------------------------------------------------------------- operations and bindings


@pytest.mark.parametrize(
    ("kind", "op"),
    [("GROUP", "WRITE"), ("TRANSACTIONAL_ID", "READ"), ("TOPIC", "CLUSTER_ACTION"), ("CLUSTER", "READ")],
)
def test_an_operation_the_resource_type_lacks_is_refused_naming_those_it_has(kind: str, op: str) -> None:
    with pytest.raises(InvalidInput, match=f"has no {op} operation: use .*{acls.OPERATIONS[kind][0]}"):
        acls.check_operation(kind, op)


def test_an_unknown_operation_is_refused() -> None:
    with pytest.raises(InvalidInput, match="Unknown operation 'REED' for a topic"):
        acls.check_operation("TOPIC", "REED")
    assert acls.check_operation("GROUP", "all") == "ALL"
    assert acls.check_operation("TOPIC", "describe-configs") == "DESCRIBE_CONFIGS"


def test_a_binding_is_checked_field_by_field() -> None:
    b = acls.parse_binding(
        {"principal": "User:bob", "operation": "read", "resource_type": "topic", "resource_name": "orders"}
    )
    assert b == AclBinding("TOPIC", "orders", "LITERAL", "User:bob", "*", "READ", "ALLOW")
    cluster = acls.parse_binding({"principal": "User:bob", "operation": "ALTER", "resource_type": "CLUSTER"})
    assert cluster.resource_name == "kafka-cluster"
    with pytest.raises(InvalidInput, match="always the literal kafka-cluster"):
        acls.parse_binding(
            {"principal": "User:b", "operation": "ALTER", "resource_type": "CLUSTER", "resource_name": "prod"}
        )
    with pytest.raises(InvalidInput, match="IP address"):
        acls.parse_binding(
            {"principal": "User:b", "operation": "READ", "resource_type": "TOPIC", "resource_name": "t", "host": "web1"}
        )
    with pytest.raises(InvalidInput, match="Unknown pattern type"):
        acls.parse_binding(
            {
                "principal": "User:b",
                "operation": "READ",
                "resource_type": "TOPIC",
                "resource_name": "t",
                "pattern_type": "MATCH",
            }
        )


def test_filters_match_as_kafka_matches_them() -> None:
    literal = allow("User:a", "READ", "TOPIC", "orders")
    prefixed = allow("User:a", "READ", "TOPIC", "ord", "PREFIXED")
    wildcard = allow("User:b", "WRITE", "TOPIC", "*")
    other = allow("User:a", "READ", "TOPIC", "payments")
    match = AclFilter(resource_type="TOPIC", resource_name="orders", pattern_type="MATCH")
    assert [b for b in (literal, prefixed, wildcard, other) if match.matches(b)] == [literal, prefixed, wildcard]
    exact = AclFilter(resource_type="TOPIC", resource_name="orders", pattern_type="LITERAL")
    assert [b for b in (literal, prefixed, wildcard) if exact.matches(b)] == [literal]
    assert AclFilter(principal="User:a", operation="READ").matches(other)
    assert not AclFilter(permission="DENY").matches(other)
    assert acls.exact_filter(literal).matches(literal)
    assert not acls.exact_filter(literal).matches(prefixed)


def test_a_filter_from_query_parameters() -> None:
    f = acls.parse_filter({"principal": "User:a", "resource_type": "GROUP", "operation": "read", "pattern_type": ""})
    assert f == AclFilter(principal="User:a", resource_type="GROUP", operation="READ")
    assert f.query() == {"principal": "User:a", "resource_type": "GROUP", "operation": "READ"}
    assert acls.parse_filter({}).is_everything
    with pytest.raises(InvalidInput, match="group has no WRITE"):
        acls.parse_filter({"resource_type": "GROUP", "operation": "WRITE"})
    with pytest.raises(InvalidInput, match="Unknown principal type"):
        acls.parse_filter({"principal": "user:a"})


# ---------------------------------------------------------------- the decision


def test_nothing_is_allowed_without_a_rule_unless_the_resource_has_no_acl_and_everyone_is_allowed() -> None:
    assert not decide([], "User:a", "READ", "TOPIC", "t").allowed
    open_ = AuthorizerSettings(allow_if_no_acl=True)
    assert decide([], "User:a", "READ", "TOPIC", "t", settings=open_).allowed
    # A rule for someone else on the resource closes it, whatever allow.everyone.if.no.acl.found says.
    assert not decide([allow("User:b", "READ", "TOPIC", "t")], "User:a", "READ", "TOPIC", "t", settings=open_).allowed


def test_a_super_user_may_do_everything_even_when_denied() -> None:
    rules = [deny("User:root", "ALL", "TOPIC", "*")]
    decision = decide(rules, "User:root", "DELETE", "TOPIC", "t", settings=AuthorizerSettings(("User:root",)))
    assert decision.allowed
    assert "super user" in decision.reason


def test_deny_wins_over_allow_wherever_each_comes_from() -> None:
    rules = [allow("User:a", "ALL", "TOPIC", "*"), deny("User:*", "READ", "TOPIC", "secret-", "PREFIXED")]
    assert decide(rules, "User:a", "READ", "TOPIC", "orders").allowed
    denied = decide(rules, "User:a", "READ", "TOPIC", "secret-pay")
    assert not denied.allowed
    assert denied.rule == rules[1]
    # The deny names READ only: WRITE is still allowed through ALL.
    assert decide(rules, "User:a", "WRITE", "TOPIC", "secret-pay").allowed


def test_the_wildcard_principal_and_resource_and_prefixes_match() -> None:
    rules = [
        allow("User:*", "DESCRIBE", "TOPIC", "*"),
        allow("User:a", "READ", "TOPIC", "app-", "PREFIXED"),
        allow("User:a", "READ", "GROUP", "g"),
    ]
    assert decide(rules, "User:z", "DESCRIBE", "TOPIC", "anything").allowed
    assert decide(rules, "User:a", "READ", "TOPIC", "app-events").allowed
    assert not decide(rules, "User:a", "READ", "TOPIC", "ap").allowed
    assert not decide(rules, "User:a", "READ", "GROUP", "g2").allowed
    assert decide(rules, "User:a", "READ", "GROUP", "g").allowed


def test_read_write_delete_alter_imply_describe_and_alter_configs_implies_describe_configs() -> None:
    for op in ("READ", "WRITE", "DELETE", "ALTER"):
        assert decide([allow("User:a", op, "TOPIC", "t")], "User:a", "DESCRIBE", "TOPIC", "t").allowed
    assert decide([allow("User:a", "ALTER_CONFIGS", "TOPIC", "t")], "User:a", "DESCRIBE_CONFIGS", "TOPIC", "t").allowed
    assert not decide([allow("User:a", "DESCRIBE", "TOPIC", "t")], "User:a", "READ", "TOPIC", "t").allowed
    # A deny of DESCRIBE is not undone by an allowed READ.
    rules = [allow("User:a", "READ", "TOPIC", "t"), deny("User:a", "DESCRIBE", "TOPIC", "t")]
    assert not decide(rules, "User:a", "DESCRIBE", "TOPIC", "t").allowed


def test_a_host_specific_rule_counts_only_from_that_host() -> None:
    rules = [allow("User:a", "READ", "TOPIC", "t", host="10.0.0.7")]
    assert decide(rules, "User:a", "READ", "TOPIC", "t", host="10.0.0.7").allowed
    assert not decide(rules, "User:a", "READ", "TOPIC", "t", host="10.0.0.8").allowed
    assert not decide(rules, "User:a", "READ", "TOPIC", "t").allowed


def test_a_principals_rights_per_pattern() -> None:
    rules = [
        *acls.helper_bindings("consumer", {"principal": "User:a", "topic": "orders", "group": "billing"}),
        deny("User:*", "READ", "TOPIC", "*"),
        allow("User:b", "WRITE", "TOPIC", "orders"),
    ]
    rights = {(r.resource_type, r.resource_name): r for r in authorizer.principal_rights(rules, "User:a")}
    assert set(rights) == {("TOPIC", "orders"), ("GROUP", "billing"), ("TOPIC", "*")}
    # The wildcard deny of User:* applies to orders too: deny wins.
    assert rights[("TOPIC", "orders")].allowed == ["DESCRIBE"]
    assert "READ" in rights[("TOPIC", "orders")].denied
    assert rights[("GROUP", "billing")].allowed == ["READ", "DESCRIBE"]
    assert rights[("TOPIC", "*")].allowed == []


# ---------------------------------------------------------------- helpers


def _set(bindings: list[AclBinding]) -> set[tuple[str, str, str, str]]:
    return {(b.resource_type, b.resource_name, b.pattern_type, b.operation) for b in bindings}


def test_the_consumer_helper_allows_read_and_describe_on_the_topic_and_read_on_the_group() -> None:
    found = acls.helper_bindings("consumer", {"principal": "User:a", "topic": "orders", "group": "billing"})
    assert _set(found) == {
        ("TOPIC", "orders", "LITERAL", "READ"),
        ("TOPIC", "orders", "LITERAL", "DESCRIBE"),
        ("GROUP", "billing", "LITERAL", "READ"),
    }
    assert all(b.permission == "ALLOW" and b.principal == "User:a" and b.host == "*" for b in found)
    assert decide(found, "User:a", "READ", "TOPIC", "orders").allowed


def test_the_producer_transactional_and_streams_helpers() -> None:
    producer = acls.helper_bindings("producer", {"principal": "User:p", "topic": "a, b", "prefixed": "1"})
    assert _set(producer) == {("TOPIC", t, "PREFIXED", op) for t in "ab" for op in ("WRITE", "DESCRIBE", "CREATE")}
    txn = acls.helper_bindings("transactional", {"principal": "User:p", "topic": "t", "transactional_id": "tx-1"})
    assert ("TRANSACTIONAL_ID", "tx-1", "LITERAL", "WRITE") in _set(txn)
    assert ("TOPIC", "t", "LITERAL", "WRITE") in _set(txn)
    streams = acls.helper_bindings(
        "streams", {"principal": "User:s", "application_id": "wc", "input_topics": "in", "output_topics": "out"}
    )
    assert _set(streams) >= {
        ("TOPIC", "in", "LITERAL", "READ"),
        ("TOPIC", "out", "LITERAL", "WRITE"),
        ("TOPIC", "wc", "PREFIXED", "ALL"),
        ("GROUP", "wc", "LITERAL", "READ"),
        ("TRANSACTIONAL_ID", "wc", "PREFIXED", "WRITE"),
    }
    assert decide(streams, "User:s", "CREATE", "TOPIC", "wc-counts-changelog").allowed


def test_a_helper_refuses_what_is_missing_or_wrong() -> None:
    with pytest.raises(InvalidInput, match="Give the consumer group"):
        acls.helper_bindings("consumer", {"principal": "User:a", "topic": "t"})
    with pytest.raises(InvalidInput, match="Did you mean User:a"):
        acls.helper_bindings("consumer", {"principal": "user:a", "topic": "t", "group": "g"})
    with pytest.raises(InvalidInput, match="Unknown helper"):
        acls.helper_bindings("admin", {"principal": "User:a"})


# ---------------------------------------------------------------- CSV


def test_csv_round_trip() -> None:
    bindings = [
        allow("User:a", "READ", "TOPIC", "orders, with a comma"),
        deny("User:*", "ALL", "GROUP", "g-", "PREFIXED", host="10.1.2.3"),
        allow("User:ops", "ALTER", "CLUSTER", "kafka-cluster"),
    ]
    text = acls.to_csv(bindings)
    assert text.splitlines()[0] == ",".join(acls.CSV_COLUMNS)
    assert sorted(acls.from_csv(text)) == sorted(bindings)


def test_a_csv_with_one_bad_row_imports_nothing_and_names_the_line() -> None:
    text = "principal,operation,resource_type,resource_name\nUser:a,READ,TOPIC,t\nuser:b,READ,TOPIC,t\n"
    with pytest.raises(InvalidInput, match=r"Line 3: Unknown principal type 'user'"):
        acls.from_csv(text)
    with pytest.raises(InvalidInput, match="no resource_name column"):
        acls.from_csv("principal,operation,resource_type\nUser:a,READ,TOPIC\n")
    # Short form: host, permission and pattern default.
    assert acls.from_csv("principal,operation,resource_type,resource_name\nUser:a,WRITE,TOPIC,t\n") == [
        allow("User:a", "WRITE", "TOPIC", "t")
    ]


# ---------------------------------------------------------------- SCRAM


def test_scram_input_checks() -> None:
    assert scram.check_name(" alice ") == "alice"
    with pytest.raises(InvalidInput, match="without its principal type: 'alice'"):
        scram.check_name("User:alice")
    with pytest.raises(InvalidInput, match="at least 8"):
        scram.check_password("short")
    assert scram.check_mechanisms(None) == ["SCRAM-SHA-256", "SCRAM-SHA-512"]
    assert scram.check_mechanisms(["scram_sha_512"]) == ["SCRAM-SHA-512"]
    with pytest.raises(InvalidInput, match="Unknown SCRAM mechanism"):
        scram.check_mechanisms(["SCRAM-SHA-1"])
    assert scram.check_iterations("") == scram.DEFAULT_ITERATIONS
    with pytest.raises(InvalidInput, match="4096 to 16384"):
        scram.check_iterations(100)


def test_the_salted_password_is_rfc_5802s() -> None:
    salt = b"0123456789abcdef"
    got = scram.salted_password("SCRAM-SHA-256", "pencil", salt, 4096)
    # Hi(password, salt, i) from RFC 5802, computed by hand with HMAC.
    u = hmac.new(b"pencil", salt + b"\x00\x00\x00\x01", hashlib.sha256).digest()
    result = bytearray(u)
    for _ in range(4095):
        u = hmac.new(b"pencil", u, hashlib.sha256).digest()
        result = bytearray(a ^ b for a, b in zip(result, u, strict=True))
    assert got == bytes(result)
    assert len(scram.salted_password("SCRAM-SHA-512", "pencil", salt, 4096)) == 64


def test_authorizer_settings_from_broker_configs() -> None:
    shown = {
        "super.users": {"value": "User:admin;User:ops", "is_sensitive": False},
        "allow.everyone.if.no.acl.found": {"value": "true", "is_sensitive": False},
    }
    assert authorizer.settings_from_configs(shown) == AuthorizerSettings(("User:admin", "User:ops"), True)
    # Kafka hides the authorizer's own settings (not KafkaConfig's) as sensitive.
    hidden = {"super.users": {"value": None, "is_sensitive": True}}
    settings = authorizer.settings_from_configs(hidden)
    assert settings.hidden == ("super.users",)
    assert settings.super_users == ()
    assert not settings.allow_if_no_acl
