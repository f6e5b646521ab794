"""The task queue from Kafka introductions: a producer sends one task a second, a consumer needs two
seconds for each, so lag grows; a second consumer in the same group halves the work and lag drains.

``python -m broker.demo tasks [--second-after 120] [--duration 0]`` runs it until interrupted.
"""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Callable

from kafka import KafkaAdminClient, KafkaConsumer, KafkaProducer
from kafka.admin import NewTopic
from kafka.errors import TopicAlreadyExistsError

from broker.client.connection import live_brokers

TOPIC = "tasks"
GROUP = "task-workers"


def ensure_topic(servers: list[str]) -> None:
    admin = KafkaAdminClient(bootstrap_servers=servers, bootstrap_timeout_ms=10_000)
    try:
        with contextlib.suppress(TopicAlreadyExistsError):
            admin.create_topics([NewTopic(TOPIC, 2, min(3, len(live_brokers(admin))))])
        admin.wait_for_topics([TOPIC], timeout_ms=30_000)
    finally:
        admin.close()


def produce(servers: list[str], stop: threading.Event, every: float = 1.0) -> None:
    """One task every ``every`` seconds, keyed by task number (so both partitions get work)."""
    producer = KafkaProducer(bootstrap_servers=servers, acks="all")
    number = 0
    try:
        while not stop.is_set():
            number += 1
            body = {"task": number, "created_ms": int(time.time() * 1000), "work_s": 2}
            producer.send(TOPIC, key=str(number).encode(), value=json.dumps(body).encode())
            stop.wait(every)
    finally:
        producer.close(timeout=5)


def work(servers: list[str], stop: threading.Event, name: str, seconds_per_task: float = 2.0) -> None:
    """A worker of the group: takes a task, spends ``seconds_per_task`` on it, commits, repeats."""
    consumer = KafkaConsumer(
        TOPIC,
        bootstrap_servers=servers,
        group_id=GROUP,
        client_id=name,
        enable_auto_commit=False,
        auto_offset_reset="earliest",
        max_poll_records=1,
    )
    try:
        while not stop.is_set():
            for _tp, records in consumer.poll(timeout_ms=500).items():
                for _record in records:
                    stop.wait(seconds_per_task)
                    consumer.commit()
    finally:
        consumer.close()


def run(
    servers: list[str],
    second_after: float | None,
    duration: float,
    echo: Callable[[str], None] = print,
    stop: threading.Event | None = None,
) -> None:
    """Run the producer and one worker; start a second worker after ``second_after`` seconds (None: never);
    stop after ``duration`` seconds (0: until ``stop`` is set or Ctrl-C)."""
    ensure_topic(servers)
    stop = stop or threading.Event()
    threads = [
        threading.Thread(target=produce, args=(servers, stop), daemon=True),
        threading.Thread(target=work, args=(servers, stop, "worker-1"), daemon=True),
    ]
    for t in threads:
        t.start()
    echo(f"Task queue on topic {TOPIC!r}: one task a second, group {GROUP!r} takes two seconds a task.")
    started = time.monotonic()
    second_started = False
    try:
        while not stop.is_set():
            elapsed = time.monotonic() - started
            if second_after is not None and not second_started and elapsed >= second_after:
                helper = threading.Thread(target=work, args=(servers, stop, "worker-2"), daemon=True)
                helper.start()
                threads.append(helper)
                second_started = True
                echo("Second worker started: lag will drain.")
            if duration and elapsed >= duration:
                break
            stop.wait(0.5)
    except KeyboardInterrupt:
        pass
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=10)
