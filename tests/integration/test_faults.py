"""Faults against a real cluster of its own: a partition leader stops, ZooKeeper stops, a broker freezes,
every broker stops. Pages keep answering (200, or 503 with a clear message, never a hang or a 500),
acknowledged messages survive, and pages and websockets recover by themselves.

The cluster (ZooKeeper 12481, brokers 19492-19494) is separate from the session's, because these
tests stop its processes; the console sees it as a second cluster, ``faulty``, with a one-second
time-out. Every test puts the cluster back as it found it and waits until it is healthy again.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import shutil
import signal
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from channels.testing import WebsocketCommunicator
from django.test import Client
from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer, TopicPartition
from kafka.admin import NewTopic
from kafka.structs import OffsetAndMetadata

from broker.local import launcher
from broker.messages.produce import do_produce
from console.asgi import application
from console.background import lag_sampler
from console.config.clusters import get_connection
from tests.conftest import TEST_VAR
from tests.integration.kafka_helpers import wait_known_everywhere

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.django_db(transaction=True),
    pytest.mark.zookeeper("it starts a ZooKeeper-mode cluster of its own, run by the ZooKeeper session"),
]

DATA = TEST_VAR / "fault-cluster"
ZOOKEEPER_PORT = 12481
BASE_PORT = 19492  # brokers on 19492, 19493, 19494
TIMEOUT = 1.0  # the console's time-out for this cluster, in seconds
BOUND = 10.0  # no page may take longer than this, whatever the fault
HEADERS = [(b"origin", b"http://127.0.0.1:8888"), (b"host", b"127.0.0.1:8888")]


def quiet(_: str) -> None:
    pass


def report(record_property: Callable[[str, object], None], name: str, figures: dict[str, float]) -> None:
    """Keep how long each page took (in the JUnit report, and printed for `pytest -rP`)."""
    record_property(name, figures)
    print(f"{name}: {json.dumps(figures)}")


# ---------------------------------------------------------------- the cluster and its data


@dataclass
class Faulty:
    layout: launcher.ClusterLayout
    topic: str  # 3 partitions, 3 replicas, min.insync.replicas=2, a few keyed messages in each
    group: str  # committed offsets on every partition of the topic
    key: str  # a key that is in the topic

    @property
    def bootstrap(self) -> list[str]:
        return self.layout.bootstrap_servers.split(",")

    def pid(self, name: str) -> int:
        pid = launcher.ClusterLayout.load(DATA).pids[name]  # type: ignore[union-attr]
        return int(pid)


def _admin(bootstrap: list[str]) -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bootstrap, bootstrap_timeout_ms=10_000, request_timeout_ms=10_000)


@pytest.fixture(scope="module")
def cluster() -> Iterator[Faulty]:
    launcher.down(DATA, echo=quiet)
    shutil.rmtree(DATA, ignore_errors=True)
    layout = launcher.up(DATA, brokers=3, zookeeper_port=ZOOKEEPER_PORT, base_port=BASE_PORT, echo=quiet)
    try:
        bootstrap = layout.bootstrap_servers.split(",")
        topic, group, key = "faults", "fault-readers", "key-1"
        admin = _admin(bootstrap)
        try:
            admin.create_topics([NewTopic(topic, 3, 3, topic_configs={"min.insync.replicas": "2"})])
            admin.wait_for_topics([topic], timeout_ms=30_000)
            wait_known_everywhere(admin, [topic])
        finally:
            admin.close()
        producer = KafkaProducer(bootstrap_servers=bootstrap, acks="all")
        for i in range(30):
            producer.send(topic, key=f"key-{i % 5}".encode(), value=f"message {i}".encode(), partition=i % 3)
        producer.flush(timeout=30)
        producer.close()
        consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False)
        consumer.commit({TopicPartition(topic, p): OffsetAndMetadata(5, "", -1) for p in range(3)})
        consumer.close()
        yield Faulty(layout, topic, group, key)
    finally:
        launcher.down(DATA, echo=quiet)


@pytest.fixture
def faulty(
    cluster: Faulty, clusters_reset: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, settings: Any
) -> Faulty:
    """The console, with the fault cluster declared as ``faulty``."""
    servers = ", ".join(f'"{s}"' for s in cluster.bootstrap)
    file = tmp_path / "clusters.toml"
    file.write_text(
        f"[clusters.faulty]\nbootstrap_servers = [{servers}]\n"
        f'zookeeper_connect = "{cluster.layout.zookeeper_connect}"\ntimeout = {TIMEOUT}\n'
    )
    monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
    settings.KAZAMI_LIVE_INTERVAL = 0.3
    wait_healthy(cluster)
    return cluster


@pytest.fixture
def admin_user(django_user_model: Any) -> Any:
    return django_user_model.objects.create_superuser("fault-admin", "fault-admin@example.com", "fault-password-1")


@pytest.fixture
def web(admin_user: Any) -> Client:
    client = Client()
    client.force_login(admin_user)
    return client


def describe(cluster: Faulty) -> dict[int, dict[str, Any]]:
    """The test topic's partitions as the cluster has them: {partition: {leader_id, isr_nodes, ...}}."""
    admin = _admin(cluster.bootstrap)
    try:
        return {p["partition_index"]: p for p in admin.describe_topics([cluster.topic])[0]["partitions"]}
    finally:
        admin.close()


