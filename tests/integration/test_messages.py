"""Reading, finding, searching and producing messages against the real cluster: pages, API, websockets."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import subprocess
import time
from datetime import UTC, datetime
from typing import Any

import fastavro
import pytest
from asgiref.sync import async_to_sync
from channels.testing import WebsocketCommunicator
from django.test import Client
from kafka import KafkaConsumer, TopicPartition

from broker.local import launcher
from broker.messages.partitioners import crc32_partition, murmur2_partition, placements
from console.asgi import application
from tests.conftest import BOOTSTRAP, logged_in, websocket_headers
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db(transaction=True)]
WS_HEADERS: list[tuple[bytes, bytes]] = []  # a logged-in browser's; set by the client fixture


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    client = logged_in()
    WS_HEADERS[:] = websocket_headers(client)
    return client


def page(client: Client, topic: str, partition: int = 0, **params: Any) -> Any:
    response = client.get(f"/api/clusters/local/topics/{topic}/partitions/{partition}/messages", params)
    assert response.status_code == 200, response.content
    return response.json()


@pytest.mark.parametrize("compression", [None, "gzip", "snappy", "lz4", "zstd"])
def test_messages_of_every_compression_type_read_back_exactly(client: Client, compression: str | None) -> None:
    name = create_topic(unique(f"mc-{compression or 'none'}"), partitions=1)
    records = [(f"k{i}".encode(), json.dumps({"n": i, "pad": "x" * 50}).encode()) for i in range(20)]
    produce(name, records, partition=0, headers=[("codec", (compression or "none").encode())], compression=compression)
    body = page(client, name, limit=50)
    assert [m["offset"] for m in body["messages"]] == list(range(20))
    assert [(m["key"], m["value"]) for m in body["messages"]] == [(k.decode(), v.decode()) for k, v in records]
    assert body["messages"][3]["headers"] == [
        {"name": "codec", "value": compression or "none", "value_encoding": "utf-8"}
    ]
    assert {m["key_encoding"] for m in body["messages"]} == {"utf-8"}


def test_tombstones_binary_keys_and_invalid_utf8_are_told_apart(client: Client) -> None:
    name = create_topic(unique("mkinds"), partitions=1)
    binary = bytes(range(256))
    produce(
        name, [(b"gone", None), (binary, b"\xff\xfe not utf-8"), (None, b""), (b"ok", "zoë ✓".encode())], partition=0
    )
    m = page(client, name)["messages"]
    assert (m[0]["value"], m[0]["value_encoding"]) == (None, None)
    assert m[1]["key_encoding"] == "base64"
    assert base64.b64decode(m[1]["key"]) == binary
    assert m[1]["value_encoding"] == "base64"
    assert (m[2]["key"], m[2]["value"], m[2]["value_encoding"]) == (None, "", "utf-8")
    assert m[3]["value"] == "zoë ✓"
    # What the pages call each key and value, the API says too.
    assert [(x["key_kind"], x["value_kind"]) for x in m] == [
        ("text", "null"),
        ("binary", "binary"),
        ("null", "empty"),
        ("text", "text"),
    ]
    html = client.get(f"/clusters/local/topics/{name}/partitions/0/").content.decode()
    assert "null (tombstone)" in html
    assert "binary · 256 B" in html
    assert ">empty<" in html
    detail = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/")
    assert detail.status_code == 200
    assert "00000000  00 01 02 03 04 05 06 07  08 09 0a 0b 0c 0d 0e 0f" in detail.content.decode()
    raw = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/1/", {"download": "key"})
    assert raw["Content-Type"] == "application/octet-stream"
    assert raw.content == binary
    # The API path docs/pages-and-api.md documents downloads the same bytes; null is not an empty file.
    api = f"/api/clusters/local/topics/{name}/partitions/0/messages/"
    assert client.get(f"{api}1", {"download": "value"}).content == b"\xff\xfe not utf-8"
    assert client.get(f"{api}1", {"download": "key"}).content == binary
    empty = client.get(f"{api}2", {"download": "value"})
    assert (empty.status_code, empty.content) == (200, b"")
    no_key = client.get(f"{api}2", {"download": "key"})
    assert no_key.status_code == 404
    assert "no key (null)" in no_key.json()["message"]
    tombstone = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/0/", {"download": "value"})
    assert tombstone.status_code == 404
    assert "tombstone" in tombstone.content.decode()
    assert client.get(f"{api}0", {"download": "headers"}).status_code == 400


def test_the_page_and_the_api_label_a_value_alike(client: Client) -> None:
    name = create_topic(unique("mlabel"), partitions=1)
    values = [b"abc\x00def", b"42", '\ufeff{"a": 1}'.encode(), b"plain words"]
    produce(name, [(None, v) for v in values], partition=0)
    kinds = [m["value_kind"] for m in page(client, name)["messages"]]
    assert kinds == ["binary", "json", "json", "text"]
    found = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": ""}).json()["messages"]
    assert [m["value_kind"] for m in sorted(found, key=lambda m: m["offset"])] == kinds
    assert client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages/0").json()["value_encoding"] == "utf-8"
    for offset, kind in enumerate(kinds):
        html = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/{offset}/").content.decode()
        assert f"{kind} · {len(values[offset])} B" in html, (offset, kind)


def test_hostile_payloads_are_rendered_as_inert_text(client: Client) -> None:
    name = create_topic(unique("mhostile"), partitions=1)
    script = b"<script>window.__pwned=1</script>"
    produce(
        name,
        [(b'"><img src=x onerror=alert(1)>', script + "\u202egnp.exe".encode()), (b"ctl", b"a\x00b\x1bc")],
        partition=0,
        headers=[("x-<b>", b"<i>hi</i>")],
    )
    html = client.get(f"/clusters/local/topics/{name}/partitions/0/").content.decode()
    assert "<script>window.__pwned" not in html
    assert "&lt;script&gt;window.__pwned=1&lt;/script&gt;" in html
    assert "<img src=x" not in html
    assert "<i>hi</i>" not in html
    assert "\u202e" not in html  # the right-to-left override is shown as an escape, not applied
    assert "\\u202e" in html
    assert "\x00" not in html


def test_browsing_pages_clamps_and_refuses_bad_numbers(client: Client) -> None:
    name = create_topic(unique("mpage"), partitions=1)
    produce(name, [(None, f"m{i}".encode()) for i in range(120)], partition=0)
    first = page(client, name, offset=0, limit=50)
    assert (first["offset"], first["next_offset"], first["prev_offset"]) == (0, 50, None)
    middle = page(client, name, offset=50, limit=50)
    assert [m["value"] for m in middle["messages"]][:2] == ["m50", "m51"]
    assert (middle["prev_offset"], middle["next_offset"]) == (0, 100)
    last = page(client, name, last="1", limit=50)
    assert (last["offset"], len(last["messages"]), last["next_offset"]) == (70, 50, None)
    past = page(client, name, offset=10_000, limit=10)
    assert past["offset"] == 110
    assert past["notes"] == ["Offset 10000 is past the end (120); showing the last messages from 110."]
    client.post(
        f"/api/clusters/local/topics/{name}/delete-records/",
        {"partition": 0, "before_offset": 20},
        content_type="application/json",
    )
    before = page(client, name, offset=5, limit=5)
    assert before["offset"] == 20
    assert before["notes"] == ["Offset 5 is before the first offset 20; showing from 20."]
    for params, reason in [
        ({"offset": "ten"}, "offset must be a whole number"),
        ({"limit": "501"}, "1 to 500"),
        ({"limit": "0"}, "1 to 500"),
        ({"timestamp": "yesterday"}, "timestamp must be epoch ms"),
    ]:
        response = client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages", params)
        assert response.status_code == 400, params
        assert (
            reason in response.json()["message"]
            or reason.replace("epoch ms", "epoch milliseconds") in response.json()["message"]
        )
    assert client.get(f"/clusters/local/topics/{name}/partitions/0/", {"offset": "-1"}).status_code == 200
    negative = client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages/99999")
    assert negative.status_code == 404


def test_browsing_from_a_timestamp_starts_at_the_first_message_at_or_after_it(client: Client) -> None:
    name = create_topic(unique("mtime"), partitions=1)
    consumer_free = [(None, b"early"), (None, b"late")]
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=BOOTSTRAP.split(","), acks="all")
    # Both in the past: Kafka 4 refuses timestamps more than an hour ahead (log.message.timestamp.after.max.ms).
    sent = [
        producer.send(name, value=consumer_free[0][1], partition=0, timestamp_ms=1_600_000_000_000),
        producer.send(name, value=consumer_free[1][1], partition=0, timestamp_ms=1_700_000_000_000),
    ]
    producer.flush()
    for future in sent:
        future.get(timeout=10)
    producer.close()
    iso = datetime.fromtimestamp(1_650_000_000, tz=UTC).isoformat()
    body = page(client, name, timestamp=iso)
    assert [m["value"] for m in body["messages"]] == ["late"]
    assert body["messages"][0]["timestamp"] == 1_700_000_000_000
    assert page(client, name, timestamp="1600000000000")["messages"][0]["value"] == "early"


def test_find_by_key_scans_only_the_keys_partition(client: Client) -> None:
    name = create_topic(unique("mkey"), partitions=6)
    written = produce(name, [(f"user-{i % 9}".encode(), f"v{i}".encode()) for i in range(90)])
    target = b"user-4"
    expected_partition = murmur2_partition(target, 6)
    assert {p for (p, _), i in zip(written, range(90), strict=True) if i % 9 == 4} == {expected_partition}
    body = client.get(
        f"/api/clusters/local/topics/{name}/find-key/", {"key": "user-4", "partitioner": "murmur2"}
    ).json()
    assert body["partition"] == expected_partition
    assert [m["value"] for m in body["messages"]] == [f"v{i}" for i in range(4, 90, 9)]
    assert body["scanned"] == sum(1 for p, _ in written if p == expected_partition)
    page = client.get(f"/clusters/local/topics/{name}/find-key/", {"key": "user-4", "partitioner": "murmur2"})
    html = page.content.decode()
    assert f"Searched partition {expected_partition} only." in html
    hexed = client.get(f"/api/clusters/local/topics/{name}/find-key/", {"key": target.hex(), "key_format": "hex"})
    assert hexed.json()["partition"] == expected_partition
    bad = client.get(f"/api/clusters/local/topics/{name}/find-key/", {"key": "zz", "key_format": "hex"})
    assert bad.status_code == 400


def test_find_by_key_finds_keys_placed_by_librdkafka_and_by_java_clients(client: Client) -> None:
    """kcat (librdkafka: CRC32 by default) and kafka-python (murmur2, as Java) write keys into one topic:
    ``auto`` finds every key and says which partitioner placed it; murmur2 alone misses librdkafka's."""
    name = create_topic(unique("mkeys"), partitions=6)
    rd_keys = [f"rd-{i}" for i in range(24)]
    lines = "".join(f"{k}:from-kcat-{k}\n" for k in rd_keys)
    subprocess.run(
        ["kcat", "-P", "-b", BOOTSTRAP, "-t", name, "-K:", "-X", "socket.timeout.ms=10000"],
        input=lines.encode(),
        check=True,
        timeout=60,
    )
    java_keys = [f"java-{i}" for i in range(24)]
    produce(name, [(k.encode(), f"from-java-{k}".encode()) for k in java_keys])
    written = {k: f"from-kcat-{k}" for k in rd_keys} | {k: f"from-java-{k}" for k in java_keys}
    api = f"/api/clusters/local/topics/{name}/find-key/"
    for key, partitioner in [(k, "crc32") for k in rd_keys] + [(k, "murmur2") for k in java_keys]:
        body = client.get(api, {"key": key}).json()
        expected = (crc32_partition if partitioner == "crc32" else murmur2_partition)(key.encode(), 6)
        assert [(m["partition"], m["value"]) for m in body["messages"]] == [(expected, written[key])]
        assert partitioner in body["found_in"][str(expected)]
        assert body["searched"] == sorted(set(body["placements"].values()))
        assert len(body["searched"]) <= 3  # murmur2, CRC32 and FNV-1a
    apart = next(k for k in rd_keys if crc32_partition(k.encode(), 6) != murmur2_partition(k.encode(), 6))
    only_java = client.get(api, {"key": apart, "partitioner": "murmur2"}).json()
    assert only_java["messages"] == []
    assert only_java["searched"] == [murmur2_partition(apart.encode(), 6)]
    everywhere = client.get(api, {"key": apart, "partitioner": "all"}).json()
    assert everywhere["searched"] == list(range(6))
    assert [m["value"] for m in everywhere["messages"]] == [f"from-kcat-{apart}"]
    assert client.get(api, {"key": apart, "partitioner": "fnv"}).status_code == 400
    html = client.get(f"/clusters/local/topics/{name}/find-key/", {"key": apart}).content.decode()
    assert "Searched partitions " in html
    placed = placements(apart.encode(), 6)
    names = [n for n, p in placed.items() if p == placed["crc32"]]
    puts = "puts" if len(names) == 1 else "put"
    assert f"Found in partition {placed['crc32']}: where {' and '.join(names)} {puts} it." in html
    assert "key-full-search" in html


