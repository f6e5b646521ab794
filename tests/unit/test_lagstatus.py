from __future__ import annotations

import pytest

from broker.groups.lag_status import (
    GroupVerdict,
    Observation,
    PartitionVerdict,
    Rules,
    Status,
    evaluate_group,
    evaluate_partition,
    format_duration,
)

T0 = 1_767_225_600_000  # 2026-01-01T00:00:00Z
STEP = 10_000  # the sampler's interval: one observation every 10 s
RULES = Rules()  # window of 10 observations, no lag allowed: the window spans 1 min 30 s


def samples(committed: list[int], log_end: list[int], start: int = T0, step: int = STEP) -> list[Observation]:
    """Observations every ``step`` ms from ``start``, oldest first."""
    assert len(committed) == len(log_end)
    return [Observation(start + i * step, c, e) for i, (c, e) in enumerate(zip(committed, log_end, strict=True))]


def judge(
    history: list[Observation],
    now_ms: int | None = None,
    current_log_end: int | None = None,
    rules: Rules = RULES,
) -> PartitionVerdict:
    now = history[-1].at_ms + 2_000 if now_ms is None else now_ms
    return evaluate_partition("orders", 3, history, now, current_log_end, rules)


def fast_consumer() -> list[Observation]:
    # Producers write 1,000 messages per 10 s; the consumer keeps within a few messages of the end.
    ends = [10_000 + 1_000 * i for i in range(10)]
    behind = [4, 2, 7, 1, 3, 5, 2, 6, 1, 3]
    return samples([e - b for e, b in zip(ends, behind, strict=True)], ends)


def slow_consumer(count: int = 10) -> list[Observation]:
    # Producers write 1,000 per 10 s, the consumer reads 600: lag grows by 400 every sample.
    return samples([5_000 + 600 * i for i in range(count)], [6_000 + 1_000 * i for i in range(count)])


# --- Observation ----------------------------------------------------------------------------


def test_it_computes_lag_as_messages_between_committed_offset_and_log_end() -> None:
    assert Observation(T0, 900, 1_000).lag == 100
    assert Observation(T0, 1_000, 1_000).lag == 0
    assert Observation(T0, 1_200, 1_000).lag == 0  # a committed offset past a truncated log is not negative lag


# --- OK -------------------------------------------------------------------------------------


def test_it_calls_a_fast_consumer_ok() -> None:
    verdict = judge(fast_consumer())

    assert verdict.status == Status.OK
    assert verdict.current_lag == 3
    assert verdict.complete == 1.0
    assert "keeping up" in verdict.reason


def test_it_calls_a_caught_up_consumer_ok() -> None:
    ends = [1_000 * i for i in range(10)]
    verdict = judge(samples(ends, ends))

    assert verdict.status == Status.OK
    assert verdict.current_lag == 0
    assert verdict.reason == "caught up (0 messages behind)"


def test_it_calls_a_consumer_that_stopped_because_there_is_nothing_to_read_ok() -> None:
    # It read everything, then nothing more was written: no commits for 10 minutes, and none needed.
    ends = [2_000, 2_400, 2_800, 3_000, 3_000, 3_000, 3_000, 3_000, 3_000, 3_000]
    history = samples(ends, ends)

    verdict = judge(history, now_ms=history[-1].at_ms + 10 * 60_000, current_log_end=3_000)

    assert verdict.status == Status.OK
    assert verdict.current_lag == 0


def test_it_gives_a_consumer_that_was_just_caught_up_a_window_to_pick_up_new_messages() -> None:
    # Idle and caught up at 5,000; 35 messages arrived over the last three samples and are not read yet.
    history = samples([5_000] * 10, [5_000] * 7 + [5_010, 5_020, 5_035])

    verdict = judge(history, current_log_end=5_035)

    assert verdict.status == Status.OK
    assert verdict.current_lag == 35
    assert verdict.reason == "caught up 32 s ago, within the window's 1 min 30 s; 35 messages to read since"


