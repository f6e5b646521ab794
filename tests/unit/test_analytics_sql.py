"""SQL over topics, the parts without Spark: what a query may do (analytics.sql.check_sql), the JSON fields
inferred from a sample (infer_schema), and result values as JSON holds them (plain)."""

from __future__ import annotations

import datetime as dt
import json
from decimal import Decimal

import pytest

from analytics.sql import check_sql, infer_schema, plain
from broker.errors import InvalidInput


@pytest.mark.parametrize(
    ("text", "topics"),
    [
        ("SELECT count(*) FROM `page-views`", ("page-views",)),
        ("select json_tuple(value, 'a') from `orders.v1` where partition = 2", ("orders.v1",)),
        (
            "WITH recent AS (SELECT * FROM `a` WHERE timestamp > now() - INTERVAL 1 HOUR) "
            "SELECT key, count(*) FROM recent JOIN `b` USING (key) GROUP BY key ORDER BY 2 DESC",
            ("a", "b"),
        ),
        ("SELECT * FROM `a` UNION ALL SELECT * FROM `b`;", ("a", "b")),
        ("SELECT fields.url, count(*) FROM `t` GROUP BY 1", ("t",)),
        ("SELECT * FROM range(10)", ()),
        ("SELECT x FROM `t` LATERAL VIEW explode(headers) h AS x", ("t",)),
        ("SELECT 1 FROM `t` WHERE key IN (SELECT key FROM `u`)", ("t", "u")),
    ],
)
def test_queries_that_read_are_taken_with_the_topics_they_name(text: str, topics: tuple[str, ...]) -> None:
    query = check_sql(text)
    assert query.topics == topics
    assert query.sql  # written again from the parsed query
    assert check_sql(query.sql).topics == topics  # and that text checks the same


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("", "Write a query"),
        ("   ;  ", "Write a query"),
        ("SELECT 1; SELECT 2", "One statement"),
        ("SELECT 1 FROM `t`; DROP TABLE x", "One statement"),
        ("DROP TABLE `t`", "not DROP"),
        ("INSERT INTO `t` SELECT 1", "not INSERT"),
        ("CREATE TABLE x AS SELECT 1", "not CREATE"),
        ("SET spark.sql.runSQLOnFiles=true", "not SET"),
        ("CACHE TABLE `t`", "not CACHE"),
        ("ADD JAR /tmp/evil.jar", "not ADD JAR"),
        ("EXPLAIN SELECT 1", "not EXPLAIN"),
        ("SELECT * FROM parquet.`/etc/passwd`", "not a topic"),
        ("SELECT * FROM json.`/tmp/x`", "not a topic"),
        ("SELECT * FROM spark_catalog.default.t", "not a topic"),
        ("SELECT * FROM global_temp.x", "not a topic"),
        ("SELECT reflect('java.lang.Runtime', 'getRuntime')", "reflect() reaches outside"),
        ("SELECT java_method('java.lang.System', 'exit', 0)", "java_method() reaches outside"),
        ("SELECT * FROM `t` WHERE length(reflect('a', 'b')) > 0", "reflect() reaches outside"),
        ("SELECT TRANSFORM(value) USING 'cat' AS (v) FROM `t`", "TRANSFORM"),
        ("SELECT * FROM read_files('/etc')", "read_files() reaches outside"),
        ("SELECT * FROM explode(array(1))", "explode(...) as a table"),
        ("SELECT * FROM identifier('t')", "as a table"),
        ("SELECT * FROM (", "does not parse"),
        ("SELECT 'x" + "y" * 20_001, "characters long"),
    ],
)
def test_anything_else_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(InvalidInput, match=says.replace("(", r"\(").replace(")", r"\)").replace(".", r"\.")):
        check_sql(text)


def test_the_fields_of_json_values_are_inferred_from_a_sample() -> None:
    values = [
        json.dumps({"ts": 1, "url": "/a", "price": 3, "tags": ["x"], "user": {"id": 7, "vip": True}}).encode(),
        json.dumps({"ts": 2, "url": None, "price": 2.5, "tags": [], "user": {"id": 8, "name": "ann"}}).encode(),
        json.dumps({"ts": 3, "odd": "text"}).encode(),
        json.dumps({"ts": 4, "odd": 5}).encode(),
        b"not json",
        json.dumps([1, 2]).encode(),
        None,
    ]
    schema = infer_schema(values)
    assert schema == (
        "`ts` BIGINT, `url` STRING, `price` DOUBLE, `tags` ARRAY<STRING>, "
        "`user` STRUCT<`id`: BIGINT, `vip`: BOOLEAN, `name`: STRING>, `odd` STRING"
    )


def test_no_json_objects_no_schema_and_odd_names_quoted() -> None:
    assert infer_schema([b"plain text", None, b"[1]", b"3"]) is None
    assert infer_schema([]) is None
    assert infer_schema([b'{"a`b": 1, "c d": {"e": [1.5, 2]}}']) == "`a``b` BIGINT, `c d` STRUCT<`e`: ARRAY<DOUBLE>>"


def test_nesting_beyond_the_depth_is_text() -> None:
    deep = {"a": {"b": {"c": {"d": 1}}}}
    assert infer_schema([json.dumps(deep)], max_depth=2) == "`a` STRUCT<`b`: STRING>"


def test_result_values_become_what_json_holds() -> None:
    class Row:
        def asDict(self) -> dict[str, object]:
            return {"n": Decimal("1.50"), "when": dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)}

    assert plain(Row()) == {"n": 1.5, "when": "2026-01-02T03:04:05Z"}
    assert plain(dt.datetime(2026, 1, 2, 3, 4, 5)) == "2026-01-02T03:04:05Z"  # Spark's naive times are UTC here
    assert plain(dt.date(2026, 1, 2)) == "2026-01-02"
    assert plain(float("nan")) == "nan"
    assert plain(float("inf")) == "inf"
    assert plain(b"\x00\xff") == "AP8="
    assert plain({"k": [1, (2, 3)]}) == {"k": [1, [2, 3]]}
    assert plain(True) is True
    json.dumps(plain({"a": [Row(), Decimal("NaN")]}), allow_nan=False)
