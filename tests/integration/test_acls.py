"""ACLs and SCRAM users against a real authorizer (tests/acl_cluster.py: AclAuthorizer in ZooKeeper mode, or
StandardAuthorizer on the KRaft run), through the console's API and pages as the console's own SASL_SSL user:
a SCRAM user created in the console is refused reading a topic, allowed once the console creates its ACLs and
refused again once they are deleted, each proven by a real consumer with that user's credentials over
SASL_SSL; bad input refused before anything is sent; viewers read and cannot change; the audit log keeps no
password."""

from __future__ import annotations

import logging
import re
import secrets
import time
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import AuthorizationError

from broker.security import acls
from console.models import AuditEntry
from tests.acl_cluster import NAME, PASSWORD_ENV, AclCluster
from tests.conftest import logged_in

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]

API = f"/api/clusters/{NAME}/acls/"
USERS = f"/api/clusters/{NAME}/users/"


@pytest.fixture
def console(
    acl_cluster: AclCluster, clusters_reset: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> AclCluster:
    """The console under test knows the secured cluster as ``secure`` (its SASL_SSL listener, as kazami-scram)."""
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(acl_cluster.write_clusters_file(tmp_path)))
    monkeypatch.setenv(PASSWORD_ENV, acl_cluster.admin_password)
    from console.config.clusters import reset_for_tests

    reset_for_tests()
    return acl_cluster


@pytest.fixture
def admin(console: AclCluster) -> Client:
    return logged_in("admin")


def unique(prefix: str) -> str:
    return f"{prefix}-{secrets.token_hex(3)}"


def make_topic(cluster: AclCluster, name: str, values: list[bytes]) -> None:
    """Create ``name`` with ``values`` over the PLAINTEXT listener (a super user there)."""
    admin = KafkaAdminClient(bootstrap_servers=[cluster.plaintext])
    try:
        admin.create_topics([NewTopic(name, 1, 1)])
    finally:
        admin.close()
    producer = KafkaProducer(bootstrap_servers=[cluster.plaintext])
    try:
        for value in values:
            producer.send(name, value)
        producer.flush()
    finally:
        producer.close()


def read_as(
    cluster: AclCluster, user: str, password: str, topic: str, group: str, timeout: float = 8, **options: Any
) -> list[bytes]:
    """What a real consumer of ``topic`` in ``group`` with ``user``'s SCRAM-SHA-512 credentials reads over
    SASL_SSL within ``timeout``; AuthorizationError when the authorizer refuses it."""
    consumer = KafkaConsumer(
        group_id=group,
        auto_offset_reset="earliest",
        enable_auto_commit=False,
        **{**cluster.client_options(user, password), **options},
    )
    try:
        consumer.subscribe([topic])
        got: list[bytes] = []
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and not got:
            for records in consumer.poll(timeout_ms=500).values():
                got += [r.value for r in records]
        return got
    finally:
        consumer.close(autocommit=False)


def refused(cluster: AclCluster, user: str, password: str, topic: str, group: str) -> str:
    """The authorization error a consumer meets (asked a few times: ACLs reach a broker a moment after they
    change); fails when it reads instead."""
    deadline = time.monotonic() + 30
    while True:
        try:
            got = read_as(cluster, user, password, topic, group, timeout=4)
        except AuthorizationError as exc:
            return type(exc).__name__
        assert time.monotonic() < deadline, f"{user} read {got} from {topic}: it should have been refused"
        time.sleep(1)


def reads(cluster: AclCluster, user: str, password: str, topic: str, group: str) -> list[bytes]:
    deadline = time.monotonic() + 30
    while True:
        try:
            got = read_as(cluster, user, password, topic, group)
            if got:
                return got
        except AuthorizationError:
            pass
        assert time.monotonic() < deadline, f"{user} could not read {topic} after its ACLs were created"
        time.sleep(1)


