"""Creating, changing and deleting znodes through the console, and reading znodes behind a digest ACL,
against the session cluster's real ZooKeeper. Everything happens under a scratch znode of each test's own
(``/kazami-test-<uuid>``), deleted afterwards."""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from django.test import Client
from kazoo.client import KazooClient
from kazoo.security import make_digest_acl

from broker.local import launcher
from broker.zk.client import close_clients
from broker.zk.writes import WARNINGS
from console.config.clusters import get_configs
from console.models import AuditEntry
from tests.conftest import ZOOKEEPER_PORT, logged_in

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db,
    pytest.mark.zookeeper("it changes znodes in the ZooKeeper of a ZooKeeper-mode cluster"),
]

API = "/api/clusters/local/zookeeper/"
PAGE = "/clusters/local/zookeeper/"
CHANGE = "/clusters/local/zookeeper/change/"
ZK_USER, ZK_PASSWORD = "kazami-test", "zk-s3cr3t-pw"


@pytest.fixture
def zk(kafka_cluster: launcher.ClusterLayout) -> Iterator[KazooClient]:
    """A kazoo client of the test's own, presenting the digest credentials the ACL tests use."""
    client = KazooClient(hosts=f"127.0.0.1:{ZOOKEEPER_PORT}", auth_data=[("digest", f"{ZK_USER}:{ZK_PASSWORD}")])
    client.start(timeout=15)
    yield client
    client.stop()
    client.close()


@pytest.fixture
def scratch(zk: KazooClient) -> Iterator[str]:
    path = f"/kazami-test-{uuid.uuid4().hex[:12]}"
    zk.create(path, b"scratch")
    yield path
    if zk.exists(path):
        zk.delete(path, recursive=True)


