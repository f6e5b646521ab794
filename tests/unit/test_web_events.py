"""The web traffic generator (broker/demo/web.py): the event schema, determinism, time, the links
between events, the spread of pages, words and users, and the record batches it writes."""

from __future__ import annotations

import argparse
import itertools
import json
import random
import statistics
from collections import Counter, defaultdict
from typing import Any

import pytest
from kafka.record import MemoryRecords

from broker.demo import batches as batches_module
from broker.demo import web
from broker.demo.__main__ import duration_s

DAY_MS = 24 * 3600 * 1000
START = 1_750_000_000_000
END = START + DAY_MS
NETWORKS = {"twitter", "facebook", "linkedin", "reddit", "whatsapp"}

FIELDS = {
    "page_view": {"type", "ts", "user_id", "session_id", "url", "referrer"},
    "impression": {"type", "ts", "impression_id", "ad_id", "campaign_id", "user_id", "url"},
    "click": {"type", "ts", "impression_id", "ad_id", "campaign_id", "user_id"},
    "share": {"type", "ts", "user_id", "url", "network"},
}


def check_event(event: web.WebEvent) -> dict[str, Any]:
    """The event parsed, after checking it against the schema; fails the test otherwise."""
    body = json.loads(event.value)
    kind = body["type"]
    expected = FIELDS[kind] | ({"keyword"} if kind == "page_view" and "keyword" in body else set())
    assert set(body) == expected, body
    assert isinstance(body["ts"], int)
    assert event.timestamp_ms == body["ts"]
    assert event.key == body["user_id"].encode()
    for name, value in body.items():
        if name != "ts":
            assert isinstance(value, str), (name, body)
    if kind == "page_view":
        assert body["url"].startswith("/")
        assert ("keyword" in body) == body["url"].startswith("/search?q=")
        if "keyword" in body:
            assert body["url"] == "/search?q=" + body["keyword"].replace(" ", "+")
    if kind == "share":
        assert body["network"] in NETWORKS
    return dict(body)


@pytest.fixture(scope="module")
def day() -> list[web.WebEvent]:
    return list(web.web_events(60_000, START, END, seed=11, users=5_000))


@pytest.fixture(scope="module")
def bodies(day: list[web.WebEvent]) -> list[dict[str, Any]]:
    return [check_event(e) for e in day]


def test_every_event_follows_the_schema_of_its_type(day: list[web.WebEvent], bodies: list[dict[str, Any]]) -> None:
    kinds = Counter(b["type"] for b in bodies)
    assert set(kinds) == set(FIELDS)
    views = kinds["page_view"]
    assert 0.3 < kinds["impression"] / views < 0.4
    assert 0.01 < kinds["share"] / views < 0.03
    assert 0.01 < kinds["click"] / kinds["impression"] < 0.06
    assert 130 < statistics.fmean(len(e.value) for e in day) < 180


def test_the_same_seed_gives_the_same_events_and_another_seed_others() -> None:
    first = list(web.web_events(3_000, START, END, seed=5))
    assert first == list(web.web_events(3_000, START, END, seed=5))
    other = list(web.web_events(3_000, START, END, seed=6))
    assert [e.value for e in other] != [e.value for e in first]


def test_it_gives_exactly_the_count_asked_in_the_window_oldest_first(day: list[web.WebEvent]) -> None:
    assert len(day) == 60_000
    stamps = [e.timestamp_ms for e in day]
    assert stamps == sorted(stamps)
    assert stamps[0] >= START
    assert stamps[-1] < END
    assert stamps[-1] - stamps[0] > 0.95 * DAY_MS  # spread over the whole window
    for count in (0, 1, 2, 7, 100):
        few = list(web.web_events(count, START, START + 1000, seed=count))
        assert len(few) == count
        assert all(START <= e.timestamp_ms < START + 1000 for e in few)


def test_an_empty_window_or_no_users_is_refused() -> None:
    with pytest.raises(ValueError, match="end_ms"):
        list(web.web_events(10, START, START))
    with pytest.raises(ValueError, match="users"):
        list(web.web_events(10, START, END, users=0))


def test_clicks_reference_an_earlier_impression_of_the_same_user_and_ad(bodies: list[dict[str, Any]]) -> None:
    impressions: dict[str, dict[str, Any]] = {}
    delays = []
    for body in bodies:
        if body["type"] == "impression":
            assert body["impression_id"] not in impressions
            impressions[body["impression_id"]] = body
        elif body["type"] == "click":
            shown = impressions[body["impression_id"]]  # emitted before the click
            assert (shown["ad_id"], shown["campaign_id"], shown["user_id"]) == (
                body["ad_id"],
                body["campaign_id"],
                body["user_id"],
            )
            delays.append(body["ts"] - shown["ts"])
    assert len(delays) > 100
    assert min(delays) > 0
    assert statistics.median(delays) < 20_000  # most within seconds
    assert any(d > 10 * 60_000 for d in delays)  # some much later


def test_click_rates_differ_by_ad(bodies: list[dict[str, Any]]) -> None:
    shown = Counter(b["ad_id"] for b in bodies if b["type"] == "impression")
    clicked = Counter(b["ad_id"] for b in bodies if b["type"] == "click")
    rates = [clicked[ad] / n for ad, n in shown.items() if n >= 100]
    assert len(rates) > 20
    assert max(rates) > 3 * max(min(rates), 0.005)
    campaigns = {b["ad_id"]: b["campaign_id"] for b in bodies if b["type"] == "impression"}
    assert 10 < len(set(campaigns.values())) < len(campaigns)  # campaigns hold several ads