# --- WARN -----------------------------------------------------------------------------------


def test_it_warns_about_a_consumer_that_moves_but_falls_further_behind() -> None:
    verdict = judge(slow_consumer())

    assert verdict.status == Status.WARN
    assert verdict.current_lag == 4_600
    assert verdict.reason == (
        "falling behind: lag grew from 1,000 to 4,600 over 1 min 30 s although the committed offset moved 5,400, "
        "and 4,600 messages wait now"
    )


def test_it_counts_repeated_identical_samples_as_lag_that_did_not_decrease() -> None:
    # Bursts: the consumer and the log both pause between moves, so some samples repeat exactly.
    committed = [100, 100, 300, 300, 300, 600, 600, 900, 900, 1_200]
    ends = [200, 200, 500, 500, 500, 900, 900, 1_300, 1_300, 1_700]

    assert judge(samples(committed, ends)).status == Status.WARN


def test_it_does_not_warn_when_lag_went_down_within_the_window() -> None:
    # Lag grows, then one quick burst of reading brings it down from 3,000 to 2,000, then it grows again.
    committed = [5_000, 5_600, 6_200, 6_800, 7_400, 8_000, 10_000, 10_600, 11_200, 11_800]
    ends = [6_000 + 1_000 * i for i in range(10)]

    verdict = judge(samples(committed, ends))

    assert verdict.status == Status.OK


# --- STALL ----------------------------------------------------------------------------------


def test_it_calls_a_consumer_committing_the_same_offset_while_messages_wait_stall() -> None:
    # A poison message: the consumer commits 8,000 again and again while 250 messages arrive per sample.
    history = samples([8_000] * 10, [8_100 + 250 * i for i in range(10)])

    # Judged as the newest sample is taken; any later, a window that never moved reads STOP (see below).
    verdict = judge(history, now_ms=history[-1].at_ms)

    assert verdict.status == Status.STALL
    assert verdict.current_lag == 2_350
    assert verdict.reason == (
        "committed offset stuck at 8,000 through the whole window of 1 min 30 s, while 2,350 messages wait"
    )


def test_it_calls_a_window_that_never_moved_stop_once_time_passes_its_newest_sample() -> None:
    history = samples([8_000] * 10, [8_100 + 250 * i for i in range(10)])

    verdict = judge(history, now_ms=history[-1].at_ms + 1)

    assert verdict.status == Status.STOP


# --- STOP -----------------------------------------------------------------------------------


def test_it_calls_a_consumer_that_stopped_committing_while_messages_wait_stop() -> None:
    # The slow consumer's last commit was seen 5 min 12 s ago; nothing was observed since.
    history = slow_consumer()
    now = history[-1].at_ms + 5 * 60_000 + 12_000

    verdict = judge(history, now_ms=now, current_log_end=history[-1].log_end + 96)

    assert verdict.status == Status.STOP
    assert verdict.reason == (
        "committed offset 10,400 has not moved for 5 min 12 s, longer than the window's 1 min 30 s, "
        "while 4,696 messages wait"
    )


def test_it_calls_a_consumer_stop_when_samples_keep_coming_but_its_offset_does_not_move() -> None:
    # The sampler keeps sampling every 10 s; the consumer's offset last moved (to 8,000) 2 min 52 s ago.
    committed = [7_000, 7_500, 8_000] + [8_000] * 17
    ends = [7_200 + 300 * i for i in range(20)]
    history = samples(committed, ends)

    verdict = judge(history, current_log_end=ends[-1])

    assert verdict.status == Status.STOP
    assert verdict.current_lag == ends[-1] - 8_000
    # The whole history says how long it has been still, not only the window.
    assert "has not moved for 2 min 52 s, longer than the window's 1 min 30 s" in verdict.reason