def wait_healthy(cluster: Faulty, timeout: float = 90) -> None:
    """Until every process runs, every broker is registered and in the metadata, and no partition is
    offline or under-replicated: a test leaves the cluster as it found it."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            if _healthy(cluster):
                return
        except Exception:  # noqa: BLE001, S110 - still settling; asked again
            pass
        if time.monotonic() > deadline:
            raise AssertionError(f"the fault cluster did not become healthy again: {launcher.status(DATA)}")
        time.sleep(0.5)


def _healthy(cluster: Faulty) -> bool:
    layout = cluster.layout
    if not launcher.pid_alive(cluster.pid("zookeeper")):
        return False
    if not all(launcher.pid_alive(cluster.pid(f"broker-{b}")) for b in layout.broker_ids):
        return False
    registered, controller = launcher.registered_brokers(layout)
    if registered != set(layout.broker_ids) or controller is None:
        return False
    admin = _admin(cluster.bootstrap)
    try:
        if {b["broker_id"] for b in admin.describe_cluster()["brokers"]} != set(layout.broker_ids):
            return False
        partitions = [p for t in admin.describe_topics() for p in t["partitions"]]
    finally:
        admin.close()
    return all(p["leader_id"] >= 0 and len(p["isr_nodes"]) == len(p["replica_nodes"]) for p in partitions)


# ---------------------------------------------------------------- the pages under test


@dataclass(frozen=True)
class Endpoint:
    name: str
    path: str
    post: dict[str, Any] | None = None

    @property
    def api(self) -> bool:
        return self.path.startswith("/api/")


def endpoints(cluster: Faulty) -> list[Endpoint]:
    """A representative page and API endpoint of each kind the console has."""
    base, t, g = "/clusters/faulty", cluster.topic, cluster.group
    api = "/api/clusters/faulty"
    return [
        Endpoint("overview", f"{base}/"),
        Endpoint("overview API", f"{api}/"),
        Endpoint("topic list", f"{base}/topics/"),
        Endpoint("topic list API", f"{api}/topics/"),
        Endpoint("topic", f"{base}/topics/{t}/"),
        Endpoint("topic API", f"{api}/topics/{t}/"),
        Endpoint("messages", f"{base}/topics/{t}/partitions/0/"),
        Endpoint("messages API", f"{api}/topics/{t}/partitions/0/messages?offset=0&limit=5"),
        Endpoint("message", f"{base}/topics/{t}/partitions/0/offsets/0/"),
        Endpoint("message API", f"{api}/topics/{t}/partitions/0/messages/0"),
        Endpoint("group list", f"{base}/groups/"),
        Endpoint("group list API", f"{api}/groups/"),
        Endpoint("group", f"{base}/groups/{g}/"),
        Endpoint("group API", f"{api}/groups/{g}/"),
        Endpoint("find key", f"{base}/topics/{t}/find-key/?key={cluster.key}"),
        Endpoint("find key API", f"{api}/topics/{t}/find-key/?key={cluster.key}"),
        Endpoint("lag export", f"{base}/groups-report.csv"),
        Endpoint("metrics", "/metrics"),
        Endpoint(
            "produce API",
            f"{api}/topics/{t}/produce/",
            post={"key": "fault", "key_format": "text", "value": "during a fault", "value_format": "text"},
        ),
    ]


@dataclass
class Answer:
    endpoint: Endpoint
    status: int
    seconds: float
    body: str

    def json(self) -> Any:
        return json.loads(self.body)

    def __str__(self) -> str:
        alert = re.search(r'role="alert">(.*?)</div>', self.body, re.S)
        said = alert.group(1).strip() if alert else self.body[:300]
        return f"{self.endpoint.name} {self.endpoint.path}: {self.status} in {self.seconds:.2f} s: {said}"


def ask(web: Client, endpoint: Endpoint) -> Answer:
    started = time.monotonic()
    if endpoint.post is not None:
        response = web.post(endpoint.path, json.dumps(endpoint.post), content_type="application/json")
    else:
        response = web.get(endpoint.path)
    seconds = time.monotonic() - started
    return Answer(endpoint, response.status_code, seconds, response.content.decode(errors="replace"))


def ask_all(web: Client, cluster: Faulty, timings: dict[str, float] | None = None) -> list[Answer]:
    answers = []
    for endpoint in endpoints(cluster):
        answers.append(ask(web, endpoint))
        print(f"{answers[-1].status} {answers[-1].seconds:5.2f} s {endpoint.name}")
    if timings is not None:
        timings.update({a.endpoint.name: round(a.seconds, 2) for a in answers})
    return answers


def assert_sound(answer: Answer) -> None:
    """Never a 500, never Django's own error page, never past the bound."""
    assert answer.seconds < BOUND, str(answer)
    assert answer.status not in (500, 502, 504), str(answer)
    assert "Traceback" not in answer.body, str(answer)
    assert "django" not in answer.body.lower() or answer.endpoint.api, str(answer)


