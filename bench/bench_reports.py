"""Click to result: a PV/UU report through the console's API, on the warm Spark and on a Spark of its own, against a
bare PySpark script counting the same topic.

For each size (1,000, 20,000 and 1,000,000 web events, or the comma-separated counts of BENCH_REPORTS_EVENTS), in
one run, over a fresh topic of that many events (6 partitions, written by ``broker.demo.web.backfill``):

- **warm**: ``POST /api/clusters/local/jobs/`` ``{"report": "pv_uu", ...}`` to a console whose jobs run in a Spark
  Connect server (analytics/server.py, as ``make run`` starts it), then ``GET /api/jobs/<id>/`` every 50 ms until it
  succeeded: what a person waits from "run" to the chart. A first report (over the first topic) runs before any
  is measured, as on a console someone has used before; each size is measured BENCH_REPORTS_REPEAT times (median);
- **cold**: the same through a console whose jobs each start a Spark of their own (no KAZAMI_SPARK_REMOTE): how
  it was before the warm Spark, and how it is where none runs;
- **bare**: a new Python process running a plain PySpark script: a local session with the Kafka connector's jars,
  the topic read through Spark's Kafka source, its records counted (the least any Spark report does).

The aim (issue 29): ``ratio_<size>_warm_to_bare`` at most 0.5 for 1k events. The server's own start (once, like the
embedded cluster's) is reported apart as ``server_start_s``.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path
from typing import Any

import requests
from kafka import KafkaAdminClient

from analytics import server
from analytics.spark import SparkSettings, connector_jars
from bench.bench_backfill import bootstrap, fresh_topic
from bench.common import BENCH_VAR, REPO, SLOT, write_result
from broker.demo import web
from console.devserver import running_console

COUNTS = tuple(int(n) for n in os.environ.get("BENCH_REPORTS_EVENTS", "1000,20000,1000000").split(",") if n)
REPEAT = int(os.environ.get("BENCH_REPORTS_REPEAT", "3"))
SPAN_MS = 24 * 3600 * 1000
SPARK_PORT = 15202 + 10 * SLOT
USER = ("bench-operator", "amber-harbour-lantern-42")  # passes the password policy
BARE = textwrap.dedent(
    """
    import json, sys
    from pyspark.sql import SparkSession
    jars, servers, topic = sys.argv[1:4]
    spark = (SparkSession.builder.master("local[*]").appName("bare count").config("spark.jars", jars)
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").getOrCreate())
    frame = (spark.read.format("kafka").option("kafka.bootstrap.servers", servers).option("subscribe", topic)
             .option("startingOffsets", "earliest").option("endingOffsets", "latest").load())
    print(json.dumps({"count": frame.count()}))
    spark.stop()
    """
)


def label(count: int) -> str:
    return f"{count // 1_000_000}M" if count >= 1_000_000 and count % 1_000_000 == 0 else f"{count // 1000}k"


class Console:
    """A logged-in operator of a console, starting reports through its API."""

    def __init__(self, url: str) -> None:
        self.url, self.http = url, requests.Session()
        self.http.get(f"{url}/login/", timeout=30)
        data = {"username": USER[0], "password": USER[1], "csrfmiddlewaretoken": self.http.cookies["csrftoken"]}
        answer = self.http.post(f"{url}/login/", data=data, timeout=30, allow_redirects=False)
        if answer.status_code != 302:
            raise RuntimeError(f"the bench operator could not log in: {answer.status_code}")

    def report(self, topic: str, count: int) -> float:
        """Seconds from the POST to the job's success; checks it read ``count`` events."""
        headers = {"X-CSRFToken": self.http.cookies["csrftoken"], "Referer": self.url}
        body = {"report": "pv_uu", "topics": [topic], "bucket": "hour"}
        started = time.perf_counter()
        answer = self.http.post(f"{self.url}/api/clusters/local/jobs/", json=body, headers=headers, timeout=60)
        if answer.status_code != 201:
            raise RuntimeError(f"the report was refused: {answer.status_code} {answer.text[:300]}")
        job = answer.json()["id"]
        while True:
            state = self.http.get(f"{self.url}/api/jobs/{job}/", timeout=60).json()
            if state["status"] in ("succeeded", "failed", "cancelled"):
                break
            time.sleep(0.05)
        took = time.perf_counter() - started
        if state["status"] != "succeeded":
            raise RuntimeError(f"report {job} {state['status']}: {state.get('error')}")
        if state.get("input_rows") != count:
            raise RuntimeError(f"report {job} read {state.get('input_rows')} events, not {count}")
        return took


def bare_count(topic: str, count: int) -> float:
    """Seconds a new process takes to start Spark and count ``topic`` through the Kafka source."""
    started = time.perf_counter()
    out = subprocess.run(
        [sys.executable, "-c", BARE, ",".join(connector_jars()), ",".join(bootstrap()), topic],
        capture_output=True,
        text=True,
        timeout=900,
        cwd=REPO,
        env={**os.environ, "SPARK_LOCAL_IP": "127.0.0.1"},
    )
    took = time.perf_counter() - started
    if out.returncode != 0 or f'"count": {count}' not in out.stdout:
        raise RuntimeError(f"the bare count failed or miscounted: {out.stdout[-300:]} {out.stderr[-500:]}")
    return took


def run(counts: tuple[int, ...] = COUNTS) -> dict[str, Any]:
    data = BENCH_VAR / "spark-connect"
    server.stop(data, echo=lambda _: None)
    started = time.perf_counter()
    state = server.start(data, port=SPARK_PORT, settings=SparkSettings(ui=False, app_name="kazami bench"))
    server_start = time.perf_counter() - started
    remote = state.remote(data.resolve())
    admin = KafkaAdminClient(bootstrap_servers=bootstrap(), bootstrap_timeout_ms=10_000, request_timeout_ms=60_000)
    replicas = min(3, len(admin.describe_cluster()["brokers"]))
    topics = {}
    for count in counts:
        topics[count] = fresh_topic(admin, f"bench-reports-{label(count)}", replicas)
        web.backfill(bootstrap(), topics[count], count, span_ms=SPAN_MS, seed=count, acks=-1)
    common = {"KAFKA_BOOTSTRAP_SERVERS": ",".join(bootstrap()), "KAZAMI_CLUSTERS_FILE": ""}
    users = {USER[0]: ("operator", USER[1])}
    sizes: dict[str, Any] = {}
    figures: dict[str, Any] = {}
    try:
        warm_settings = {**common, "KAZAMI_SPARK_REMOTE": remote}
        with running_console(Path(tempfile.mkdtemp(prefix="kazami-bench-")), warm_settings, users) as url:
            warm = Console(url)
            first = warm.report(topics[counts[0]], counts[0])  # a console used before: the server has run a report
            for count in counts:
                times = [warm.report(topics[count], count) for _ in range(REPEAT)]
                sizes[label(count)] = {"warm_s": [round(t, 2) for t in times]}
        cold_settings = {**common, "KAZAMI_SPARK_REMOTE": ""}
        with running_console(Path(tempfile.mkdtemp(prefix="kazami-bench-")), cold_settings, users) as url:
            cold = Console(url)
            for count in counts:
                sizes[label(count)]["cold_s"] = [round(cold.report(topics[count], count), 2)]
        for count in counts:
            sizes[label(count)]["bare_s"] = [round(bare_count(topics[count], count), 2) for _ in range(REPEAT)]
    finally:
        server.stop(data, echo=lambda _: None)
        admin.delete_topics(list(topics.values()))
        admin.close()
    for name, size in sizes.items():
        for kind in ("warm_s", "cold_s", "bare_s"):
            size[f"{kind[:-2]}_median_s"] = round(statistics.median(size[kind]), 2)
        figures[f"{name}_warm_s"] = size["warm_median_s"]
        figures[f"{name}_cold_s"] = size["cold_median_s"]
        figures[f"{name}_bare_s"] = size["bare_median_s"]
        figures[f"ratio_{name}_warm_to_bare"] = round(size["warm_median_s"] / size["bare_median_s"], 2)
        figures[f"ratio_{name}_cold_to_bare"] = round(size["cold_median_s"] / size["bare_median_s"], 2)
    result = {
        "report": "pv_uu",
        "bucket": "hour",
        "partitions": 6,
        "repeat": REPEAT,
        "server_start_s": round(server_start, 1),
        "first_report_s": round(first, 2),
        **figures,
        "sizes": sizes,
    }
    write_result("report_time", result)
    return result
