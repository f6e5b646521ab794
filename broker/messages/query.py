"""A small filter language for Kafka messages, in the spirit of a KQL ``where`` clause.

    value.status in ("error", "fatal") and timestamp >= "2026-11-01T12:30:00Z"
    not exists key.id or headers["trace id"] startswith "abc"

``parse_query`` turns the text into a ``Query`` (or raises ``QueryError`` naming the column);
``Query.matches`` then tests one ``MessageView`` and never raises, whatever the message holds.
The parser is hand-written recursive descent over a small tokenizer; nothing is evaluated as Python.

Grammar (keywords and field roots are case-insensitive)::

    query      := <empty> | or_expr
    or_expr    := and_expr ("or" and_expr)*
    and_expr   := not_expr ("and" not_expr)*
    not_expr   := "not" not_expr | primary
    primary    := "(" or_expr ")" | "exists" path | path ["not"] operator operand
    path       := root ("." segment | "[" string | integer "]")*
    operator   := == | = | != | <> | > | < | >= | <= | contains | startswith | endswith | matches | like | in
    operand    := literal | "(" [literal ("," literal)* [","]] ")"      -- the list form only after "in"
    literal    := string | number | true | false | null

A path that leads nowhere gives MISSING: every comparison with it is false except ``!=`` (and the
``not in`` / ``not contains`` ... forms, which negate the whole comparison).
"""

from __future__ import annotations

import difflib
import enum
import logging
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from string import hexdigits
from typing import Any

import regex as regex_engine

from broker.errors import KazamiError

log = logging.getLogger(__name__)

MAX_SOURCE_LENGTH = 2000
MAX_DEPTH = 50
MAX_PATTERN_LENGTH = 500

ROOTS = ("key", "value", "headers", "timestamp", "offset", "partition", "size", "topic", "transaction")
_SCALAR_ROOTS = frozenset({"timestamp", "offset", "partition", "size", "topic", "transaction"})
_WORD_OPERATORS = ("contains", "startswith", "endswith", "matches", "like", "in")
_STRING_OPERATORS = ("contains", "startswith", "endswith", "matches", "like")
_SYMBOL_OPERATORS = {"==": "==", "=": "==", "!=": "!=", "<>": "!=", ">": ">", "<": "<", ">=": ">=", "<=": "<="}
_KEYWORDS = frozenset({"and", "or", "not", "exists", "true", "false", "null", *_WORD_OPERATORS})
_OPERATOR_LIST = "==, !=, >, <, >=, <=, contains, startswith, endswith, matches, like or in"

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


class _Missing(enum.Enum):
    """The result of a path that does not exist in a message."""

    MISSING = enum.auto()

    def __repr__(self) -> str:
        return "MISSING"


MISSING = _Missing.MISSING

# --------------------------------------------------------------------------------------------------
# Tokens

_SPACE = re.compile(r"\s+")
_NAME = re.compile(r"[^\W\d][\w-]*")  # a field root or keyword; "-" allowed inside (trace-id)
_SEGMENT = re.compile(r"[\w-]+")  # what may follow a ".": value.items.0, headers.x-request-id
_NUMBER = re.compile(r"-?[0-9]+(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?")
_NUMBER_TAIL = re.compile(r"[\w.]")
_SYMBOLS = sorted(_SYMBOL_OPERATORS, key=len, reverse=True)  # longest first: ">=" before ">"
_PUNCTUATION = "()[],."
_STRING_ESCAPES = {'"': '"', "'": "'", "\\": "\\", "n": "\n", "t": "\t", "r": "\r"}


@dataclass(frozen=True)
class _Token:
    kind: str  # "name", "string", "number", "op", "end", or the punctuation character itself
    text: str  # exactly as written
    position: int
    end: int
    value: str | int | float | None = None  # decoded string or number

    def describe(self) -> str:
        """How an error message names this token."""
        if self.kind == "end":
            return "the end of the query"
        text = self.text if len(self.text) <= 30 else self.text[:29] + "…"
        return text if self.kind == "string" else f'"{text}"'