def test_a_scram_user_is_refused_then_allowed_by_a_console_acl_then_refused_after_its_deletion(
    console: AclCluster, admin: Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="kafka")
    name, password = unique("reader"), "pw-" + secrets.token_urlsafe(12)
    topic, group = unique("acl-orders"), unique("acl-billing")
    make_topic(console, topic, [b"order-1", b"order-2"])

    created = admin.post(
        USERS,
        {"name": name, "password": password, "mechanisms": ["SCRAM-SHA-512"], "iterations": 4096},
        content_type="application/json",
    )
    assert created.status_code == 200, created.content
    assert created.json()["created"]["credentials"] == [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}]
    listed = admin.get(USERS).json()["users"]
    assert {
        "name": name,
        "principal": f"User:{name}",
        "credentials": [{"mechanism": "SCRAM-SHA-512", "iterations": 4096}],
    } in listed
    assert password not in str(listed)
    # The request that stored it is logged with the salted password masked (it authenticates like the password).
    assert "AlterUserScramCredentials" in caplog.text
    assert re.search(r"salted_password=b(\'\*\*\*\'|\"\*\*\*\")", caplog.text)
    assert not re.search(r"salted_password=b[\'\"](?!\*\*\*)", caplog.text)
    assert password not in caplog.text

    # No ACL: the authorizer refuses the new user.
    assert refused(console, name, password, topic, group).endswith("AuthorizationFailedError")

    # The consumer helper: previewed (dry run), then created.
    helper = {"helper": "consumer", "principal": f"User:{name}", "topic": topic, "group": group}
    preview = admin.post(API, {**helper, "dry_run": True}, content_type="application/json").json()["would_create"]
    assert {(b["resource_type"], b["resource_name"], b["operation"]) for b in preview} == {
        ("TOPIC", topic, "READ"),
        ("TOPIC", topic, "DESCRIBE"),
        ("GROUP", group, "READ"),
    }
    made = admin.post(API, helper, content_type="application/json")
    assert made.status_code == 200, made.content
    listed_acls = admin.get(API, {"principal": f"User:{name}"}).json()["acls"]
    assert sorted(listed_acls, key=str) == sorted(preview, key=str)

    assert reads(console, name, password, topic, group) == [b"order-1", b"order-2"]

    # The topic's own view finds them (MATCH: literal, prefixed and wildcard rules on the name).
    on_topic = admin.get(API, {"resource_type": "TOPIC", "resource_name": topic, "pattern_type": "MATCH"}).json()
    assert {b["operation"] for b in on_topic["acls"] if b["principal"] == f"User:{name}"} == {"READ", "DESCRIBE"}
    page = admin.get(f"/clusters/{NAME}/topics/{topic}/acls/")
    assert page.status_code == 200
    assert f"User:{name}" in page.content.decode()

    # The principal's page decides as the authorizer does.
    decided = admin.get(f"/api/clusters/{NAME}/acls/principals/User:{name}/").json()
    # Kafka hides the authorizer's own settings (super.users, ...) from DescribeConfigs; the answer says so.
    assert "super.users" in decided["authorizer"]["hidden"]
    assert decided["authorizer"]["allow_everyone_if_no_acl_found"] is False
    rights = decided["rights"]
    on_topic_rights = next(r for r in rights if r["resource_type"] == "TOPIC")
    assert set(on_topic_rights["allowed"]) == {"READ", "DESCRIBE"}
    assert "WRITE" in on_topic_rights["denied"]

    # Delete: the preview shows exactly the user's three bindings; the deletion removes them.
    would = admin.delete(f"{API}?principal=User:{name}&dry_run=1").json()["would_delete"]
    assert sorted(would, key=str) == sorted(preview, key=str)
    deleted = admin.delete(f"{API}?principal=User:{name}")
    assert deleted.status_code == 200, deleted.content
    assert len(deleted.json()["deleted"]) == 3
    assert admin.get(API, {"principal": f"User:{name}"}).json()["acls"] == []

    assert refused(console, name, password, topic, group).endswith("AuthorizationFailedError")

    # The audit log: a password was set, never which.
    entries = AuditEntry.objects.filter(cluster=NAME, target=f"User:{name}")
    assert {e.action for e in entries} >= {"scram.create", "acls.create", "acls.delete"}
    for entry in AuditEntry.objects.all():
        assert password not in str(entry.params) + entry.result
    create = entries.get(action="scram.create")
    assert create.outcome == "done"
    assert create.params["password"] == "(hidden)"

    gone = admin.delete(f"{USERS}{name}/")
    assert gone.status_code == 200, gone.content
    assert name not in {u["name"] for u in admin.get(USERS).json()["users"]}