def assert_ok(answer: Answer) -> None:
    assert_sound(answer)
    assert answer.status == (201 if answer.endpoint.post is not None else 200), str(answer)


def assert_unavailable(answer: Answer) -> None:
    """503 and a message that names the cluster (or the partition) and says it did not answer."""
    assert_sound(answer)
    assert answer.status == 503, str(answer)
    if answer.endpoint.api:
        body = answer.json()
        assert body["error"] in ("cluster_unavailable", "partition_unavailable"), str(answer)
        assert "'faulty'" in body["message"] or "partition 0 of 'faults'" in body["message"], str(answer)
    else:
        assert 'role="alert"' in answer.body, str(answer)
        assert "faulty" in answer.body or "partition 0 of &#x27;faults&#x27;" in answer.body, str(answer)


def assert_ok_or_unavailable(answer: Answer) -> None:
    if answer.status in (200, 201):
        assert_ok(answer)
    else:
        assert_unavailable(answer)


class Answers:
    """A check that ``endpoint`` answers 200 (201 for a POST) now; remembers the last answer."""

    def __init__(self, web: Client, endpoint: Endpoint) -> None:
        self.web, self.endpoint = web, endpoint
        self.last: Answer | None = None

    def __call__(self) -> bool:
        self.last = ask(self.web, self.endpoint)
        assert_ok_or_unavailable(self.last)  # on the way back too: never a 500
        return self.last.status in (200, 201)

    def __str__(self) -> str:
        return f"the last answer was {self.last}"


def until(check: Callable[[], bool], timeout: float, what: str) -> float:
    """Seconds until ``check`` holds; fails after ``timeout``."""
    started = time.monotonic()
    while not check():
        if time.monotonic() - started > timeout:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; {check}")
        time.sleep(0.25)
    return time.monotonic() - started


# ---------------------------------------------------------------- a live page, watched from a thread


