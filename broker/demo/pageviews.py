"""A stream of web events keyed by user: what the analytics jobs turn into PV, UU and CTR.

Each event is JSON: ``{"ts": <epoch ms>, "user_id", "session_id", "event": "view"|"click",
"page", "referrer", "country", "device"}``; clicks follow views of the same user. The
generator is seeded, so the same seed gives the same events.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Iterator
from dataclasses import dataclass

PAGES = [
    "/",
    "/products",
    "/products/42",
    "/products/7",
    "/cart",
    "/checkout",
    "/blog/kafka-lag",
    "/blog/spark-streaming",
    "/pricing",
    "/docs",
    "/docs/install",
    "/about",
]
REFERRERS = ["", "https://search.example/", "https://news.example/", "https://social.example/", "newsletter"]
COUNTRIES = ["DE", "FR", "US", "JP", "BR", "IN", "GB", "NL"]
DEVICES = ["desktop", "mobile", "tablet"]


@dataclass(frozen=True)
class Event:
    key: bytes
    value: bytes
    timestamp_ms: int


def page_view_events(
    count: int, users: int = 500, seed: int = 7, end_ms: int | None = None, span_ms: int = 3_600_000
) -> Iterator[Event]:
    """``count`` events spread over ``span_ms`` ending at ``end_ms`` (now by default), oldest first."""
    rng = random.Random(seed)
    end = end_ms if end_ms is not None else int(time.time() * 1000)
    start = end - span_ms
    step = span_ms / max(count, 1)
    for i in range(count):
        user = f"u{rng.randrange(users):04d}"
        ts = int(start + i * step)
        event = "click" if rng.random() < 0.12 else "view"
        body = {
            "ts": ts,
            "user_id": user,
            "session_id": f"s{rng.randrange(users * 3):05d}",
            "event": event,
            "page": rng.choice(PAGES),
            "referrer": rng.choice(REFERRERS),
            "country": rng.choice(COUNTRIES),
            "device": rng.choice(DEVICES),
        }
        yield Event(key=user.encode(), value=json.dumps(body, separators=(",", ":")).encode(), timestamp_ms=ts)