def configure(monkeypatch: pytest.MonkeyPatch, **env: str) -> None:
    """The default cluster (``local``) configured from these environment variables from now on."""
    from console.config.clusters import reset_for_tests

    for name in ("ZOOKEEPER_WRITES", "ZOOKEEPER_AUTH", "ZOOKEEPER_ACL", "KAZAMI_READ_ONLY"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    reset_for_tests()
    close_clients()


@pytest.fixture(autouse=True)
def no_sessions_left() -> Iterator[None]:
    """The console's ZooKeeper sessions end with each test (none lingers when the session's cluster stops)."""
    yield
    close_clients()


@pytest.fixture
def writable(clusters_reset: None, monkeypatch: pytest.MonkeyPatch) -> None:
    configure(monkeypatch, ZOOKEEPER_WRITES="1")


def change(client: Client, body: dict[str, Any]) -> Any:
    return client.post(API, json.dumps(body), content_type="application/json")


def audit(path: str) -> list[tuple[str, str, str]]:
    """(action, outcome, user) of each audit entry about ``path``, oldest first."""
    entries = AuditEntry.objects.filter(target=path).order_by("id")
    return [(e.action, e.outcome, e.username) for e in entries]


def node(client: Client, path: str) -> dict[str, Any]:
    response = client.get(API, {"path": path})
    assert response.status_code == 200, response.content
    body: dict[str, Any] = response.json()
    return body


# ---------------------------------------------------------------- writes off


def test_with_writes_off_every_change_is_refused_and_audited(
    scratch: str, zk: KazooClient, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch)
    admin = logged_in("admin")
    child = f"{scratch}/new"
    for body in (
        {"op": "create", "path": child, "data": "x"},
        {"op": "set", "path": scratch, "data": "x", "version": 0},
        {"op": "delete", "path": scratch, "version": 0},
    ):
        response = change(admin, body)
        assert response.status_code == 403, response.content
        assert response.json()["error"] == "zookeeper_writes_off"
        assert "set zookeeper_writes" in response.json()["message"]
    assert zk.get(scratch)[0] == b"scratch"
    assert zk.exists(child) is None
    assert audit(child) == [("zookeeper.create", "refused", "test-admin")]
    assert audit(scratch) == [("zookeeper.set", "refused", "test-admin"), ("zookeeper.delete", "refused", "test-admin")]
    # The page shows no form, and tells an admin why.
    html = admin.get(PAGE, {"path": scratch}).content.decode()
    assert 'id="zk-writes-off"' in html
    assert 'id="zk-write"' not in html
    assert 'id="zk-writes-off"' not in logged_in("viewer").get(PAGE, {"path": scratch}).content.decode()
    # The page's form is refused the same way.
    page = admin.post(CHANGE, {"action": "set", "path": scratch, "data": "y", "version": "0"})
    assert page.status_code == 403
    assert "turned off" in page.content.decode()


def test_a_read_only_cluster_refuses_writes_even_with_zookeeper_writes_on(
    scratch: str, zk: KazooClient, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    configure(monkeypatch, ZOOKEEPER_WRITES="1", KAZAMI_READ_ONLY="1")
    response = change(logged_in("admin"), {"op": "set", "path": scratch, "data": "x", "version": 0})
    assert response.status_code == 403
    assert response.json()["error"] == "read_only"
    assert zk.get(scratch)[0] == b"scratch"
    assert 'id="zk-write"' not in logged_in("admin").get(PAGE, {"path": scratch}).content.decode()


# ---------------------------------------------------------------- writes on


def test_an_admin_creates_sets_and_deletes_znodes_each_change_audited(
    scratch: str, zk: KazooClient, writable: None
) -> None:
    admin = logged_in("admin")
    child = f"{scratch}/config"
    created = change(admin, {"op": "create", "path": child, "data": '{"a": 1}'})
    assert created.status_code == 201, created.content
    assert created.json()["stat"]["version"] == 0
    assert zk.get(child)[0] == b'{"a": 1}'
    read = node(admin, child)
    assert read["data"] == '{"a": 1}'
    assert read["acl"] == [{"scheme": "world", "id": "anyone", "perms": ["create", "delete", "read", "write", "admin"]}]

    # Set against the version read: done. Against a version someone moved since: 409, nothing changed.
    done = change(admin, {"op": "set", "path": child, "data": '{"a": 2}', "version": 0})
    assert done.status_code == 200, done.content
    assert done.json()["stat"]["version"] == 1
    stale = change(admin, {"op": "set", "path": child, "data": '{"a": 3}', "version": 0})
    assert stale.status_code == 409
    assert stale.json()["error"] == "version_moved"
    assert "changed by someone else" in stale.json()["message"]
    assert "version 1 now, not 0" in stale.json()["message"]
    assert zk.get(child)[0] == b'{"a": 2}'

    # Binary data goes as base64 and comes back the same way.
    binary = change(admin, {"op": "set", "path": child, "data": "AAH/", "data_encoding": "base64", "version": 1})
    assert binary.status_code == 200
    assert zk.get(child)[0] == b"\x00\x01\xff"
    assert node(admin, child)["data_encoding"] == "base64"

    # Creating what exists: 409; under a parent that does not exist: 404.
    again = change(admin, {"op": "create", "path": child})
    assert again.status_code == 409
    assert again.json()["error"] == "already_exists"
    orphan = change(admin, {"op": "create", "path": f"{scratch}/no/such"})
    assert orphan.status_code == 404
    assert f"{scratch}/no" in orphan.json()["message"]

    # A znode with children is deleted only recursively, and then with everything under it at once.
    change(admin, {"op": "create", "path": f"{child}/deeper"})
    change(admin, {"op": "create", "path": f"{child}/deeper/deepest"})
    refused = change(admin, {"op": "delete", "path": scratch, "version": 0})
    assert refused.status_code == 409
    assert refused.json()["error"] == "has_children"
    assert zk.exists(child) is not None
    stale_delete = change(admin, {"op": "delete", "path": child, "version": 0, "recursive": True})
    assert stale_delete.status_code == 409
    assert stale_delete.json()["error"] == "version_moved"
    assert zk.exists(f"{child}/deeper/deepest") is not None  # nothing went
    deleted = change(admin, {"op": "delete", "path": child, "version": 2, "recursive": True})
    assert deleted.status_code == 200, deleted.content
    assert deleted.json()["deleted"] == 3
    assert zk.exists(child) is None
    assert client_get_status(admin, child) == 404
    gone = change(admin, {"op": "delete", "path": child, "version": -1})
    assert gone.status_code == 404

    assert audit(child) == [
        ("zookeeper.create", "done", "test-admin"),
        ("zookeeper.set", "done", "test-admin"),
        ("zookeeper.set", "failed", "test-admin"),
        ("zookeeper.set", "done", "test-admin"),
        ("zookeeper.create", "failed", "test-admin"),
        ("zookeeper.delete", "failed", "test-admin"),
        ("zookeeper.delete", "done", "test-admin"),
        ("zookeeper.delete", "failed", "test-admin"),
    ]
    entry = AuditEntry.objects.filter(target=child, action="zookeeper.set", outcome="done").order_by("id").first()
    assert entry is not None
    assert entry.params == {"data_length": 8, "version": 0}  # the size, never the data
    assert entry.result == "8 bytes, version 0 -> 1"


def client_get_status(client: Client, path: str) -> int:
    return int(client.get(API, {"path": path}).status_code)


@pytest.mark.parametrize("role", ["viewer", "operator"])
def test_a_viewer_or_operator_may_not_write_and_each_attempt_is_audited(
    scratch: str, zk: KazooClient, writable: None, role: str
) -> None:
    user = logged_in(role)
    for body in (
        {"op": "create", "path": f"{scratch}/x"},
        {"op": "set", "path": scratch, "data": "x", "version": 0},
        {"op": "delete", "path": scratch, "version": 0},
    ):
        response = change(user, body)
        assert response.status_code == 403
        assert response.json()["error"] == "forbidden"
        assert "needs the admin role" in response.json()["message"]
    assert zk.get(scratch)[0] == b"scratch"
    assert audit(scratch) == [
        ("zookeeper.set", "refused", f"test-{role}"),
        ("zookeeper.delete", "refused", f"test-{role}"),
    ]
    assert audit(f"{scratch}/x") == [("zookeeper.create", "refused", f"test-{role}")]
    assert 'id="zk-write"' not in user.get(PAGE, {"path": scratch}).content.decode()
    assert user.post(CHANGE, {"action": "delete", "path": scratch, "version": "0"}).status_code == 403


@pytest.mark.parametrize(
    ("body", "code"),
    [
        ({"op": "create", "path": "no-slash"}, "invalid_input"),
        ({"op": "create", "path": "/a//b"}, "invalid_input"),
        ({"op": "rename", "path": "/x"}, "invalid_input"),
        ({"path": "/x"}, "invalid_input"),
        ({"op": "set", "path": "/x", "data": "y"}, "invalid_input"),  # no version
        ({"op": "set", "path": "/x", "data": "y", "version": "new"}, "invalid_input"),
        ({"op": "set", "path": "/x", "data": "%%", "data_encoding": "base64", "version": 0}, "invalid_input"),
        ({"op": "set", "path": "/x", "data": 5, "version": 0}, "invalid_input"),
        ({"op": "create", "path": "/x", "data": "x" * 1_000_001}, "invalid_input"),
    ],
)
def test_a_malformed_change_is_400(writable: None, body: dict[str, Any], code: str) -> None:
    response = change(logged_in("admin"), body)
    assert response.status_code == 400, response.content
    assert response.json()["error"] == code


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"op": "delete", "path": "/brokers/ids/0", "version": -1}, "Stop the broker instead"),
        ({"op": "delete", "path": "/brokers", "version": -1, "recursive": True}, "it holds /brokers/ids"),
        ({"op": "delete", "path": "/", "version": -1, "recursive": True}, "(the root)"),
        ({"op": "delete", "path": "/zookeeper", "version": -1}, "ZooKeeper's own"),
        ({"op": "delete", "path": "/cluster/id", "version": -1}, "refuse to start"),
        ({"op": "set", "path": "/brokers/ids/0", "data": "{}", "version": -1}, "written by the brokers"),
        ({"op": "create", "path": "/brokers/ids/99", "data": "{}"}, "written by the brokers"),
    ],
)
def test_the_znodes_kafka_depends_on_are_protected_saying_why(
    writable: None, zk: KazooClient, body: dict[str, Any], says: str
) -> None:
    before = zk.get_children("/brokers/ids")
    response = change(logged_in("admin"), body)
    assert response.status_code == 403, response.content
    assert response.json()["error"] == "protected"
    assert says in response.json()["message"]
    assert zk.get_children("/brokers/ids") == before
    assert audit(body["path"])[-1][1] == "refused"