@dataclass
class LiveWatch:
    """A browser on a live view: a websocket on its own event loop, every pushed fragment recorded."""

    path: str
    user: Any
    fragments: list[tuple[float, str]] = field(default_factory=list)
    closed: str | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _connected: threading.Event = field(default_factory=threading.Event)

    def __enter__(self) -> LiveWatch:
        self._thread = threading.Thread(target=lambda: asyncio.run(self._watch()), daemon=True)
        self._thread.start()
        assert self._connected.wait(15), f"the websocket did not connect: {self.closed}"
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(15)

    async def _watch(self) -> None:
        ws = WebsocketCommunicator(application, self.path, headers=HEADERS)
        ws.scope["user"] = self.user
        connected, code = await ws.connect(timeout=10)
        if not connected:
            self.closed = f"refused with {code}"
            self._connected.set()
            return
        self._connected.set()
        try:
            while not self._stop.is_set():
                # (receive_output's own time-out would cancel the consumer: only called when a message waits)
                if await ws.receive_nothing(timeout=0.2, interval=0.02):
                    continue
                message = await ws.receive_output()
                if message["type"] == "websocket.close":
                    self.closed = f"closed by the console with {message.get('code')}"
                    return
                self.fragments.append((time.monotonic(), message.get("text", "")))
        finally:
            await ws.disconnect()

    def after(self, moment: float) -> list[str]:
        return [html for at, html in list(self.fragments) if at > moment]


UNAVAILABLE = "The cluster cannot be reached."
TAIL_AWAY = "The tail goes on by itself once it answers."


def normal(html: str) -> bool:
    return '<section id="overview"' in html and UNAVAILABLE not in html and 'id="brokers"' in html


# ---------------------------------------------------------------- process control


def stop_every_broker(cluster: Faulty) -> None:
    """SIGTERM to every broker at once (the way a machine room loses power, but cleanly), then wait."""
    pids = [cluster.pid(f"broker-{b}") for b in cluster.layout.broker_ids]
    for pid in pids:
        os.kill(pid, signal.SIGTERM)
    until(lambda: not any(launcher.pid_alive(p) for p in pids), 60, "every broker to stop")


# ---------------------------------------------------------------- 1. the leader of a partition stops


class Producing(threading.Thread):
    """Sends numbered messages to one partition with acks=all through the console's own producer, one at
    a time, recording each the cluster acknowledged (value -> offset) and each it did not."""

    def __init__(self, conn: Any, topic: str, partition: int) -> None:
        super().__init__(daemon=True)
        self.conn, self.topic, self.partition = conn, topic, partition
        self.acknowledged: dict[bytes, int] = {}
        self.refused: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        number = 0
        while not self.stop.is_set():
            value = f"during failover {number}".encode()
            number += 1
            try:
                done = do_produce(self.conn, self.topic, b"failover", value, partition=self.partition)
            except Exception as exc:  # noqa: BLE001 - recorded: an unacknowledged message may be lost
                self.refused.append(f"{type(exc).__name__}: {exc}")
                time.sleep(0.05)
                continue
            self.acknowledged[value] = done.offset
            time.sleep(0.01)