def _tokenize(source: str) -> list[_Token]:
    tokens: list[_Token] = []
    index = 0
    length = len(source)
    while True:
        space = _SPACE.match(source, index)
        if space:
            index = space.end()
        if index >= length:
            # An error "at the end" points just after the last token, not after invisible trailing spaces.
            last = tokens[-1].end if tokens else 0
            tokens.append(_Token("end", "", last, last))
            return tokens
        char = source[index]
        after_dot = bool(tokens) and tokens[-1].kind == "."
        if after_dot and (match := _SEGMENT.match(source, index)):
            token = _Token("name", match.group(), index, match.end())
        elif char in "\"'":
            token = _read_string(source, index)
        elif match := _NUMBER.match(source, index):
            token = _read_number(source, match)
        elif match := _NAME.match(source, index):
            token = _Token("name", match.group(), index, match.end())
        elif symbol := next((s for s in _SYMBOLS if source.startswith(s, index)), None):
            token = _Token("op", symbol, index, index + len(symbol))
        elif char in _PUNCTUATION:
            token = _Token(char, char, index, index + 1)
        else:
            raise QueryError(f'unexpected character "{char}"', index)
        tokens.append(token)
        index = token.end


def _read_number(source: str, match: re.Match[str]) -> _Token:
    text = match.group()
    if _NUMBER_TAIL.match(source, match.end()):
        tail = _SEGMENT.match(source, match.end())
        shown = source[match.start() : (tail.end() if tail else match.end() + 1)]
        raise QueryError(f'"{shown}" is not a number', match.start())
    value: int | float
    try:
        value = int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        raise QueryError(f'"{text}" is not a number', match.start()) from None
    return _Token("number", text, match.start(), match.end(), value)


def _read_string(source: str, start: int) -> _Token:
    quote = source[start]
    parts: list[str] = []
    index = start + 1
    while index < len(source):
        char = source[index]
        if char == quote:
            return _Token("string", source[start : index + 1], start, index + 1, _join_utf16("".join(parts)))
        if char == "\\" and index + 1 < len(source):
            escaped = source[index + 1]
            if escaped == "u":
                digits = source[index + 2 : index + 6]
                if len(digits) != 4 or any(d not in hexdigits for d in digits):
                    raise QueryError('"\\u" must be followed by 4 hexadecimal digits', index)
                parts.append(chr(int(digits, 16)))
                index += 6
                continue
            # Unknown escapes stay as written, so regular expressions such as "\d+" need no doubling.
            parts.append(_STRING_ESCAPES.get(escaped, "\\" + escaped))
            index += 2
            continue
        parts.append(char)
        index += 1
    raise QueryError(f"this string has no closing {quote}", start)


def _join_utf16(text: str) -> str:
    """Combine surrogate pairs written as two \\u escapes (e.g. an emoji) into one character."""
    try:
        return text.encode("utf-16", "surrogatepass").decode("utf-16")
    except UnicodeDecodeError:
        return text  # a lone surrogate: keep it as written


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
    def evaluate(self, message: MessageView) -> bool:
        raise NotImplementedError


@dataclass(frozen=True)
class _Or(_Node):
    children: tuple[_Node, ...]

    def evaluate(self, message: MessageView) -> bool:
        return any(child.evaluate(message) for child in self.children)


@dataclass(frozen=True)
class _And(_Node):
    children: tuple[_Node, ...]

    def evaluate(self, message: MessageView) -> bool:
        return all(child.evaluate(message) for child in self.children)


@dataclass(frozen=True)
class _Not(_Node):
    child: _Node

    def evaluate(self, message: MessageView) -> bool:
        return not self.child.evaluate(message)


@dataclass(frozen=True)
class _Exists(_Node):
    path: _Path

    def evaluate(self, message: MessageView) -> bool:
        return _resolve(self.path, message) is not MISSING


