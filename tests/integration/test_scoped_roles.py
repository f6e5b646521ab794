"""Scoped roles (issue 33), against the real test cluster: a user holding only grants (an operator on the topics
matching a glob, a viewer on some groups) sees only what they reach in every list, search, SQL table and analytics
input, in the API and over websockets; may produce and create topics there; is refused elsewhere (404 for what it
may not see, 403 for what needs the whole cluster or a stronger role), and refusals are audited. Grants are given by
``manage.py add_user --grant`` and ``manage.py grant``, the Users page and the API; a team's grants reach its
members."""

from __future__ import annotations

import io
import json
import sys
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.contrib.auth.models import Group, User
from django.core.management import call_command
from django.core.management.base import CommandError
from django.test import Client

from broker.local import launcher
from console.access import set_role
from console.asgi import application
from console.models import AuditEntry, Grant
from tests.conftest import logged_in, websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_groups import commit

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db(transaction=True),
    pytest.mark.zookeeper("what grants reach does not depend on the cluster's mode: run once"),
]


class Names:
    """The topics and groups of this module: the team's, another team's, one shared read-only."""

    def __init__(self) -> None:
        self.team = unique("teama")
        self.orders = f"{self.team}.orders"
        self.events = f"{self.team}.events"
        self.secret = unique("secret")
        self.shared = unique("shared")
        self.group = f"{self.team}-app"
        self.other_group = unique("other-app")

    @property
    def grants(self) -> list[str]:
        return [
            f"local:topic:{self.team}.*:operator",
            f"local:group:{self.team}-*:viewer",
            f"local:topic:{self.shared}:viewer",
        ]


@pytest.fixture(scope="module")
def names(kafka_cluster: launcher.ClusterLayout) -> Names:
    found = Names()
    for topic in (found.orders, found.events, found.secret, found.shared):
        create_topic(topic, partitions=1, replication=1)
    produce(found.orders, [(b"k1", b'{"url": "/a", "user": "u1"}'), (b"k2", b'{"url": "/b", "user": "u2"}')])
    produce(found.secret, [(b"s", b"the other team's secret")])
    commit(found.group, {(found.orders, 0): 1})
    commit(found.other_group, {(found.secret, 0): 1})
    return found