def test_search_filters_decoded_fields_and_downloads(client: Client) -> None:
    name = create_topic(unique("msearch"), partitions=2)
    produce(
        name,
        [
            (f"u{i}".encode(), json.dumps({"status": "error" if i % 4 == 0 else "ok", "n": i}).encode())
            for i in range(40)
        ],
    )
    body = client.get(
        f"/api/clusters/local/topics/{name}/search/", {"q": 'value.status == "error" and value.n >= 8'}
    ).json()
    assert sorted(json.loads(m["value"])["n"] for m in body["messages"]) == [8, 12, 16, 20, 24, 28, 32, 36]
    assert body["scanned"] == 40
    # A string operator on the whole value reads its text as written: every value contains "status",
    # a field name, and the errors' text contains "error".
    whole = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": 'value contains "error"'}).json()
    assert sorted(json.loads(m["value"])["n"] for m in whole["messages"]) == list(range(0, 40, 4))
    spaced = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": 'value contains "\\"n\\": 3"'}).json()
    assert sorted(json.loads(m["value"])["n"] for m in spaced["messages"]) == [3, *range(30, 40)]
    limited = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": "", "max_scan": 10}).json()
    assert (limited["scanned"], limited["stopped"]) == (10, "limit")
    bad = client.get(f"/api/clusters/local/topics/{name}/search/", {"q": "value.status =="})
    assert bad.status_code == 400
    assert "column" in bad.json()["message"]
    csv_text = client.get(
        f"/clusters/local/topics/{name}/search/", {"q": 'value.status == "error"', "format": "csv"}
    ).content.decode()
    lines = csv_text.strip().splitlines()
    assert lines[0] == "partition,offset,timestamp,key_encoding,key,value_encoding,value"
    assert len(lines) == 1 + 10
    downloaded = json.loads(
        client.get(f"/clusters/local/topics/{name}/search/", {"q": 'key == "u4"', "format": "json"}).content
    )
    assert [json.loads(m["value"])["n"] for m in downloaded["messages"]] == [4]
    synchronous = client.get(f"/clusters/local/topics/{name}/search/", {"q": 'key == "u5"', "run": "1"})
    assert 'id="msg-' in synchronous.content.decode()


