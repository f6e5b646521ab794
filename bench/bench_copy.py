"""Copying a topic of 1,000,001 records (the search benchmark's: 6 partitions, lz4, keyed JSON) to another topic:
the console's copy API, exactly-once and keeping partitions, from POST to the task's end, against the pipe a user
would otherwise run, Kafka's own ``kafka-console-consumer --from-beginning --max-messages N | kafka-console-producer``
(keys kept, each tool in its own JVM, timed from start to the producer's exit), in the same run.

``ratio_copy_to_pipe`` is the console's time over the pipe's: at or below 2, the console copies at least half as
fast as Kafka's own tools. Each is run twice, alternated; the best of each is compared. Every run writes to a new
topic, which is deleted afterwards.
"""

from __future__ import annotations

import http.cookiejar
import json
import re
import subprocess
import tempfile
import time
import urllib.parse
import urllib.request
import uuid
from pathlib import Path
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic, OffsetSpec

from bench import bench_search
from bench.common import BENCH_VAR, write_result
from broker.local import launcher
from console.devserver import running_console

RUNS = 2
SOURCE = bench_search.TOPIC
PARTITIONS = bench_search.PARTITIONS
CONSOLE_CONSUMER = "org.apache.kafka.tools.consumer.ConsoleConsumer"
CONSOLE_PRODUCER = "org.apache.kafka.tools.ConsoleProducer"
USER, PASSWORD = "bench-operator", "kz-copies-7Qe!wR"


def _admin() -> KafkaAdminClient:
    return KafkaAdminClient(bootstrap_servers=bench_search.bootstrap().split(","), request_timeout_ms=60_000)


def _new_topic(admin: KafkaAdminClient, prefix: str) -> str:
    name = f"{prefix}-{uuid.uuid4().hex[:6]}"
    admin.create_topics([NewTopic(name, PARTITIONS, 1)])
    admin.wait_for_topics([name], timeout_ms=60_000)
    return name


def _held(admin: KafkaAdminClient, topic: str) -> int:
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    ends = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    return sum(o.offset for o in ends.values())


def _java(main: str, *args: str) -> list[str]:
    log = BENCH_VAR / "tools-log4j2.properties"
    log.parent.mkdir(parents=True, exist_ok=True)
    log.write_text("rootLogger.level = ERROR\n")
    jars = launcher.classpath(launcher.DEFAULT_KAFKA4_VERSION)
    return ["java", "-Xmx512m", f"-Dlog4j2.configurationFile={log}", "-cp", jars, main, *args]


def pipe(admin: KafkaAdminClient, records: int) -> float:
    """Kafka's console consumer piped into its console producer, keys kept: seconds until the producer is done."""
    target = _new_topic(admin, "bench-copy-pipe")
    server = bench_search.bootstrap().split(",")[0]
    started = time.perf_counter()
    consumer = subprocess.Popen(
        _java(
            CONSOLE_CONSUMER,
            "--bootstrap-server",
            server,
            "--topic",
            SOURCE,
            "--from-beginning",
            "--max-messages",
            str(records),
            "--formatter-property",
            "print.key=true",
            "--formatter-property",
            "key.separator=\t",
        ),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )
    producer = subprocess.run(
        _java(
            CONSOLE_PRODUCER,
            "--bootstrap-server",
            server,
            "--topic",
            target,
            "--reader-property",
            "parse.key=true",
            "--reader-property",
            "key.separator=\t",
            "--compression-codec",
            "lz4",
        ),
        stdin=consumer.stdout,
        capture_output=True,
        timeout=1800,
        check=False,
    )
    if producer.returncode != 0:
        consumer.kill()
        raise RuntimeError(f"kafka-console-producer failed: {producer.stderr[-2000:]!r}")
    consumer.wait(timeout=60)
    took = time.perf_counter() - started
    copied = _held(admin, target)
    admin.delete_topics([target])
    assert copied == records, f"the pipe copied {copied} of {records}"
    return took


class Operator:
    """A session of an operator of the console, logged in through its form (copies are an operator's)."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.jar = http.cookiejar.CookieJar()
        self.opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(self.jar))
        form = self.opener.open(f"{url}/login/", timeout=30).read().decode()
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form)
        assert token is not None, "the login page has no CSRF token"
        data = urllib.parse.urlencode({"username": USER, "password": PASSWORD, "csrfmiddlewaretoken": token[1]})
        self.opener.open(f"{url}/login/", data=data.encode(), timeout=30)

    def csrf(self) -> str:
        return next(c.value or "" for c in self.jar if c.name == "csrftoken")

    def post(self, path: str, body: dict[str, Any]) -> Any:
        request = urllib.request.Request(  # noqa: S310 - the console on loopback
            self.url + path,
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json", "X-CSRFToken": self.csrf(), "Referer": self.url + "/"},
            method="POST",
        )
        with self.opener.open(request, timeout=60) as answer:
            return json.loads(answer.read())

    def get(self, path: str) -> Any:
        with self.opener.open(self.url + path, timeout=60) as answer:
            return json.loads(answer.read())


def console_copy(operator: Operator, admin: KafkaAdminClient, records: int) -> tuple[float, dict[str, Any]]:
    target = _new_topic(admin, "bench-copy-console")
    started = time.perf_counter()
    task = operator.post(f"/api/clusters/local/topics/{SOURCE}/copy/", {"to_topic": target})["id"]
    while True:
        state = operator.get(f"/api/tasks/{task}/")
        if state["finished"]:
            break
        time.sleep(0.2)
    took = time.perf_counter() - started
    assert state["status"] == "succeeded", state
    copied = _held(admin, target)
    admin.delete_topics([target])
    assert copied >= records, f"the console copied {copied} of {records}"  # transaction markers count as offsets
    return took, state["progress"]


def run() -> dict[str, Any]:
    records = bench_search.ensure_topic()
    admin = _admin()
    times: dict[str, list[float]] = {"pipe": [], "console": []}
    progress: dict[str, Any] = {}
    try:
        var = Path(tempfile.mkdtemp(prefix="kazami-bench-copy-"))
        settings = {"KAFKA_BOOTSTRAP_SERVERS": bench_search.bootstrap(), "KAZAMI_CLUSTERS_FILE": ""}
        with running_console(var, settings, users={USER: ("operator", PASSWORD)}) as url:
            operator = Operator(url)
            for _ in range(RUNS):
                times["pipe"].append(pipe(admin, records))
                took, progress = console_copy(operator, admin, records)
                times["console"].append(took)
    finally:
        admin.close()
    best = {name: min(values) for name, values in times.items()}
    result = {
        "records": records,
        "partitions": PARTITIONS,
        "runs": RUNS,
        "reference_console_consumer_pipe_s": round(best["pipe"], 2),
        "reference_records_per_s": round(records / best["pipe"]),
        "console_copy_s": round(best["console"], 2),
        "console_records_per_s": round(records / best["console"]),
        "console_guarantee": progress.get("guarantee"),
        "ratio_copy_to_pipe": round(best["console"] / best["pipe"], 2),
        "all_runs_s": {name: [round(v, 2) for v in values] for name, values in times.items()},
    }
    write_result("copy", result)
    return result
