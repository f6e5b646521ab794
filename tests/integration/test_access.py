"""Who may do what, against the real test cluster: login, roles for each kind of change, read-only
clusters, CSRF, the audit log, websockets' session check, anonymous reading and the metrics token."""

from __future__ import annotations

import csv
import io
import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.core.management import call_command
from django.test import Client

from broker.local import launcher
from console.access import ACTIONS
from console.asgi import application
from console.models import AuditEntry
from tests.conftest import BOOTSTRAP, console_user, logged_in, websocket_headers
from tests.integration.kafka_helpers import admin, create_topic, produce, unique
from tests.integration.test_groups import commit

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db(transaction=True),
    pytest.mark.zookeeper("who may do what does not depend on the cluster's mode: run once"),
]

PAGES = [
    "/clusters/local/",
    "/clusters/local/topics/",
    "/clusters/local/groups/",
    "/audit/",
    "/clusters/local/topics-new/",
]
APIS = ["/api/clusters/", "/api/clusters/local/", "/api/clusters/local/topics/", "/api/audit/", "/metrics"]


@pytest.fixture(autouse=True)
def cluster(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> None:
    """Every test here talks to the test cluster, with fresh cluster settings."""


def eventually(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    """True once ``check()`` is: brokers other than the controller learn of a change a moment later."""
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.2)
    return True


def topic_exists(name: str) -> bool:
    client = admin()
    try:
        return name in client.list_topics()
    finally:
        client.close()


# --- who is asking ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", PAGES)
def test_an_anonymous_page_request_goes_to_the_login_page(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 302
    assert response["Location"].startswith("/login/?next=" + path.rstrip("/"))


@pytest.mark.parametrize("path", APIS)
def test_an_anonymous_api_request_gets_401_json(path: str) -> None:
    response = Client().get(path)
    assert response.status_code == 401
    assert response.json()["error"] == "login_required"


def test_the_health_check_and_the_login_page_need_no_login() -> None:
    assert Client().get("/healthz").status_code == 200
    page = Client().get("/login/")
    assert page.status_code == 200
    assert 'name="password"' in page.content.decode()


def test_logging_in_through_the_form_opens_the_page_asked_for_and_logging_out_closes_it() -> None:
    console_user("viewer", "vera")
    client = Client()
    wrong = client.post("/login/", {"username": "vera", "password": "nope", "next": "/clusters/local/topics/"})
    assert wrong.status_code == 200
    assert "do not match" in wrong.content.decode()
    right = client.post(
        "/login/", {"username": "vera", "password": "test-password-1", "next": "/clusters/local/topics/"}
    )
    assert right.status_code == 302
    assert right["Location"] == "/clusters/local/topics/"
    page = client.get("/clusters/local/topics/").content.decode()
    assert "vera · viewer" in page
    assert client.post("/logout/").status_code == 302
    assert client.get("/clusters/local/topics/").status_code == 302


def test_repeated_failed_logins_lock_that_user_name_out_for_a_while() -> None:
    from django.core.cache import cache

    from console.views.access import LOGIN_FAILURES_ALLOWED

    cache.clear()
    console_user("viewer", "vic")
    client = Client(REMOTE_ADDR="10.0.0.7")
    for _ in range(LOGIN_FAILURES_ALLOWED):
        assert client.post("/login/", {"username": "vic", "password": "guess"}).status_code == 200
    locked = client.post("/login/", {"username": "vic", "password": "test-password-1"})
    assert locked.status_code == 429
    assert "Too many failed logins" in locked.content.decode()
    assert "_auth_user_id" not in client.session
    # Another user from another address is not affected.
    console_user("viewer", "val")
    other = Client(REMOTE_ADDR="10.0.0.8")
    assert other.post("/login/", {"username": "val", "password": "test-password-1"}).status_code == 302
    cache.clear()


def test_a_user_without_a_role_is_refused_with_403() -> None:
    from django.contrib.auth.models import User

    client = Client()
    client.force_login(User.objects.create_user("nobody", password="x" * 10))
    page = client.get("/clusters/local/")
    assert page.status_code == 403
    assert "has no role yet" in page.content.decode()
    api = client.get("/api/clusters/local/")
    assert api.status_code == 403
    assert api.json()["error"] == "forbidden"


# --- each role against each kind of change -------------------------------------------------------


@dataclass
class Change:
    """One kind of change through the API: set-up, the request, and how to tell it was made."""

    action: str
    least_role: str  # the weakest role allowed to make it
    prepare: Callable[[], dict[str, str]]
    path: str
    body: Callable[[dict[str, str]], dict[str, Any]]
    made: Callable[[dict[str, str]], bool]


def _topic() -> dict[str, str]:
    name = create_topic(unique("acc"), partitions=1, replication=1)
    produce(name, [(b"k", b"v")] * 3, partition=0)
    return {"topic": name}


def _group() -> dict[str, str]:
    found = _topic()
    group = unique("acc-group")
    commit(group, {(found["topic"], 0): 1})
    return {**found, "group": group}


def _partitions(topic: str) -> int:
    client = admin()
    try:
        return len(client.describe_topics([topic])[0]["partitions"])
    finally:
        client.close()


def _config(topic: str, name: str) -> str | None:
    """A topic's setting as the brokers report it (kafka-python: {type: {name: {key: data}}})."""
    from kafka.admin import ConfigResource, ConfigResourceType

    client = admin()
    try:
        result = client.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)])
        for by_name in result.values():
            data = by_name.get(topic, {}).get(name)
            if data is not None:
                return str(data["value"] if isinstance(data, dict) else data)
        return None
    finally:
        client.close()