def test_produce_from_the_form_and_the_api(client: Client) -> None:
    name = create_topic(unique("mprod"), partitions=3)
    response = client.post(
        f"/clusters/local/topics/{name}/produce/",
        {
            "key": "abc",
            "key_format": "text",
            "value": '{"a": 1}',
            "value_format": "json",
            "headers": "trace=t-1",
            "partition": 2,
        },
    )
    assert response.status_code == 200
    html = response.content.decode()
    assert "Written to partition 2 at offset 0 (acks=all)" in html
    # The form keeps what was sent, for the next message.
    assert 'value="abc"' in html
    assert "trace=t-1</textarea>" in html
    stored = page(client, name, 2)["messages"][0]
    assert (stored["key"], stored["value"], stored["headers"][0]["value"]) == ("abc", '{"a": 1}', "t-1")
    api = client.post(
        f"/api/clusters/local/topics/{name}/produce/",
        {"key": "00ff", "key_format": "hex", "value_format": "null"},
        content_type="application/json",
    )
    assert api.status_code == 201
    written = api.json()
    assert written["partition"] == murmur2_partition(b"\x00\xff", 3)
    tombstone = page(client, name, written["partition"], offset=written["offset"])["messages"][0]
    assert (base64.b64decode(tombstone["key"]), tombstone["value"]) == (b"\x00\xff", None)
    bad = client.post(
        f"/clusters/local/topics/{name}/produce/",
        {"key": "xyz", "key_format": "hex", "value": "{", "value_format": "json"},
    )
    assert bad.status_code == 400
    assert bad.content.decode().count('class="error"') >= 2
    nowhere = client.post(
        f"/api/clusters/local/topics/{name}/produce/",
        {"value": "v", "partition": 9, "value_format": "text", "key_format": "none"},
        content_type="application/json",
    )
    assert nowhere.status_code == 404


