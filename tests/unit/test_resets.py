from __future__ import annotations

import random
from datetime import datetime

import pytest

from broker.errors import InvalidInput, KazamiError
from broker.groups.resets import (
    STRATEGIES,
    PartitionState,
    PlannedReset,
    ResetError,
    ResetSpec,
    parse_spec,
    plan,
    time_target_ms,
    validate_spec,
)


def ms(text: str) -> int:
    """Epoch milliseconds of an ISO date-time with an explicit offset."""
    return int(datetime.fromisoformat(text).timestamp() * 1000)


NOW = ms("2026-11-02T00:00:00+00:00")
HOUR = 3_600_000


def state(
    topic: str = "orders",
    partition: int = 0,
    committed: int | None = 100,
    log_start: int = 10,
    log_end: int = 120,
    offset_for_time: int | None = None,
) -> PartitionState:
    return PartitionState(topic, partition, committed, log_start, log_end, offset_for_time)


def plan_one(spec: ResetSpec, partition_state: PartitionState, now_ms: int | None = None) -> PlannedReset:
    (planned,) = plan([partition_state], spec, now_ms=now_ms)
    return planned


# --- parse_spec: strategies without a value -------------------------------------------------------


@pytest.mark.parametrize("strategy", ["earliest", "latest", "current"])
@pytest.mark.parametrize("value", [None, "", "   "])
def test_parse_spec_accepts_strategies_without_value(strategy: str, value: str | None) -> None:
    assert parse_spec(strategy, value, NOW) == ResetSpec(strategy)


@pytest.mark.parametrize(
    ("given", "expected"),
    [
        ("--to-earliest", "earliest"),
        ("TO_LATEST", "latest"),
        (" Current ", "current"),
        ("to-current", "current"),
        ("--shift-by", "shift-by"),
        ("TO_OFFSET", "to-offset"),
    ],
)
def test_parse_spec_accepts_kafka_option_names_and_any_case(given: str, expected: str) -> None:
    value = None if expected in {"earliest", "latest", "current"} else "5"
    assert parse_spec(given, value, NOW).strategy == expected


def test_parse_spec_rejects_unknown_strategy_and_lists_the_known_ones() -> None:
    with pytest.raises(ResetError, match=r"unknown reset strategy 'sideways': use one of earliest, latest"):
        parse_spec("sideways", None, NOW)


@pytest.mark.parametrize("strategy", ["earliest", "latest", "current"])
def test_parse_spec_rejects_value_for_strategy_that_takes_none(strategy: str) -> None:
    with pytest.raises(ResetError, match=rf"{strategy} takes no value, but got '5'"):
        parse_spec(strategy, "5", NOW)


def test_reset_error_is_user_facing_invalid_input() -> None:
    assert issubclass(ResetError, InvalidInput)
    assert issubclass(ResetError, KazamiError)


@pytest.mark.parametrize("strategy", ["to-offset", "shift-by", "to-datetime", "by-duration"])
@pytest.mark.parametrize("value", [None, "", "  \t"])
def test_parse_spec_rejects_missing_value_and_says_what_is_needed(strategy: str, value: str | None) -> None:
    with pytest.raises(
        ResetError,
        match=rf"^{strategy} needs (an offset|a number of messages to shift by|a date-time|a duration), like ",
    ):
        parse_spec(strategy, value, NOW)


@pytest.mark.parametrize("strategy", ["to-offset", "shift-by", "to-datetime", "by-duration"])
def test_parse_spec_rejects_overlong_value(strategy: str) -> None:
    with pytest.raises(ResetError, match=r"too long \(101 characters, at most 100\)"):
        parse_spec(strategy, "1" * 101, NOW)


# --- parse_spec: to-offset and shift-by -----------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("1200", 1200), ("0", 0), ("+5", 5), (" 42 ", 42)])
def test_parse_spec_to_offset_reads_whole_number(value: str, expected: int) -> None:
    assert parse_spec("to-offset", value, NOW) == ResetSpec("to-offset", offset=expected)


@pytest.mark.parametrize("value", ["abc", "12.5", "1e3", "1_000", "0x10", "١٢", "12 34"])
def test_parse_spec_to_offset_rejects_non_numeric(value: str) -> None:
    with pytest.raises(ResetError, match=r"the offset must be a whole number, not '"):
        parse_spec("to-offset", value, NOW)


