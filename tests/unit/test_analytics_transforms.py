"""The report transforms on small frames built by hand, on the shared Spark session (no Kafka)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from analytics import events
from analytics.reports import Options, ctr, keywords, onepass, pv_uu, shares
from tests import analytics_reference as ref

pytestmark = pytest.mark.spark

T0 = 1_795_000_000_000 - 1_795_000_000_000 % 86_400_000  # a midnight, UTC


def frame(spark: Any, values: list[bytes | None], bucket: str = "hour") -> Any:
    rows = [(b"k", v, T0) for v in values]
    return events.parse(spark.createDataFrame(rows, "key binary, value binary, timestamp long"), bucket)


def ev(**fields: Any) -> bytes:
    return json.dumps(fields).encode()


def view(ts: int, user: str, url: str, keyword: str | None = None) -> bytes:
    return ev(type="page_view", ts=ts, user_id=user, session_id="s", url=url, referrer=None, keyword=keyword)


def valid(parsed: Any) -> Any:
    return parsed.where("reason IS NULL")


def test_every_reason_matches_the_plain_python_reading(spark: Any) -> None:
    values: list[bytes | None] = [
        view(T0, "u", "/"),
        None,
        b"",
        b"{",
        b"42",
        b'"text"',
        b"[]",
        ev(type="nope", ts=T0),
        ev(ts=T0),
        ev(type=None, ts=T0),
        ev(type="share", ts=T0, user_id="u", url="/"),  # no network
        ev(type="share", ts=None, user_id="u", url="/", network="n"),
        ev(type="share", ts="12", user_id="u", url="/", network="n"),  # digits as text: fine
        ev(type="share", ts="1e3", user_id="u", url="/", network="n"),
        ev(type="share", ts=1.0, user_id="u", url="/", network="n"),
        ev(type="share", ts=True, user_id="u", url="/", network="n"),
        ev(type="click", ts=T0, impression_id="i", ad_id="a", campaign_id="c", user_id="u", extra={"x": 1}),
        ev(type="impression", ts=T0, impression_id="i", ad_id=7, campaign_id="c", user_id="u", url="/"),
    ]
    got = [r["reason"] for r in frame(spark, values).select("reason").collect()]
    assert got == [ref.classify(v)[0] for v in values]
    assert set(got) == {None, "not_json", "unknown_type", "missing_field"}


@pytest.mark.parametrize(
    ("bucket", "offset", "start"),
    [("minute", 61_999, 60_000), ("hour", 3_599_999, 0), ("day", 86_400_000 + 5, 86_400_000), ("total", 5, None)],
)
def test_buckets_start_on_utc_boundaries(spark: Any, bucket: str, offset: int, start: int | None) -> None:
    row = frame(spark, [view(T0 + offset, "u", "/")], bucket).collect()[0]
    assert row["bucket_start"] == (None if start is None else T0 + start)


def test_pv_uu_counts_views_and_distinct_users_per_url_and_overall(spark: Any) -> None:
    values = [view(T0, "a", "/x"), view(T0 + 1, "a", "/x"), view(T0 + 2, "b", "/x"), view(T0 + 3, "a", "/y")]
    values += [ev(type="share", ts=T0, user_id="z", url="/x", network="n")]  # not a view
    got = {
        (r["bucket_start"], r["url"]): (r["pv"], r["uu"])
        for r in pv_uu.transform(valid(frame(spark, values)), Options()).collect()
    }
    assert got == {(T0, "/x"): (3, 2), (T0, "/y"): (1, 1), (T0, None): (4, 2)}


def test_keywords_rank_by_count_then_by_keyword_and_cut_at_top_n(spark: Any) -> None:
    values = [view(T0, "u", "/s", k) for k in ["b", "a", "c", "c", "a", "d", ""]] + [view(T0, "u", "/s")]
    got = keywords.transform(valid(frame(spark, values)), Options(top_n=3)).orderBy("rank").collect()
    assert [(r["keyword"], r["count"], r["rank"]) for r in got] == [("a", 2, 1), ("c", 2, 2), ("b", 1, 3)]


def test_ctr_joins_clicks_to_their_impression_once_and_keeps_unmatched_apart(spark: Any) -> None:
    def imp(ts: int, iid: str, ad: str, camp: str) -> bytes:
        return ev(type="impression", ts=ts, impression_id=iid, ad_id=ad, campaign_id=camp, user_id="u", url="/")

    def click(ts: int, iid: str, camp: str) -> bytes:
        return ev(type="click", ts=ts, impression_id=iid, ad_id="whatever", campaign_id=camp, user_id="u")

    hour = 3_600_000
    values = [
        imp(T0, "i1", "a1", "c1"),
        imp(T0 + 1, "i2", "a2", "c1"),
        imp(T0 + 2, "i3", "a1", "c1"),
        imp(T0 + hour + 5, "i3", "a1", "c1"),  # the same id again, later: counts once, in its first hour
        click(T0 + 2 * hour, "i1", "c1"),  # late: counts in the impression's hour
        click(T0 + 10, "i1", "c1"),
        click(T0 + 11, "i9", "c7"),  # its impression is not here
    ]
    rows = ctr.transform(valid(frame(spark, values)), Options()).collect()
    kept, summary = ctr.finish([r.asDict() for r in rows])
    got = {(r["bucket_start"], r["campaign_id"], r["ad_id"]): (r["impressions"], r["clicks"], r["ctr"]) for r in kept}
    assert got == {
        (T0, "c1", "a1"): (2, 2, 1.0),
        (T0, "c1", "a2"): (1, 0, 0.0),
        (T0, "c1", None): (3, 2, pytest.approx(2 / 3)),
    }
    assert summary == {"unmatched_clicks": 1, "unmatched_by_campaign": {"c7": 1}}


def test_shares_count_per_url_and_network(spark: Any) -> None:
    values = [
        ev(type="share", ts=T0, user_id="u", url=u, network=n)
        for u, n in [("/a", "x"), ("/a", "x"), ("/a", "y"), ("/b", "x")]
    ]
    got = {
        (r["url"], r["network"]): r["shares"]
        for r in shares.transform(valid(frame(spark, values)), Options()).collect()
    }
    assert got == {("/a", "x"): 2, ("/a", "y"): 1, ("/b", "x"): 1}


def test_one_pass_gives_each_report_what_it_gives_alone(spark: Any) -> None:
    """PV/UU, CTR and shares in one plan (analytics.reports.onepass): the same rows as each alone, with
    events of every kind mixed, a user on two URLs of one bucket and an impression seen twice."""
    values = [
        view(T0, "a", "/x"),
        view(T0 + 1, "a", "/y"),
        view(T0 + 2, "b", "/x"),
        view(T0 + 3_600_000, "a", "/x"),
        ev(type="impression", ts=T0, impression_id="i1", ad_id="a1", campaign_id="c1", user_id="a", url="/x"),
        ev(type="impression", ts=T0 + 9, impression_id="i1", ad_id="a1", campaign_id="c1", user_id="a", url="/x"),
        ev(type="click", ts=T0 + 5, impression_id="i1", ad_id="a1", campaign_id="c1", user_id="a"),
        ev(type="click", ts=T0 + 6, impression_id="i8", ad_id="a8", campaign_id="c8", user_id="b"),
        ev(type="share", ts=T0, user_id="a", url="/x", network="n"),
    ]
    events_ = valid(frame(spark, values))
    together = onepass.transform(events_, ["pv_uu", "ctr", "shares"], 3)

    def rows(frame_: Any) -> set[tuple[Any, ...]]:
        return {tuple(r) for r in frame_.collect()}

    for name, module in (("pv_uu", pv_uu), ("ctr", ctr), ("shares", shares)):
        assert rows(onepass.rows_of(name, together)) == rows(module.transform(events_, Options())), name
    got = {(r["bucket_start"], r["url"]): (r["pv"], r["uu"]) for r in onepass.rows_of("pv_uu", together).collect()}
    assert got == {
        (T0, "/x"): (2, 2),
        (T0, "/y"): (1, 1),
        (T0, None): (3, 2),
        (T0 + 3_600_000, "/x"): (1, 1),
        (T0 + 3_600_000, None): (1, 1),
    }
    with pytest.raises(ValueError, match="keywords"):
        onepass.transform(events_, ["pv_uu", "keywords"])


def test_partition_keys_land_in_their_own_partition(spark: Any) -> None:
    """The one-pass plan's partition key: our Murmur3 equals Spark's ``hash`` of an int, and each of the
    keys ``partition_keys(n)`` gives is sent by ``repartition(n, key)`` to the partition of its index."""
    from pyspark.sql import functions as F

    samples = [0, 1, -1, 7, 42, 2**31 - 1, -(2**31), 123_456_789]
    got = spark.createDataFrame([(v,) for v in samples], "v int").select("v", F.hash("v").alias("h")).collect()
    assert {r["v"]: r["h"] for r in got} == {v: onepass.murmur3_int(v) for v in samples}
    for count in (1, 3, 20):
        keys = onepass.partition_keys(count)
        placed = (
            spark.createDataFrame([(k,) for k in keys], "p int")
            .repartition(count, "p")
            .select("p", F.spark_partition_id().alias("at"))
            .collect()
        )
        assert {r["p"]: r["at"] for r in placed} == {k: i for i, k in enumerate(keys)}, count


def test_fields_are_read_as_text_unescaped(spark: Any) -> None:
    """Every field is read as text: a string unescaped, a number as its JSON text, an object as its JSON."""
    values = [
        b'{"type":"page_view","ts":"%d","user_id":"u\\u00e9\\"q","session_id":7,"url":"/caf\\u00e9\\n"}' % T0,
        b'{"type":"page_view","ts":%d,"user_id":"v","session_id":{"a": [1, 2]},"url":"/x"}' % T0,
    ]
    got = [(r["reason"], r["user_id"], r["session_id"], r["url"], r["ts"]) for r in frame(spark, values).collect()]
    assert got == [(None, 'ué"q', "7", "/café\n", T0), (None, "v", '{"a":[1,2]}', "/x", T0)]