def test_it_does_not_call_a_consumer_stop_before_a_window_span_has_passed_since_its_last_commit() -> None:
    history = slow_consumer()

    assert judge(history, now_ms=history[-1].at_ms + 60_000).status == Status.WARN


def test_it_calls_a_consumer_stop_once_its_catch_up_is_older_than_the_window_span() -> None:
    # Caught up at the first observation, then messages came and the consumer never moved again;
    # the history ends there and is judged 4 minutes later: messages have waited far longer than the span.
    history = samples([5_000] * 10, [5_000] + [5_000 + 50 * i for i in range(1, 10)])

    verdict = judge(history, now_ms=history[-1].at_ms + 4 * 60_000)

    assert verdict.status == Status.STOP


# --- REWIND ---------------------------------------------------------------------------------


def test_it_calls_a_consumer_whose_offset_went_backwards_rewind() -> None:
    # Someone reset the group from 9,000 back to 4,000; it re-reads but has not got back to 9,000.
    committed = [7_000, 7_500, 8_000, 8_500, 9_000, 4_000, 4_600, 5_200, 5_800, 6_400]
    ends = [7_200 + 500 * i for i in range(10)]

    verdict = judge(samples(committed, ends))

    assert verdict.status == Status.REWIND
    assert verdict.reason == (
        "committed offset went back from 9,000 to 4,000 (5,000 messages) and has not got back since (now 6,400), "
        "while 5,300 messages wait"
    )


def test_it_does_not_call_a_rewind_that_recovered_rewind() -> None:
    committed = [7_000, 7_500, 8_000, 8_500, 9_000, 4_000, 6_000, 8_000, 9_500, 10_500]
    ends = [7_200 + 500 * i for i in range(10)]

    verdict = judge(samples(committed, ends))

    assert verdict.status == Status.OK


def test_it_ranks_rewind_above_warn() -> None:
    # Moving, never caught up, lag never decreased: would be WARN, but the rewind is worse.
    committed = [1_000, 1_100, 1_200, 1_300, 900, 950, 1_000, 1_050, 1_100, 1_150]
    ends = [1_500 + 200 * i for i in range(10)]

    assert judge(samples(committed, ends)).status == Status.REWIND


def test_it_ranks_stop_above_rewind() -> None:
    committed = [1_000, 1_100, 1_200, 1_300, 900, 950, 1_000, 1_050, 1_100, 1_150]
    ends = [1_500 + 200 * i for i in range(10)]
    history = samples(committed, ends)

    assert judge(history, now_ms=history[-1].at_ms + 10 * 60_000).status == Status.STOP


# --- Incomplete windows -----------------------------------------------------------------------


def test_it_does_not_judge_an_incomplete_window() -> None:
    verdict = judge(slow_consumer(4))

    assert verdict.status == Status.NOT_EVALUATED
    assert verdict.complete == pytest.approx(0.4)
    assert verdict.current_lag == 2_200
    assert verdict.reason == "not judged yet: only 4 of 10 observations so far, while 2,200 messages wait"


def test_it_calls_an_incomplete_window_ok_when_caught_up() -> None:
    ends = [100, 200, 300]

    verdict = judge(samples(ends, ends))

    assert verdict.status == Status.OK
    assert verdict.complete == pytest.approx(0.3)


def test_it_does_not_judge_a_window_shorter_in_time_than_the_minimum_span() -> None:
    rules = Rules(window=10, min_span_ms=60_000)
    history = slow_consumer()[:10]
    quick = [Observation(T0 + i * 1_000, o.committed, o.log_end) for i, o in enumerate(history)]  # 9 s in all

    verdict = judge(quick, rules=rules)

    assert verdict.status == Status.NOT_EVALUATED
    assert verdict.complete == pytest.approx(0.15)
    assert "the window spans 9 s of the 1 min needed" in verdict.reason


def test_it_does_not_judge_a_partition_with_no_observations() -> None:
    verdict = evaluate_partition("orders", 0, [], T0, 1_000, RULES)

    assert verdict.status == Status.NOT_EVALUATED
    assert verdict.current_lag is None
    assert verdict.complete == 0.0