def _committed(group: str, topic: str) -> int | None:
    from kafka.structs import TopicPartition

    client = admin()
    try:
        offsets = client.list_group_offsets([group])[group]
        found = offsets.get(TopicPartition(topic, 0))
        return None if found is None else int(found.offset)
    finally:
        client.close()


def _start_offset(topic: str) -> int:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","))
    try:
        tp = TopicPartition(topic, 0)
        return int(consumer.beginning_offsets([tp])[tp])
    finally:
        consumer.close()


CHANGES = [
    Change(
        "topic.create",
        "operator",
        lambda: {"topic": unique("acc-new")},
        "/api/clusters/local/topics/",
        lambda c: {"name": c["topic"], "partitions": 1, "replication_factor": 1},
        lambda c: topic_exists(c["topic"]),
    ),
    Change(
        "topic.add_partitions",
        "operator",
        _topic,
        "/api/clusters/local/topics/{topic}/partitions/",
        lambda c: {"total": 2},
        lambda c: _partitions(c["topic"]) == 2,
    ),
    Change(
        "topic.configs",
        "operator",
        _topic,
        "/api/clusters/local/topics/{topic}/configs/",
        lambda c: {"set_configs": "retention.ms=3600000"},
        lambda c: _config(c["topic"], "retention.ms") == "3600000",
    ),
    Change(
        "message.produce",
        "operator",
        _topic,
        "/api/clusters/local/topics/{topic}/produce/",
        lambda c: {"value": "made by a test", "partition": 0},
        lambda c: _end_offset(c["topic"]) == 4,
    ),
    Change(
        "group.reset_offsets",
        "operator",
        _group,
        "/api/clusters/local/groups/{group}/reset/",
        lambda c: {"strategy": "to-earliest", "dry_run": False},
        lambda c: _committed(c["group"], c["topic"]) == 0,
    ),
    Change(
        "topic.delete_records",
        "admin",
        _topic,
        "/api/clusters/local/topics/{topic}/delete-records/",
        lambda c: {"partition": 0, "before_offset": 2},
        lambda c: _start_offset(c["topic"]) == 2,
    ),
    Change(
        "topic.delete",
        "admin",
        _topic,
        "/api/clusters/local/topics/{topic}/delete/",
        lambda c: {"confirm": c["topic"]},
        lambda c: not topic_exists(c["topic"]),
    ),
    Change(
        "group.delete_offsets",
        "admin",
        _group,
        "/api/clusters/local/groups/{group}/delete-offsets/",
        lambda c: {"topic": c["topic"]},
        lambda c: _committed(c["group"], c["topic"]) is None,
    ),
    Change(
        "group.delete",
        "admin",
        _group,
        "/api/clusters/local/groups/{group}/delete/",
        lambda c: {},
        lambda c: _committed(c["group"], c["topic"]) is None,
    ),
]
WEAKER = {"operator": "viewer", "admin": "operator"}


