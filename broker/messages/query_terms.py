"""The parts of a filter (broker.messages.query parses the text into them): the error a bad filter raises,
what a filter sees of one message, the syntax tree, and the tests each comparison runs on a message's values.

Every test returns False (or None) for values of the wrong kind and never raises.
"""

from __future__ import annotations

import enum
import operator
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Protocol

import regex as regex_engine

from broker.errors import KazamiError

MAX_PATTERN_LENGTH = 500
ROOTS = ("key", "value", "headers", "timestamp", "offset", "partition", "size", "topic", "transaction")
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_ONE_MS = timedelta(milliseconds=1)


class QueryError(KazamiError):
    """A filter that cannot be parsed; the message says what is wrong and at which (1-based) column.

    ``position`` is the 0-based character offset into the source, for a UI that underlines it.
    """

    def __init__(self, reason: str, position: int) -> None:
        super().__init__(f"at column {position + 1}: {reason}")
        self.reason = reason
        self.position = position


@dataclass(frozen=True)
class MessageView:
    """What a filter sees of one Kafka message, already decoded."""

    topic: str
    partition: int
    offset: int
    timestamp: int | None  # epoch milliseconds, UTC
    key: object  # str, dict/list (JSON), bytes, or None
    value: object  # same kinds as key
    headers: dict[str, object]  # header name -> decoded value (str or bytes or None)
    size: int  # bytes of key+value
    # The key's and value's text as written (UTF-8), when they are JSON: what string operators on the
    # whole key or value also look at.
    key_text: str | None = None
    value_text: str | None = None
    # "committed", "aborted" or "open" for a transactional producer's record, None otherwise.
    transaction: str | None = None


class Viewed(Protocol):
    """What a filter reads of a message: a MessageView, or a view that decodes only the parts a filter asks
    for (broker.messages.filtering.LazyView)."""

    @property
    def topic(self) -> str: ...
    @property
    def partition(self) -> int: ...
    @property
    def offset(self) -> int: ...
    @property
    def timestamp(self) -> int | None: ...
    @property
    def key(self) -> object: ...
    @property
    def value(self) -> object: ...
    @property
    def headers(self) -> Mapping[str, object]: ...
    @property
    def size(self) -> int: ...
    @property
    def key_text(self) -> str | None: ...
    @property
    def value_text(self) -> str | None: ...
    @property
    def transaction(self) -> str | None: ...


class _Missing(enum.Enum):
    """The result of a path that does not exist in a message."""

    MISSING = enum.auto()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing.MISSING


# --------------------------------------------------------------------------------------------------
# Syntax tree

Scalar = str | int | float | bool | None


@dataclass(frozen=True)
class _Path:
    root: str  # one of ROOTS, lower case
    steps: tuple[str | int, ...]
    text: str  # as written, for messages
    position: int


@dataclass(frozen=True)
class _Literal:
    value: Scalar
    text: str  # the string itself, or the number / keyword as written (lower case for keywords)
    position: int
    number: int | float | None  # the value as a number, when it is one or a string that reads as one


class _Node:
    def evaluate(self, message: Viewed) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class _Or(_Node):
    children: tuple[_Node, ...]

    def evaluate(self, message: Viewed) -> bool:
        return any(child.evaluate(message) for child in self.children)


@dataclass(frozen=True)
class _And(_Node):
    children: tuple[_Node, ...]

    def evaluate(self, message: Viewed) -> bool:
        return all(child.evaluate(message) for child in self.children)


@dataclass(frozen=True)
class _Not(_Node):
    child: _Node

    def evaluate(self, message: Viewed) -> bool:
        return not self.child.evaluate(message)


@dataclass(frozen=True)
class _Exists(_Node):
    path: _Path

    def evaluate(self, message: Viewed) -> bool:
        return _resolve(self.path, message) is not MISSING


