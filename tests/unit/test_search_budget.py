"""A search's budget without a cluster: the parser's limit on "matches", the time a query's regular expressions
take summed over the messages it tests (and stopped at its budget), the per-user limit on searches at once, and
the HTTP search's thread that stops when the client goes away."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest
import regex as regex_engine
from django.test import override_settings

from broker.messages.query import MAX_REGEXES, parse_query
from broker.messages.query_terms import REGEX_SECONDS, DeadlinePassed, MessageView, QueryError, RegexBudgetSpent
from console.live.search import SearchesBusy, running_searches, search_slot, searcher, until_client_leaves
from tests.aio import run

# Backtracks for longer than anyone would wait on a text without "~" or "Q": each message gets REGEX_SECONDS.
CATASTROPHIC = '"(.*){1,999}[~Q]"'


def message(value: object = "x" * 1900, offset: int = 0) -> MessageView:
    return MessageView(topic="t", partition=0, offset=offset, timestamp=0, key=None, value=value, headers={}, size=1900)


def error_of(source: str) -> QueryError:
    with pytest.raises(QueryError) as caught:
        parse_query(source)
    return caught.value


# --- at most a few "matches" a query


def test_a_query_may_hold_four_regular_expressions() -> None:
    assert MAX_REGEXES == 4
    source = " or ".join(f'value matches "a{n}"' for n in range(4))
    assert parse_query(source).matches(message("xa3x"))


def test_a_fifth_matches_is_refused_at_its_column() -> None:
    source = " or ".join(f"value matches {CATASTROPHIC}" for _ in range(5))
    error = error_of(source)
    positions = [i for i in range(len(source)) if source.startswith("matches", i)]
    assert len(positions) == 5
    assert error.position == positions[4]
    assert f"at most {MAX_REGEXES} regular expressions" in str(error)
    assert str(error).startswith(f"at column {positions[4] + 1}:")


def test_not_matches_counts_and_other_operators_do_not() -> None:
    four = " and ".join(f'key not matches "k{n}"' for n in range(4))
    many_others = ' and value like "%a%" and value contains "b" and key startswith "c"' * 3
    assert parse_query(four + many_others)
    assert "regular expressions" in str(error_of(four + ' and headers.x not matches "y"'))


# --- regular expressions compiled once, their time charged across the scan


def test_a_pattern_is_compiled_once_when_the_query_is_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    compiled: list[str] = []
    real = regex_engine.compile

    def counting(pattern: str, *args: Any, **kwargs: Any) -> Any:
        compiled.append(pattern)
        return real(pattern, *args, **kwargs)

    monkeypatch.setattr(regex_engine, "compile", counting)
    query = parse_query('value matches "^x+$" and key not matches "y"')
    assert compiled == ["^x+$", "y"]
    assert [query.matches(message(offset=n)) for n in range(50)] == [True] * 50
    assert compiled == ["^x+$", "y"]


def test_the_time_in_regular_expressions_is_summed_over_the_messages() -> None:
    query = parse_query(f"value matches {CATASTROPHIC}")
    assert query.regex_seconds == 0
    assert query.matches(message()) is False  # the per-message limit: gives up, counts as no match
    first = query.regex_seconds
    assert first >= REGEX_SECONDS * 0.9
    assert query.matches(message()) is False
    assert query.regex_seconds >= first + REGEX_SECONDS * 0.9
    cheap = parse_query('value == "x"')
    cheap.matches(message())
    assert cheap.regex_seconds == 0


@pytest.mark.timeout(60)
def test_a_query_stops_with_regex_budget_spent_once_its_budget_is_used() -> None:
    query = parse_query(" or ".join(f"value matches {CATASTROPHIC}" for _ in range(4)))
    query.limit_regex_time(0.3)
    judged: list[bool] = []

    def scan() -> None:
        for n in range(1000):
            judged.append(query.matches(message(offset=n)))

    with pytest.raises(RegexBudgetSpent) as spent:
        scan()
    assert not any(judged)
    # Each message costs 4 x REGEX_SECONDS (more on a loaded machine): the budget runs out within a few, and the
    # message it runs out on is left unjudged.
    assert len(judged) < 10
    assert spent.value.budget == 0.3
    assert spent.value.used >= 0.3
    assert "used their 0.3 s budget" in str(spent.value)
    # Spent stays spent: the next message is refused before any regular expression runs.
    used = query.regex_seconds
    with pytest.raises(RegexBudgetSpent):
        query.matches(message())
    assert query.regex_seconds == used


def test_a_budget_cut_is_not_taken_for_a_mismatch_of_not_matches() -> None:
    # "not matches" on a message whose search was cut by the budget must not turn into a match.
    query = parse_query(f"value not matches {CATASTROPHIC}")
    query.limit_regex_time(REGEX_SECONDS / 2)
    with pytest.raises(RegexBudgetSpent):
        query.matches(message())


def test_without_a_budget_a_query_never_raises() -> None:
    query = parse_query(f"value matches {CATASTROPHIC} or value matches {CATASTROPHIC}")
    query.limit_regex_time(None)
    assert [query.matches(message(offset=n)) for n in range(3)] == [False] * 3
    assert query.regex_seconds >= 6 * REGEX_SECONDS * 0.9


# --- searches at once, per user


class _User:
    is_authenticated = True

    def __init__(self, pk: int) -> None:
        self.pk = pk


def test_searches_count_per_user_or_per_address_for_anonymous_readers() -> None:
    assert searcher(_User(7), "10.0.0.1") == searcher(_User(7), "10.0.0.2") == "user:7"
    assert searcher(None, "10.0.0.1") != searcher(None, "10.0.0.2")


@override_settings(KAZAMI_SEARCH_PER_USER=2)
def test_a_third_search_of_one_user_is_refused_while_two_run() -> None:
    alice, bob = searcher(_User(1001), None), searcher(_User(1002), None)
    with search_slot(alice), search_slot(alice):
        assert running_searches(alice) == 2
        with pytest.raises(SearchesBusy) as busy, search_slot(alice):
            pass
        assert "2 searches at once" in str(busy.value)
        with search_slot(bob):  # another user's searches count apart
            assert running_searches(bob) == 1
    assert running_searches(alice) == running_searches(bob) == 0
    with search_slot(alice):
        pass


@override_settings(KAZAMI_SEARCH_PER_USER=1)
def test_a_search_may_wait_for_the_slot_another_gives_back() -> None:
    who = searcher(_User(1003), None)
    holding, release, got = threading.Event(), threading.Event(), threading.Event()

    def first() -> None:
        with search_slot(who):
            holding.set()
            release.wait(30)

    thread = threading.Thread(target=first)
    thread.start()
    assert holding.wait(30)

    def second() -> None:
        with search_slot(who, wait=30):
            got.set()

    waiter = threading.Thread(target=second)
    waiter.start()
    assert not got.is_set()
    release.set()
    assert got.wait(30)
    thread.join(30)
    waiter.join(30)
    assert running_searches(who) == 0


@override_settings(KAZAMI_SEARCH_PER_USER=1)
def test_a_slot_is_given_back_when_the_search_fails() -> None:
    who = searcher(_User(1004), None)
    with pytest.raises(RuntimeError), search_slot(who):
        raise RuntimeError("the cluster went away")
    assert running_searches(who) == 0


# --- the HTTP search's thread


@pytest.mark.django_db
def test_the_work_of_a_client_that_goes_away_is_told_to_stop() -> None:
    started, stopped = threading.Event(), threading.Event()

    def work(cancel: threading.Event) -> str:
        started.set()
        cancel.wait(60)
        stopped.set()
        return "stopped" if cancel.is_set() else "ran out"

    async def client_leaves() -> None:
        task = asyncio.ensure_future(until_client_leaves(work, "test"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()  # what Django does with the view of a client that went away
        with pytest.raises(asyncio.CancelledError):
            await task

    run(client_leaves())
    assert stopped.wait(30)


@pytest.mark.django_db
def test_the_work_of_a_client_that_stays_gives_its_answer_and_its_errors() -> None:
    assert run(until_client_leaves(lambda cancel: "answer" if not cancel.is_set() else "?", "test")) == "answer"

    def failing(cancel: threading.Event) -> str:
        raise SearchesBusy("busy")

    with pytest.raises(SearchesBusy):
        run(until_client_leaves(failing, "test"))


# --- a slow comparison inside one record


@pytest.mark.timeout(60)
def test_a_like_over_a_long_value_stops_at_the_deadline() -> None:
    # Without a deadline this one record takes tens of seconds: each "a" of the text retries the whole pattern.
    query = parse_query('value like "%' + "a" * 1000 + 'b"')
    query.stop_at(time.monotonic() + 0.2)
    with pytest.raises(DeadlinePassed) as passed:
        query.matches(message("a" * 100_000))
    assert passed.value.reason == "deadline"


def test_a_like_within_its_deadline_answers_as_before() -> None:
    query = parse_query('value like "%a%b"')
    query.stop_at(time.monotonic() + 600)
    assert query.matches(message("x" * 50_000 + "ab"))
    assert not query.matches(message("a" * 50_000))
