"""Scoped roles as pure logic (console.access.grants): what a grant reaches, what a user holding a global role and
grants may do where, the grants a live list is drawn for, and how an action's audit target names what it changes."""

from __future__ import annotations

import pytest

from console import access
from console.access import ACTIONS, scoped, scoped_refusal
from console.access.grants import ROLE_ORDER, Grant, Scope, kept_in, parse_grant, scope_in
from console.identity import roles


def test_the_role_orders_agree_with_the_roles() -> None:
    assert list(ROLE_ORDER) == list(access.ROLES) == list(roles.ROLE_ORDER)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("local:topic:orders.*:operator", Grant("local", "topic", "orders.*", "operator")),
        ("prod-*:group:team:a:*:viewer", Grant("prod-*", "group", "team:a:*", "viewer")),  # a glob may hold ":"
        ("*:cluster:*:admin", Grant("*", "cluster", "*", "admin")),
        (" local:subject:orders-value:viewer ", Grant("local", "subject", "orders-value", "viewer")),
    ],
)
def test_a_grant_is_read_from_its_text_and_written_back_alike(text: str, expected: Grant) -> None:
    assert parse_grant(text) == expected
    assert parse_grant(str(expected)) == expected


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("local:topic:orders", "is not CLUSTER:RESOURCE:GLOB:ROLE"),
        ("local:topics:orders:viewer", "resource is one of"),
        ("local:topic:orders:owner", "role is one of"),
        (":topic:orders:viewer", "may not be empty"),
        ("local:topic::viewer", "may not be empty"),
        ("local:cluster:x*:viewer", "glob as *"),
    ],
)
def test_a_malformed_grant_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_grant(text)


def test_a_grant_reaches_only_its_kind_and_names_and_a_cluster_grant_everything_there() -> None:
    topics = parse_grant("local:topic:team-a.*:operator")
    assert topics.covers("local", "topic", "team-a.orders")
    assert not topics.covers("local", "topic", "team-b.orders")
    assert not topics.covers("local", "topic", "Team-a.orders")  # case-sensitive, as Kafka's names
    assert not topics.covers("prod", "topic", "team-a.orders")
    assert not topics.covers("local", "group", "team-a.orders")
    assert not topics.covers("local", None, None)  # not the cluster itself
    assert topics.covers("local", "topic", None)  # some topic: a form before its name is typed
    whole = parse_grant("prod-*:cluster:*:viewer")
    assert whole.covers("prod-eu", "group", "anything")
    assert whole.covers("prod-eu", None, None)
    assert not whole.covers("staging", None, None)


def test_a_scope_gives_the_strongest_role_that_reaches_and_a_global_role_reaches_everything() -> None:
    scope = Scope(
        None,
        (
            parse_grant("local:topic:*:viewer"),
            parse_grant("local:topic:team-a.*:operator"),
            parse_grant("local:group:team-a-*:viewer"),
        ),
    )
    assert scope.role_on("local", "topic", "team-a.orders") == "operator"
    assert scope.role_on("local", "topic", "other") == "viewer"
    assert scope.role_on("local", "group", "other-app") is None
    assert scope.role_on("local") is None
    assert not scope.whole("local")
    assert scope.on_cluster("local")
    assert not scope.on_cluster("prod")
    assert scope.role_anywhere("local") == "operator"
    assert scope.sees_every("local", "group", ["team-a-1", "team-a-2"])
    assert not scope.sees_every("local", "group", ["team-a-1", "other"])
    assert not scope.sees_every("local", "group", [])  # every group: the whole cluster's
    assert Scope("viewer", scope.grants).role_on("prod", "group", "x") == "viewer"
    assert Scope("admin", scope.grants).role_on("local", "topic", "team-a.x") == "admin"
    assert not Scope(None).anything
    assert Scope(None, scope.grants).anything


def test_a_live_lists_grants_travel_in_its_parameters_one_a_line() -> None:
    held = (parse_grant("local:group:team a-*:viewer"), parse_grant("local:topic:x:operator"))
    params = {"grants": "\n".join(str(g) for g in held)}
    scope = scope_in(params)
    assert scope is not None
    assert scope.grants == held
    keep = kept_in(params, "local", "group")
    assert keep("team a-1")
    assert not keep("team b-1")
    assert scope_in({}) is None
    assert kept_in({}, "local", "group") is None


@pytest.mark.parametrize(
    ("action", "target", "names"),
    [
        ("message.produce", "orders", ["orders"]),
        ("topic.create", "", []),  # the form: not named yet
        ("connect.pause", "connect/orders-sink", ["orders-sink"]),
        ("connect.pause", "connect", []),
        ("schemas.compatibility", "(global)", None),  # the registry's own setting: the whole cluster's
        ("schemas.register", "orders-value", ["orders-value"]),
        ("topic.copy", "local/orders -> backup/orders-copy", ["orders-copy"]),
        ("topic.import", "local/orders", ["orders"]),
        ("analytics.start", "a,b", ["a", "b"]),
    ],
)
def test_an_actions_target_names_what_a_grant_must_reach(action: str, target: str, names: list[str] | None) -> None:
    assert ACTIONS[action].names(target) == names


def test_actions_on_the_whole_cluster_name_no_kind() -> None:
    whole = {a for a, spec in ACTIONS.items() if spec.kind is None}
    assert {"zookeeper.set", "acls.create", "partitions.reassign", "connect.create", "topic.redrive"} <= whole
    assert {"message.produce", "group.reset_offsets", "connect.restart", "schemas.delete"}.isdisjoint(whole)


def test_a_scoped_user_opens_named_things_its_grants_reach_lists_on_its_clusters_and_nothing_of_the_whole() -> None:
    scope = Scope(None, (parse_grant("local:topic:team-a.*:operator"),))

    def page() -> None: ...

    lists = scoped(lambda: None)
    assert scoped_refusal(scope, page, {"cluster": "local", "topic": "team-a.x"}) is None
    assert scoped_refusal(scope, page, {"cluster": "local", "topic": "other"}) == (
        404,
        "No topic named 'other' in cluster 'local'.",
    )
    assert scoped_refusal(scope, page, {"cluster": "prod", "topic": "team-a.x"})[0] == 404  # type: ignore[index]
    assert scoped_refusal(scope, lists, {"cluster": "local"}) is None
    assert scoped_refusal(scope, page, {"cluster": "local"})[0] == 403  # type: ignore[index]
    assert scoped_refusal(scope, page, {})[0] == 403  # type: ignore[index]
    assert scoped_refusal(scope, lists, {}) is None
    assert scoped_refusal(scope, page, {"cluster": "local", "connect_name": "c", "name": "x"})[0] == 404  # type: ignore[index]