@dataclass(frozen=True)
class _Compare(_Node):
    path: _Path
    test: Callable[[object], bool]  # False for MISSING and for anything of the wrong type
    negate: bool  # "!=", "not in", "not contains", ...
    # A string operator on a whole key or value: a JSON object or array is also looked at as the text it
    # was written as (``value contains "checkout"`` finds the word in any field).
    on_text: bool = False
    # The operator ("==", "contains", "in", ...; "!=" is "==" negated) and the literals compared with: what a
    # search's probe (broker.messages.filtering) learns from the comparison.
    op: str = ""
    literals: tuple[_Literal, ...] = ()

    def evaluate(self, message: Viewed) -> bool:
        value = _resolve(self.path, message)
        hit = self.test(value)
        if not hit and self.on_text and isinstance(value, Mapping | list | tuple):
            text = message.key_text if self.path.root == "key" else message.value_text
            hit = text is not None and self.test(text)
        return hit != self.negate


# --------------------------------------------------------------------------------------------------
# Building the tests a comparison runs

_ORDERINGS: dict[str, Callable[[Any, Any], Any]] = {
    ">": operator.gt,
    "<": operator.lt,
    ">=": operator.ge,
    "<=": operator.le,
}


def _build_in(path: _Path, items: list[_Literal], negate: bool) -> _Compare:
    items = [_as_timestamp(path, item) for item in items]

    def test(value: object) -> bool:
        return any(_equals(value, item) for item in items)

    return _Compare(path, test, negate, op="in", literals=tuple(items))


def _build_test(path: _Path, op: str, literal: _Literal, clock: RegexClock) -> Callable[[object], bool]:
    """The test for one comparison, with everything that can be checked or prepared done now (a regular
    expression compiled once, its searches timed by ``clock``, the query's)."""
    if op == "==":
        literal = _as_timestamp(path, literal)
        return lambda value: _equals(value, literal)
    if op in _ORDERINGS:
        if literal.value is None or isinstance(literal.value, bool):
            raise QueryError(f'"{op}" compares with a number or a string, not {literal.text}', literal.position)
        literal = _as_timestamp(path, literal)
        compare = _ORDERINGS[op]
        return lambda value: _ordered(value, literal, compare)
    if op == "contains":
        return lambda value: _contains(value, literal)
    if literal.value is None:
        raise QueryError(f'"{op}" needs a string, not null', literal.position)
    if op == "startswith":
        return lambda value: (text := _text_form(value)) is not None and text.startswith(literal.text)
    if op == "endswith":
        return lambda value: (text := _text_form(value)) is not None and text.endswith(literal.text)
    if not isinstance(literal.value, str):
        raise QueryError(f'"{op}" needs a quoted pattern, not {literal.text}', literal.position)
    if op == "matches":
        compiled = _compile_regex(literal)
        return lambda value: (text := _text_form(value)) is not None and clock.search(compiled, text)
    pattern = _like_pattern(literal.value)  # op == "like"
    return lambda value: (text := _text_form(value)) is not None and _like(text, pattern, clock)


def _as_timestamp(path: _Path, literal: _Literal) -> _Literal:
    """A string compared with ``timestamp`` read as an ISO-8601 date or date-time, as epoch ms."""
    if path.root != "timestamp" or not isinstance(literal.value, str):
        return literal
    text = literal.value.strip()
    try:
        moment = datetime.fromisoformat(text)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=UTC)
        millis = (moment - _EPOCH) // _ONE_MS
    except (ValueError, OverflowError):
        raise QueryError(
            f'"{literal.value}" is not a date or date-time; write e.g. "2026-11-01", "2026-11-01T12:30" '
            'or "2026-11-01T12:30:00Z" (no time zone means UTC), or a number of epoch milliseconds',
            literal.position,
        ) from None
    return _Literal(millis, str(millis), literal.position, millis)


# However a pattern backtracks, one message gets this long (seconds); then it counts as not matching.
REGEX_SECONDS = 0.05


class FilterTimeSpent(Exception):
    """A filter has taken the time it was given: ``Query.matches`` lets it through, so the scan stops; the message
    being tested is left unjudged. ``reason``: "regex_budget" or "deadline"."""

    reason = "deadline"


class RegexBudgetSpent(FilterTimeSpent):
    """The regular expressions of a query have taken all the time they were given (:attr:`RegexClock.budget`)."""

    reason = "regex_budget"

    def __init__(self, used: float, budget: float) -> None:
        super().__init__(f"the filter's regular expressions used their {budget:g} s budget")
        self.used = used
        self.budget = budget