def test_produce_keeps_repeated_headers_in_order_and_json_as_typed(client: Client) -> None:
    """Read back with a plain kafka-python consumer, not through the console: the bytes Kafka holds."""
    name = create_topic(unique("mexact"), partitions=1)
    spaced = '{ "a" :  1.50,\n  "b": [1, 2] }'
    form = client.post(
        f"/clusters/local/topics/{name}/produce/",
        {"key_format": "none", "value": spaced, "value_format": "json", "headers": "dup=1\ndup=2\nother=x\ndup=3"},
    )
    assert form.status_code == 200
    api = f"/api/clusters/local/topics/{name}/produce/"
    binary = [["dup", "AP8="], ["dup", "Mg=="], {"name": "z", "value": ""}]
    sent = client.post(
        api,
        {"value": spaced, "value_format": "json-compact", "headers": binary, "header_format": "base64"},
        content_type="application/json",
    )
    assert sent.status_code == 201
    # A JSON list of headers is kept exactly as sent, line breaks included (only the page's lines are text lines).
    broken = client.post(api, {"value": "v", "headers": [["a", "line\nbreak"]]}, content_type="application/json")
    assert broken.status_code == 201
    not_b64 = client.post(
        api, {"value": "v", "headers": [["a", "%%%"]], "header_format": "base64"}, content_type="application/json"
    )
    assert not_b64.status_code == 400
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), consumer_timeout_ms=10_000)
    try:
        consumer.assign([TopicPartition(name, 0)])
        consumer.seek_to_beginning()
        records = [next(consumer), next(consumer), next(consumer)]
    finally:
        consumer.close()
    assert records[0].value == spaced.encode()
    assert records[0].headers == [("dup", b"1"), ("dup", b"2"), ("other", b"x"), ("dup", b"3")]
    assert records[1].value == b'{"a":1.50,"b":[1,2]}'
    assert records[1].headers == [("dup", b"\x00\xff"), ("dup", b"2"), ("z", b"")]
    assert records[2].headers == [("a", b"line\nbreak")]