def test_parse_spec_to_offset_rejects_negative() -> None:
    with pytest.raises(ResetError, match=r"the offset must not be negative, but got -5"):
        parse_spec("to-offset", "-5", NOW)


def test_parse_spec_to_offset_rejects_offset_beyond_int64() -> None:
    with pytest.raises(ResetError, match=r"larger than Kafka allows"):
        parse_spec("to-offset", str(2**63), NOW)


@pytest.mark.parametrize(("value", "expected"), [("-100", -100), ("50", 50), ("+7", 7), ("0", 0)])
def test_parse_spec_shift_by_allows_negative(value: str, expected: int) -> None:
    assert parse_spec("shift-by", value, NOW) == ResetSpec("shift-by", shift=expected)


@pytest.mark.parametrize("value", ["ten", "1.5", "--3", "+-3", "3-"])
def test_parse_spec_shift_by_rejects_non_numeric(value: str) -> None:
    with pytest.raises(ResetError, match=r"the shift must be a whole number"):
        parse_spec("shift-by", value, NOW)


def test_parse_spec_shift_by_rejects_shift_beyond_int64() -> None:
    with pytest.raises(ResetError, match=r"the shift -9223372036854775808 is larger than Kafka allows"):
        parse_spec("shift-by", str(-(2**63)), NOW)


# --- parse_spec: to-datetime ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("2026-11-01T12:00:00.000", "2026-11-01T12:00:00+00:00"),  # Kafka's own format; naive is UTC
        ("2026-11-01T12:00:00", "2026-11-01T12:00:00+00:00"),
        ("2026-11-01T12:00:00.000Z", "2026-11-01T12:00:00+00:00"),
        ("2026-11-01T12:00:00z", "2026-11-01T12:00:00+00:00"),
        ("2026-11-01T12:00:00.000+02:00", "2026-11-01T10:00:00+00:00"),
        ("2026-11-01T12:00:00.000-0530", "2026-11-01T17:30:00+00:00"),
        ("2026-11-01", "2026-11-01T00:00:00+00:00"),
        ("  2026-11-01 12:00  ", "2026-11-01T12:00:00+00:00"),
    ],
)
def test_parse_spec_to_datetime_reads_iso_8601(value: str, expected: str) -> None:
    assert parse_spec("to-datetime", value, NOW) == ResetSpec("to-datetime", datetime_ms=ms(expected))


def test_parse_spec_to_datetime_keeps_milliseconds() -> None:
    spec = parse_spec("to-datetime", "2026-11-01T12:00:00.123Z", NOW)
    assert spec.datetime_ms == ms("2026-11-01T12:00:00+00:00") + 123


def test_parse_spec_to_datetime_reads_epoch_milliseconds() -> None:
    assert parse_spec("to-datetime", "1700000000000", NOW) == ResetSpec("to-datetime", datetime_ms=1_700_000_000_000)
    assert parse_spec("to-datetime", "0", NOW).datetime_ms == 0


def test_parse_spec_to_datetime_allows_future_date() -> None:
    spec = parse_spec("to-datetime", "2027-01-01T00:00:00Z", NOW)
    assert spec.datetime_ms == ms("2027-01-01T00:00:00+00:00")
    assert spec.datetime_ms > NOW


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("yesterday", r"'yesterday' is not a date-time: use ISO 8601 like 2026-11-01T12:00:00.000"),
        ("2026-11-01T12:00:00 UTC", r"is not a date-time: use ISO 8601"),
        ("2026/11/01 12:00", r"is not a date-time: use ISO 8601"),
        ("2026-11-01T25:00", r"is not a date-time \(hour must be in 0\.\.23\)"),
        ("2026-02-30T00:00", r"is not a date-time \(day is out of range for month\)"),
        ("2026-13-01", r"is not a date-time \(month must be in 1\.\.12\)"),
        ("12.5", r"is not a date-time"),
    ],
)
def test_parse_spec_to_datetime_rejects_malformed_date(value: str, reason: str) -> None:
    with pytest.raises(ResetError, match=reason):
        parse_spec("to-datetime", value, NOW)


