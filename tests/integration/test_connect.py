"""Kafka Connect through the console against a real distributed worker on the session's cluster (started once,
by the connect_worker fixture): a FileStreamSource created in the console writes the lines of its file to
its topic, stops writing while paused, goes on when resumed, reads the file again after its offsets are
reset; a task made to fail on purpose runs again after a restart of the failed tasks; a config the worker
rejects is refused per field with nothing created; secrets are masked on every surface; a worker that is
down or hangs gets a clear 503 within its time-out while the Kafka pages answer."""

from __future__ import annotations

import csv
import io
import json
import re
import socket
import threading
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.test import Client
from kafka import KafkaConsumer, TopicPartition

from broker.local import connect as local_connect
from console.background import lag_sampler
from console.config import connect
from console.models import AuditEntry
from tests.conftest import BOOTSTRAP, CLUSTER_DATA, CONNECT_PORT, logged_in
from tests.integration.connect_files import worker_folder
from tests.integration.kafka_helpers import create_topic, unique, until

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def tmp_path() -> Path:
    """The files this module hands the worker live where its user can reach them (connect_files.py)."""
    return worker_folder()


API = "/api/clusters/local/connectors/"
FILE_SOURCE = "org.apache.kafka.connect.file.FileStreamSourceConnector"
FILE_SINK = "org.apache.kafka.connect.file.FileStreamSinkConnector"


@pytest.fixture
def admin(connect_worker: str) -> Iterator[Client]:
    connect.reset_for_tests()
    client = logged_in("admin")
    made: list[str] = []
    client.made = made  # type: ignore[attr-defined]
    yield client
    for name in made:  # whatever a failed test left behind
        _worker("DELETE", f"/connectors/{name}")


def _worker(method: str, path: str) -> Any:
    """Ask the worker directly (what the console shows is checked against this)."""
    request = urllib.request.Request(f"http://127.0.0.1:{CONNECT_PORT}{path}", method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 - the test worker
            raw = answer.read()
    except OSError:
        return None
    return json.loads(raw) if raw.strip() else None


def _connectors() -> list[str]:
    """The worker's connector names (asked again while it rebalances)."""
    deadline = time.monotonic() + 20
    while (found := _worker("GET", "/connectors")) is None:
        assert time.monotonic() < deadline, "the worker did not list its connectors"
        time.sleep(0.25)
    return list(found)


def _config_on_worker(name: str) -> dict[str, str]:
    """The connector's config as the worker has it (asked again while it rebalances after a change)."""
    return dict(until("the worker's config", lambda: _worker("GET", f"/connectors/{name}/config"), timeout=20))


def create(client: Client, name: str, config: dict[str, Any]) -> Any:
    client.made.append(name)  # type: ignore[attr-defined]
    answer = client.post(API, {"connect": "local", "name": name, "config": config}, content_type="application/json")
    assert answer.status_code in (201, 400), answer.content
    return answer


def status(client: Client, name: str) -> dict[str, Any]:
    answer = client.get(f"{API}local/{name}/status/")
    assert answer.status_code == 200, answer.content
    return dict(answer.json())


def state_is(client: Client, name: str, state: str, task_state: str | None = None) -> bool:
    found = status(client, name)
    tasks_ok = task_state is None or (found["tasks"] and all(t["state"] == task_state for t in found["tasks"]))
    return found["state"] == state and bool(tasks_ok)


def record_count(topic: str) -> int:
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","))
    try:
        tp = TopicPartition(topic, 0)
        return int(consumer.end_offsets([tp])[tp])
    finally:
        consumer.close()


def values(topic: str) -> list[str]:
    consumer = KafkaConsumer(
        bootstrap_servers=BOOTSTRAP.split(","), auto_offset_reset="earliest", consumer_timeout_ms=3000
    )
    try:
        consumer.assign([TopicPartition(topic, 0)])
        return [json.loads(m.value) for m in consumer]
    finally:
        consumer.close()


def append(path: Path, *lines: str) -> None:
    with path.open("a") as f:
        f.writelines(line + "\n" for line in lines)


