"""Shared reads (broker/shared_reads.py): answers kept for max_age, one computation for concurrent askers,
failures shared but never kept, everything dropped after a change; and the timestamps kept by offset."""

from __future__ import annotations

import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from broker.shared_reads import SharedReads, Timestamps


class Counted:
    """A computation that counts its calls and can be held until released."""

    def __init__(self, answer: object = "answer", hold: bool = False) -> None:
        self.calls = 0
        self.answer = answer
        self.started = threading.Event()
        self.release = threading.Event()
        if not hold:
            self.release.set()

    def __call__(self) -> object:
        self.calls += 1
        self.started.set()
        assert self.release.wait(10)
        if isinstance(self.answer, BaseException):
            raise self.answer
        return f"{self.answer} {self.calls}"


def test_an_answer_is_kept_for_max_age_then_asked_again() -> None:
    reads, compute = SharedReads(max_age=0.2), Counted()
    assert reads.get("topics", compute) == "answer 1"
    assert reads.get("topics", compute) == "answer 1"
    assert compute.calls == 1
    time.sleep(0.25)
    assert reads.get("topics", compute) == "answer 2"
    assert reads.asked == 2


def test_different_questions_are_answered_separately() -> None:
    reads = SharedReads(max_age=10)
    assert reads.get(("topic", "a"), lambda: "a") == "a"
    assert reads.get(("topic", "b"), lambda: "b") == "b"
    assert reads.get(("topic", "a"), lambda: "changed") == "a"


def test_callers_asking_while_an_answer_is_computed_wait_for_it() -> None:
    reads, compute = SharedReads(max_age=0), Counted(hold=True)  # even with nothing kept
    with ThreadPoolExecutor(max_workers=6) as pool:
        first = pool.submit(reads.get, "groups", compute)
        assert compute.started.wait(5)
        others = [pool.submit(reads.get, "groups", compute) for _ in range(5)]
        time.sleep(0.1)  # they are waiting, not computing
        assert compute.calls == 1
        compute.release.set()
        answers = [first.result(5)] + [f.result(5) for f in others]
    assert answers == ["answer 1"] * 6
    assert reads.asked == 1
    assert reads.get("groups", compute) == "answer 2"  # max_age 0: nothing was kept


def test_a_failure_is_shared_by_those_waiting_but_not_kept() -> None:
    reads, failing = SharedReads(max_age=10), Counted(answer=RuntimeError("cluster down"), hold=True)
    with ThreadPoolExecutor(max_workers=3) as pool:
        first = pool.submit(reads.get, "overview", failing)
        assert failing.started.wait(5)
        second = pool.submit(reads.get, "overview", failing)
        time.sleep(0.1)
        failing.release.set()
        for future in (first, second):
            with pytest.raises(RuntimeError, match="cluster down"):
                future.result(5)
    assert failing.calls == 1
    assert reads.get("overview", lambda: "back") == "back"


def test_forget_drops_what_was_kept_and_what_was_being_computed() -> None:
    reads = SharedReads(max_age=10)
    reads.get("topics", lambda: "before")
    reads.forget()
    assert reads.get("topics", lambda: "after") == "after"

    slow = Counted(answer="begun before the change", hold=True)
    with ThreadPoolExecutor(max_workers=1) as pool:
        begun = pool.submit(reads.get, "topic", slow)
        assert slow.started.wait(5)
        reads.forget()  # a change while the read runs: its answer may predate the change
        slow.release.set()
        assert begun.result(5) == "begun before the change 1"
    assert reads.get("topic", lambda: "fresh") == "fresh"


def test_the_oldest_answers_go_first_beyond_max_entries() -> None:
    reads = SharedReads(max_age=10, max_entries=2)
    for key in ("a", "b", "c"):
        reads.get(key, lambda key=key: key.upper())  # type: ignore[misc]
    assert reads.get("c", lambda: "again") == "C"
    assert reads.get("b", lambda: "again") == "B"
    assert reads.get("a", lambda: "again") == "again"


def test_timestamps_are_kept_by_offset_most_recent_first_and_not_forever() -> None:
    stamps = Timestamps(max_entries=2, max_age=0.2)
    stamps.learn({("t", 0, 10): 1000, ("t", 0, 20): 2000})
    assert stamps.known([("t", 0, 10), ("t", 0, 20), ("t", 1, 10)]) == {("t", 0, 10): 1000, ("t", 0, 20): 2000}
    stamps.known([("t", 0, 10)])  # used: ("t", 0, 20) is now the least recently used
    stamps.learn({("t", 1, 5): 500})
    assert stamps.known([("t", 0, 10), ("t", 0, 20), ("t", 1, 5)]) == {("t", 0, 10): 1000, ("t", 1, 5): 500}
    time.sleep(0.25)
    assert stamps.known([("t", 0, 10), ("t", 1, 5)]) == {}