def test_changing_a_password_lets_only_the_new_one_in(console: AclCluster, admin: Client) -> None:
    name, first, second = unique("changer"), "first-" + secrets.token_hex(6), "second-" + secrets.token_hex(6)
    topic, group = unique("acl-pw"), unique("acl-pw-group")
    make_topic(console, topic, [b"x"])
    assert admin.post(USERS, {"name": name, "password": first}, content_type="application/json").status_code == 200
    again = admin.post(USERS, {"name": name, "password": first}, content_type="application/json")
    assert again.status_code == 409
    helper = {"helper": "consumer", "principal": f"User:{name}", "topic": topic, "group": group}
    assert admin.post(API, helper, content_type="application/json").status_code == 200
    assert reads(console, name, first, topic, group) == [b"x"]
    changed = admin.post(f"{USERS}{name}/", {"password": second}, content_type="application/json")
    assert changed.status_code == 200, changed.content
    assert {c["mechanism"] for c in changed.json()["changed"]["credentials"]} == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert reads(console, name, second, topic, group) == [b"x"]
    from kafka.errors import KafkaError

    with pytest.raises(KafkaError):  # the old password no longer authenticates (the bootstrap fails)
        read_as(console, name, first, topic, group, timeout=3, bootstrap_timeout_ms=3000)
    admin.delete(f"{API}?principal=User:{name}")
    admin.delete(f"{USERS}{name}/")


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        (
            {"acls": [{"principal": "user:bob", "operation": "READ", "resource_type": "TOPIC", "resource_name": "t"}]},
            "Unknown principal type 'user'",
        ),
        (
            {"acls": [{"principal": "User:bob", "operation": "WRITE", "resource_type": "GROUP", "resource_name": "g"}]},
            "A group has no WRITE operation",
        ),
        ({"helper": "consumer", "principal": "Usr:bob", "topic": "t", "group": "g"}, "Did you mean User:bob?"),
    ],
)
def test_bad_acls_are_refused_before_anything_is_sent(
    console: AclCluster, admin: Client, body: dict[str, Any], reason: str
) -> None:
    before = admin.get(API).json()["acls"]
    answer = admin.post(API, body, content_type="application/json")
    assert answer.status_code == 400, answer.content
    assert answer.json()["error"] == "invalid_input"
    assert reason in answer.json()["message"]
    assert admin.get(API).json()["acls"] == before
    assert not AuditEntry.objects.filter(action="acls.create").exists()


def test_a_filter_that_matches_everything_deletes_nothing(console: AclCluster, admin: Client) -> None:
    answer = admin.delete(API)
    assert answer.status_code == 400
    assert "Narrow the filter" in answer.json()["message"]
    # The generated users' ACLs are still there.
    assert admin.get(API, {"principal": f"User:{console.listener.user_for('SCRAM-SHA-512').name}"}).json()["acls"]