def test_it_shows_the_new_leader_and_loses_no_acknowledged_message_when_a_leader_stops(
    faulty: Faulty, web: Client, record_property: Callable[[str, object], None]
) -> None:
    name = f"failover-{uuid.uuid4().hex[:6]}"
    admin = _admin(faulty.bootstrap)
    try:
        admin.create_topics([NewTopic(name, 1, 3, topic_configs={"min.insync.replicas": "2"})])
        admin.wait_for_topics([name], timeout_ms=30_000)
        wait_known_everywhere(admin, [name])
    finally:
        admin.close()
    assert ask(web, Endpoint("overview API", "/api/clusters/faulty/")).status == 200  # seen alive: listed when down
    leader = web.get(f"/api/clusters/faulty/topics/{name}/").json()["partitions"][0]["leader"]

    producing = Producing(get_connection("faulty"), name, 0)
    producing.start()
    timings: dict[str, float] = {}
    try:
        until(lambda: len(producing.acknowledged) >= 20, 30, "the first acknowledged messages")
        launcher.stop_broker(leader, DATA, echo=quiet)
        before = len(producing.acknowledged)
        until(lambda: len(producing.acknowledged) >= before + 20, 30, "messages acknowledged by the new leader")

        topic_page = ask(web, Endpoint("topic", f"/clusters/faulty/topics/{name}/"))
        topic_api = ask(web, Endpoint("topic API", f"/api/clusters/faulty/topics/{name}/"))
        overview = ask(web, Endpoint("overview API", "/api/clusters/faulty/"))
        overview_page = ask(web, Endpoint("overview", "/clusters/faulty/"))
        messages = ask(web, Endpoint("messages", f"/clusters/faulty/topics/{name}/partitions/0/"))
        messages_api = ask(web, Endpoint("messages API", f"/api/clusters/faulty/topics/{name}/partitions/0/messages"))
        for answer in (topic_page, topic_api, overview, overview_page, messages, messages_api):
            assert_ok(answer)
            timings[answer.endpoint.name] = round(answer.seconds, 2)
        new_leader = topic_api.json()["partitions"][0]["leader"]
        assert new_leader is not None
        assert new_leader != leader
        assert leader not in topic_api.json()["partitions"][0]["isr"]
        shown = re.search(r'<tr data-partition="0"[^>]*>\s*<td class="num">.*?</td>\s*<td>(\d+)', topic_page.body, re.S)
        assert shown is not None
        assert int(shown.group(1)) == new_leader
        brokers = {b["id"]: b["alive"] for b in overview.json()["brokers"]}
        assert brokers == {**dict.fromkeys(faulty.layout.broker_ids, True), leader: False}
        assert f'data-broker-id="{leader}" class="row-bad"' in overview_page.body
    finally:
        producing.stop.set()
        producing.join(30)
        launcher.start_broker(leader, DATA, echo=quiet)
    wait_healthy(faulty)
    report(record_property, "seconds_with_the_leader_down", timings)

    # Every acknowledged message is there, at the offset it was acknowledged with, read through the API.
    read: dict[int, bytes] = {}
    offset: int | None = 0
    while offset is not None:
        page = web.get(f"/api/clusters/faulty/topics/{name}/partitions/0/messages?offset={offset}&limit=500")
        assert page.status_code == 200, page.content
        body = page.json()
        read.update({m["offset"]: m["value"].encode() for m in body["messages"]})
        offset = body["next_offset"]
    assert len(producing.acknowledged) >= 40
    missing = {v: o for v, o in producing.acknowledged.items() if read.get(o) != v}
    assert missing == {}, f"acknowledged but not read back: {sorted(missing.items(), key=lambda x: x[1])[:10]}"
    assert len(read) >= len(producing.acknowledged)


# ---------------------------------------------------------------- 2. ZooKeeper stops


