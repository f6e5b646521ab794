"""The pure parts of broker/messages/transactions.py: who holds the LSO back, which open transactions are old enough
to look at, and which of those hang."""

from __future__ import annotations

import pytest

from broker.errors import InvalidInput
from broker.messages.transactions import (
    DEFAULT_MAX_TIMEOUT_MS,
    ActiveProducer,
    Transaction,
    check_state,
    holder_of,
    is_candidate,
    judge,
    max_timeout,
)

NOW = 1_700_000_000_000


def producer(pid: int, start: int | None, last: int | None = NOW) -> ActiveProducer:
    return ActiveProducer(pid, 0, 4, last, 7, start)


def test_the_holder_is_the_open_transaction_that_starts_at_the_lso() -> None:
    producers = [producer(1, None), producer(2, 40), producer(3, 12)]
    assert holder_of(producers, 12, 50) == producers[2]
    assert holder_of(producers, 50, 50) is None  # nothing held back
    # The answers may cross a transaction's end: the lowest open one is named.
    assert holder_of([producer(2, 40)], 12, 50) == producer(2, 40)
    assert holder_of([producer(1, None)], 12, 50) is None


def test_a_candidate_is_open_and_silent_longer_than_the_time_out() -> None:
    assert is_candidate(producer(1, 5, NOW - 901_000), NOW, 900_000)
    assert not is_candidate(producer(1, 5, NOW - 10_000), NOW, 900_000)
    assert not is_candidate(producer(1, None, NOW - 901_000), NOW, 900_000)
    assert is_candidate(producer(1, 5, None), NOW, 900_000)


def test_a_transaction_hangs_when_no_coordinator_has_it_ongoing_with_the_partition() -> None:
    open_one = producer(9, 3)
    ongoing = Transaction("app-1", "Ongoing", 9, 2, 60_000, (("orders", 0),), NOW, 1)
    hanging, why = judge("orders", 0, open_one, [ongoing])
    assert not hanging
    assert "'app-1' Ongoing" in why
    assert judge("orders", 0, open_one, [])[0]
    assert "No coordinator knows producer 9" in judge("orders", 0, open_one, [])[1]
    elsewhere = Transaction("app-1", "Ongoing", 9, 2, 60_000, (("orders", 1),), NOW, 1)
    assert judge("orders", 0, open_one, [elsewhere]) == (
        True,
        "Its coordinator has no ongoing transaction with this partition ('app-1' is Ongoing).",
    )
    ended = Transaction("app-1", "CompleteAbort", 9)
    assert judge("orders", 0, open_one, [ended])[0]


def test_the_threshold_is_the_largest_broker_setting() -> None:
    assert max_timeout(["900000", "120000", None]) == 900_000
    assert max_timeout([None, ""]) == DEFAULT_MAX_TIMEOUT_MS


def test_states_are_checked() -> None:
    assert check_state("") is None
    assert check_state("Ongoing") == "Ongoing"
    with pytest.raises(InvalidInput, match="CompleteCommit"):
        check_state("Running")