def test_a_file_source_runs_pauses_resumes_and_reads_again_after_an_offset_reset(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-lines"), partitions=1)
    name = unique("file-source")
    source = tmp_path / "lines.txt"
    append(source, "alpha", "beta", "gamma")
    config = {"connector.class": FILE_SOURCE, "tasks.max": "1", "file": str(source), "topic": topic}

    answer = create(admin, name, config)
    assert answer.status_code == 201, answer.content
    until("the three lines in the topic", lambda: record_count(topic) == 3)
    assert values(topic) == ["alpha", "beta", "gamma"]
    listed = until(
        "the connector listed running",
        lambda: next(
            (c for c in admin.get(API).json()["connectors"] if c["name"] == name and c["tasks_running"] == 1), None
        ),
    )
    assert listed["connect"] == "local"
    assert listed["type"] == "source"
    assert listed["state"] == "RUNNING"
    assert listed["worker"] == f"127.0.0.1:{CONNECT_PORT}"
    assert listed["tasks"][0]["state"] == "RUNNING"

    # Paused: lines appended meanwhile do not reach the topic.
    assert admin.post(f"{API}local/{name}/pause/").status_code == 202
    until("paused", lambda: state_is(admin, name, "PAUSED", "PAUSED"))
    append(source, "delta", "epsilon")
    time.sleep(5)
    assert record_count(topic) == 3

    # Resumed: they arrive.
    assert admin.post(f"{API}local/{name}/resume/").status_code == 202
    until("the paused lines after resuming", lambda: record_count(topic) == 5)
    offsets = until("offsets committed", lambda: admin.get(f"{API}local/{name}/offsets/").json()["offsets"])
    assert offsets[0]["partition"] == {"filename": str(source)}

    # Offsets change only on a stopped connector: refused while it runs, nothing changed.
    refused = admin.delete(f"{API}local/{name}/offsets/")
    assert refused.status_code == 400, refused.content
    assert "stop it first" in refused.json()["message"]

    assert admin.post(f"{API}local/{name}/stop/").status_code == 202
    until("stopped", lambda: state_is(admin, name, "STOPPED"))
    reset = admin.delete(f"{API}local/{name}/offsets/")
    assert reset.status_code == 200, reset.content
    assert until("no offsets left", lambda: admin.get(f"{API}local/{name}/offsets/").json()["offsets"] == [])
    assert admin.post(f"{API}local/{name}/resume/").status_code == 202
    # From the start of the file again: the five lines once more.
    until("the file read again from its start", lambda: record_count(topic) == 10)
    assert values(topic)[5:] == ["alpha", "beta", "gamma", "delta", "epsilon"]

    # Deleting needs an admin; then it is gone from the worker.
    viewer = logged_in("viewer")
    assert viewer.delete(f"{API}local/{name}/").status_code == 403
    assert admin.delete(f"{API}local/{name}/").status_code == 200
    assert until("the connector gone", lambda: name not in _connectors())

    audit = list(AuditEntry.objects.filter(target=f"local/{name}").order_by("id"))
    assert [(e.action, e.outcome) for e in audit] == [
        ("connect.create", "done"),
        ("connect.pause", "done"),
        ("connect.resume", "done"),
        ("connect.offsets", "failed"),
        ("connect.stop", "done"),
        ("connect.offsets", "done"),
        ("connect.resume", "done"),
        ("connect.delete", "refused"),
        ("connect.delete", "done"),
    ]


def test_a_task_made_to_fail_runs_again_after_restarting_the_failed_tasks(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-sink"), partitions=1)
    name = unique("file-sink")
    target = tmp_path / "not-yet" / "out.txt"  # the sink's task fails: the folder does not exist
    config = {"connector.class": FILE_SINK, "tasks.max": "1", "topics": topic, "file": str(target)}
    assert create(admin, name, config).status_code == 201
    failed = until("the task failed", lambda: state_is(admin, name, "RUNNING", "FAILED") and status(admin, name))
    assert failed["tasks"][0]["trace"], failed
    assert "not-yet" in failed["tasks"][0]["trace"]
    listed = next(c for c in admin.get(API).json()["connectors"] if c["name"] == name)
    assert listed["tasks_failed"] == 1

    # The page shows the task failed with its trace.
    page = admin.get(f"/clusters/local/connectors/local/{name}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'data-state="FAILED"' in html
    assert "task-trace" in html

    # The built-in "Failed connectors" alert fires on the sampler's round (the worker's status, one request).
    assert "Failed connectors" in {r["name"] for r in admin.get("/api/clusters/local/alerts/rules/").json()["rules"]}
    lag_sampler.sample_once()
    firing = admin.get("/api/clusters/local/alerts/").json()["firing"]
    assert [f["text"] for f in firing if f["subject"] == f"local/{name}"] == [
        f"connector {name} on local: 1 of 1 tasks FAILED"
    ]

    target.parent.mkdir()
    target.parent.chmod(0o777)
    restarted = admin.post(f"{API}local/{name}/restart/?include_tasks=true&only_failed=true")
    assert restarted.status_code == 202, restarted.content
    until("the task running again", lambda: state_is(admin, name, "RUNNING", "RUNNING"))
    lag_sampler.sample_once()
    assert not [f for f in admin.get("/api/clusters/local/alerts/").json()["firing"] if f["subject"] == f"local/{name}"]
    assert AuditEntry.objects.filter(action="connect.restart_failed", target=f"local/{name}", outcome="done").exists()


def test_a_config_the_worker_rejects_is_refused_per_field_and_nothing_is_created(admin: Client) -> None:
    name = unique("bad-source")
    answer = create(admin, name, {"connector.class": FILE_SOURCE, "tasks.max": "many"})
    assert answer.status_code == 400, answer.content
    body = answer.json()
    assert set(body["fields"]) >= {"tasks.max", "topic"}, body
    assert any("tasks.max" in reason for reason in body["fields"]["tasks.max"])
    assert name not in _connectors()
    entry = AuditEntry.objects.get(action="connect.create", target=f"local/{name}")
    assert entry.outcome == "failed"

    # The page's form shows the same reasons beside the fields, and creates nothing.
    page = admin.post(
        "/clusters/local/connectors-new/",
        {"connect": "local", "plugin": FILE_SOURCE, "mode": "form", "name": name, "tasks.max": "many"},
    )
    assert page.status_code == 400
    html = page.content.decode()
    assert 'data-field="tasks.max"' in html
    assert "field-reason" in html
    assert name not in _connectors()

    # Our own checks come before the worker's.
    assert create(admin, name, {"tasks.max": "1"}).status_code == 400
    assert create(admin, "", {"connector.class": FILE_SOURCE}).status_code == 400


def test_secret_looking_values_are_masked_and_an_edit_keeps_them(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-secret"), partitions=1)
    name = unique("secret-source")
    config = {
        "connector.class": FILE_SOURCE,
        "file": str(tmp_path / "in.txt"),
        "topic": topic,
        "database.password": "hunter2-secret",
        "connection.url": "jdbc:postgresql://db/app?user=app&password=pg-secret",
    }
    assert create(admin, name, config).status_code == 201
    for url in (f"{API}local/{name}/", f"{API}local/{name}/config/", f"/clusters/local/connectors/local/{name}/"):
        text = admin.get(url).content.decode()
        assert "hunter2-secret" not in text, url
        assert "pg-secret" not in text, url
        assert "********" in text, url
    assert "hunter2" not in json.dumps(list(AuditEntry.objects.filter(target=f"local/{name}").values("params")))

    # An edit that sends the masked config back keeps the secrets the worker has.
    shown = admin.get(f"{API}local/{name}/config/").json()["config"]
    edited = admin.put(
        f"{API}local/{name}/config/", {"config": {**shown, "batch.size": "50"}}, content_type="application/json"
    )
    assert edited.status_code == 200, edited.content
    raw = _config_on_worker(name)
    assert raw["database.password"] == "hunter2-secret"
    assert raw["connection.url"].endswith("password=pg-secret")
    assert raw["batch.size"] == "50"


def test_viewers_read_connectors_but_cannot_change_them(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-roles"), partitions=1)
    name = unique("roles-source")
    config = {"connector.class": FILE_SOURCE, "file": str(tmp_path / "x.txt"), "topic": topic}
    assert create(admin, name, config).status_code == 201
    viewer = logged_in("viewer")
    assert viewer.get(API).status_code == 200
    assert viewer.get(f"/clusters/local/connectors/local/{name}/").status_code == 200
    assert viewer.post(f"{API}local/{name}/pause/").status_code == 403
    assert AuditEntry.objects.filter(action="connect.pause", target=f"local/{name}", outcome="refused").exists()
    assert status(admin, name)["state"] in ("RUNNING", "UNASSIGNED")
    plugins = viewer.get("/api/clusters/local/connect-plugins/").json()["plugins"]["local"]
    assert {FILE_SOURCE, FILE_SINK} <= {p["class"] for p in plugins}


def test_a_worker_that_is_down_gets_a_clear_503_and_the_kafka_pages_answer(admin: Client) -> None:
    local_connect.stop(CLUSTER_DATA, echo=lambda _: None)
    try:
        started = time.monotonic()
        answer = admin.get(API)
        assert answer.status_code == 503
        assert answer.json()["error"] == "cluster_unavailable"
        assert "Connect cluster 'local'" in answer.json()["message"]
        assert time.monotonic() - started < 6
        page = admin.get("/clusters/local/connectors/")
        assert page.status_code == 503
        assert "does not answer" in page.content.decode()
        assert admin.get("/api/clusters/local/topics/").status_code == 200
        assert admin.get("/clusters/local/").status_code == 200
    finally:
        local_connect.start(CLUSTER_DATA, port=CONNECT_PORT, echo=lambda _: None)
    assert admin.get(API).status_code == 200


def test_a_worker_that_hangs_is_given_up_within_its_time_out(
    monkeypatch: pytest.MonkeyPatch, kafka_cluster: Any
) -> None:
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(8)  # accepts connections, never answers
    held: list[socket.socket] = []
    threading.Thread(target=lambda: held.append(silent.accept()[0]), daemon=True).start()
    monkeypatch.setenv("KAFKA_CONNECT_URLS", f"hung=http://127.0.0.1:{silent.getsockname()[1]}")
    monkeypatch.setenv("KAZAMI_CONNECT_TIMEOUT", "1")
    connect.reset_for_tests()
    try:
        client = logged_in("viewer")
        started = time.monotonic()
        answer = client.get(API)
        assert answer.status_code == 503
        assert "did not answer within 1 s" in answer.json()["message"]
        assert time.monotonic() - started < 3
        # Asked again at once: the same note without waiting out another time-out.
        started = time.monotonic()
        assert client.get(API).status_code == 503
        assert time.monotonic() - started < 0.5
        assert client.get("/api/clusters/local/topics/").status_code == 200
    finally:
        silent.close()
        for s in held:
            s.close()
        monkeypatch.undo()
        connect.reset_for_tests()


def test_offsets_of_a_stopped_connector_are_altered_and_it_goes_on_from_there(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-alter"), partitions=1)
    name = unique("alter-source")
    source = tmp_path / "in.txt"
    append(source, "abc", "def")
    config = {"connector.class": FILE_SOURCE, "file": str(source), "topic": topic}
    assert create(admin, name, config).status_code == 201
    until("both lines", lambda: record_count(topic) == 2)
    assert admin.post(f"{API}local/{name}/stop/").status_code == 202
    until("stopped", lambda: state_is(admin, name, "STOPPED"))

    offsets = {"offsets": [{"partition": {"filename": str(source)}, "offset": {"position": 4}}]}
    altered = admin.patch(f"{API}local/{name}/offsets/", offsets, content_type="application/json")
    assert altered.status_code == 200, altered.content
    shown = until("the new offset", lambda: admin.get(f"{API}local/{name}/offsets/").json()["offsets"])
    assert shown[0]["offset"] == {"position": 4}
    assert admin.post(f"{API}local/{name}/resume/").status_code == 202
    until("the second line read again", lambda: record_count(topic) == 3)
    assert values(topic) == ["abc", "def", "def"]
    bad = admin.patch(f"{API}local/{name}/offsets/", {"offsets": [{"offset": {}}]}, content_type="application/json")
    assert bad.status_code == 400


def test_the_connector_page_actions_work_as_plain_forms(admin: Client, tmp_path: Path) -> None:
    topic = create_topic(unique("connect-page"), partitions=1)
    name = unique("page-source")
    config = {"connector.class": FILE_SOURCE, "file": str(tmp_path / "in.txt"), "topic": topic}
    assert create(admin, name, config).status_code == 201
    page = f"/clusters/local/connectors/local/{name}/"
    action = page + "action/"
    until("running", lambda: state_is(admin, name, "RUNNING"))

    answer = admin.post(action, {"action": "pause"}, follow=True)
    assert answer.status_code == 200
    assert f"{name}: pause sent; the state below follows" in answer.content.decode()
    until("paused", lambda: state_is(admin, name, "PAUSED"))

    # From htmx: the fresh state in place, and the outcome out of band.
    answer = admin.post(action, {"action": "resume"}, headers={"HX-Request": "true"})
    assert answer.status_code == 200
    html = answer.content.decode()
    assert 'id="connector-status"' in html
    assert 'id="connector-flash" hx-swap-oob="true"' in html

    # The page offers only what can work now: while it runs, Pause; not Resume, nor restarting failed tasks.
    until("running again", lambda: state_is(admin, name, "RUNNING"))
    shown = admin.get(page).content.decode()
    assert re.search(r'id="action-pause" data-offered-when="RUNNING" data-why-not="[^"]*">', shown)
    assert re.search(r'id="action-resume" [^>]* disabled title="Only while the connector is paused or stopped"', shown)
    assert re.search(r'id="action-restart_failed" [^>]* disabled title="No task has failed"', shown)
    # The list as CSV: a row per connector, what the table shows.
    listed = admin.get("/clusters/local/connectors/", {"format": "csv"})
    assert listed["Content-Type"].startswith("text/csv")
    rows = list(csv.DictReader(io.StringIO(listed.content.decode())))
    mine = [r for r in rows if r["name"] == name]
    assert len(mine) == 1
    assert (mine[0]["connect"], mine[0]["type"], mine[0]["state"], mine[0]["class"]) == (
        "local",
        "source",
        "RUNNING",
        FILE_SOURCE,
    )

    # A reset on a running connector is refused with the reason; nothing changes.
    answer = admin.post(action, {"action": "reset_offsets"}, follow=True)
    assert "stop it first" in answer.content.decode()

    # The config edited on the page, checked by the worker first.
    edited = admin.post(page, {"config": json.dumps({**config, "tasks.max": "zero"})})
    assert edited.status_code == 400
    assert 'data-field="tasks.max"' in edited.content.decode()
    assert admin.post(page, {"config": json.dumps({**config, "batch.size": "10"})}).status_code == 302
    assert _config_on_worker(name)["batch.size"] == "10"

    # Delete: the name must be typed.
    assert "to delete it." in admin.post(action, {"action": "delete", "confirm": "x"}, follow=True).content.decode()
    assert name in _connectors()
    done = admin.post(action, {"action": "delete", "confirm": name})
    assert done.status_code == 302
    assert until("gone", lambda: name not in _connectors())
    assert admin.get(page).status_code == 404


def test_the_workers_own_group_is_listed_and_described_beside_consumer_groups(admin: Client) -> None:
    """A Connect worker's group (protocol type ``connect``) is not a consumer group: kafka-python decodes every
    member as a consumer and failed the whole groups page once a worker ran; ours decodes consumers only."""
    listed = admin.get("/api/clusters/local/groups/")
    assert listed.status_code == 200, listed.content
    ids = [g["group_id"] for g in listed.json()["groups"]]
    assert local_connect.GROUP_ID in ids
    one = admin.get(f"/api/clusters/local/groups/{local_connect.GROUP_ID}/")
    assert one.status_code == 200, one.content
    assert one.json()["state"] == "Stable"
    assert admin.get(f"/clusters/local/groups/{local_connect.GROUP_ID}/").status_code == 200