def test_avro_values_decode_with_an_uploaded_schema(client: Client) -> None:
    name = create_topic(unique("mavro"), partitions=1)
    schema = {
        "type": "record",
        "name": "View",
        "fields": [{"name": "user", "type": "string"}, {"name": "ms", "type": "long"}],
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"user": "u42", "ms": 1234})
    produce(name, [(b"k", out.getvalue())], partition=0)
    bad = client.post(
        f"/clusters/local/topics/{name}/schema/", {"part": "value", "schema": '{"type": "recrd"}'}, follow=True
    )
    assert "The Avro schema was not saved" in bad.content.decode()
    saved = client.post(
        f"/clusters/local/topics/{name}/schema/", {"part": "value", "schema": json.dumps(schema)}, follow=True
    )
    assert "Avro schema for the values" in saved.content.decode()
    html = client.get(f"/clusters/local/topics/{name}/partitions/0/offsets/0/", {"value_as": "avro"}).content.decode()
    assert "&quot;user&quot;: &quot;u42&quot;" in html
    assert "&quot;ms&quot;: 1234" in html


def test_the_search_websocket_reports_progress_and_matches(client: Client) -> None:
    name = create_topic(unique("mws"), partitions=1)
    produce(name, [(None, json.dumps({"i": i}).encode()) for i in range(300)], partition=0)

    async def scenario() -> list[str]:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{name}/search/", headers=WS_HEADERS)
        assert (await ws.connect())[0]
        await ws.send_to(text_data=json.dumps({"action": "start", "q": "value.i >= 295", "max_scan": "1000"}))
        received = []
        while True:
            text = await ws.receive_from(timeout=20)
            received.append(text)
            if 'id="search-state"' in text and "searching" not in text:
                break
        await ws.disconnect()
        return received

    received = async_to_sync(scenario)()
    joined = "".join(received)
    assert received[0].startswith('<tbody id="search-results" hx-swap-oob="innerHTML">')
    assert joined.count('class="message-row"') == 5
    assert "<strong>300</strong> scanned" in received[-1]
    assert ">done<" in received[-1]
    assert "download JSON" in received[-1]