# ---------------------------------------------------------------- the node page


def test_the_node_page_changes_a_znode_after_a_confirmation_page(scratch: str, zk: KazooClient, writable: None) -> None:
    admin = logged_in("admin")
    html = admin.get(PAGE, {"path": scratch}).content.decode()
    assert 'id="zk-write"' in html
    assert 'name="csrfmiddlewaretoken"' in html
    assert 'name="version" value="0"' in html
    assert "\nscratch</textarea>" in html  # the data to edit, after the newline a textarea drops
    assert 'id="zk-acl"' in html

    # Set: first what it will do, then, confirmed, done; the browser's CR LF become LF.
    form = {"action": "set", "path": scratch, "data": "line 1\r\nline 2", "version": "0"}
    ask = admin.post(CHANGE, form)
    assert ask.status_code == 200
    assert "Change znode" in ask.content.decode()
    assert "still at version 0" in ask.content.decode()
    assert zk.get(scratch)[0] == b"scratch"
    done = admin.post(CHANGE, {**form, "confirmed": "1"})
    assert done.status_code == 302
    assert done["Location"] == f"{PAGE}?path={scratch}"
    assert zk.get(scratch)[0] == b"line 1\nline 2"
    assert "changed: version 1" in admin.get(done["Location"]).content.decode()

    # The same form again is stale now: the page says so and keeps what was typed.
    stale = admin.post(CHANGE, {**form, "data": "my edit", "confirmed": "1"})
    assert stale.status_code == 409
    html = stale.content.decode()
    assert 'id="zk-change-error"' in html
    assert "changed by someone else" in html
    assert "\nmy edit</textarea>" in html
    assert 'name="version" value="1"' in html

    # Create a child, then delete the scratch node with it.
    created = admin.post(CHANGE, {"action": "create", "path": scratch, "name": "kid", "data": "k", "confirmed": "1"})
    assert created.status_code == 302
    assert created["Location"] == f"{PAGE}?path={scratch}/kid"
    assert zk.get(f"{scratch}/kid")[0] == b"k"
    ask = admin.post(CHANGE, {"action": "delete", "path": scratch, "version": "1", "recursive": "1"})
    assert "Delete znode" in ask.content.decode()
    assert "in one transaction" in ask.content.decode()
    deleted = admin.post(
        CHANGE, {"action": "delete", "path": scratch, "version": "1", "recursive": "1", "confirmed": "1"}
    )
    assert deleted.status_code == 302
    assert deleted["Location"] == f"{PAGE}?path=/"
    assert zk.exists(scratch) is None
    assert [a for a, outcome, _ in audit(scratch) if outcome == "done"] == ["zookeeper.set", "zookeeper.delete"]