def test_parse_spec_to_datetime_rejects_negative_epoch() -> None:
    with pytest.raises(ResetError, match=r"'-5' is negative: epoch milliseconds start at 0"):
        parse_spec("to-datetime", "-5", NOW)


def test_parse_spec_to_datetime_rejects_date_before_1970() -> None:
    with pytest.raises(ResetError, match=r"is before 1970-01-01T00:00:00Z"):
        parse_spec("to-datetime", "1969-12-31T23:59:59Z", NOW)


def test_parse_spec_to_datetime_rejects_epoch_after_year_9999() -> None:
    with pytest.raises(ResetError, match=r"after the year 9999"):
        parse_spec("to-datetime", "99999999999999999", NOW)


# --- parse_spec: by-duration ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("PT1H30M", 90 * 60_000),
        ("P1DT2H", 26 * HOUR),
        ("PT15M", 15 * 60_000),
        ("pt15m", 15 * 60_000),
        ("P2D", 48 * HOUR),
        ("PT90S", 90_000),
        ("PT0.5S", 500),
        ("PT1,25S", 1250),
        ("PT0.0005S", 0),
        ("PT0S", 0),
        ("P1DT1H1M1.001S", 24 * HOUR + HOUR + 60_000 + 1001),
    ],
)
def test_parse_spec_by_duration_reads_iso_8601(value: str, expected: int) -> None:
    assert parse_spec("by-duration", value, NOW) == ResetSpec("by-duration", duration_ms=expected)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("15m", 15 * 60_000),
        ("2h", 2 * HOUR),
        ("1d", 24 * HOUR),
        ("90s", 90_000),
        ("500ms", 500),
        ("1h30m", 90 * 60_000),
        ("1h 30m", 90 * 60_000),
        ("2H", 2 * HOUR),
        ("0s", 0),
    ],
)
def test_parse_spec_by_duration_reads_shorthand(value: str, expected: int) -> None:
    assert parse_spec("by-duration", value, NOW) == ResetSpec("by-duration", duration_ms=expected)


@pytest.mark.parametrize(
    ("value", "reason"),
    [
        ("PT", r"'PT' is not a duration: use ISO 8601 like PT1H30M"),
        ("P", r"'P' is not a duration"),
        ("P1DT", r"'P1DT' is not a duration"),
        ("PT1.5H", r"is not a duration"),
        ("PT1H2H", r"is not a duration"),
        ("PT30M1H", r"is not a duration"),
        ("P1Y", r"years, months or weeks, which have no fixed length: give days instead, like P30D"),
        ("P1M", r"years, months or weeks"),
        ("P2W", r"years, months or weeks"),
        ("-PT1H", r"'-PT1H' is negative: by-duration looks back from now"),
        ("PT-1H", r"is negative"),
        ("-15m", r"is negative"),
        ("90", r"'90' has no unit: write 90s, 90m, 90h or 90d"),
        ("15 minutes", r"'15 minutes' is not a duration: use ISO 8601 .* or shorthand like 15m"),
        ("1.5h", r"is not a duration"),
        ("1w", r"is not a duration"),
        ("abc", r"is not a duration"),
        ("1h1h", r"'1h1h' gives h twice"),
    ],
)
def test_parse_spec_by_duration_rejects_malformed_duration(value: str, reason: str) -> None:
    with pytest.raises(ResetError, match=reason):
        parse_spec("by-duration", value, NOW)


# --- validate_spec and invalid specs --------------------------------------------------------------

INVALID_SPECS = [
    pytest.param(ResetSpec("sideways"), r"unknown reset strategy 'sideways'", id="unknown"),
    pytest.param(ResetSpec("to-offset"), r"to-offset needs an offset", id="to-offset-missing"),
    pytest.param(ResetSpec("to-offset", offset=-1), r"must not be negative", id="to-offset-negative"),
    pytest.param(ResetSpec("to-offset", offset=2**63), r"larger than Kafka allows", id="to-offset-huge"),
    pytest.param(ResetSpec("shift-by"), r"shift-by needs a number", id="shift-by-missing"),
    pytest.param(ResetSpec("shift-by", shift=2**63), r"larger than Kafka allows", id="shift-by-huge"),
    pytest.param(ResetSpec("to-datetime"), r"to-datetime needs a date-time", id="to-datetime-missing"),
    pytest.param(ResetSpec("to-datetime", datetime_ms=-1), r"before 1970", id="to-datetime-negative"),
    pytest.param(ResetSpec("to-datetime", datetime_ms=10**17), r"after the year 9999", id="to-datetime-huge"),
    pytest.param(ResetSpec("by-duration"), r"by-duration needs a duration", id="by-duration-missing"),
    pytest.param(ResetSpec("by-duration", duration_ms=-1), r"must not be negative", id="by-duration-negative"),
]