@dataclass(frozen=True)
class _Compare(_Node):
    path: _Path
    test: Callable[[object], bool]  # False for MISSING and for anything of the wrong type
    negate: bool  # "!=", "not in", "not contains", ...
    # A string operator on a whole key or value: a JSON object or array is also looked at as the text it
    # was written as (``value contains "checkout"`` finds the word in any field).
    on_text: bool = False

    def evaluate(self, message: MessageView) -> bool:
        value = _resolve(self.path, message)
        hit = self.test(value)
        if not hit and self.on_text and isinstance(value, Mapping | list | tuple):
            text = message.key_text if self.path.root == "key" else message.value_text
            hit = text is not None and self.test(text)
        return hit != self.negate


# --------------------------------------------------------------------------------------------------
# Parser


class _Parser:
    def __init__(self, source: str) -> None:
        self._source = source
        self._tokens = _tokenize(source)
        self._index = 0
        self._depth = 0

    def parse(self) -> _Node:
        node = self._or()
        token = self._peek()
        if token.kind == ")":
            raise QueryError('this ")" has no matching "("', token.position)
        if token.kind != "end":
            raise QueryError(f'expected "and", "or" or the end of the query, found {token.describe()}', token.position)
        return node

    # -- token helpers

    def _peek(self, ahead: int = 0) -> _Token:
        return self._tokens[min(self._index + ahead, len(self._tokens) - 1)]

    def _advance(self) -> _Token:
        token = self._tokens[self._index]
        if token.kind != "end":
            self._index += 1
        return token

    def _previous(self) -> _Token | None:
        return self._tokens[self._index - 1] if self._index else None

    @staticmethod
    def _is_word(token: _Token, *words: str) -> bool:
        return token.kind == "name" and token.text.lower() in words

    def _enter(self, token: _Token) -> None:
        self._depth += 1
        if self._depth > MAX_DEPTH:
            raise QueryError(
                f'the query nests too deeply (at most {MAX_DEPTH} levels of parentheses and "not")', token.position
            )

    # -- boolean structure

    def _or(self) -> _Node:
        children = [self._and()]
        while self._is_word(self._peek(), "or"):
            self._advance()
            children.append(self._and())
        return children[0] if len(children) == 1 else _Or(tuple(children))

    def _and(self) -> _Node:
        children = [self._not()]
        while self._is_word(self._peek(), "and"):
            self._advance()
            children.append(self._not())
        return children[0] if len(children) == 1 else _And(tuple(children))

    def _not(self) -> _Node:
        token = self._peek()
        if not self._is_word(token, "not"):
            return self._primary()
        self._advance()
        self._enter(token)
        child = self._not()
        self._depth -= 1
        return _Not(child)

    def _primary(self) -> _Node:
        token = self._peek()
        if token.kind == "(":
            self._advance()
            self._enter(token)
            node = self._or()
            close = self._peek()
            if close.kind != ")":
                raise QueryError(
                    f'expected ")" to close the "(" at column {token.position + 1}, found {close.describe()}',
                    close.position,
                )
            self._advance()
            self._depth -= 1
            return node
        if self._is_word(token, "exists"):
            self._advance()
            return _Exists(self._path('a field after "exists"'))
        return self._comparison()

    # -- conditions

    def _comparison(self) -> _Node:
        previous = self._previous()
        after = f" after {previous.describe()}" if previous is not None else ""
        path = self._path(f"a condition such as value.status == 1{after}")
        negate = False
        token = self._peek()
        if self._is_word(token, "not"):
            self._advance()
            negate = True
            token = self._peek()
            if not self._is_word(token, *_WORD_OPERATORS):
                raise QueryError(
                    f'expected contains, startswith, endswith, matches, like or in after "not", '
                    f"found {token.describe()}",
                    token.position,
                )
        if token.kind == "op":
            op = _SYMBOL_OPERATORS[token.text]
        elif self._is_word(token, *_WORD_OPERATORS):
            op = token.text.lower()
        else:
            raise QueryError(
                f"expected an operator after {path.text} ({_OPERATOR_LIST}), found {token.describe()}", token.position
            )
        self._advance()
        shown = f'"not {op}"' if negate else f'"{token.text}"'
        if op == "in":
            return _build_in(path, self._list(shown), negate)
        literal = self._literal(f"a value after {shown}")
        if op == "!=":
            op, negate = "==", True
        on_text = path.root in ("key", "value") and not path.steps and op in _STRING_OPERATORS
        return _Compare(path, _build_test(path, op, literal), negate, on_text)

    def _list(self, shown: str) -> list[_Literal]:
        opening = self._peek()
        if opening.kind != "(":
            raise QueryError(
                f'expected a list after {shown}, such as ("a", "b"), found {opening.describe()}', opening.position
            )
        self._advance()
        items: list[_Literal] = []
        while self._peek().kind != ")":
            items.append(self._literal("a value in the list"))
            token = self._peek()
            if token.kind == ",":
                self._advance()
            elif token.kind != ")":
                raise QueryError(
                    f'expected "," or ")" in the list opened at column {opening.position + 1}, '
                    f"found {token.describe()}",
                    token.position,
                )
        self._advance()
        return items

    def _literal(self, expected: str) -> _Literal:
        token = self._peek()
        if token.kind == "string":
            assert isinstance(token.value, str)
            self._advance()
            return _Literal(token.value, token.value, token.position, _parse_number(token.value))
        if token.kind == "number":
            assert isinstance(token.value, int | float)
            self._advance()
            return _Literal(token.value, token.text, token.position, token.value)
        if self._is_word(token, "true", "false", "null"):
            self._advance()
            word = token.text.lower()
            value = {"true": True, "false": False, "null": None}[word]
            return _Literal(value, word, token.position, None)
        if token.kind == "(":
            raise QueryError(f'expected {expected}, found "(" (a list of values only goes after "in")', token.position)
        raise QueryError(f"expected {expected}, found {token.describe()}", token.position)

    # -- paths

    def _path(self, expected: str) -> _Path:
        token = self._peek()
        if token.kind != "name" or token.text.lower() in _KEYWORDS:
            raise QueryError(f"expected {expected}, found {token.describe()}", token.position)
        root = token.text.lower()
        if root not in ROOTS:
            close = difflib.get_close_matches(root, ROOTS, n=1, cutoff=0.6)
            hint = f" (did you mean {close[0]}?)" if close else ""
            raise QueryError(
                f'unknown field "{token.text}"{hint}; a condition starts with one of {", ".join(ROOTS)}',
                token.position,
            )
        self._advance()
        steps: list[str | int] = []
        end = token.end
        while (nxt := self._peek()).position == end and nxt.kind in (".", "["):
            if root in _SCALAR_ROOTS:
                raise QueryError(f"{root} is a plain value and has no fields", nxt.position)
            if root == "headers" and steps:
                raise QueryError(
                    'a header has no fields; write a name with odd characters as headers["a b"]', nxt.position
                )
            self._advance()
            if nxt.kind == ".":
                segment = self._peek()
                if segment.kind != "name" or segment.position != nxt.end:
                    raise QueryError('expected a field name right after "."', nxt.end)
                self._advance()
                end = segment.end
                if root == "headers":  # header names may contain dots: headers.trace.id is "trace.id"
                    while (
                        self._peek().kind == "."
                        and self._peek().position == end
                        and self._peek(1).kind == "name"
                        and self._peek(1).position == end + 1
                    ):
                        self._advance()
                        end = self._advance().end
                    steps.append(self._source[segment.position : end])
                else:
                    steps.append(segment.text)
            else:
                step, end = self._bracket(root, nxt)
                steps.append(step)
        return _Path(root, tuple(steps), self._source[token.position : end], token.position)

    def _bracket(self, root: str, opening: _Token) -> tuple[str | int, int]:
        """The name or index inside "[ ]" (the "[" already read), and where the "]" ends."""
        inner = self._advance()
        name = inner.value if inner.kind == "string" else None
        index = inner.value if inner.kind == "number" and root != "headers" else None
        step: str | int
        if isinstance(name, str):
            step = name
        elif isinstance(index, int):
            step = index
        else:
            wanted = 'a quoted header name inside "[ ]", such as headers["trace id"]'
            if root != "headers":
                wanted = 'a quoted name or a whole number inside "[ ]", such as value["a b"] or value.items[0]'
            raise QueryError(f"expected {wanted}, found {inner.describe()}", inner.position)
        close = self._peek()
        if close.kind != "]":
            raise QueryError(
                f'expected "]" to close the "[" at column {opening.position + 1}, found {close.describe()}',
                close.position,
            )
        self._advance()
        return step, close.end


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

    return _Compare(path, test, negate)


