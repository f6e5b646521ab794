"""How soon after a partition's leader stops the console sees the new leader, in both modes.

For each mode (Kafka 3.9 with ZooKeeper; Kafka 4.3 in KRaft mode with three controllers of their own),
on a cluster of its own: a topic of one partition on three brokers; each round stops the leader's broker
and, from the moment the stop is asked, two observers poll until they see another leader:

- the console: ``broker.replication.health.get_replication`` (what the replication page and its timeline draw
  from) every 100 ms, with nothing shared between calls;
- the reference: Kafka's own ``kafka-topics --describe`` run in a loop, as people watch a failover by
  hand (each run is a new JVM).

Then the broker is started again and leadership moved back (preferred election) for the next round. The
figures are the medians over the rounds, and their ratio (console / reference): under 1, the console
sees the failover sooner.

Each mode is measured twice: a clean stop (SIGTERM: the broker hands its leadership over before it
goes) and a crash (SIGKILL: the cluster learns of it only when the broker's session expires, ZooKeeper's
``zookeeper.session.timeout.ms`` or the KRaft controller's ``broker.session.timeout.ms``), where both
observers wait for the same expiry and the ratio says whether the console adds anything to it.
"""

from __future__ import annotations

import contextlib
import shutil
import statistics
import subprocess
import threading
import time
from typing import Any

import kafka.errors
from kafka import KafkaAdminClient
from kafka.admin import NewTopic

from bench.common import BENCH_VAR, write_result
from broker.client.config import ClusterConfig
from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.local import launcher
from broker.replication.health import get_replication

ROUNDS = 5
KILLED_ROUNDS = 3
TOPIC = "failover"
POLL_S = 0.1
MODES: dict[str, dict[str, Any]] = {
    "zookeeper": {"base_port": 13392, "zookeeper_port": 13381},
    "kraft": {"base_port": 13492, "kafka_version": launcher.DEFAULT_KAFKA4_VERSION, "controllers": 3},
}


def _leader_by_tool(classpath: str, bootstrap: str) -> int | None:
    done = subprocess.run(
        [
            "java",
            "-Xmx256m",
            "-cp",
            classpath,
            "org.apache.kafka.tools.TopicCommand",
            "--bootstrap-server",
            bootstrap,
            "--describe",
            "--topic",
            TOPIC,
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    for line in done.stdout.splitlines():
        cells = line.replace("\t", " ").split()
        if "Partition:" in cells and "Leader:" in cells:
            value = cells[cells.index("Leader:") + 1]
            return int(value) if value.lstrip("-").isdigit() and int(value) >= 0 else None
    return None


def _leader_by_console(conn: ClusterConnection) -> int | None:
    replication = get_replication(conn)
    return next((p.leader for p in replication.partitions if p.topic == TOPIC), None)


def _watch(see: Any, old: int, started: float, found: dict[str, float], name: str, deadline: float) -> None:
    while time.monotonic() < deadline:
        try:
            leader = see()
        except (KazamiError, kafka.errors.KafkaError, subprocess.SubprocessError):
            leader = None  # a moment without an answer during the failover: ask again
        if leader is not None and leader != old:
            found[name] = time.monotonic() - started
            return
        time.sleep(POLL_S)


def _mode(mode: str, options: dict[str, Any], rounds: int, killed_rounds: int) -> dict[str, Any]:
    data = BENCH_VAR / f"failover-{mode}"
    launcher.down(data, echo=lambda _: None)
    shutil.rmtree(data, ignore_errors=True)
    layout = launcher.up(data, brokers=3, echo=lambda _: None, **options)
    bootstrap = f"127.0.0.1:{options['base_port']}"
    classpath = launcher.classpath(layout.kafka_version)
    conn = ClusterConnection(ClusterConfig(f"bench-{mode}", (bootstrap,), max_age=0, timeout=2.0))
    admin = KafkaAdminClient(bootstrap_servers=[bootstrap], request_timeout_ms=20_000)
    samples: dict[str, tuple[list[float], list[float]]] = {"": ([], []), "_killed": ([], [])}
    try:
        admin.create_topics([NewTopic(TOPIC, 1, 3)])
        admin.wait_for_topics([TOPIC], timeout_ms=30_000)
        time.sleep(2)
        for kill in [False] * rounds + [True] * killed_rounds:
            console, reference = samples["_killed" if kill else ""]
            old = _leader_by_console(conn)
            assert old is not None, "the topic has no leader"
            found: dict[str, float] = {}
            started = time.monotonic()
            deadline = started + 90
            watchers = [
                threading.Thread(
                    target=_watch, args=(lambda: _leader_by_console(conn), old, started, found, "console", deadline)
                ),
                threading.Thread(
                    target=_watch,
                    args=(lambda: _leader_by_tool(classpath, bootstrap), old, started, found, "reference", deadline),
                ),
            ]
            for w in watchers:
                w.start()
            launcher.stop_broker(old, data, echo=lambda _: None, kill=kill)
            for w in watchers:
                w.join()
            console.append(found.get("console", float("nan")))
            reference.append(found.get("reference", float("nan")))
            launcher.start_broker(old, data, echo=lambda _: None)
            _wait_in_sync(conn, old)
            admin.elect_leaders(0, {TOPIC: [0]}, raise_errors=False)
            time.sleep(1)
    finally:
        admin.close()
        conn.close()
        launcher.down(data, echo=lambda _: None)
    result: dict[str, Any] = {}
    for how, (console, reference) in samples.items():
        if not console:
            continue
        console_s, reference_s = statistics.median(console), statistics.median(reference)
        result |= {
            f"console_{mode}{how}_median_s": round(console_s, 2),
            f"reference_{mode}{how}_median_s": round(reference_s, 2),
            f"ratio_{mode}{how}_console_to_reference": round(console_s / reference_s, 2),
            f"samples_{mode}{how}_s": {
                "console": [round(x, 2) for x in console],
                "reference": [round(x, 2) for x in reference],
            },
        }
    return result


def _wait_in_sync(conn: ClusterConnection, broker: int, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with contextlib.suppress(KazamiError, StopIteration):  # the cluster settling after a restart
            if broker in next(p for p in get_replication(conn).partitions if p.topic == TOPIC).isr:
                return
        time.sleep(0.5)
    raise RuntimeError(f"broker {broker} did not come back in sync within {timeout:.0f} s")


def run(rounds: int = ROUNDS, killed_rounds: int = KILLED_ROUNDS) -> dict[str, Any]:
    result: dict[str, Any] = {"rounds": rounds, "killed_rounds": killed_rounds, "poll_s": POLL_S}
    for mode, options in MODES.items():
        result.update(_mode(mode, options, rounds, killed_rounds))
    write_result("failover", result)
    return result