@pytest.mark.parametrize(("spec", "reason"), INVALID_SPECS)
def test_plan_rejects_invalid_spec(spec: ResetSpec, reason: str) -> None:
    with pytest.raises(ResetError, match=reason):
        plan([state()], spec)


@pytest.mark.parametrize(("spec", "reason"), INVALID_SPECS)
def test_time_target_ms_rejects_invalid_spec(spec: ResetSpec, reason: str) -> None:
    with pytest.raises(ResetError, match=reason):
        time_target_ms(spec, NOW)


def test_plan_rejects_invalid_spec_even_without_partitions() -> None:
    with pytest.raises(ResetError):
        plan([], ResetSpec("to-offset"))


@pytest.mark.parametrize(
    "spec",
    [
        ResetSpec("earliest"),
        ResetSpec("to-offset", offset=0),
        ResetSpec("shift-by", shift=-(2**63 - 1)),
        ResetSpec("to-datetime", datetime_ms=0),
        ResetSpec("by-duration", duration_ms=0),
    ],
)
def test_validate_spec_accepts_boundary_values(spec: ResetSpec) -> None:
    validate_spec(spec)


# --- time_target_ms -------------------------------------------------------------------------------


def test_time_target_ms_is_the_date_for_to_datetime() -> None:
    assert time_target_ms(ResetSpec("to-datetime", datetime_ms=1234), NOW) == 1234


def test_time_target_ms_is_now_minus_duration_for_by_duration() -> None:
    assert time_target_ms(ResetSpec("by-duration", duration_ms=2 * HOUR), NOW) == NOW - 2 * HOUR


def test_time_target_ms_never_goes_before_1970() -> None:
    assert time_target_ms(ResetSpec("by-duration", duration_ms=NOW + HOUR), NOW) == 0


@pytest.mark.parametrize(
    "spec",
    [
        ResetSpec("earliest"),
        ResetSpec("latest"),
        ResetSpec("current"),
        ResetSpec("to-offset", offset=5),
        ResetSpec("shift-by", shift=-5),
    ],
)
def test_time_target_ms_is_none_for_strategies_without_time(spec: ResetSpec) -> None:
    assert time_target_ms(spec, NOW) is None


def test_time_target_ms_of_parsed_spec_round_trips() -> None:
    spec = parse_spec("by-duration", "PT1H30M", NOW)
    assert time_target_ms(spec, NOW) == NOW - 90 * 60_000


# --- plan: earliest, latest, current --------------------------------------------------------------


def test_plan_earliest_is_log_start() -> None:
    assert plan_one(ResetSpec("earliest"), state()) == PlannedReset("orders", 0, 100, 10, 10, 120, None)


def test_plan_latest_is_log_end() -> None:
    assert plan_one(ResetSpec("latest"), state()) == PlannedReset("orders", 0, 100, 120, 10, 120, None)


def test_plan_earliest_and_latest_ignore_missing_commit() -> None:
    assert plan_one(ResetSpec("earliest"), state(committed=None)).new == 10
    assert plan_one(ResetSpec("latest"), state(committed=None)).new == 120


def test_plan_current_keeps_committed_offset() -> None:
    assert plan_one(ResetSpec("current"), state()) == PlannedReset("orders", 0, 100, 100, 10, 120, None)


def test_plan_current_without_commit_is_latest_with_note() -> None:
    planned = plan_one(ResetSpec("current"), state(committed=None))
    assert planned.current is None
    assert planned.new == 120
    assert planned.note == "no committed offset: latest, the end 120"