def test_deleting_the_controller_is_offered_with_the_warning_that_it_forces_an_election(writable: None) -> None:
    admin = logged_in("admin")
    html = admin.get(PAGE, {"path": "/controller"}).content.decode()
    assert 'id="zk-delete-warning"' in html
    ask = admin.post(CHANGE, {"action": "delete", "path": "/controller", "version": "0"})
    assert ask.status_code == 200
    assert WARNINGS["/controller"].replace("'", "&#x27;") in ask.content.decode()
    # Not confirmed here: the session's cluster keeps its controller.
    protected = admin.get(PAGE, {"path": "/brokers/ids/0"}).content.decode()
    assert 'id="zk-delete-refused"' in protected
    assert "Stop the broker instead" in protected


# ---------------------------------------------------------------- ACLs and credentials


def test_a_znode_behind_a_digest_acl_is_read_only_with_the_clusters_credentials(
    scratch: str,
    zk: KazooClient,
    clusters_reset: None,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    locked = f"{scratch}/locked"
    zk.create(locked, b"behind the acl", acl=[make_digest_acl(ZK_USER, ZK_PASSWORD, all=True)])
    configure(monkeypatch, ZOOKEEPER_WRITES="1")
    admin = logged_in("admin")
    refused = admin.get(API, {"path": locked})
    assert refused.status_code == 422
    assert "does not let the console read" in refused.json()["message"]
    not_writable = change(admin, {"op": "set", "path": locked, "data": "x", "version": 0})
    assert not_writable.status_code == 422
    assert "does not let the console change" in not_writable.json()["message"]

    configure(monkeypatch, ZOOKEEPER_WRITES="1", ZOOKEEPER_AUTH=f"digest:{ZK_USER}:{ZK_PASSWORD}")
    caplog.set_level(1, logger="kazoo")  # kazoo's lowest level logs every request, the credentials' too
    body = node(admin, locked)
    assert body["data"] == "behind the acl"
    [entry] = body["acl"]
    assert entry["scheme"] == "digest"
    assert entry["id"].startswith(f"{ZK_USER}:")
    assert entry["perms"] == ["create", "delete", "read", "write", "admin"]
    html = admin.get(PAGE, {"path": locked}).content.decode()
    assert 'data-scheme="digest"' in html
    assert "cdrwa" in html
    assert change(admin, {"op": "set", "path": locked, "data": "x", "version": 0}).status_code == 200
    assert zk.get(locked)[0] == b"x"
    assert "Auth(" in caplog.text  # the request that presented them was logged...
    assert ZK_PASSWORD not in caplog.text  # ...without them
    assert ZK_PASSWORD not in repr(get_configs()["local"])


def test_znodes_the_console_creates_get_the_acl_the_cluster_asks_for(
    scratch: str, zk: KazooClient, clusters_reset: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    digest = f"digest:{ZK_USER}:{ZK_PASSWORD}"
    admin = logged_in("admin")
    wanted = {
        "open": [("world", "anyone", "cdrwa")],
        "kafka": [("digest", ZK_USER, "cdrwa"), ("world", "anyone", "r")],
        "creator": [("digest", ZK_USER, "cdrwa")],
    }
    for setting, acl in wanted.items():
        configure(monkeypatch, ZOOKEEPER_WRITES="1", ZOOKEEPER_AUTH=digest, ZOOKEEPER_ACL=setting)
        path = f"{scratch}/{setting}"
        assert change(admin, {"op": "create", "path": path, "data": setting}).status_code == 201
        given = [
            (a.id.scheme, a.id.id.split(":")[0], "".join(p[0].lower() for p in a.acl_list if p != "ALL") or "cdrwa")
            for a in zk.get_acls(path)[0]
        ]
        assert sorted(given) == sorted(acl), setting
        shown = node(admin, path)
        assert {(a["scheme"], a["id"].split(":")[0]) for a in shown["acl"]} == {(s, i) for s, i, _ in acl}
    html = admin.get(PAGE, {"path": scratch}).content.decode()
    assert "ZOOKEEPER_ACL=creator" in html  # the create form says what a new znode gets
    monkeypatch.delenv("ZOOKEEPER_AUTH")
    monkeypatch.setenv("ZOOKEEPER_ACL", "creator")
    from broker.errors import ConfigError
    from console.config.clusters import reset_for_tests

    reset_for_tests()
    with pytest.raises(ConfigError, match="set ZOOKEEPER_AUTH"):
        get_configs()