def test_search_words_and_pages_have_a_long_tail(bodies: list[dict[str, Any]]) -> None:
    views = [b for b in bodies if b["type"] == "page_view"]
    words = Counter(b["keyword"] for b in views if "keyword" in b)
    assert 0.08 < sum(words.values()) / len(views) < 0.16
    assert len(words) > 300
    counts = sorted(words.values(), reverse=True)
    assert counts[0] > 20 * statistics.median(counts)
    assert sum(counts[:10]) / sum(counts) < 0.5  # a head, and a tail that holds most searches
    assert counts.count(1) > 50
    pages = Counter(b["url"] for b in views if "keyword" not in b)
    assert len(pages) > 1000
    assert pages.most_common(1)[0][0] == "/"
    assert pages["/"] > 50 * statistics.median(pages.values())


def test_users_come_back_in_sessions_of_a_few_views(bodies: list[dict[str, Any]]) -> None:
    views = [b for b in bodies if b["type"] == "page_view"]
    sessions: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for view in views:
        sessions[view["session_id"]].append(view)
    for session in sessions.values():
        assert len({v["user_id"] for v in session}) == 1
        assert not session[0]["referrer"].startswith("/")  # from outside, or direct ("")
        for before, after in itertools.pairwise(session):
            assert after["referrer"] == before["url"]
            assert 0 <= after["ts"] - before["ts"] < 3600_000
    lengths = Counter(len(s) for s in sessions.values())
    assert 0.3 < lengths[1] / len(sessions) < 0.6  # bounces
    assert max(lengths) > 15
    per_user = Counter(len({v["session_id"] for v in user_views}) for user_views in _by_user(views).values())
    assert per_user[1] > 0.2 * sum(per_user.values())  # many users come once
    assert max(per_user) > 10  # and a few come back often
    referrers = Counter(s[0]["referrer"] for s in sessions.values())
    assert referrers[""] > 0
    assert referrers["https://www.google.com/"] > 0


def _by_user(views: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    users: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for view in views:
        users[view["user_id"]].append(view)
    return users


def test_consecutive_windows_make_one_stream() -> None:
    traffic = web.WebTraffic(seed=3, users=2_000)
    events = []
    for hour in range(6):
        events += traffic.events(3_000, START + hour * 3600_000, START + (hour + 1) * 3600_000)
    stamps = [ts for ts, _, _ in events]
    assert stamps == sorted(stamps)
    bodies = [json.loads(v) for _, _, v in events]
    shown = {b["impression_id"] for b in bodies if b["type"] == "impression"}
    clicks = [b for b in bodies if b["type"] == "click"]
    assert clicks
    assert all(c["impression_id"] in shown for c in clicks)
    assert len({b["session_id"] for b in bodies if b["type"] == "page_view"}) < len(bodies) / 3


def test_workers_with_their_own_users_and_streams_share_no_user_or_id() -> None:
    def mine(worker: int) -> web.WebTraffic:
        return web.WebTraffic(seed=9, users=3_000, users_where=lambda key: hash(key) % 2 == worker, stream=worker)

    halves = [[json.loads(v) for _, _, v in mine(w).events(5_000, START, END)] for w in (0, 1)]
    for field in ("user_id", "session_id", "impression_id"):
        first, second = ({b[field] for b in half if field in b} for half in halves)
        assert first, field
        assert second, field
        assert not first & second, field


def test_record_batches_read_back_through_kafka_python() -> None:
    events = list(web.web_events(5_000, START, START + 30 * 3600_000, seed=4))  # deltas beyond 37 h split
    shuffled = events[:200] + random.Random(1).sample(events[200:400], 200) + events[400:]  # some out of order
    batches = batches_module.record_batches(shuffled, max_records=700)
    assert len(batches) > 5000 // 700
    records = MemoryRecords(b"".join(batches))
    got = []
    while records.has_next():
        batch = records.next_batch()
        assert batch.validate_crc()
        assert batch.magic == 2
        assert batch.compression_type == 3
        assert not batch.is_transactional
        assert batch.producer_id == -1
        rows = list(batch)
        assert [r.offset for r in rows] == list(range(len(rows)))
        assert batch.max_timestamp == max(r.timestamp for r in rows)
        got += [(r.timestamp, r.key, r.value, r.headers) for r in rows]
    assert got == [(e.timestamp_ms, e.key, e.value, []) for e in shuffled]


def test_varints_match_kafkas_test_vectors() -> None:
    vectors = {
        0: "00",
        -1: "01",
        1: "02",
        63: "7e",
        -64: "7f",
        64: "8001",
        2**31 - 1: "feffffff0f",
        -(2**31): "ffffffff0f",
    }
    assert {n: batches_module._varint(n).hex() for n in vectors} == vectors
    # the table-driven timestamp deltas of the batch encoder agree with the plain encoding
    for delta in (0, 1, 65_535, 65_536, 1_000_000, 86_400_000, 2**27 - 1):
        table = (
            batches_module._ZIGZAG[delta]
            if delta < 1 << 16
            else batches_module._LOW_14[(delta << 1) & 0x3FFF] + batches_module._HIGH[delta >> 13]
        )
        assert table == batches_module._varint(delta), delta


def test_durations_read_as_the_command_line_takes_them() -> None:
    assert duration_s("24h") == 86400
    assert duration_s("90m") == 5400
    assert duration_s("1.5d") == 129600
    assert duration_s("3600") == 3600
    assert duration_s("250ms") == 0.25
    for bad in ("", "0", "-1h", "1w", "h"):
        with pytest.raises(argparse.ArgumentTypeError):
            duration_s(bad)