def test_plan_current_keeps_commit_below_start_like_kafka_and_says_so() -> None:
    planned = plan_one(ResetSpec("current"), state(committed=5))
    assert planned.new == 5
    assert planned.note == (
        "committed 5 is below the start 10 (deleted by retention): "
        "kept as Kafka's tool keeps it; the consumer will apply its auto.offset.reset"
    )


def test_plan_current_keeps_commit_past_end_like_kafka_and_says_so() -> None:
    planned = plan_one(ResetSpec("current"), state(committed=150))
    assert planned.new == 150
    assert planned.note is not None
    assert planned.note.startswith("committed 150 is past the end 120: kept as Kafka's tool keeps it")


def test_plan_current_at_the_edges_has_no_note() -> None:
    assert plan_one(ResetSpec("current"), state(committed=10)).note is None
    assert plan_one(ResetSpec("current"), state(committed=120)).note is None


# --- plan: to-offset ------------------------------------------------------------------------------


def test_plan_to_offset_inside_the_log_is_taken_as_is() -> None:
    assert plan_one(ResetSpec("to-offset", offset=50), state()) == PlannedReset("orders", 0, 100, 50, 10, 120, None)


def test_plan_to_offset_past_end_clamps_to_end_with_note() -> None:
    planned = plan_one(ResetSpec("to-offset", offset=900), state())
    assert planned.new == 120
    assert planned.note == "offset 900 is past the end 120: clamped to the end"


def test_plan_to_offset_below_start_clamps_to_start_with_note() -> None:
    planned = plan_one(ResetSpec("to-offset", offset=3), state())
    assert planned.new == 10
    assert planned.note == "offset 3 is below the start 10: clamped to the start"


@pytest.mark.parametrize("offset", [10, 120])
def test_plan_to_offset_exactly_at_the_edges_is_not_clamped(offset: int) -> None:
    planned = plan_one(ResetSpec("to-offset", offset=offset), state())
    assert (planned.new, planned.note) == (offset, None)


def test_plan_to_offset_does_not_need_a_commit() -> None:
    planned = plan_one(ResetSpec("to-offset", offset=50), state(committed=None))
    assert (planned.current, planned.new, planned.note) == (None, 50, None)


def test_plan_to_offset_on_empty_partition_lands_on_its_only_offset() -> None:
    planned = plan_one(ResetSpec("to-offset", offset=0), state(log_start=7, log_end=7))
    assert (planned.new, planned.note) == (7, "offset 0 is below the start 7: clamped to the start")


# --- plan: shift-by -------------------------------------------------------------------------------


@pytest.mark.parametrize(("shift", "expected"), [(-30, 70), (15, 115), (0, 100), (-90, 10), (20, 120)])
def test_plan_shift_by_moves_from_committed_offset(shift: int, expected: int) -> None:
    planned = plan_one(ResetSpec("shift-by", shift=shift), state())
    assert (planned.current, planned.new, planned.note) == (100, expected, None)


def test_plan_shift_by_past_end_clamps_to_end_with_note() -> None:
    planned = plan_one(ResetSpec("shift-by", shift=50), state())
    assert planned.new == 120
    assert planned.note == "committed 100 shifted by +50 is 150, past the end 120: clamped to the end"


def test_plan_shift_by_below_start_clamps_to_start_with_note() -> None:
    planned = plan_one(ResetSpec("shift-by", shift=-200), state())
    assert planned.new == 10
    assert planned.note == "committed 100 shifted by -200 is -100, below the start 10: clamped to the start"


def test_plan_shift_by_without_commit_shifts_from_end_with_note() -> None:
    planned = plan_one(ResetSpec("shift-by", shift=-20), state(committed=None))
    assert (planned.current, planned.new) == (None, 100)
    assert planned.note == "no committed offset to shift from: shifted from the end 120"


def test_plan_shift_by_forward_without_commit_notes_both_fallback_and_clamp() -> None:
    planned = plan_one(ResetSpec("shift-by", shift=5), state(committed=None))
    assert planned.new == 120
    assert planned.note == (
        "no committed offset to shift from: shifted from the end 120; "
        "the end 120 shifted by +5 is 125, past the end 120: clamped to the end"
    )