def test_it_counts_repeated_identical_samples_towards_a_complete_window() -> None:
    history = samples([400] * 10, [400] * 10)

    assert judge(history).complete == 1.0


def test_it_judges_only_the_last_window_of_observations() -> None:
    # Long ago it fell behind (would be WARN); the last 10 samples show it keeping up.
    history = slow_consumer(10) + [
        Observation(T0 + (10 + i) * STEP, 20_000 + 1_000 * i - b, 20_000 + 1_000 * i)
        for i, b in enumerate([4, 2, 7, 1, 3, 5, 2, 6, 1, 3])
    ]

    assert judge(history).status == Status.OK


def test_it_orders_observations_by_time() -> None:
    history = slow_consumer()

    assert judge(list(reversed(history))) == judge(history)


# --- Lag at request time ----------------------------------------------------------------------


def test_it_measures_current_lag_against_the_log_end_read_now() -> None:
    # The consumer stopped; producers wrote 12,000 more messages after the last sample.
    history = slow_consumer()
    now = history[-1].at_ms + 10 * 60_000

    stale = judge(history, now_ms=now)
    fresh = judge(history, now_ms=now, current_log_end=history[-1].log_end + 12_000)

    assert stale.current_lag == 4_600
    assert fresh.current_lag == 16_600
    assert fresh.status == Status.STOP
    assert "while 16,600 messages wait" in fresh.reason


def test_it_calls_a_consumer_ok_when_the_log_end_read_now_shows_it_caught_up() -> None:
    history = slow_consumer()

    verdict = judge(history, current_log_end=history[-1].committed)

    assert verdict.status == Status.OK
    assert verdict.current_lag == 0


# --- Allowed lag -----------------------------------------------------------------------------


def test_it_calls_lag_within_the_allowed_lag_ok() -> None:
    # Always 40 to 60 behind, never fewer: WARN with no allowance, fine with 100 allowed.
    committed = [1_000 * i for i in range(10)]
    ends = [c + 40 + 2 * i for i, c in enumerate(committed)]
    history = samples(committed, ends)

    assert judge(history).status == Status.WARN
    allowed = judge(history, rules=Rules(allowed_lag=100))
    assert allowed.status == Status.OK
    assert allowed.reason == "caught up (58 messages behind, within the allowed 100)"


def test_it_treats_an_observation_within_the_allowed_lag_as_caught_up() -> None:
    # Offset stuck at 3,000 with 30 to 120 waiting: STALL with no allowance, but with 50 allowed the
    # early samples count as caught up, so it is neither STALL nor WARN.
    history = samples([3_000] * 10, [3_030 + 10 * i for i in range(10)])

    assert judge(history, now_ms=history[-1].at_ms).status == Status.STALL
    assert judge(history, now_ms=history[-1].at_ms, rules=Rules(allowed_lag=50)).status == Status.OK


def test_it_refuses_rules_that_cannot_be_judged() -> None:
    with pytest.raises(ValueError, match="at least 2"):
        Rules(window=1)
    with pytest.raises(ValueError, match="negative"):
        Rules(allowed_lag=-1)
    with pytest.raises(ValueError, match="negative"):
        Rules(min_span_ms=-5)


# --- Groups ---------------------------------------------------------------------------------


def group() -> GroupVerdict:
    parts = {
        ("orders", 0): fast_consumer(),
        ("orders", 1): slow_consumer(),
        ("payments", 0): samples([8_000] * 10, [8_100 + 250 * i for i in range(10)]),
    }
    now = T0 + 9 * STEP + 2_000
    ends = {("orders", 0): 19_000, ("orders", 1): 15_000, ("payments", 0): 10_600}
    return evaluate_group(parts, now, ends, RULES)


