"""A search of a whole topic of 1,000,001 JSON records (6 partitions, lz4) for one record, through the console's
search API (``value contains "needle"``), against kcat reading the same topic to its end and grep picking the
record out: the tool a user would otherwise run.

Reference in the same run: ``kcat -C -e -q -f '%s\\n' | grep -c needle`` over every partition, as a whole pipeline
(process start included). The console's figure is the API request's wall time, from the request to the last byte
of the answer, with the default masking (none) and the default progress (it is reported to nobody over HTTP but
counted the same way). ``ratio_search_to_kcat`` is console time over kcat time: at or below 1, the console searches
at least as fast as kcat reads. Each is timed three times, alternated; the best of each is compared (the machine's
other work spoils single runs). A second query that cannot use a text probe (``value.page == "/products/7" and
value.user_id == "u00042"``: fields compared, the probe looks for ``u00042``) is timed too, as
``ratio_fields_to_kcat``, and one the probe cannot help at all, which decodes every record (``value.ms < 0``), as
``ratio_decoded_to_kcat``: what a search costs when every record must be read as JSON.

The records are written once by kcat (``-z lz4``) and kept while the topic holds them.
"""

from __future__ import annotations

import json
import random
import shutil
import subprocess
import time
import urllib.parse
import urllib.request
from typing import Any

from kafka import KafkaAdminClient, TopicPartition
from kafka.admin import NewTopic, OffsetSpec

from bench.common import BASE_PORT, console_server, write_result

TOPIC = "bench-search-1m"
PARTITIONS = 6
RECORDS = 1_000_000  # and the needle
NEEDLE = "needle"
RUNS = 3
QUERIES = {
    "search": f'value contains "{NEEDLE}"',
    "fields": 'value.page == "/products/7" and value.user_id == "u00042"',
    "decoded": "value.ms < 0",
}
PRODUCER_OPTIONS = ("-X", "linger.ms=50", "-X", "batch.size=1000000", "-X", "queue.buffering.max.messages=2000000")
PAGES = ("/", "/search", "/cart", "/checkout", *(f"/products/{n}" for n in range(40)))
EVENTS = ("page_view", "click", "add_to_cart", "search", "purchase")


def bootstrap() -> str:
    return ",".join(f"127.0.0.1:{BASE_PORT + b}" for b in range(3))


def _kcat() -> str:
    found = shutil.which("kcat") or shutil.which("kafkacat")
    if found is None:
        raise SystemExit("kcat is not installed (make system-deps installs it)")
    return found


def _lines() -> bytes:
    """RECORDS web events as ``key<TAB>value`` lines, and one holding the needle in the middle."""
    rng = random.Random(7)
    rows = []
    for n in range(RECORDS):
        user = rng.randrange(50_000)
        value = {
            "user_id": f"u{user:05d}",
            "event": rng.choice(EVENTS),
            "page": rng.choice(PAGES),
            "referrer": rng.choice(PAGES),
            "ms": 1_764_000_000_000 + n * 7,
            "session": f"s{rng.randrange(10**9):09d}",
        }
        rows.append(f"u{user:05d}\t{json.dumps(value, separators=(',', ':'))}")
        if n == RECORDS // 2:
            rows.append(f"u00001\t{json.dumps({'user_id': 'u00001', 'event': 'click', 'note': NEEDLE})}")
    return ("\n".join(rows) + "\n").encode()


def ensure_topic() -> int:
    """The topic with its RECORDS + 1 records; returns how many it holds."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap().split(","), request_timeout_ms=60_000)
    try:
        if TOPIC not in admin.list_topics():
            admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
            admin.wait_for_topics([TOPIC], timeout_ms=60_000)
        held = _held(admin)
        if held < RECORDS + 1:
            if held:
                admin.delete_records({TopicPartition(TOPIC, p): -1 for p in range(PARTITIONS)})
            started = time.perf_counter()
            subprocess.run(
                [_kcat(), "-P", "-b", bootstrap(), "-t", TOPIC, "-z", "lz4", "-K", "\t", *PRODUCER_OPTIONS],
                input=_lines(),
                check=True,
                timeout=900,
            )
            print(f"wrote {RECORDS + 1} records in {time.perf_counter() - started:.0f} s", flush=True)
            held = _held(admin)
        return held
    finally:
        admin.close()


def _held(admin: KafkaAdminClient) -> int:
    tps = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    ends = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
    starts = admin.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
    return sum(ends[tp].offset - starts[tp].offset for tp in tps)


def kcat_grep() -> tuple[float, int]:
    """kcat reading the topic to its end, grep counting the needle: (seconds, lines found)."""
    started = time.perf_counter()
    kcat = subprocess.Popen(
        [_kcat(), "-C", "-b", bootstrap(), "-t", TOPIC, "-o", "beginning", "-e", "-q", "-f", "%s\\n"],
        stdout=subprocess.PIPE,
    )
    grep = subprocess.run(["grep", "-c", NEEDLE], stdin=kcat.stdout, capture_output=True, timeout=600)
    kcat.wait(timeout=600)
    return time.perf_counter() - started, int(grep.stdout.strip() or 0)


def console_search(url: str, query: str) -> tuple[float, dict[str, Any]]:
    params = urllib.parse.urlencode({"q": query, "max_scan": 5_000_000, "max_matches": 1000})
    started = time.perf_counter()
    with urllib.request.urlopen(f"{url}/api/clusters/local/topics/{TOPIC}/search/?{params}", timeout=600) as answer:  # noqa: S310
        body = json.loads(answer.read())
    return time.perf_counter() - started, body


def run() -> dict[str, Any]:
    held = ensure_topic()
    times: dict[str, list[float]] = {"kcat": [], **{name: [] for name in QUERIES}}
    found: dict[str, Any] = {}
    with console_server(bootstrap()) as url:
        console_search(url, QUERIES["search"])  # warm: connections, metadata
        for _ in range(RUNS):
            took, lines = kcat_grep()
            times["kcat"].append(took)
            found["kcat"] = lines
            for name, query in QUERIES.items():
                took, body = console_search(url, query)
                times[name].append(took)
                found[name] = {k: body.get(k) for k in ("scanned", "matched", "stopped")}
    best = {name: min(samples) for name, samples in times.items()}
    result = {
        "topic_records": held,
        "partitions": PARTITIONS,
        "queries": QUERIES,
        "found": found,
        "samples_s": {name: [round(s, 2) for s in samples] for name, samples in times.items()},
        "reference_kcat_grep_s": round(best["kcat"], 2),
        "reference_kcat_records_per_s": round(held / best["kcat"]),
        "console_search_s": round(best["search"], 2),
        "console_search_records_per_s": round(held / best["search"]),
        "console_fields_s": round(best["fields"], 2),
        "console_fields_records_per_s": round(held / best["fields"]),
        "console_decoded_s": round(best["decoded"], 2),
        "console_decoded_records_per_s": round(held / best["decoded"]),
        "ratio_search_to_kcat": round(best["search"] / best["kcat"], 2),
        "ratio_fields_to_kcat": round(best["fields"] / best["kcat"], 2),
        "ratio_decoded_to_kcat": round(best["decoded"] / best["kcat"], 2),
    }
    write_result("search", result)
    return result