def test_plan_shift_by_far_back_without_commit_clamps_to_start() -> None:
    planned = plan_one(ResetSpec("shift-by", shift=-1000), state(committed=None))
    assert planned.new == 10
    assert planned.note is not None
    assert planned.note.endswith("the end 120 shifted by -1000 is -880, below the start 10: clamped to the start")


# --- plan: to-datetime and by-duration ------------------------------------------------------------

DATE = ms("2026-11-01T12:00:00+00:00")


def test_plan_to_datetime_uses_offset_for_time() -> None:
    spec = ResetSpec("to-datetime", datetime_ms=DATE)
    assert plan_one(spec, state(offset_for_time=42)) == PlannedReset("orders", 0, 100, 42, 10, 120, None)


def test_plan_to_datetime_without_message_that_late_goes_to_end_with_note() -> None:
    planned = plan_one(ResetSpec("to-datetime", datetime_ms=DATE), state(), now_ms=NOW)
    assert planned.new == 120
    assert planned.note == "no message at or after 2026-11-01T12:00:00.000Z: the end 120"


def test_plan_to_datetime_in_the_future_goes_to_end_and_says_future() -> None:
    future = NOW + 24 * HOUR
    planned = plan_one(ResetSpec("to-datetime", datetime_ms=future), state(), now_ms=NOW)
    assert planned.new == 120
    assert planned.note == "2026-11-03T00:00:00.000Z is in the future and no message is that late: the end 120"


def test_plan_to_datetime_in_the_future_without_clock_gives_plain_note() -> None:
    planned = plan_one(ResetSpec("to-datetime", datetime_ms=NOW + HOUR), state())
    assert planned.new == 120
    assert planned.note == "no message at or after 2026-11-02T01:00:00.000Z: the end 120"


def test_plan_to_datetime_in_the_future_uses_future_stamped_messages() -> None:
    planned = plan_one(ResetSpec("to-datetime", datetime_ms=NOW + HOUR), state(offset_for_time=118), now_ms=NOW)
    assert (planned.new, planned.note) == (118, None)


def test_plan_to_datetime_clamps_stale_offset_below_start() -> None:
    planned = plan_one(ResetSpec("to-datetime", datetime_ms=DATE + 5), state(offset_for_time=3))
    assert planned.new == 10
    assert planned.note == (
        "the first message at or after 2026-11-01T12:00:00.005Z is at offset 3, "
        "below the start 10: clamped to the start"
    )


def test_plan_to_datetime_clamps_offset_past_end() -> None:
    planned = plan_one(ResetSpec("to-datetime", datetime_ms=DATE), state(offset_for_time=130))
    assert planned.new == 120
    assert planned.note is not None
    assert planned.note.endswith("is at offset 130, past the end 120: clamped to the end")


def test_plan_by_duration_uses_offset_for_time() -> None:
    planned = plan_one(ResetSpec("by-duration", duration_ms=HOUR), state(committed=None, offset_for_time=60))
    assert (planned.current, planned.new, planned.note) == (None, 60, None)


def test_plan_by_duration_without_recent_message_goes_to_end_with_note() -> None:
    planned = plan_one(ResetSpec("by-duration", duration_ms=90 * 60_000), state())
    assert planned.new == 120
    assert planned.note == "no message in the last 1h 30m: the end 120"


def test_plan_by_duration_note_shows_the_time_looked_back_to() -> None:
    planned = plan_one(ResetSpec("by-duration", duration_ms=26 * HOUR + 1500), state(), now_ms=NOW)
    assert planned.note == "no message in the last 1d 2h 1s 500ms (since 2026-10-31T21:59:58.500Z): the end 120"


def test_plan_by_duration_of_zero_reads_as_zero_seconds() -> None:
    planned = plan_one(ResetSpec("by-duration", duration_ms=0), state())
    assert planned.note == "no message in the last 0s: the end 120"


def test_plan_by_duration_clamps_with_note() -> None:
    planned = plan_one(ResetSpec("by-duration", duration_ms=15 * 60_000), state(offset_for_time=2))
    assert planned.new == 10
    assert planned.note == "the first message in the last 15m is at offset 2, below the start 10: clamped to the start"