def test_it_calls_a_group_err_and_names_its_worst_partition() -> None:
    verdict = group()

    assert verdict.status == Status.ERR
    assert [(v.name, v.status) for v in verdict.partitions] == [
        ("orders-0", "OK"),
        ("orders-1", "WARN"),
        ("payments-0", "STOP"),
    ]
    assert verdict.worst is not None
    assert verdict.worst.name == "payments-0"
    assert verdict.total_lag == 3 + 4_600 + 2_600
    assert verdict.reason.startswith("payments-0 is STOP: committed offset 8,000 has not moved for")
    assert verdict.reason.endswith("(2 of 3 partitions need attention)")
    assert verdict.complete == 1.0


def test_it_calls_a_group_warn_when_its_worst_partition_is_warn() -> None:
    parts = {("orders", 0): fast_consumer(), ("orders", 1): slow_consumer()}

    verdict = evaluate_group(parts, T0 + 9 * STEP + 2_000, {}, RULES)

    assert verdict.status == Status.WARN
    assert verdict.worst is not None
    assert verdict.worst.name == "orders-1"
    assert verdict.total_lag == 4_603


def test_it_breaks_ties_between_equally_bad_partitions_by_current_lag() -> None:
    parts = {("orders", 0): slow_consumer(), ("orders", 1): slow_consumer()}
    now = T0 + 9 * STEP + 2_000

    verdict = evaluate_group(parts, now, {("orders", 0): 15_000, ("orders", 1): 20_000}, RULES)

    assert verdict.worst is not None
    assert verdict.worst.name == "orders-1"
    assert verdict.worst.current_lag == 20_000 - 10_400


def test_it_counts_not_evaluated_partitions_as_ok_for_the_group() -> None:
    ends = [1_000 * i for i in range(10)]
    parts = {("orders", 0): samples(ends, ends), ("orders", 1): slow_consumer(5)}

    verdict = evaluate_group(parts, T0 + 9 * STEP + 2_000, {}, RULES)

    assert verdict.status == Status.OK
    assert [v.status for v in verdict.partitions] == ["OK", "NOT_EVALUATED"]
    assert verdict.complete == pytest.approx(0.5)
    assert verdict.total_lag == 2_600
    assert verdict.worst is not None
    assert verdict.worst.name == "orders-1"
    assert verdict.reason == (
        "no partition in trouble, 1 of 2 not judged yet (window 50% full); most behind is orders-1 with 2,600 messages"
    )


def test_it_calls_a_caught_up_group_ok() -> None:
    ends = [1_000 * i for i in range(10)]
    parts = {("orders", p): samples(ends, ends) for p in range(3)}

    verdict = evaluate_group(parts, T0 + 9 * STEP + 2_000, {("orders", p): 9_000 for p in range(3)}, RULES)

    assert verdict.status == Status.OK
    assert verdict.total_lag == 0
    assert verdict.reason == "all 3 partitions OK, and caught up"


def test_it_counts_unknown_lag_as_zero_in_the_total() -> None:
    parts = {("orders", 0): [], ("orders", 1): slow_consumer()}

    verdict = evaluate_group(parts, T0 + 9 * STEP + 2_000, {}, RULES)

    assert verdict.partitions[0].current_lag is None
    assert verdict.total_lag == 4_600
    assert verdict.complete == 0.0


def test_it_calls_a_group_with_no_partitions_ok_with_nothing_to_name() -> None:
    verdict = evaluate_group({}, T0, {}, RULES)

    assert verdict.status == Status.OK
    assert verdict.worst is None
    assert verdict.partitions == []
    assert verdict.total_lag == 0


# --- format_duration ------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("ms", "text"),
    [
        (0, "0 ms"),
        (850, "850 ms"),
        (1_000, "1 s"),
        (42_999, "42 s"),
        (60_000, "1 min"),
        (90_000, "1 min 30 s"),
        (250_000, "4 min 10 s"),
        (3_600_000, "1 h"),
        (7_500_000, "2 h 5 min"),
        (86_400_000, "1 d"),
        (273_600_000, "3 d 4 h"),
        (-90_000, "-1 min 30 s"),
    ],
)
def test_it_formats_durations_for_people(ms: int, text: str) -> None:
    assert format_duration(ms) == text