@pytest.fixture(autouse=True)
def cluster(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> None:
    """Every test here talks to the test cluster, with fresh cluster settings."""


def scoped_client(names: Names, username: str = "alice") -> Client:
    """A user with no global role, holding the module's grants (given as an admin would, from the command line)."""
    stdin = sys.stdin
    sys.stdin = io.StringIO("kz-Alices-Own-Password-7!\n")
    try:
        grants = [a for g in names.grants for a in ("--grant", g)]
        call_command("add_user", username, "--password-stdin", *grants, stdout=io.StringIO())
    finally:
        sys.stdin = stdin
    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


def post_json(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


# --- what it sees -------------------------------------------------------------------------------------------------


def test_a_scoped_operator_sees_only_what_its_grants_reach_in_every_list(names: Names) -> None:
    client = scoped_client(names)
    assert client.get("/")["Location"] == "/clusters/local/topics/"  # not the whole cluster's overview

    page = client.get("/clusters/local/topics/?per_page=200").content.decode()
    assert names.orders in page
    assert names.events in page
    assert names.shared in page
    assert names.secret not in page
    listed = {t["name"] for t in client.get("/api/clusters/local/topics/").json()["topics"]}
    assert listed == {names.orders, names.events, names.shared}

    groups_page = client.get("/clusters/local/groups/").content.decode()
    assert names.group in groups_page
    assert names.other_group not in groups_page
    assert [g["group_id"] for g in client.get("/api/clusters/local/groups/").json()["groups"]] == [names.group]
    export = client.get("/clusters/local/groups-report.json").json()
    assert [g["group_id"] for g in export["groups"]] == [names.group]

    tables = client.get("/api/clusters/local/analytics/sql/tables/").json()["topics"]
    assert set(tables) == {names.orders, names.events, names.shared}
    assert client.get("/api/clusters/local/analytics/sql/tables/", {"topic": names.secret}).status_code == 404
    analytics = client.get("/clusters/local/analytics/").content.decode()
    assert names.orders in analytics
    assert names.secret not in analytics
    sql_page = client.get("/clusters/local/analytics/sql/").content.decode()
    assert names.orders in sql_page
    assert names.secret not in sql_page

    consumers = client.get(f"/clusters/local/topics/{names.orders}/consumers/").content.decode()
    assert names.group in consumers
    assert [c["name"] for c in client.get("/api/clusters/").json()] == ["local"]


def test_what_a_scoped_user_may_not_see_is_unknown_to_it_and_the_whole_cluster_is_refused(names: Names) -> None:
    client = scoped_client(names)
    for path in (
        f"/clusters/local/topics/{names.secret}/",
        f"/clusters/local/topics/{names.secret}/messages/",
        f"/clusters/local/topics/{names.secret}/partitions/0/",
        f"/api/clusters/local/topics/{names.secret}/",
        f"/api/clusters/local/topics/{names.secret}/search/?q=secret",
        f"/api/clusters/local/topics/{names.secret}/partitions/0/messages",
        f"/clusters/local/groups/{names.other_group}/",
        f"/api/clusters/local/groups/{names.other_group}/",
        "/clusters/elsewhere/topics/",
    ):
        response = client.get(path)
        assert response.status_code == 404, path
        assert b"secret" not in response.content or names.secret.encode() in response.content  # no record shown
    unknown = client.get("/api/clusters/local/topics/no-such-topic-at-all/")
    hidden = client.get(f"/api/clusters/local/topics/{names.secret}/")
    assert hidden.json()["error"] == unknown.json()["error"] == "not_found"

    for path in (
        "/clusters/local/",
        "/clusters/local/zookeeper/",
        "/clusters/local/brokers/configs/",
        "/clusters/local/acls/",
        "/clusters/local/disks/",
        "/api/clusters/local/",
        "/audit/",
        "/users/",
    ):
        assert client.get(path).status_code == 403, path

    searched = client.get(f"/api/clusters/local/topics/{names.orders}/search/", {"q": 'value.user == "u1"'})
    assert searched.status_code == 200
    assert searched.json()["matched"] >= 1
    assert client.get(f"/api/clusters/local/groups/{names.group}/").status_code == 200


def test_a_scoped_operator_changes_only_where_its_grants_allow_and_refusals_are_audited(names: Names) -> None:
    client = scoped_client(names)
    written = post_json(client, f"/api/clusters/local/topics/{names.orders}/produce/", {"value": "from alice"})
    assert written.status_code == 201
    assert post_json(client, f"/api/clusters/local/topics/{names.secret}/produce/", {"value": "x"}).status_code == 404
    viewer_only = post_json(client, f"/api/clusters/local/topics/{names.shared}/produce/", {"value": "x"})
    assert viewer_only.status_code == 403
    assert "operator or admin role on" in viewer_only.json()["message"]

    created = post_json(
        client, "/api/clusters/local/topics/", {"name": f"{names.team}.new", "partitions": 1, "replication_factor": 1}
    )
    assert created.status_code == 201, created.content
    elsewhere = post_json(
        client, "/api/clusters/local/topics/", {"name": unique("not-theirs"), "partitions": 1, "replication_factor": 1}
    )
    assert elsewhere.status_code == 403

    sql = {"report": "sql", "sql": f"SELECT count(*) FROM `{names.secret}`", "range": "24h"}  # noqa: S608
    refused_sql = post_json(client, "/api/clusters/local/jobs/", sql)
    assert refused_sql.status_code == 403
    lag_of_all = post_json(client, "/api/clusters/local/jobs/", {"report": "lag", "groups": []})
    assert lag_of_all.status_code == 403  # every group is the whole cluster's

    refused = AuditEntry.objects.filter(username="alice", outcome="refused").values_list("action", flat=True)
    assert {"message.produce", "topic.create", "analytics.start", "access.scoped"} <= set(refused)
    unseen = AuditEntry.objects.get(username="alice", action="access.scoped")
    assert unseen.target == f"/api/clusters/local/topics/{names.secret}/produce/"
    done = AuditEntry.objects.filter(username="alice", outcome="done").values_list("action", flat=True)
    assert {"message.produce", "topic.create"} <= set(done)


def test_a_scoped_user_reads_masked_as_its_role_on_the_topic(names: Names) -> None:
    client = scoped_client(names)
    page = client.get(f"/clusters/local/topics/{names.orders}/partitions/0/").content.decode()
    assert "/a" in page  # no rule: the value as it is


# --- websockets ---------------------------------------------------------------------------------------------------


def _first(headers: list[tuple[bytes, bytes]], path: str) -> tuple[int | None, str]:
    """The close code a websocket gets at once (None when it stays open) and the first text it is sent."""

    async def scenario() -> tuple[int | None, str]:
        ws = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await ws.connect(timeout=10)
        assert connected
        first = await ws.receive_output(timeout=20)
        if first["type"] == "websocket.close":
            return int(first["code"]), ""
        await ws.disconnect()
        return None, str(first.get("text", ""))

    return async_to_sync(scenario)()


def test_a_scoped_users_websockets_follow_its_grants(names: Names) -> None:
    headers = websocket_headers(scoped_client(names))
    assert _first(headers, f"/ws/clusters/local/topics/{names.secret}/tail/")[0] == 4404
    assert _first(headers, f"/ws/clusters/local/topics/{names.secret}/search/")[0] == 4404
    assert _first(headers, f"/ws/clusters/local/topics/{names.orders}/tail/")[0] is None
    assert _first(headers, "/ws/clusters/local/overview/")[0] == 4403
    assert _first(headers, f"/ws/clusters/local/group/?group={names.other_group}")[0] == 4404
    code, groups = _first(headers, "/ws/clusters/local/groups/?grants=local:cluster:*:viewer")  # a forged scope
    assert code is None
    assert names.group in groups
    assert names.other_group not in groups
    admin_code, every = _first(websocket_headers(logged_in("admin")), "/ws/clusters/local/groups/")
    assert admin_code is None
    assert names.other_group in every


# --- managing grants ----------------------------------------------------------------------------------------------


def test_add_user_refuses_a_malformed_grant_and_stores_nothing(names: Names) -> None:
    with pytest.raises(CommandError, match="resource is one of"):
        call_command("add_user", "dora", "--password-stdin", "--grant", "local:topics:x.*:operator")
    with pytest.raises(CommandError, match="role is one of"):
        call_command("add_user", "dora", "--password-stdin", "--grant", "local:topic:x.*:owner")
    assert not User.objects.filter(username="dora").exists()


def test_the_api_and_the_users_page_give_and_take_grants_and_a_teams_grants_reach_its_members(names: Names) -> None:
    admin = logged_in("admin")
    operator = logged_in("operator")
    body = {"team": "payments", "grant": f"local:topic:{names.team}.e*:viewer"}
    assert post_json(operator, "/api/grants/", body).status_code == 403
    given = post_json(admin, "/api/grants/", body)
    assert given.status_code == 201
    assert given.json()["team"] == "payments"
    assert given.json()["pattern"] == f"{names.team}.e*"
    assert post_json(admin, "/api/grants/", {"team": "payments", "grant": "local:topic"}).status_code == 400

    member = User.objects.create_user("pat", password="kz-Pats-Own-Password-5!")
    member.groups.add(Group.objects.get_or_create(name="payments")[0])
    client = Client()
    client.force_login(member)
    listed = {t["name"] for t in client.get("/api/clusters/local/topics/").json()["topics"]}
    assert listed == {names.events}

    form = {
        "user": "pat",
        "team": "",
        "cluster": "local",
        "resource": "group",
        "pattern": f"{names.team}-*",
        "role": "operator",
    }
    unknown = admin.post("/users/grants/", {**form, "user": "nobody-here"})
    assert unknown.status_code == 400
    assert "No user named" in unknown.content.decode()
    assert admin.post("/users/grants/", form).status_code == 302
    users_page = admin.get("/users/").content.decode()
    assert f"local:group:{names.team}-*:operator" in users_page
    assert "team payments" in users_page
    assert [g["group_id"] for g in client.get("/api/clusters/local/groups/").json()["groups"]] == [names.group]

    stored = Grant.objects.get(team="payments")
    assert admin.delete(f"/api/grants/{stored.pk}/").status_code == 200
    assert client.get("/api/clusters/local/topics/").json()["topics"] == []
    actions = set(AuditEntry.objects.filter(username="test-admin").values_list("action", flat=True))
    assert {"user.grant", "user.revoke"} <= actions

    call_command("grant", "payments", "local:cluster:*:viewer", stdout=io.StringIO())
    assert client.get("/clusters/local/brokers/configs/").status_code == 200  # the whole cluster now
    set_role(member, "operator")  # a global role reaches everything beside the grants
    assert client.get("/audit/").status_code == 200