def test_the_search_websocket_says_what_is_wrong_with_a_query(client: Client) -> None:
    name = create_topic(unique("mwsbad"), partitions=1)

    async def scenario() -> str:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{name}/search/", headers=WS_HEADERS)
        await ws.connect()
        await ws.send_to(text_data=json.dumps({"action": "start", "q": "value.x ==="}))
        text: str = await ws.receive_from(timeout=10)
        await ws.disconnect()
        return text

    text = async_to_sync(scenario)()
    assert 'id="search-error"' in text
    assert "column" in text


def test_the_tail_websocket_pushes_new_messages_and_pauses(client: Client) -> None:
    name = create_topic(unique("mtail"), partitions=2)
    produce(name, [(None, b"old")])

    async def scenario() -> tuple[str, str]:
        ws = WebsocketCommunicator(application, f"/ws/clusters/local/topics/{name}/tail/", headers=WS_HEADERS)
        assert (await ws.connect())[0]
        status = await ws.receive_from(timeout=15)
        await asyncio.sleep(1.0)  # the tail's consumer has reached the end
        await asyncio.get_running_loop().run_in_executor(None, produce, name, [(b"k", b"fresh-message")])
        pushed = ""
        while "fresh-message" not in pushed:
            pushed = await ws.receive_from(timeout=15)
        await ws.send_to(text_data=json.dumps({"action": "pause"}))
        paused = await ws.receive_from(timeout=5)
        await ws.disconnect()
        return status + pushed, paused

    first, paused = async_to_sync(scenario)()
    assert "Waiting for new messages on all 2 partitions" in first
    assert '<tbody id="tail-rows" hx-swap-oob="afterbegin">' in first
    assert "old" not in first.split("fresh-message")[0].split("tail-rows")[-1]
    assert "Paused" in paused


def test_the_tail_keeps_a_bounded_buffer_and_counts_what_it_drops(
    kafka_cluster: launcher.ClusterLayout, clusters_reset: None
) -> None:
    import time

    from broker.messages.tail import Tail
    from console.config.clusters import get_connection

    name = create_topic(unique("mflood"), partitions=1)
    tail = Tail(get_connection("local"), name, [0], buffer=50)
    tail.start()
    time.sleep(1.5)
    produce(name, [(None, b"x" * 10)] * 500, partition=0)
    deadline = time.monotonic() + 15
    while tail.received < 500 and time.monotonic() < deadline:
        time.sleep(0.1)
    batch, dropped = tail.drain(1000)
    tail.stop()
    assert tail.received == 500
    assert len(batch) == 50
    assert dropped == 450
    assert batch[-1].offset == 499