def test_a_frozen_offset_with_a_live_member_is_stall_and_without_one_stop() -> None:
    history = [Observation(at_ms=1_000 * i, committed=50, log_end=100 + 10 * i) for i in range(5)]
    rules = Rules(window=5)
    alive = evaluate_partition("t", 0, history, 60_000, 200, rules, consumed_now=True)
    gone = evaluate_partition("t", 0, history, 60_000, 200, rules, consumed_now=False)
    assert (alive.status, gone.status) == ("STALL", "STOP")
    assert alive.reason.startswith("a member is assigned but committed offset 50 has not moved")
    group = evaluate_group({("t", 0): history}, 60_000, {("t", 0): 200}, rules, consumed_now={("t", 0)})
    assert (group.status, group.worst.status if group.worst else None) == ("ERR", "STALL")


# ---- the departures from Burrow found side by side with Burrow 1.9.5 (issue 31)


def test_a_consumer_one_record_behind_at_every_sample_keeps_up_it_is_not_warn() -> None:
    # The sample lands between a write and the next commit: lag 1 every time, the offset moving.
    history = samples([100 * i for i in range(10)], [100 * i + 1 for i in range(10)])
    v = judge(history, current_log_end=history[-1].log_end)
    assert v.status == Status.OK.value, v.reason
    assert "grew from 1 to 1" not in v.reason


def test_a_consumer_that_closed_after_moving_is_ok_then_stop_never_warn() -> None:
    # Six commits keeping one behind, then the consumer closes: the offset freezes while records keep coming.
    committed = [100 * i for i in range(6)] + [500] * 4
    ends = [100 * i + 1 for i in range(6)] + [520, 540, 560, 580]
    history = samples(committed, ends)
    soon = judge(history, current_log_end=590)
    assert soon.status == Status.OK.value, soon.reason  # Burrow's ring of commits still reads keeping up
    # Frozen for longer than the window's span (1 min 30 s): STOP.
    later = judge(history, now_ms=T0 + 5 * STEP + 91_000, current_log_end=700)
    assert later.status == Status.STOP.value, later.reason


def test_a_group_with_a_live_member_goes_to_stall_never_to_stop_first() -> None:
    # It moved, then its offset froze while a member still holds the partition and records wait.
    committed = [100 * i for i in range(5)] + [400] * 5
    ends = [100 * i + 50 for i in range(5)] + [500, 600, 700, 800, 900]
    history = samples(committed, ends)
    early = evaluate_partition("orders", 3, history, history[-1].at_ms + 2_000, 950, RULES, consumed_now=True)
    assert early.status != Status.STOP.value  # frozen 52 s of the window's 90: nothing decided yet
    for now in (history[-1].at_ms + 45_000, history[-1].at_ms + 600_000):  # when a group without member is STOP
        v = evaluate_partition("orders", 3, history, now, 950, RULES, consumed_now=True)
        assert v.status == Status.STALL.value, (now, v.reason)
    alone = evaluate_partition("orders", 3, history, history[-1].at_ms + 600_000, 950, RULES, consumed_now=False)
    assert alone.status == Status.STOP.value


def test_a_stop_reason_counts_from_the_last_move_known_before_the_window() -> None:
    history = samples([700] * 10, [900] * 10)  # the last few minutes only: frozen throughout
    an_hour_before = T0 - 3_600_000
    v = evaluate_partition("tasks", 0, history, history[-1].at_ms + 100_000, 900, RULES, moved_at_ms=an_hour_before)
    assert v.status == Status.STOP.value
    assert "has not moved for 1 h 3 min" in v.reason