def test_every_page_keeps_answering_while_zookeeper_is_down(
    faulty: Faulty, web: Client, record_property: Callable[[str, object], None]
) -> None:
    for answer in ask_all(web, faulty):
        assert_ok(answer)
    topic = Endpoint("topic API", f"/api/clusters/faulty/topics/{faulty.topic}/")
    new_topic = {"name": f"zk-back-{uuid.uuid4().hex[:6]}", "partitions": 1, "replication_factor": 3}
    timings: dict[str, float] = {}
    launcher.stop_zookeeper(DATA, echo=quiet)
    try:
        assert not launcher.zookeeper_serving(ZOOKEEPER_PORT)
        for answer in ask_all(web, faulty, timings):
            assert_ok(answer)
        # A ZooKeeper-mode broker holds a request for topic configurations (and one of its two request
        # threads) until ZooKeeper is back: the console asks once, says so, and does not ask again.
        for _ in range(4):
            answer = ask(web, topic)
            assert_ok(answer)
            assert answer.json()["configs"] == [], str(answer)
            assert "ZooKeeper" in answer.json()["configs_error"], str(answer)
        for answer in ask_all(web, faulty):  # no broker ran out of request threads
            assert_ok(answer)
        # A change the brokers would make in ZooKeeper is refused at once, rather than hold a broker's
        # request thread until the time-out; nothing is created.
        create = Endpoint("create topic API", "/api/clusters/faulty/topics/", post=new_topic)
        refused = ask(web, create)
        assert_unavailable(refused)
        assert "ZooKeeper" in refused.json()["message"], str(refused)
        assert "nothing was changed" in refused.json()["message"], str(refused)
        timings["create topic, refused"] = round(refused.seconds, 2)
    finally:
        launcher.start_zookeeper(DATA, echo=quiet)

    # Right after ZooKeeper returns, a broker may still hold the requests it took while it was away, so
    # the configuration can come and go once or twice before it stays.
    def shown_again() -> bool:
        body = ask(web, topic).json()
        return body.get("configs_error", "unanswered") is None and any(
            c["name"] == "min.insync.replicas" and c["value"] == "2" for c in body.get("configs", [])
        )

    until(shown_again, 30, "the topic configuration, with min.insync.replicas=2, to show again")
    create = Endpoint("create topic API", "/api/clusters/faulty/topics/", post=new_topic)

    def created() -> bool:
        # A creation sent while ZooKeeper was still coming back may time out (503) and yet be made: the
        # next one then finds the topic there (409).
        answer = ask(web, create)
        if answer.status == 409:
            assert answer.json()["error"] == "already_exists", str(answer)
            return True
        assert_ok_or_unavailable(answer)
        return answer.status == 201

    until(created, 30, "the topic to be created once ZooKeeper is back")
    assert_ok(ask(web, Endpoint("new topic API", f"/api/clusters/faulty/topics/{new_topic['name']}/")))
    wait_healthy(faulty)
    report(record_property, "seconds_with_zookeeper_down", timings)


# ---------------------------------------------------------------- 3. a broker freezes


def test_a_frozen_broker_slows_no_page_past_its_bound(
    faulty: Faulty, web: Client, admin_user: Any, record_property: Callable[[str, object], None]
) -> None:
    """SIGSTOP: the broker's sockets accept connections and never answer, the worst kind of slow."""
    for answer in ask_all(web, faulty):
        assert_ok(answer)
    frozen = describe(faulty)[0]["leader_id"]  # the leader of the partition the message pages read
    pid = faulty.pid(f"broker-{frozen}")
    timings: dict[str, float] = {}
    with LiveWatch("/ws/clusters/faulty/overview/", admin_user) as watch:
        os.kill(pid, signal.SIGSTOP)
        try:
            frozen_at = time.monotonic()
            # Partial answers: the partitions it leads have no offsets, and it shows as not answering. (The
            # first read may meet the broker on every request it makes and run out of time: a 503 then.)
            topic = Answers(web, Endpoint("topic API", f"/api/clusters/faulty/topics/{faulty.topic}/"))
            timings["topic API, partial"] = round(until(topic, 3 * BOUND, "a partial topic answer"), 2)
            assert topic.last is not None
            led = [p for p in topic.last.json()["partitions"] if p["leader"] == frozen]
            assert led, str(topic)
            for p in led:
                assert p["end_offset"] is None, str(topic)
                assert f"broker {frozen}, did not answer" in p["error"], str(topic)
            overview = ask(web, Endpoint("overview API", "/api/clusters/faulty/"))
            assert_ok(overview)
            answering = {b["id"]: b["answering"] for b in overview.json()["brokers"]}
            assert answering == {**dict.fromkeys(faulty.layout.broker_ids, True), frozen: False}, str(overview)
            # The group list leaves out the groups the frozen broker coordinates, and says so.
            group_list = Answers(web, Endpoint("group list API", "/api/clusters/faulty/groups/"))
            timings["group list API, partial"] = round(until(group_list, 3 * BOUND, "a partial group list"), 2)
            assert group_list.last is not None
            assert group_list.last.json()["unanswered_brokers"] == [frozen], str(group_list)
            listed = {g["group_id"]: g for g in group_list.last.json()["groups"]}
            if faulty.group in listed:  # coordinated by another broker: partition 0's lag is unknown, not 0
                assert listed[faulty.group]["partitions_without_log_end"] >= 1, str(group_list)
            page = ask(web, Endpoint("group list", "/clusters/faulty/groups/"))
            assert_ok(page)
            assert f"Broker {frozen} did not answer: the groups it coordinates are not listed" in page.body
            for answer in ask_all(web, faulty, timings):
                assert_ok_or_unavailable(answer)
            started = time.monotonic()
            lag_sampler.sample_once()
            timings["lag sampler"] = round(time.monotonic() - started, 2)
            assert timings["lag sampler"] < BOUND * 2  # every configured cluster, each bounded
            assert watch.after(frozen_at), "the live overview stopped pushing while a broker was frozen"
        finally:
            os.kill(pid, signal.SIGCONT)
        thawed_at = time.monotonic()
        # Nothing wedged: pages, the live poller and the sampler all work again.
        for endpoint in endpoints(faulty):
            until(Answers(web, endpoint), 60, f"{endpoint.name} to answer again")
        until(lambda: any(normal(h) for h in watch.after(thawed_at)), 30, "a normal live push")
        assert watch.closed is None
    until(lambda: "faulty" in lag_sampler.sample_once(), 30, "the lag sampler to sample the cluster again")
    report(record_property, "seconds_with_a_frozen_broker", timings)
    wait_healthy(faulty)


