"""Alerts against the real cluster: rules made through the API, evaluated by the lag sampler's and the replication
watch's own rounds, sent to a real HTTP receiver on loopback; firing once, resolving once, kept across a restart;
an unreachable webhook tried again with its failure shown; who may do what."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from datetime import timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
import yaml
from django.test import Client
from django.utils import timezone
from kafka import TopicPartition

from broker.local import launcher
from console.background import alerts, replication_watch
from console.background.lag_sampler import sample_once
from tests.conftest import free_port, logged_in
from tests.integration.kafka_helpers import commit_offsets, create_topic, produce, unique, wait_healthy

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]


class Receiver:
    """An HTTP server on loopback that keeps every JSON body posted to it."""

    def __init__(self) -> None:
        self.got: list[dict[str, Any]] = []
        received = self.got

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                received.append(json.loads(self.rfile.read(length)))
                self.send_response(204)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def of(self, state: str, **subject: str) -> list[dict[str, Any]]:
        return [a for a in self.got if a["state"] == state and all(a.get(k) == v for k, v in subject.items())]


@pytest.fixture
def receiver() -> Iterator[Receiver]:
    r = Receiver()
    yield r
    r.server.shutdown()


@pytest.fixture
def alert_settings(settings: Any, clusters_reset: None) -> None:
    settings.KAZAMI_ALERT_PRIVATE_TARGETS = "loopback"
    settings.KAZAMI_PUBLIC_URL = "http://kazami.test"


def channel(client: Client, name: str, url: str, fmt: str = "json") -> int:
    answer = client.post("/api/alerts/channels/", {"name": name, "url": url, "format": fmt}, "application/json")
    assert answer.status_code == 201, answer.content
    return int(answer.json()["id"])


def rule(client: Client, body: dict[str, Any]) -> int:
    answer = client.post("/api/clusters/local/alerts/rules/", body, "application/json")
    assert answer.status_code == 201, answer.content
    return int(answer.json()["id"])


def until(what: str, check: Any, timeout: float = 60, step: Any = None) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        if step is not None:
            step()
        got = check()
        if got:
            return got
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.5)


def test_a_lag_rule_fires_to_a_webhook_once_and_resolves_when_the_group_catches_up(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver
) -> None:
    admin, operator = logged_in("admin"), logged_in("operator")
    topic = create_topic(unique("alerted"), partitions=1)
    produce(topic, [(None, b"m%d" % i) for i in range(12)], partition=0)
    prefix = unique("g-alerted")
    group = f"{prefix}-one"
    commit_offsets(group, {TopicPartition(topic, 0): 2})
    hook = channel(admin, unique("hook"), receiver.url)
    made = rule(
        operator,
        {"name": unique("lag"), "kind": "consumer_lag", "group": f"{prefix}-*", "threshold": 5, "channels": [hook]},
    )

    # The sampler's round evaluates the rule and sends what fired (a KRaft cluster may still be moving
    # coordinators right after the commit: the round then knows nothing of the group and decides nothing).
    fired = until("the firing alert", lambda: receiver.of("firing", group=group), step=sample_once)
    assert len(fired) == 1
    alert = fired[0]
    assert (alert["cluster"], alert["kind"], alert["value"], alert["severity"]) == (
        "local",
        "consumer_lag",
        10,
        "warning",
    )
    assert alert["link"] == f"http://kazami.test/clusters/local/groups/{group}/"
    assert "10 records behind" in alert["text"]
    listed = operator.get("/api/clusters/local/alerts/").json()
    assert [f["subject"] for f in listed["firing"] if f["rule_id"] == made] == [group]
    assert listed["recent"][0]["deliveries"][0]["delivered"] is True

    # Further rounds, and a console that restarted (nothing is kept in memory: the state is in the database),
    # do not send it again.
    sample_once()
    sample_once()
    assert len(receiver.of("firing", group=group)) == 1

    commit_offsets(group, {TopicPartition(topic, 0): 12})
    resolved = until("the resolved alert", lambda: receiver.of("resolved", group=group), step=sample_once)
    assert len(resolved) == 1
    assert resolved[0]["text"].startswith("resolved: ")
    assert not [f for f in operator.get("/api/clusters/local/alerts/").json()["firing"] if f["rule_id"] == made]


def test_a_broker_gone_fires_and_resolves_on_restart_and_a_controller_change_fires(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver
) -> None:
    admin = logged_in("admin")
    hook = channel(admin, unique("hook"), receiver.url, fmt="json")
    replication_watch.forget()
    alerts._controllers.clear()

    def look() -> None:  # a round of the watch: a look, then what is due is sent
        replication_watch.observe("local")
        alerts.deliver_due()

    look()
    controller = replication_watch._last["local"].controller
    assert controller is not None
    # In ZooKeeper mode the broker stopped is the active controller, so its going moves the controller too; a
    # KRaft cluster with controllers of their own has broker 1 stopped, and its active controller apart.
    separate = controller in kafka_cluster.separate_controller_ids
    broker = 1 if separate else controller
    gone = str(broker)
    rule(
        admin,
        {"name": unique("gone"), "kind": "broker_gone", "broker": gone, "severity": "critical", "channels": [hook]},
    )
    rule(admin, {"name": unique("moved"), "kind": "controller_changed", "threshold": 600, "channels": [hook]})
    look()
    assert receiver.of("firing", kind="controller_changed") == []  # the controller it started with: no change
    launcher.stop_broker(broker, kafka_cluster.data, echo=lambda _: None)
    if separate:
        launcher.stop_controller(controller, kafka_cluster.data, echo=lambda _: None)
    try:
        fired = until(f"broker {gone} gone", lambda: receiver.of("firing", broker=gone), step=look)
        assert fired[0]["severity"] == "critical"
        assert fired[0]["text"] == f"broker {gone} is not registered with the cluster"
        moved = until("the controller change", lambda: receiver.of("firing", kind="controller_changed"), step=look)
        assert moved[0]["text"].startswith(f"the active controller changed from {controller} to ")
        assert moved[0]["controller"] != str(controller)
    finally:
        if separate:
            launcher.start_controller(controller, kafka_cluster.data, echo=lambda _: None)
        launcher.start_broker(broker, kafka_cluster.data, echo=lambda _: None)
        wait_healthy()
    until(f"broker {gone} back", lambda: receiver.of("resolved", broker=gone), step=look)
    assert len(receiver.of("firing", broker=gone)) == 1
    # The built-in rules every cluster gets are listed (no channel: they show on the alerts API only).
    kinds = {r["kind"] for r in admin.get("/api/clusters/local/alerts/rules/").json()["rules"] if r["builtin"]}
    every = {"offline_partitions", "broker_gone", "connector_failed", "cluster_unreachable"}
    assert {"offline_partitions", "broker_gone", "cluster_unreachable"} <= kinds <= every


def test_an_unreachable_webhook_is_tried_again_and_its_failure_shown(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver
) -> None:
    admin = logged_in("admin")
    closed = f"http://127.0.0.1:{free_port()}/nobody-listens"
    dead = channel(admin, unique("dead"), closed)
    alive = channel(admin, unique("alive"), receiver.url, fmt="slack")
    test = admin.post(f"/api/alerts/channels/{alive}/test/", {"cluster": "local"}, "application/json").json()
    assert test == {"delivered": True, "error": None}
    assert receiver.got[-1]["text"].startswith("*[TEST] test on local*")
    failed = admin.post(f"/api/alerts/channels/{dead}/test/", {"cluster": "local"}, "application/json").json()
    assert failed["delivered"] is False
    assert "could not be reached" in failed["error"]

    topic = create_topic(unique("alerted-dead"), partitions=1)
    produce(topic, [(None, b"x")] * 3, partition=0)
    group = unique("g-dead")
    commit_offsets(group, {TopicPartition(topic, 0): 0})
    rule(admin, {"name": unique("lag-dead"), "kind": "consumer_lag", "group": group, "channels": [dead]})
    until("the event", lambda: alert_recent(admin, group), step=sample_once)
    delivery = alert_recent(admin, group)[0]["deliveries"][0]
    assert (delivery["delivered"], delivery["attempts"]) == (False, 1)
    assert "could not be reached" in delivery["error"]
    assert delivery["next_attempt"] is not None
    alerts.deliver_due(timezone.now() + timedelta(seconds=6))  # after the first back-off (5 s)
    assert alert_recent(admin, group)[0]["deliveries"][0]["attempts"] == 2


def alert_recent(client: Client, group: str) -> list[dict[str, Any]]:
    return [a for a in client.get("/api/clusters/local/alerts/").json()["recent"] if a.get("group") == group]


def test_who_may_do_what_and_bad_input(kafka_cluster: launcher.ClusterLayout, settings: Any) -> None:
    settings.KAZAMI_ALERT_PRIVATE_TARGETS = ""
    viewer, operator, admin = logged_in("viewer"), logged_in("operator"), logged_in("admin")
    body = {"name": "x", "kind": "consumer_lag", "threshold": 1}
    assert viewer.post("/api/clusters/local/alerts/rules/", body, "application/json").status_code == 403
    assert viewer.get("/api/clusters/local/alerts/").status_code == 200
    hook = {"name": "h", "url": "https://hooks.example.com/x"}
    assert operator.post("/api/alerts/channels/", hook, "application/json").status_code == 403
    internal = admin.post("/api/alerts/channels/", {"name": "i", "url": "http://127.0.0.1:9/"}, "application/json")
    assert internal.status_code == 400
    assert "internal address" in internal.json()["message"]
    for bad in (
        {"name": "b", "kind": "nope"},
        {"name": "b", "kind": "consumer_lag", "threshold": "lots"},
        {"kind": "consumer_lag"},
    ):
        answer = operator.post("/api/clusters/local/alerts/rules/", bad, "application/json")
        assert answer.status_code == 400, bad
    assert (
        operator.post(
            "/api/clusters/local/alerts/rules/", {**body, "channels": [987654]}, "application/json"
        ).status_code
        == 400
    )
    assert operator.get("/api/clusters/no-such-cluster/alerts/").status_code == 404
    name = unique("dup")
    assert (
        operator.post("/api/clusters/local/alerts/rules/", {**body, "name": name}, "application/json").status_code
        == 201
    )
    again = operator.post("/api/clusters/local/alerts/rules/", {**body, "name": name}, "application/json")
    assert again.status_code == 409
    entries = admin.get("/api/audit/", {"action": "alerts.rule", "per_page": 200}).json()["entries"]
    outcomes = {(e["target"], e["outcome"]) for e in entries}
    assert (f"local: {name}", "done") in outcomes
    assert (f"local: {name}", "failed") in outcomes  # the second one, refused as a duplicate
    assert ("local: x", "refused") in outcomes  # the viewer's


def test_the_alerts_page_makes_and_deletes_rules_and_says_what_is_wrong(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None
) -> None:
    viewer, operator = logged_in("viewer"), logged_in("operator")
    page = viewer.get("/clusters/local/alerts/")
    assert page.status_code == 200
    html = page.content.decode()
    assert "Broker gone" in html  # the built-in rules
    assert 'id="new-rule"' not in html  # a viewer makes none
    prefilled = operator.get(
        "/clusters/local/alerts/", {"kind": "consumer_lag", "group": "orders-app"}
    ).content.decode()
    assert 'value="orders-app"' in prefilled
    assert 'id="new-rule" open' in prefilled
    bad = operator.post(
        "/clusters/local/alerts/", {"action": "rule", "name": "b", "kind": "consumer_lag", "threshold": "x"}
    )
    assert bad.status_code == 400
    assert "threshold must be a number" in bad.content.decode()
    name = unique("page-rule")
    made = operator.post(
        "/clusters/local/alerts/",
        {"action": "rule", "name": name, "kind": "lag_status", "subject": "orders-*", "statuses": ["STOP", "WARN"]},
    )
    assert made.status_code == 302
    rules = {r["name"]: r for r in operator.get("/api/clusters/local/alerts/rules/").json()["rules"]}
    assert (rules[name]["match"], rules[name]["statuses"]) == ("orders-*", ["STOP", "WARN"])
    gone = operator.post("/clusters/local/alerts/", {"action": "delete_rule", "rule": str(rules[name]["id"])})
    assert gone.status_code == 302
    assert name not in {r["name"] for r in operator.get("/api/clusters/local/alerts/rules/").json()["rules"]}
    assert (
        viewer.post("/clusters/local/alerts/", {"action": "rule", "name": "v", "kind": "consumer_lag"}).status_code
        == 403
    )
    assert operator.get("/clusters/local/alerts/firing/", {"part": "badge"}).status_code == 200
    exported = operator.get("/api/clusters/local/alerts/prometheus.yml")
    assert exported["Content-Type"].startswith("application/yaml")
    alerts_in_file = {r["alert"] for r in yaml.safe_load(exported.content)["groups"][0]["rules"]}
    assert {"Broker_gone", "Offline_partitions"} <= alerts_in_file
    assert operator.get("/clusters/nowhere/alerts/").status_code == 404


def test_a_silence_holds_an_alert_back_and_an_acknowledgement_is_shown(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver
) -> None:
    admin, operator = logged_in("admin"), logged_in("operator")
    topic = create_topic(unique("silenced"), partitions=1)
    produce(topic, [(None, b"s%d" % i) for i in range(8)], partition=0)
    loud, quiet = unique("g-loud"), unique("g-quiet")
    commit_offsets(loud, {TopicPartition(topic, 0): 0})
    commit_offsets(quiet, {TopicPartition(topic, 0): 0})
    hook = channel(admin, unique("hook"), receiver.url)
    made = rule(operator, {"name": unique("lag-s"), "kind": "consumer_lag", "group": "g-*", "channels": [hook]})
    held = operator.post(
        "/api/clusters/local/alerts/silences/",
        {"rule": made, "subject": quiet, "minutes": 30, "comment": "being moved"},
        "application/json",
    )
    assert held.status_code == 201, held.content
    assert held.json()["subject"] == quiet

    until("the loud one", lambda: receiver.of("firing", group=loud), step=sample_once)
    until(
        "the quiet one fired, silenced",
        lambda: [e for e in operator.get("/api/clusters/local/alerts/").json()["recent"] if e["subject"] == quiet],
        step=sample_once,
    )
    sample_once()
    assert receiver.of("firing", group=quiet) == []  # held back
    quiet_event = next(e for e in operator.get("/api/clusters/local/alerts/").json()["recent"] if e["subject"] == quiet)
    assert (quiet_event["silenced"], quiet_event["deliveries"]) == (True, [])
    firing = {
        f["subject"]: f for f in operator.get("/api/clusters/local/alerts/").json()["firing"] if f["rule_id"] == made
    }
    assert (firing[quiet]["silenced"], firing[loud]["silenced"]) == (True, False)

    acked = operator.post("/api/clusters/local/alerts/ack/", {"rule": made, "subject": loud}, "application/json")
    assert acked.status_code == 200, acked.content
    firing = {
        f["subject"]: f for f in operator.get("/api/clusters/local/alerts/").json()["firing"] if f["rule_id"] == made
    }
    assert firing[loud]["acknowledged_by"] == acked.json()["acknowledged_by"]
    assert (
        operator.post(
            "/api/clusters/local/alerts/ack/", {"rule": made, "subject": "nope"}, "application/json"
        ).status_code
        == 404
    )
    bad = operator.post("/api/clusters/local/alerts/silences/", {"minutes": 999999}, "application/json")
    assert bad.status_code == 400
    page = operator.get("/clusters/local/alerts/").content.decode()
    assert "being moved" in page
    assert '<span title="acknowledged ' in page  # beside the loud one, in place of its button
    silence_id = held.json()["id"]
    assert operator.delete(f"/api/clusters/local/alerts/silences/{silence_id}/").status_code == 200
    assert operator.get("/api/clusters/local/alerts/silences/").json()["silences"] == []


def test_alerts_by_email_through_a_real_smtp_server(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, settings: Any
) -> None:
    from aiosmtpd.controller import Controller

    class Inbox:
        def __init__(self) -> None:
            self.mails: list[tuple[list[str], str]] = []

        async def handle_DATA(self, server: Any, session: Any, envelope: Any) -> str:  # aiosmtpd calls it by this name
            self.mails.append((list(envelope.rcpt_tos), envelope.content.decode()))
            return "250 OK"

    inbox = Inbox()
    port = free_port()
    smtp = Controller(inbox, hostname="127.0.0.1", port=port)
    smtp.start()
    try:
        settings.KAZAMI_SMTP_HOST, settings.KAZAMI_SMTP_PORT = "127.0.0.1", port
        settings.KAZAMI_SMTP_FROM = "kazami@example.com"
        admin = logged_in("admin")
        made = admin.post(
            "/api/alerts/channels/",
            {"name": unique("mail"), "kind": "email", "to": ["oncall@example.com", "lead@example.com"]},
            "application/json",
        )
        assert made.status_code == 201, made.content
        assert made.json()["to"] == ["oncall@example.com", "lead@example.com"]
        bad = admin.post(
            "/api/alerts/channels/", {"name": "m2", "kind": "email", "to": "not an address"}, "application/json"
        )
        assert bad.status_code == 400
        topic = create_topic(unique("mailed"), partitions=1)
        produce(topic, [(None, b"e%d" % i) for i in range(7)], partition=0)
        group = unique("g-mailed")
        commit_offsets(group, {TopicPartition(topic, 0): 1})
        rule(
            admin, {"name": unique("lag-mail"), "kind": "consumer_lag", "group": group, "channels": [made.json()["id"]]}
        )
        until("the mail", lambda: inbox.mails, step=sample_once)
        to, text = inbox.mails[0]
        assert sorted(to) == ["lead@example.com", "oncall@example.com"]
        assert "Subject: [FIRING] " in text
        assert f"{group} is 6 records behind" in text
        assert f"Open it: http://kazami.test/clusters/local/groups/{group}/" in text
    finally:
        smtp.stop()


def test_throughput_and_catch_up_rules_fire_on_their_rounds(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver
) -> None:
    from console.background import throughput

    admin = logged_in("admin")
    hook = channel(admin, unique("hook"), receiver.url)
    quiet = create_topic(unique("quiet"), partitions=1)
    rule(admin, {"name": unique("quiet"), "kind": "throughput_low", "topic": quiet, "channels": [hook]})
    rule(admin, {"name": unique("disk"), "kind": "disk_used", "broker": "0", "threshold": 0, "channels": [hook]})
    throughput._last.clear()
    throughput.sample_once(min_interval_s=0)  # the first look: nothing to compare with
    time.sleep(1)
    throughput.sample_once(min_interval_s=0)
    alerts.deliver_due()
    fired = receiver.of("firing", topic=quiet)
    assert len(fired) == 1
    disk = receiver.of("firing", broker="0", kind="disk_used")  # any volume is more than 0% full
    assert len(disk) == 1
    assert 0 < disk[0]["value"] <= 100
    assert fired[0]["value"] == 0
    produce(quiet, [(None, b"q%d" % i) for i in range(50)], partition=0)
    time.sleep(1)
    throughput.sample_once(min_interval_s=0)
    alerts.deliver_due()
    assert len(receiver.of("resolved", topic=quiet)) == 1

    behind = create_topic(unique("behind"), partitions=1)
    produce(behind, [(None, b"b%d" % i) for i in range(30)], partition=0)
    group = unique("g-never")
    commit_offsets(group, {TopicPartition(behind, 0): 0})
    rule(admin, {"name": unique("late"), "kind": "catch_up_time", "group": group, "threshold": 60, "channels": [hook]})
    sample_once()  # one sample: no forecast yet, nothing decided
    assert receiver.of("firing", group=group) == []
    time.sleep(1.2)
    until("the catch-up alert", lambda: receiver.of("firing", group=group), step=sample_once)
    assert "does not gain" in receiver.of("firing", group=group)[0]["text"]


def test_a_transaction_held_open_fires_and_resolves_when_it_ends(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver
) -> None:
    from kafka import KafkaProducer

    from console.background import throughput
    from tests.conftest import BOOTSTRAP

    admin = logged_in("admin")
    hook = channel(admin, unique("hook"), receiver.url)
    topic = create_topic(unique("held"), partitions=2)
    rule(
        admin,
        {"name": unique("held"), "kind": "hanging_transaction", "topic": topic, "threshold": 1, "channels": [hook]},
    )
    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), transactional_id=unique("kazami-held"))
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send(topic, value=b"open", partition=1)
        producer.flush()

        def round_() -> None:  # the sampler's throughput round, the cached look of open transactions forgotten
            alerts._open.clear()
            throughput.sample_once(min_interval_s=0)
            alerts.deliver_due()

        fired = until("the open transaction", lambda: receiver.of("firing", topic=topic), step=round_)
        assert fired[0]["kind"] == "hanging_transaction"
        assert fired[0]["value"] == 1
        assert f"{topic}: a transaction holds 1 partition open, the oldest (partition 1, producer " in fired[0]["text"]
        assert "hanging" not in fired[0]["text"].split(")", 2)[-1]  # its coordinator still has it: not hanging
        producer.commit_transaction()
        until("the transaction ended", lambda: receiver.of("resolved", topic=topic), step=round_)
    finally:
        producer.close(timeout=5)


def test_a_cluster_that_does_not_answer_fires_the_built_in_rule_and_resolves_when_it_does(
    kafka_cluster: launcher.ClusterLayout, alert_settings: None, receiver: Receiver, monkeypatch: Any, tmp_path: Any
) -> None:
    from console.config.clusters import reset_for_tests
    from console.models import AlertRule
    from tests.conftest import BOOTSTRAP

    def configure(servers: str) -> None:
        file = tmp_path / "clusters.toml"
        listed = ", ".join(f'"{s}"' for s in servers.split(","))
        file.write_text(f"[clusters.far]\nbootstrap_servers = [{listed}]\ntimeout = 2\n")
        monkeypatch.setenv("KAZAMI_CLUSTERS_FILE", str(file))
        reset_for_tests()

    configure(f"127.0.0.1:{free_port()}")  # nothing listens there
    admin = logged_in("admin")
    # Listing the rules makes the built-in ones (as the first round would); the built-in rule gets a channel.
    built_in = [r for r in admin.get("/api/clusters/far/alerts/rules/").json()["rules"] if r["builtin"]]
    down = next(r for r in built_in if r["kind"] == "cluster_unreachable")
    hook = channel(admin, unique("hook"), receiver.url)
    AlertRule.objects.get(pk=down["id"]).channels.add(hook)
    sample_once()  # the cluster does not answer: the round says so
    alerts.deliver_due()
    fired = receiver.of("firing", kind="cluster_unreachable")
    assert len(fired) == 1
    assert fired[0]["subject"] == "far"
    assert fired[0]["severity"] == "critical"
    assert fired[0]["text"].startswith("cluster far does not answer: ")
    configure(BOOTSTRAP)  # the same name, now at a cluster that answers
    until("the cluster answers", lambda: receiver.of("resolved", kind="cluster_unreachable"), step=sample_once)
    assert len(receiver.of("firing", kind="cluster_unreachable")) == 1
