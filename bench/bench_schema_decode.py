"""Decoding a page of 500 records in a schema registry's wire format (Avro) against the same page of JSON records,
in the same run: what the message list pays for records a registry describes.

Both pages hold the same 500 documents (an order: ids, a nested customer, a decimal amount, a timestamp, an
enum, a string, an array of three lines). The Avro page is what confluent-kafka's AvroSerializer writes (magic
byte, schema id, Avro body: fastavro's writer here); the JSON page is the documents as compact JSON. Each page
is shown as the list of a partition's messages shows it (console.present.messages.show: key and value decoded
and cut to the list's limit, their one-line previews, the message's URL), the Avro page with the cluster's
RecordDecoder over an in-memory registry holding the schema, compiled once before the timing starts ("schemas
cached": the registry is asked once per id for the process's life). No cluster is needed.

``ratio_avro_page_to_json_page`` is the best time of a whole Avro page over the best of a JSON page, both timed
RUNS times alternated (the machine's other work spoils single runs; medians are written too). Target: at most 1.5.
"""

from __future__ import annotations

import gc
import io
import json
import os
import statistics
import time
from decimal import Decimal
from typing import Any

import fastavro

from bench.common import write_result

RECORDS = 500
RUNS = 60
TOPIC = "bench-schema-orders"
SCHEMA_ID = 1
SCHEMA = {
    "type": "record",
    "name": "Order",
    "namespace": "bench",
    "fields": [
        {"name": "id", "type": "long"},
        {
            "name": "customer",
            "type": {
                "type": "record",
                "name": "Customer",
                "fields": [{"name": "id", "type": "string"}, {"name": "country", "type": "string"}],
            },
        },
        {"name": "amount", "type": {"type": "bytes", "logicalType": "decimal", "precision": 12, "scale": 2}},
        {"name": "at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "status", "type": {"type": "enum", "name": "Status", "symbols": ["OPEN", "PAID", "SHIPPED"]}},
        {"name": "note", "type": ["null", "string"], "default": None},
        {
            "name": "lines",
            "type": {
                "type": "array",
                "items": {
                    "type": "record",
                    "name": "Line",
                    "fields": [{"name": "sku", "type": "string"}, {"name": "quantity", "type": "int"}],
                },
            },
        },
    ],
}


class _Memory:
    """An in-memory registry holding the one schema (what the registry client keeps once it fetched it)."""

    def __init__(self) -> None:
        from broker.schemas.model import AVRO, RegisteredSchema

        self.schema = RegisteredSchema(SCHEMA_ID, AVRO, json.dumps(SCHEMA), (), f"{TOPIC}-value", 1)

    def schema_by_id(self, schema_id: int) -> Any:
        return self.schema

    def schema_by_subject(self, subject: str, version: int | str = "latest") -> Any:
        return self.schema


def _documents() -> list[dict[str, Any]]:
    return [
        {
            "id": 1_000_000 + n,
            "customer": {"id": f"c-{n % 97}", "country": ("FR", "JP", "BR", "DE")[n % 4]},
            "amount": Decimal(f"{n % 1000}.{n % 100:02d}"),
            "at": 1_795_000_000_000 + n * 1000,
            "status": ("OPEN", "PAID", "SHIPPED")[n % 3],
            "note": None if n % 5 else f"gift for order {n}",
            "lines": [{"sku": f"SKU-{(n + i) % 500:04d}", "quantity": 1 + i} for i in range(3)],
        }
        for n in range(RECORDS)
    ]


def _pages() -> tuple[list[Any], list[Any]]:
    from datetime import UTC, datetime

    from broker.messages.log import Message

    parsed = fastavro.parse_schema(SCHEMA)
    avro, plain = [], []
    for offset, document in enumerate(_documents()):
        out = io.BytesIO()
        at = datetime.fromtimestamp(document["at"] / 1000, tz=UTC)
        fastavro.schemaless_writer(out, parsed, {**document, "at": at})
        framed = bytes([0]) + SCHEMA_ID.to_bytes(4, "big") + out.getvalue()
        as_json = json.dumps({**document, "amount": str(document["amount"])}, separators=(",", ":")).encode()
        key = f"order-{offset}".encode()
        avro.append(Message(TOPIC, 0, offset, 1_795_000_000_000, "CreateTime", key, framed, [], None))
        plain.append(Message(TOPIC, 0, offset, 1_795_000_000_000, "CreateTime", key, as_json, [], None))
    return avro, plain


def run() -> dict[str, Any]:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "console.settings")
    import django

    django.setup()
    from broker.schemas.records import RecordDecoder
    from console.present.messages import Decoding, show

    avro, plain = _pages()
    with_registry = Decoding(registry=RecordDecoder(_Memory()))
    without = Decoding()
    first = show("local", avro[0], with_registry)
    if first.value.kind != "avro":  # the schema compiled (and kept) before timing; the page really decodes Avro
        raise SystemExit(f"the Avro page did not decode: {first.value.error}")

    def page(messages: list[Any], decoding: Decoding) -> float:
        gc.collect()
        gc.disable()  # as timeit does: a collection the other page's garbage started is not charged to this one
        try:
            started = time.perf_counter()
            for message in messages:
                show("local", message, decoding)
            return time.perf_counter() - started
        finally:
            gc.enable()

    timings: dict[str, list[float]] = {"avro": [], "json": []}
    for _ in range(3):  # warm-up
        page(avro, with_registry)
        page(plain, without)
    for _ in range(RUNS):
        timings["avro"].append(page(avro, with_registry))
        timings["json"].append(page(plain, without))
    avro_ms, json_ms = min(timings["avro"]) * 1000, min(timings["json"]) * 1000
    avro_p50, json_p50 = statistics.median(timings["avro"]) * 1000, statistics.median(timings["json"]) * 1000
    result = {
        "records_per_page": RECORDS,
        "runs": RUNS,
        "avro_page_ms_best": round(avro_ms, 2),
        "reference_json_page_ms_best": round(json_ms, 2),
        "ratio_avro_page_to_json_page": round(avro_ms / json_ms, 2),
        "avro_page_ms_p50": round(avro_p50, 2),
        "reference_json_page_ms_p50": round(json_p50, 2),
        "ratio_avro_page_to_json_page_p50": round(avro_p50 / json_p50, 2),
        "target_ratio": 1.5,
    }
    write_result("schema_decode", result)
    return result


if __name__ == "__main__":
    print(json.dumps(run(), indent=2))