def _build_test(path: _Path, op: str, literal: _Literal) -> Callable[[object], bool]:
    """The test for one comparison, with everything that can be checked or prepared done now."""
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
        return lambda value: (text := _text_form(value)) is not None and _search(compiled, text)
    pattern = _like_pattern(literal.value)  # op == "like"
    return lambda value: (text := _text_form(value)) is not None and _like(text, pattern)


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


def _search(compiled: regex_engine.Pattern[str], text: str) -> bool:
    try:
        return compiled.search(text, timeout=REGEX_SECONDS) is not None
    except TimeoutError:
        return False


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


def _like(text: str, pattern: tuple[str | int, ...]) -> bool:
    """SQL LIKE, case-insensitive: greedy matching that retries from the last "%" (no regex, so no blow-up)."""
    t = p = 0
    star = -1
    resume = 0
    while t < len(text):
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


def _resolve(path: _Path, message: MessageView) -> object:
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


# --------------------------------------------------------------------------------------------------
# Public API


class Query:
    """A parsed filter. ``matches`` tells whether a message passes it; an empty filter passes all."""

    __slots__ = ("_root", "source")
    source: str
    _root: _Node | None

    def __init__(self, source: str, root: _Node | None) -> None:
        self.source = source
        self._root = root

    def matches(self, message: MessageView) -> bool:
        """Return True when the message passes the filter.

        Never raises: values of the wrong type, missing paths and undecodable bytes make a
        comparison false (``!=`` true) instead.
        """
        if self._root is None:
            return True
        # A filter must not break a stream of messages. The helpers are written not to raise, so the
        # handler below is a last resort (for a value that misbehaves); a debug line says when it was needed.
        try:
            return self._root.evaluate(message)
        except Exception:
            log.debug(
                "filter %r failed on a message of %r", self.source, getattr(message, "topic", None), exc_info=True
            )
            return False

    def __repr__(self) -> str:
        return f"Query({self.source!r})"