def _end_offset(topic: str) -> int:
    from kafka import KafkaConsumer
    from kafka.structs import TopicPartition

    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","))
    try:
        tp = TopicPartition(topic, 0)
        return int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def post_json(client: Client, path: str, body: dict[str, Any]) -> Any:
    return client.post(path, json.dumps(body), content_type="application/json")


@pytest.mark.parametrize("change", CHANGES, ids=lambda c: c.action)
def test_each_change_is_refused_to_the_role_below_and_made_for_the_role_that_may(change: Change) -> None:
    context = change.prepare()
    path = change.path.format(**context)
    weaker = WEAKER[change.least_role]

    refused = post_json(logged_in(weaker), path, change.body(context))
    assert refused.status_code == 403, refused.content
    assert refused.json()["error"] == "forbidden"
    assert f"may not {ACTIONS[change.action].label}" in refused.json()["message"]
    assert not change.made(context), "a refused change was made anyway"

    allowed = post_json(logged_in(change.least_role), path, change.body(context))
    assert allowed.status_code in (200, 201), allowed.content
    assert eventually(lambda: change.made(context)), "the allowed change cannot be seen"

    entries = list(AuditEntry.objects.filter(action=change.action).order_by("at"))
    assert [(e.username, e.outcome) for e in entries] == [
        (f"test-{weaker}", "refused"),
        (f"test-{change.least_role}", "done"),
    ]
    assert all(e.cluster == "local" for e in entries)
    assert entries[1].target == context.get("group", context["topic"])


def test_the_admin_may_make_every_change_an_operator_may() -> None:
    context = _topic()
    client = logged_in("admin")
    response = post_json(client, f"/api/clusters/local/topics/{context['topic']}/produce/", {"value": "by the admin"})
    assert response.status_code == 201
    assert (
        post_json(client, f"/api/clusters/local/topics/{context['topic']}/partitions/", {"total": 3}).status_code == 200
    )


def test_a_viewer_sees_no_change_on_the_pages_and_gets_403_for_the_forms() -> None:
    context = _group()
    viewer, operator = logged_in("viewer"), logged_in("operator")
    topic_page = viewer.get(f"/clusters/local/topics/{context['topic']}/").content.decode()
    assert "Produce</a>" not in topic_page
    assert "Delete topic" not in topic_page
    assert "Add partitions" not in topic_page
    assert "New topic" not in viewer.get("/clusters/local/topics/").content.decode()
    assert "Reset offsets</a>" not in viewer.get(f"/clusters/local/groups/{context['group']}/").content.decode()
    assert viewer.get(f"/clusters/local/topics/{context['topic']}/produce/").status_code == 403
    assert viewer.get(f"/clusters/local/groups/{context['group']}/reset/").status_code == 403
    assert viewer.get("/clusters/local/topics-new/").status_code == 403

    operator_page = operator.get(f"/clusters/local/topics/{context['topic']}/").content.decode()
    assert "Produce</a>" in operator_page
    assert "Add partitions" in operator_page
    assert "Delete topic" not in operator_page  # admins only
    reset_page = operator.get(f"/clusters/local/groups/{context['group']}/reset/").content.decode()
    assert "Delete the group" not in reset_page
    refused = operator.post(f"/clusters/local/topics/{context['topic']}/delete/", {"confirm": context["topic"]})
    assert refused.status_code == 403
    assert "may not delete topics" in refused.content.decode()
    assert topic_exists(context["topic"])


