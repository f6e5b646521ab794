"""The profile's figures from collected sections (analytics.profile.shape_result), without Spark: the hot-partition
rule at its edge, partitions without records, hours without records, drift, the cut of a HyperLogLog estimate
above its count, the fields kept."""

from __future__ import annotations

from typing import Any

from analytics import profile
from analytics.profile import HOUR, shape_result


def field(path: str, present: int, first: int, last: int, **kw: Any) -> tuple[str, dict[str, Any]]:
    data: dict[str, Any] = {t: 0 for t in profile.TYPES} | {"string": present}
    data |= {"path": path, "present": present, "distinct": present, "first_hour": first, "last_hour": last}
    data |= {"min_num": None, "max_num": None, "min_text": "a", "max_text": "z"} | kw
    return "field", data


def total(records: int, objects: int, first: int, last: int) -> tuple[str, dict[str, Any]]:
    return "total", {
        "records": records,
        "objects": objects,
        "null_values": 0,
        "other_values": records - objects,
        "bytes": records * 10,
        "min_size": 10,
        "max_size": 10,
        "percentiles": [10, 10, 10],
        "distinct_keys": records + 5,
        "null_keys": 2,
        "first_object_hour": first,
        "last_object_hour": last,
    }


def test_a_partition_is_hot_above_twice_the_mean_not_at_it() -> None:
    found = [total(40, 40, 0, 0), ("partition", {"partition": 0, "records": 20, "bytes": 200})]
    found += [("partition", {"partition": 1, "records": 20, "bytes": 200})]
    # Mean over the four partitions of the range (two hold nothing): 10; 20 is twice it, not more.
    parts = shape_result(found, [0, 1, 2, 3]).summary["partitions"]
    assert [(p["partition"], p["records"], p["hot"]) for p in parts] == [
        (0, 20, False),
        (1, 20, False),
        (2, 0, False),
        (3, 0, False),
    ]
    found[1] = ("partition", {"partition": 0, "records": 21, "bytes": 210})
    found[0] = total(41, 41, 0, 0)
    assert [p["hot"] for p in shape_result(found, [0, 1, 2, 3]).summary["partitions"]] == [True, False, False, False]


def test_drift_hours_and_estimates() -> None:
    found = [
        total(100, 90, 0, 5 * HOUR),
        field("always", 90, 0, 5 * HOUR, null=10, string=80, distinct=95),
        field("late", 30, 3 * HOUR, 5 * HOUR),
        field("early", 30, 0, HOUR),
        ("hour", {"hour": 0, "records": 60}),
        ("hour", {"hour": 5 * HOUR, "records": 40}),
    ]
    result = shape_result(found, [0])
    rows = {r["field"]: r for r in result.rows}
    assert rows["always"]["drift"] is None
    assert rows["late"]["drift"] == "appeared"
    assert rows["early"]["drift"] == "disappeared"
    assert result.summary["drift"] == ["early", "late"]
    assert rows["always"]["nulls"] == 10
    assert rows["always"]["missing"] == 0
    assert rows["always"]["null_rate"] == 10 / 90
    assert rows["always"]["distinct"] == 80  # the estimate, 95, is above the 80 values there are
    assert result.summary["keys"]["distinct"] == 98  # 105 estimated, 98 keys
    assert [h["records"] for h in result.summary["hours"]] == [60, 0, 0, 0, 0, 40]  # hours between as 0


def test_the_most_present_fields_are_kept() -> None:
    found = [total(10, 10, 0, 0)] + [field(f"f{i:04d}", 1 + i % 7, 0, 0) for i in range(profile.MAX_FIELDS + 20)]
    result = shape_result(found, [0])
    assert len(result.rows) == profile.MAX_FIELDS
    kept = {r["field"] for r in result.rows}
    dropped = [1 + i % 7 for i in range(profile.MAX_FIELDS + 20) if f"f{i:04d}" not in kept]
    assert min(r["present"] for r in result.rows) >= max(dropped)
    assert result.summary["fields"] == profile.MAX_FIELDS + 20
    assert any("most present are shown" in n for n in result.notes)


def test_an_empty_range() -> None:
    result = shape_result([], [0, 1])
    assert result.rows == []
    assert result.summary["records"] == 0
    assert [p["hot"] for p in result.summary["partitions"]] == [False, False]