def parse_query(source: str) -> Query:
    """Parse a filter such as ``value.status == "error" and offset > 10``.

    Returns a ``Query`` (one that matches every message when the source is empty or blank).
    Raises ``QueryError``, whose message names the column, when the source is longer than
    2,000 characters, nests deeper than 50 levels, or is not valid (an unknown field, a bare
    field with no operator, a bad date compared with timestamp, a bad regular expression, ...).
    """
    if len(source) > MAX_SOURCE_LENGTH:
        raise QueryError(
            f"the query is too long ({len(source):,} characters; at most {MAX_SOURCE_LENGTH:,})", MAX_SOURCE_LENGTH
        )
    if not source.strip():
        return Query(source, None)
    return Query(source, _Parser(source).parse())


def describe_syntax() -> str:
    """Return a few lines of help, with examples, for the UI to show under the filter box."""
    return "\n".join(
        [
            "Fields: key, value, headers, timestamp, offset, partition, size, topic, transaction "
            "(committed, aborted, open); "
            'paths such as value.user.id, value.items[0].sku, headers.trace-id, headers["trace id"].',
            "Operators: == != > < >= <= contains startswith endswith matches (regex) like (% and _) in (...); "
            "combine with and, or, not and parentheses; exists value.x tests presence; on a whole key or value, "
            "the string operators read its text as written, JSON included.",
            'Examples: value.status in ("error", "fatal") and offset > 1000',
            '          timestamp >= "2026-11-01T12:30:00Z" and key like "order-%"',
            '          not exists value.user.id or headers["trace id"] startswith "abc"',
            '          value contains "checkout"',
            '          transaction == "aborted"',
        ]
    )