@pytest.mark.parametrize("strategy", ["earliest", "latest", "current", "to-offset", "shift-by"])
def test_plan_ignores_offset_for_time_for_other_strategies(strategy: str) -> None:
    spec = ResetSpec(strategy, offset=50, shift=-10)
    assert plan_one(spec, state(offset_for_time=77)).new != 77


# --- plan: ordering and shape ---------------------------------------------------------------------


def test_plan_sorts_by_topic_then_numeric_partition() -> None:
    states = [state("payments", 10), state("orders", 2), state("payments", 2), state("orders", 0)]
    planned = plan(states, ResetSpec("latest"))
    assert [(p.topic, p.partition) for p in planned] == [
        ("orders", 0),
        ("orders", 2),
        ("payments", 2),
        ("payments", 10),
    ]


def test_plan_does_not_reorder_the_callers_list() -> None:
    states = [state("b"), state("a")]
    plan(states, ResetSpec("earliest"))
    assert [s.topic for s in states] == ["b", "a"]


def test_plan_of_no_partitions_is_empty() -> None:
    assert plan([], ResetSpec("earliest")) == []


def test_plan_plans_each_partition_on_its_own() -> None:
    states = [state("t", 0, committed=None), state("t", 1, committed=50, log_start=40, log_end=60)]
    planned = plan(states, ResetSpec("shift-by", shift=-15))
    assert [(p.new, p.note) for p in planned] == [
        (105, "no committed offset to shift from: shifted from the end 120"),
        (40, "committed 50 shifted by -15 is 35, below the start 40: clamped to the start"),
    ]


def test_parsed_specs_plan_for_every_strategy() -> None:
    values: dict[str, str | None] = {
        "to-offset": "50",
        "shift-by": "-5",
        "to-datetime": "2026-11-01T12:00:00.000",
        "by-duration": "PT1H",
    }
    for strategy in STRATEGIES:
        spec = parse_spec(strategy, values.get(strategy), NOW)
        (planned,) = plan([state(offset_for_time=60)], spec, now_ms=NOW)
        assert 10 <= planned.new <= 120


def test_plan_never_raises_and_stays_in_the_log_for_random_valid_states() -> None:
    rng = random.Random(20261101)
    for _ in range(500):
        log_start = rng.randrange(0, 1000)
        log_end = log_start + rng.randrange(0, 1000)
        committed = rng.choice([None, rng.randrange(0, 2500)])
        offset_for_time = rng.choice([None, rng.randrange(0, 2500)])
        partition_state = state("t", rng.randrange(0, 50), committed, log_start, log_end, offset_for_time)
        specs = [
            ResetSpec("earliest"),
            ResetSpec("latest"),
            ResetSpec("to-offset", offset=rng.randrange(0, 2500)),
            ResetSpec("shift-by", shift=rng.randrange(-2500, 2500)),
            ResetSpec("to-datetime", datetime_ms=rng.randrange(0, 2 * NOW)),
            ResetSpec("by-duration", duration_ms=rng.randrange(0, 2 * NOW)),
        ]
        for spec in specs:
            planned = plan_one(spec, partition_state, now_ms=rng.choice([None, NOW]))
            assert log_start <= planned.new <= log_end, (spec, partition_state, planned)
            assert (planned.note is None) == (planned.new == _unclamped(spec, partition_state))


def _unclamped(spec: ResetSpec, partition_state: PartitionState) -> int | None:
    """The offset a strategy asks for before any clamp or fallback, or None when it needs a fallback."""
    if spec.strategy == "earliest":
        return partition_state.log_start
    if spec.strategy == "latest":
        return partition_state.log_end
    if spec.strategy == "to-offset":
        return spec.offset
    if spec.strategy == "shift-by":
        assert spec.shift is not None
        if partition_state.committed is None:
            return None
        return partition_state.committed + spec.shift
    return partition_state.offset_for_time


def test_plan_does_not_raise_for_inconsistent_state() -> None:
    broken = state(committed=None, log_start=50, log_end=40, offset_for_time=None)
    for strategy in STRATEGIES:
        spec = ResetSpec(strategy, offset=45, shift=1, datetime_ms=DATE, duration_ms=HOUR)
        plan([broken], spec, now_ms=NOW)