def test_messages_read_by_an_independent_client_match(client: Client) -> None:
    """Cross-check with kafka-python's own consumer: the console shows what Kafka holds."""
    name = create_topic(unique("mcross"), partitions=1)
    produce(name, [(f"k{i}".encode(), f"v{i}".encode()) for i in range(7)], partition=0)
    consumer = KafkaConsumer(bootstrap_servers=BOOTSTRAP.split(","), consumer_timeout_ms=3000)
    tp = TopicPartition(name, 0)
    consumer.assign([tp])
    consumer.seek(tp, 0)
    truth = [(r.offset, r.key.decode(), r.value.decode()) for r in consumer]
    consumer.close()
    shown = [(m["offset"], m["key"], m["value"]) for m in page(client, name)["messages"]]
    assert shown == truth


def test_paging_steps_over_gaps_left_by_compaction(client: Client) -> None:
    name = create_topic(
        unique("mcompact"),
        partitions=1,
        configs={"cleanup.policy": "compact", "segment.ms": "100", "min.cleanable.dirty.ratio": "0.01"},
    )
    produce(name, [(b"k0", b"v0"), (b"k0", b"v1"), (b"k1", b"v2"), (b"k0", b"v3"), (b"k1", b"v4")], partition=0)
    time.sleep(0.3)
    produce(name, [(b"k2", b"v5")], partition=0)  # rolls the segment: the first one can be cleaned
    deadline = time.monotonic() + 90  # the log cleaner looks every 15 s
    while time.monotonic() < deadline:
        first = page(client, name, offset=0, limit=2)
        if first["messages"] and first["messages"][0]["offset"] == 3:
            break
        time.sleep(1)
    else:
        pytest.fail("the log cleaner did not compact the topic in time")
    assert ([m["offset"] for m in first["messages"]], first["next_offset"]) == ([3, 4], 5)
    assert [m["offset"] for m in page(client, name, offset=1, limit=2)["messages"]] == [3, 4]
    following = page(client, name, offset=5, limit=2)
    assert ([m["offset"] for m in following["messages"]], following["prev_offset"]) == ([5], 3)
    assert [m["offset"] for m in page(client, name, last="1", limit=3)["messages"]] == [3, 4, 5]
    gone = client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages/1")
    assert gone.status_code == 404
    assert "the next one is at 3" in gone.json()["message"]
    assert client.get(f"/api/clusters/local/topics/{name}/partitions/0/messages/4").json()["prev_offset"] == 3


def test_the_produce_form_guesses_formats_and_sends_a_record_again(client: Client) -> None:
    name = create_topic(unique("mprod-again"), partitions=2)
    produce(name, [(None, b'{"user": "u1", "n": 1}'), (None, b'["a", 2]')], partition=0)
    produce(name, [(None, b'{"user": "u2", "n": 2}')], partition=1, headers=[("trace", b"t-9"), ("bin", b"\xff\x00")])
    form = client.get(f"/clusters/local/topics/{name}/produce/").content.decode()
    assert '<option value="json" selected>' in form  # the value format, from the topic's JSON records
    assert '<option value="none" selected>' in form  # no key on any recent record

    again = client.get(f"/clusters/local/topics/{name}/produce/", {"from": "1:0"})
    html = again.content.decode()
    assert 'id="produce-again"' in html
    assert "trace=dC05" in html
    assert "1:0" in html
    assert "{&quot;user&quot;: &quot;u2&quot;, &quot;n&quot;: 2}" in html
    assert '<option value="base64" selected>values in base64</option>' in html  # a header is not UTF-8
    sent = client.post(
        f"/clusters/local/topics/{name}/produce/",
        {"key_format": "none", "value": '{"user": "u2", "n": 3}', "value_format": "json", "partition": "1"}
        | {"headers": "trace=dC05\nbin=/wA=", "header_format": "base64"},
    )
    assert "Written to partition 1 at offset 1" in sent.content.decode()
    stored = page(client, name, 1)["messages"][1]
    assert stored["value"] == '{"user": "u2", "n": 3}'
    assert [(h["name"], h["value"], h["value_encoding"]) for h in stored["headers"]] == [
        ("trace", "t-9", "utf-8"),
        ("bin", "/wA=", "base64"),
    ]
    assert client.get(f"/clusters/local/topics/{name}/produce/", {"from": "one"}).status_code == 400
    assert client.get(f"/clusters/local/topics/{name}/produce/", {"from": "0:99"}).status_code == 404