class DeadlinePassed(FilterTimeSpent):
    """A slow comparison (a ``like`` over a long value) ran past the query's deadline (:attr:`RegexClock.deadline`)."""

    def __init__(self) -> None:
        super().__init__("the filter ran past the search's deadline")


class RegexClock:
    """The time one query's regular expressions have taken, summed over every message they were tried on, and the
    moment the query must stop at (``deadline``, time.monotonic(); None: none).

    Each search gets at most REGEX_SECONDS (past that the message counts as not matching). With a
    ``budget`` (seconds, for the whole query), a search gets at most what is left of it, and a search that
    finds it spent raises RegexBudgetSpent. A ``like`` checks the deadline as it goes (DeadlinePassed).
    """

    __slots__ = ("budget", "deadline", "used")

    def __init__(self) -> None:
        self.used = 0.0
        self.budget: float | None = None
        self.deadline: float | None = None

    def check_deadline(self) -> None:
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise DeadlinePassed

    def search(self, compiled: regex_engine.Pattern[str], text: str) -> bool:
        timeout = REGEX_SECONDS
        if self.budget is not None:
            left = self.budget - self.used
            if left <= 0:
                raise RegexBudgetSpent(self.used, self.budget)
            timeout = min(timeout, left)
        start = time.perf_counter()
        try:
            # concurrent: the matching runs without the GIL (``text`` is a str, which cannot change under it), so
            # a pattern that backtracks leaves the process's other threads (its event loop) free to run.
            found = compiled.search(text, timeout=timeout, concurrent=True) is not None
            timed_out = False
        except TimeoutError:
            found, timed_out = False, True
        self.used += time.perf_counter() - start
        if timed_out and self.budget is not None and timeout < REGEX_SECONDS:
            # Cut short by the budget: this message is not judged, and the budget is spent, even where the regex
            # engine's clock ran out a few microseconds before ours (0.29994 s of 0.3 s was measured once).
            self.used = max(self.used, self.budget)
            raise RegexBudgetSpent(self.used, self.budget)
        return found


def _compile_regex(literal: _Literal) -> regex_engine.Pattern[str]:
    pattern = literal.text
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise QueryError(
            f"the regular expression is too long ({len(pattern)} characters; at most {MAX_PATTERN_LENGTH})",
            literal.position,
        )
    try:
        return regex_engine.compile(pattern)
    except (regex_engine.error, OverflowError, RecursionError) as error:
        reason = str(getattr(error, "msg", None) or error)
        raise QueryError(f"this is not a valid regular expression: {reason}", literal.position) from None


# A LIKE pattern is a tuple of lower-cased characters and these two wildcards.
_ANY_ONE = 1  # "_"
_ANY_RUN = 2  # "%"


def _like_pattern(text: str) -> tuple[str | int, ...]:
    items: list[str | int] = []
    index = 0
    while index < len(text):
        char = text[index]
        if char == "\\" and index + 1 < len(text):  # \% and \_ stand for themselves
            items.append(text[index + 1].lower())
            index += 2
            continue
        if char == "%":
            if not items or items[-1] != _ANY_RUN:
                items.append(_ANY_RUN)
        elif char == "_":
            items.append(_ANY_ONE)
        else:
            items.append(char.lower())
        index += 1
    return tuple(items)


_LIKE_CHECK_EVERY = 8192  # steps of a LIKE between looks at the clock's deadline


def _like(text: str, pattern: tuple[str | int, ...], clock: RegexClock | None = None) -> bool:
    """SQL LIKE, case-insensitive: greedy matching that retries from the last "%" (no regex, so no blow-up).
    Its steps grow with the text's length times the pattern's, so with a ``clock`` it checks the deadline as it goes
    (raises DeadlinePassed)."""
    t = p = 0
    star = -1
    resume = 0
    steps = 0
    while t < len(text):
        steps += 1
        if steps % _LIKE_CHECK_EVERY == 0 and clock is not None:
            clock.check_deadline()
        if p < len(pattern) and pattern[p] != _ANY_RUN and (pattern[p] == _ANY_ONE or pattern[p] == text[t].lower()):
            t += 1
            p += 1
        elif p < len(pattern) and pattern[p] == _ANY_RUN:
            star = p
            resume = t
            p += 1
        elif star >= 0:
            p = star + 1
            resume += 1
            t = resume
        else:
            return False
    while p < len(pattern) and pattern[p] == _ANY_RUN:
        p += 1
    return p == len(pattern)