# ---------------------------------------------------------------- 4. every broker stops


def test_every_page_says_so_when_every_broker_stops_and_recovers_when_they_return(
    faulty: Faulty, web: Client, admin_user: Any, record_property: Callable[[str, object], None]
) -> None:
    for answer in ask_all(web, faulty):  # every client of the console is connected when the brokers go
        assert_ok(answer)
    timings: dict[str, float] = {}
    tail_path = f"/ws/clusters/faulty/topics/{faulty.topic}/tail/"
    with LiveWatch("/ws/clusters/faulty/overview/", admin_user) as watch, LiveWatch(tail_path, admin_user) as tail:
        until(lambda: any(normal(h) for _, h in watch.fragments), 15, "the live overview")
        until(lambda: any("Waiting for new messages" in h for _, h in tail.fragments), 15, "the tail to start")
        stop_every_broker(faulty)
        try:
            stopped_at = time.monotonic()
            for answer in ask_all(web, faulty, timings):
                if answer.endpoint.name == "metrics":  # Prometheus gets its answer, with the cluster down
                    assert_ok(answer)
                    assert 'kazami_cluster_up{cluster="faulty"} 0' in answer.body
                else:
                    assert_unavailable(answer)
                    assert answer.seconds < 2 * TIMEOUT + 1, str(answer)
            until(lambda: any(UNAVAILABLE in h for h in watch.after(stopped_at)), 15, "an 'unavailable' live push")
            # The open tail says why nothing arrives, rather than only waiting.
            until(lambda: any(TAIL_AWAY in h for h in tail.after(stopped_at)), 15, "the tail to say so")
        finally:
            launcher.up(DATA, brokers=3, zookeeper_port=ZOOKEEPER_PORT, base_port=BASE_PORT, echo=quiet)
        returned_at = time.monotonic()
        recovery: dict[str, float] = {}
        for endpoint in endpoints(faulty):
            recovery[endpoint.name] = round(until(Answers(web, endpoint), 30, f"{endpoint.name} to answer again"), 2)
        until(lambda: any(normal(h) for h in watch.after(returned_at)), 30, "a normal live push")
        assert watch.closed is None  # the same websocket, never reconnected
        # The tail that was open all along shows what is written after the brokers returned.
        marker = f"after-the-outage-{uuid.uuid4().hex[:8]}"
        producer = KafkaProducer(bootstrap_servers=faulty.layout.bootstrap_servers.split(","), acks="all")
        producer.send(faulty.topic, value=marker.encode()).get(timeout=30)
        producer.close()
        until(lambda: any(marker in h for h in tail.after(returned_at)), 30, "the new message on the open tail")
        assert tail.closed is None
        assert TAIL_AWAY not in tail.fragments[-1][1]  # and says so no more
        assert 'class="muted"' in tail.fragments[-1][1]
    report(record_property, "seconds_with_every_broker_down", timings)
    report(record_property, "seconds_to_recover", recovery)
    wait_healthy(faulty)