def test_a_page_form_change_is_audited_with_its_parameters_and_result() -> None:
    context = _topic()
    client = logged_in("operator", "olga")
    response = client.post(
        f"/clusters/local/topics/{context['topic']}/produce/",
        {"key": "user-7", "key_format": "text", "value": "hello", "value_format": "text", "headers": "trace=1"},
    )
    assert response.status_code == 200
    entry = AuditEntry.objects.get(action="message.produce")
    assert (entry.username, entry.cluster, entry.target, entry.outcome) == ("olga", "local", context["topic"], "done")
    assert entry.params == {"partition": None, "key": "user-7", "value_bytes": 5, "headers": ["trace"]}
    assert entry.result.startswith("written to partition 0 at offset 3")
    assert entry.remote_addr == "127.0.0.1"

    page = logged_in("viewer").get("/audit/", {"user": "olga"}).content.decode()
    assert "message.produce" in page
    assert "value_bytes = 5" in page
    assert "headers = [&quot;trace&quot;]" in page  # JSON, not Python's ['trace']
    api = logged_in("viewer").get("/api/audit/", {"outcome": "done"}).json()
    assert api["total"] == 1
    assert api["entries"][0]["user"] == "olga"
    exported = logged_in("viewer").get("/audit/", {"user": "olga", "format": "csv"})
    assert exported["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(exported.content.decode())))
    assert [(r["user"], r["action"], r["target"], r["outcome"]) for r in rows] == [
        ("olga", "message.produce", context["topic"], "done")
    ]
    assert json.loads(rows[0]["params"]) == entry.params


def test_a_failed_change_is_audited_as_failed_with_kafkas_reason() -> None:
    context = _topic()
    client = logged_in("operator")
    response = post_json(client, f"/api/clusters/local/topics/{context['topic']}/partitions/", {"total": 1})
    assert response.status_code in (400, 422)
    entry = AuditEntry.objects.get(action="topic.add_partitions")
    assert entry.outcome == "failed"
    assert entry.result == response.json()["message"]


# --- read-only clusters ------------------------------------------------------------------------------


@pytest.fixture
def read_only_cluster(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> str:
    """The test cluster a second time, as `archive`, configured read-only."""
    from console.config.clusters import reset_for_tests

    file = tmp_path / "clusters.toml"
    servers = ", ".join(f'"{s}"' for s in BOOTSTRAP.split(","))
    file.write_text(f"[clusters.archive]\nbootstrap_servers = [{servers}]\nread_only = true\n")
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    reset_for_tests()
    return "archive"


def test_a_read_only_cluster_shows_no_change_and_the_api_refuses_every_one(read_only_cluster: str) -> None:
    context = _group()
    client = logged_in("admin")
    page = client.get(f"/clusters/archive/topics/{context['topic']}/").content.decode()
    assert "is read-only" in page
    for absent in ("Produce</a>", "Add partitions", "Delete topic"):
        assert absent not in page
    assert "Reset offsets</a>" not in client.get(f"/clusters/archive/groups/{context['group']}/").content.decode()
    for change in CHANGES:
        path = change.path.format(**context).replace("/clusters/local/", "/clusters/archive/")
        response = post_json(client, path, change.body(context))
        assert response.status_code == 403, (change.action, response.content)
        assert response.json()["error"] == "read_only"
    assert topic_exists(context["topic"])
    assert _committed(context["group"], context["topic"]) == 1
    assert client.get(f"/clusters/archive/topics/{context['topic']}/produce/").status_code == 403
    refused = AuditEntry.objects.filter(cluster="archive", outcome="refused").count()
    assert refused == len(CHANGES)
    # The same cluster under its writable name still takes changes.
    assert (
        post_json(client, f"/api/clusters/local/topics/{context['topic']}/produce/", {"value": "x"}).status_code == 201
    )
    # Alert rules change nothing in Kafka: offered and taken on a read-only cluster too.
    alerts_page = client.get("/clusters/archive/alerts/").content.decode()
    assert 'id="new-rule"' in alerts_page
    made = post_json(client, "/api/clusters/archive/alerts/rules/", {"name": "ro-lag", "kind": "consumer_lag"})
    assert made.status_code == 201, made.content
    assert (
        "Alert me when it falls behind" in client.get(f"/clusters/archive/groups/{context['group']}/").content.decode()
    )


# --- CSRF ------------------------------------------------------------------------------------------------


def test_a_post_without_the_csrf_token_is_refused_and_changes_nothing() -> None:
    context = _topic()
    client = logged_in("admin")
    client.handler.enforce_csrf_checks = True
    api = post_json(client, f"/api/clusters/local/topics/{context['topic']}/produce/", {"value": "forged"})
    assert api.status_code == 403
    assert api.json()["error"] == "csrf_failed"
    page = client.post(f"/clusters/local/topics/{context['topic']}/delete/", {"confirm": context["topic"]})
    assert page.status_code == 403
    assert "CSRF token" in page.content.decode()
    assert topic_exists(context["topic"])
    assert _end_offset(context["topic"]) == 3

    # What the page's own form sends is accepted.
    client.get(f"/clusters/local/topics/{context['topic']}/produce/")
    token = client.cookies["csrftoken"].value
    ok = client.post(
        f"/api/clusters/local/topics/{context['topic']}/produce/",
        json.dumps({"value": "real"}),
        content_type="application/json",
        headers={"X-CSRFToken": token},
    )
    assert ok.status_code == 201


def test_every_page_carries_the_token_for_htmx_requests() -> None:
    page = logged_in("viewer").get("/clusters/local/topics/").content.decode()
    assert 'hx-headers=\'{"X-CSRFToken": "' in page


# --- websockets --------------------------------------------------------------------------------------------


def _ws_connect(headers: list[tuple[bytes, bytes]], path: str = "/ws/clusters/local/overview/") -> int | None:
    """The close code a websocket opened with ``headers`` gets at once, or None when it stays open and is sent
    its first fragment. A refusal accepts the socket and then closes it, so that the page reads the code."""

    async def scenario() -> int | None:
        ws = WebsocketCommunicator(application, path, headers=headers)
        connected, _ = await ws.connect(timeout=10)
        assert connected, "refused before the handshake: a browser would see a bare HTTP 403"
        first = await ws.receive_output(timeout=10)
        if first["type"] == "websocket.close":
            return int(first["code"])
        await ws.disconnect()
        return None

    return async_to_sync(scenario)()


@pytest.mark.parametrize(
    "path",
    ["/ws/clusters/local/overview/", "/ws/clusters/local/topics/x/search/", "/ws/clusters/local/topics/x/tail/"],
)
def test_a_websocket_without_a_session_is_refused(path: str) -> None:
    assert _ws_connect([(b"origin", b"http://127.0.0.1:8888"), (b"host", b"127.0.0.1:8888")], path) == 4401


def test_a_websocket_of_a_user_without_a_role_is_refused_and_a_viewers_is_accepted() -> None:
    from django.contrib.auth.models import User

    nobody = Client()
    nobody.force_login(User.objects.create_user("nobody", password="x" * 10))
    assert _ws_connect(websocket_headers(nobody)) == 4403
    assert _ws_connect(websocket_headers(logged_in("viewer"))) is None


def test_an_open_websocket_closes_after_a_logout_or_a_lost_role_and_stays_open_otherwise(settings: Any) -> None:
    from channels.db import database_sync_to_async
    from django.contrib.auth.models import User

    settings.KAZAMI_WS_RECHECK = 0.3

    async def close_code_after(headers: list[tuple[bytes, bytes]], change: Callable[[], object]) -> Any:
        ws = WebsocketCommunicator(application, "/ws/clusters/local/topics/x/search/", headers=headers)
        assert (await ws.connect(timeout=10))[0]
        assert await ws.receive_nothing(timeout=1.0)  # several checks pass while nothing changes
        await database_sync_to_async(change)()
        closed = await ws.receive_output(timeout=10)
        assert closed["type"] == "websocket.close"
        return closed["code"]

    leaving = logged_in("viewer", "ws-leaving")
    assert async_to_sync(close_code_after)(websocket_headers(leaving), leaving.logout) == 4401
    demoted = logged_in("viewer", "ws-demoted")
    user = User.objects.get(username="ws-demoted")
    assert async_to_sync(close_code_after)(websocket_headers(demoted), user.groups.clear) == 4403


def test_a_websocket_from_another_origin_is_refused_even_with_a_session() -> None:
    headers = websocket_headers(logged_in("admin"))
    forged = [(b"origin", b"http://evil.example"), *headers[1:]]
    assert _ws_connect(forged) == 4400


# --- anonymous reading, the metrics token, users ----------------------------------------------------------


def test_anonymous_reading_lets_visitors_read_but_not_change(settings: Any) -> None:
    settings.KAZAMI_ANONYMOUS_READ = True
    context = _topic()
    client = Client()
    assert client.get("/clusters/local/topics/").status_code == 200
    assert client.get("/api/clusters/local/").status_code == 200
    refused = post_json(client, f"/api/clusters/local/topics/{context['topic']}/produce/", {"value": "anon"})
    assert refused.status_code == 403
    assert "anonymous" in refused.json()["message"]
    assert AuditEntry.objects.get(action="message.produce").username == "anonymous"
    assert _ws_connect([(b"origin", b"http://127.0.0.1:8888"), (b"host", b"127.0.0.1:8888")]) is None


def test_metrics_take_a_bearer_token_when_one_is_set(settings: Any) -> None:
    settings.KAZAMI_METRICS_TOKEN = "s3cret-token"
    assert Client().get("/metrics").status_code == 401
    assert Client().get("/metrics", headers={"Authorization": "Bearer wrong"}).status_code == 401
    scraped = Client().get("/metrics", headers={"Authorization": "Bearer s3cret-token"})
    assert scraped.status_code == 200
    assert "kazami_cluster_up" in scraped.content.decode() or "kazami_consumer_lag" in scraped.content.decode()
    # The token opens nothing else.
    assert Client().get("/api/clusters/", headers={"Authorization": "Bearer s3cret-token"}).status_code == 401


def test_an_admin_creates_users_and_changes_roles_on_the_users_page() -> None:
    from django.contrib.auth.models import User

    from console.access import role_of

    client = logged_in("admin", "ada")
    page = client.get("/users/")
    assert page.status_code == 200
    made = client.post("/users/", {"username": "otto", "password": "long-enough-1", "role": "operator"})
    assert made.status_code == 302
    otto = User.objects.get(username="otto")
    assert role_of(otto) == "operator"
    assert Client().login(username="otto", password="long-enough-1")
    short = client.post("/users/", {"username": "pia", "password": "short", "role": "viewer"})
    assert short.status_code == 400
    assert client.post("/users/otto/", {"role": "viewer", "active": ""}).status_code == 302
    otto.refresh_from_db()
    assert (role_of(otto), otto.is_active) == ("viewer", False)
    boss = User.objects.create_superuser("boss", password="long-enough-2")
    assert client.post("/users/boss/", {"role": "operator", "active": "on"}).status_code == 302
    boss = User.objects.get(username="boss")  # permissions are cached on the instance
    assert (role_of(boss), boss.is_superuser, boss.has_perm("console.delete_topics")) == ("operator", False, False)
    myself = client.post("/users/ada/", {"role": "viewer", "active": "on"})
    assert myself.status_code == 400
    assert [e.action for e in AuditEntry.objects.order_by("at")] == ["user.create", "user.change", "user.change"]
    assert logged_in("operator").get("/users/").status_code == 403
    assert "Users</a>" not in logged_in("operator").get("/clusters/local/").content.decode()


def test_old_audit_entries_are_pruned_on_demand_and_recent_ones_kept() -> None:
    import io
    from datetime import timedelta

    from django.core.management.base import CommandError
    from django.utils import timezone

    now = timezone.now()
    for days in (400, 200, 10):
        AuditEntry.objects.create(
            at=now - timedelta(days=days), username="old", action="topic.create", target=f"t{days}", outcome="done"
        )
    out = io.StringIO()
    call_command("prune_audit", "--older-than-days", "180", "--dry-run", stdout=out)
    assert out.getvalue().startswith("2 audit entries are older than")
    assert AuditEntry.objects.count() == 3
    out = io.StringIO()
    call_command("prune_audit", "--older-than-days", "180", stdout=out)
    assert "Deleted 2 audit entries" in out.getvalue()
    assert list(AuditEntry.objects.values_list("target", flat=True)) == ["t10"]
    with pytest.raises(CommandError, match="at least 1"):
        call_command("prune_audit", "--older-than-days", "0")


def test_the_first_start_creates_an_admin_and_says_how_to_log_in(settings: Any, tmp_path: Path) -> None:
    import io

    from django.contrib.auth.models import User

    settings.VAR_DIR = tmp_path
    out = io.StringIO()
    call_command("local_admin", stdout=out)
    password = (tmp_path / "admin-password").read_text().strip()
    assert f"as admin with password {password}" in out.getvalue()
    assert (tmp_path / "admin-password").stat().st_mode & 0o777 == 0o600
    assert Client().login(username="admin", password=password)
    again = io.StringIO()
    call_command("local_admin", stdout=again)
    assert password not in again.getvalue()
    assert User.objects.count() == 1


# --- the content-security policy ----------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/clusters/local/", "/api/clusters/local/", "/login/", "/nothing-here/"])
def test_every_response_forbids_inline_scripts(path: str) -> None:
    response = logged_in("viewer").get(path)
    policy = response["Content-Security-Policy"]
    assert "script-src 'self'" in policy
    assert "unsafe-inline" not in policy
    assert "object-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