def test_a_viewer_reads_acls_and_users_and_changes_nothing(console: AclCluster) -> None:
    viewer = logged_in("viewer")
    assert viewer.get(API).status_code == 200
    assert viewer.get(USERS).status_code == 200
    assert viewer.get(f"/clusters/{NAME}/acls/").status_code == 200
    body = {"helper": "consumer", "principal": "User:v", "topic": "t", "group": "g"}
    refused_post = viewer.post(API, body, content_type="application/json")
    assert refused_post.status_code == 403
    assert "may not create ACLs" in refused_post.json()["message"]
    assert viewer.delete(f"{API}?principal=User:v").status_code == 403
    pw = "viewer-" + secrets.token_hex(8)
    assert viewer.post(USERS, {"name": "v", "password": pw}, content_type="application/json").status_code == 403
    assert (
        viewer.post(f"/clusters/{NAME}/acls/users/", {"action": "create", "name": "v", "password": pw}).status_code
        == 403
    )
    assert set(AuditEntry.objects.filter(username="test-viewer").values_list("outcome", flat=True)) == {"refused"}
    for entry in AuditEntry.objects.all():
        assert pw not in str(entry.params)


def test_the_pages_create_preview_export_and_import(console: AclCluster, admin: Client) -> None:
    principal = f"User:{unique('page')}"
    topic = unique("acl-page")
    fields = {"helper": "producer", "principal": principal, "topic": topic, "host": "*"}
    preview = admin.get(f"/clusters/{NAME}/acls/new/", fields)
    assert preview.status_code == 200
    assert preview.content.decode().count("<tr data-operation=") == 3
    made = admin.post(f"/clusters/{NAME}/acls/new/", fields)
    assert made.status_code == 302
    listed = admin.get(f"/clusters/{NAME}/acls/", {"principal": principal})
    assert listed.content.decode().count(f'data-principal="{principal}"') == 3

    exported = admin.get(f"/clusters/{NAME}/acls/export.csv", {"principal": principal}).content.decode()
    assert len(acls.from_csv(exported)) == 3
    other = f"User:{unique('imported')}"
    imported = admin.post(f"/clusters/{NAME}/acls/import/", {"csv": exported.replace(principal, other)})
    assert imported.status_code == 302
    assert len(admin.get(API, {"principal": other}).json()["acls"]) == 3

    # Delete through the page: the preview lists exactly the bindings, the form carries them back.
    page = admin.get(f"/clusters/{NAME}/acls/delete/", {"principal": other}).content.decode()
    assert page.count('name="binding"') == 3
    bindings = [b.encoded for b in acls.from_csv(exported.replace(principal, other))]
    done = admin.post(f"/clusters/{NAME}/acls/delete/", {"binding": bindings})
    assert done.status_code == 302
    assert admin.get(API, {"principal": other}).json()["acls"] == []
    assert admin.delete(f"{API}?principal={principal}").status_code == 200

    # A bad CSV imports nothing and says which line.
    bad = "principal,operation,resource_type,resource_name\nUser:a,READ,TOPIC,t\nUser:a,WRITE,GROUP,g\n"
    response = admin.post(f"/clusters/{NAME}/acls/import/", {"csv": bad}, follow=True)
    assert "Line 3: A group has no WRITE operation" in response.content.decode()
    assert admin.get(API, {"principal": "User:a"}).json()["acls"] == []


def test_a_cluster_without_an_authorizer_says_so_plainly(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_authorizer(*_: Any, **__: Any) -> Any:
        raise acls.NoAuthorizer(acls.NO_AUTHORIZER)

    monkeypatch.setattr(acls, "list_acls", no_authorizer)
    viewer = logged_in("viewer")
    answer = viewer.get("/api/clusters/local/acls/")
    assert answer.status_code == 409
    assert "SECURITY_DISABLED" in answer.json()["message"]
    page = viewer.get("/clusters/local/acls/")
    assert page.status_code == 200
    assert "No authorizer." in page.content.decode()
    # An admin is not offered to create ACLs the brokers cannot take: the link is shown disabled, with why.
    admin_page = logged_in().get("/clusters/local/acls/").content.decode()
    assert '<span class="disabled" id="acl-new-link" title="The brokers run no authorizer' in admin_page
    with pytest.raises(acls.NoAuthorizer):
        acls._check(54, None, "list the ACLs")