# --------------------------------------------------------------------------------------------------
# Evaluation: every helper below returns False (or None) for values of the wrong kind, never raises.

_NUMERIC_TEXT = re.compile(r"\s*-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?\s*")
_INTEGER_TEXT = re.compile(r"\s*-?[0-9]+\s*")


def _parse_number(text: str) -> int | float | None:
    """The number a string spells in JSON style ("42", "-1.5", "2e3"), else None."""
    if not _NUMERIC_TEXT.fullmatch(text):
        return None
    try:
        return int(text) if _INTEGER_TEXT.fullmatch(text) else float(text)
    except ValueError:  # more digits than int() accepts: compare approximately
        return float(text)


def _as_text(value: object) -> str | None:
    if isinstance(value, str):
        return value
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value).decode("utf-8", errors="replace")
    return None


def _as_number(value: object) -> int | float | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        return value
    text = _as_text(value)
    return _parse_number(text) if text is not None else None


def _text_form(value: object) -> str | None:
    """The text the string operators (contains, startswith, matches, ...) look at."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        try:
            return str(value)
        except ValueError:  # an int too long to print
            return None
    return _as_text(value)


def _equals(value: object, literal: _Literal) -> bool:
    expected = literal.value
    if value is MISSING:
        return False
    if expected is None:
        return value is None
    if isinstance(expected, bool):
        if isinstance(value, bool):
            return value is expected
        text = _as_text(value)
        return text is not None and text.strip().lower() == literal.text
    if isinstance(expected, int | float):
        number = _as_number(value)
        return number is not None and number == expected
    text = _as_text(value)
    if text is not None:
        return text == expected
    if isinstance(value, bool):
        return expected.strip().lower() == ("true" if value else "false")
    if isinstance(value, int | float):
        return literal.number is not None and value == literal.number
    return False


def _ordered(value: object, literal: _Literal, compare: Callable[[Any, Any], Any]) -> bool:
    if value is MISSING or value is None or isinstance(value, bool):
        return False
    if not isinstance(literal.value, str):  # a number
        number = _as_number(value)
        return number is not None and bool(compare(number, literal.value))
    if isinstance(value, int | float):
        return literal.number is not None and bool(compare(value, literal.number))
    text = _as_text(value)
    return text is not None and bool(compare(text, literal.value))


def _contains(value: object, literal: _Literal) -> bool:
    if isinstance(value, list | tuple):
        return any(_equals(item, literal) for item in value)
    if isinstance(value, Mapping):
        return (
            isinstance(literal.value, str | int | float)
            and not isinstance(literal.value, bool)
            and literal.text in value
        )
    if literal.value is None:
        return False
    text = _text_form(value)
    return text is not None and literal.text in text


def _resolve(path: _Path, message: Viewed) -> object:
    """The value a path points at in a message, or MISSING."""
    if path.root == "headers":
        headers = message.headers
        if not isinstance(headers, Mapping):
            return MISSING if path.steps else {}
        if not path.steps:
            return headers
        return _header(headers, str(path.steps[0]))
    current: object = getattr(message, path.root)
    if path.root == "transaction" and current is None:
        return MISSING  # not written by a transactional producer: ``exists transaction`` is false
    for step in path.steps:
        current = _step(current, step)
        if current is MISSING:
            break
    return current


def _step(current: object, step: str | int) -> object:
    if isinstance(current, Mapping):
        return current.get(str(step), MISSING)
    if isinstance(current, list | tuple):
        if isinstance(step, str):
            if not (step.isascii() and step.isdigit()):
                return MISSING
            step = int(step)
        return current[step] if -len(current) <= step < len(current) else MISSING
    return MISSING


def _header(headers: Mapping[Any, object], name: str) -> object:
    """A header by exact name, else the first whose name matches ignoring case."""
    if name in headers:
        return headers[name]
    folded = name.lower()
    for header, value in headers.items():
        if isinstance(header, str) and header.lower() == folded:
            return value
    return MISSING
