"""The console's overview latency: 200 requests each to the API and the page, p50/p99.

Reference in the same run: a bare kafka-python admin client making the same three calls
(describe cluster, describe all topics, the controller's protocol version). The figure is
console p50 / bare p50 (and the same for p99): what Django, Daphne and HTTP add.
The cluster holds 100 topics of 6 partitions so the metadata is not trivially small.
"""

from __future__ import annotations

import urllib.request
from typing import Any

from kafka import KafkaAdminClient
from kafka.admin import ConfigResource, ConfigResourceType, NewTopic

from bench.common import BASE_PORT, console_server, ratios, summarize_ms, time_calls, write_result

TOPICS = 100
PARTITIONS = 6
REQUESTS = 200


def ensure_topics(admin: KafkaAdminClient) -> None:
    existing = set(admin.list_topics())
    missing = [
        NewTopic(f"bench-overview-{i:03d}", PARTITIONS, 3)
        for i in range(TOPICS)
        if f"bench-overview-{i:03d}" not in existing
    ]
    if missing:
        admin.create_topics(missing)
        admin.wait_for_topics([t.name for t in missing], timeout_ms=120_000)


def run() -> dict[str, Any]:
    bootstrap = ",".join(f"127.0.0.1:{BASE_PORT + b}" for b in range(3))
    admin = KafkaAdminClient(bootstrap_servers=bootstrap.split(","), bootstrap_timeout_ms=10_000)
    try:
        ensure_topics(admin)

        def bare() -> None:
            cluster = admin.describe_cluster()
            admin.describe_topics()
            controller = str(cluster["controller_id"])
            admin.describe_configs(
                [ConfigResource(ConfigResourceType.BROKER, controller, ["inter.broker.protocol.version"])],
                config_filter="all",
            )

        bare_samples = time_calls(bare, REQUESTS)
    finally:
        admin.close()

    with console_server(bootstrap) as url:

        def get(path: str) -> None:
            with urllib.request.urlopen(url + path, timeout=10) as response:  # noqa: S310 - loopback
                response.read()
                assert response.status == 200

        api_samples = time_calls(lambda: get("/api/clusters/local/"), REQUESTS)
        page_samples = time_calls(lambda: get("/clusters/local/"), REQUESTS)

    bare_s, api_s, page_s = summarize_ms(bare_samples), summarize_ms(api_samples), summarize_ms(page_samples)
    result = {
        "topics": TOPICS,
        "partitions_per_topic": PARTITIONS,
        "requests": REQUESTS,
        "reference_bare_kafka_python": bare_s,
        "console_api": api_s,
        "console_page": page_s,
        **ratios("api", api_s, bare_s),
        **ratios("page", page_s, bare_s),
    }
    write_result("overview_latency", result)
    return result
