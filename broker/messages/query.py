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
import logging
import re
from dataclasses import dataclass
from string import hexdigits

from broker.messages.query_terms import (
    ROOTS,
    FilterTimeSpent,
    QueryError,
    RegexClock,
    Viewed,
    _And,
    _build_in,
    _build_test,
    _Compare,
    _Exists,
    _Literal,
    _Node,
    _Not,
    _Or,
    _parse_number,
    _Path,
)

log = logging.getLogger(__name__)

MAX_SOURCE_LENGTH = 2000
MAX_DEPTH = 50
# Regular expressions are what a hostile filter makes slow: one query may hold at most this many "matches".
MAX_REGEXES = 4

_SCALAR_ROOTS = frozenset({"timestamp", "offset", "partition", "size", "topic", "transaction"})
_WORD_OPERATORS = ("contains", "startswith", "endswith", "matches", "like", "in")
_STRING_OPERATORS = ("contains", "startswith", "endswith", "matches", "like")
_SYMBOL_OPERATORS = {"==": "==", "=": "==", "!=": "!=", "<>": "!=", ">": ">", "<": "<", ">=": ">=", "<=": "<="}
_KEYWORDS = frozenset({"and", "or", "not", "exists", "true", "false", "null", *_WORD_OPERATORS})
_OPERATOR_LIST = "==, !=, >, <, >=, <=, contains, startswith, endswith, matches, like or in"


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
# Parser


class _Parser:
    def __init__(self, source: str) -> None:
        self._source = source
        self._tokens = _tokenize(source)
        self._index = 0
        self._depth = 0
        self._regexes = 0
        self.clock = RegexClock()  # what every "matches" of the query charges its time to

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
        if op == "matches":
            self._regexes += 1
            if self._regexes > MAX_REGEXES:
                raise QueryError(
                    f'too many "matches": a query may hold at most {MAX_REGEXES} regular expressions', token.position
                )
        self._advance()
        shown = f'"not {op}"' if negate else f'"{token.text}"'
        if op == "in":
            return _build_in(path, self._list(shown), negate)
        literal = self._literal(f"a value after {shown}")
        if op == "!=":
            op, negate = "==", True
        on_text = path.root in ("key", "value") and not path.steps and op in _STRING_OPERATORS
        return _Compare(path, _build_test(path, op, literal, self.clock), negate, on_text, op, (literal,))

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
# Public API


class Query:
    """A parsed filter. ``matches`` tells whether a message passes it; an empty filter passes all.

    Its regular expressions are compiled once, when it is parsed, and the time they take is summed over every
    message it tests (:attr:`regex_seconds`); :meth:`limit_regex_time` caps that sum.
    """

    __slots__ = ("_clock", "_root", "source")
    source: str
    _root: _Node | None

    def __init__(self, source: str, root: _Node | None, clock: RegexClock | None = None) -> None:
        self.source = source
        self._root = root
        self._clock = clock or RegexClock()

    @property
    def regex_seconds(self) -> float:
        """The time the query's regular expressions have taken so far, over every message it tested."""
        return self._clock.used

    def limit_regex_time(self, seconds: float | None) -> None:
        """Let the regular expressions take at most ``seconds`` in all (None: no limit but REGEX_SECONDS per
        message); once they have, :meth:`matches` raises RegexBudgetSpent."""
        self._clock.budget = seconds

    def stop_at(self, deadline: float | None) -> None:
        """Past ``deadline`` (time.monotonic()), a slow comparison (a ``like`` over a long value) stops the query:
        :meth:`matches` raises DeadlinePassed."""
        self._clock.deadline = deadline

    @property
    def tree(self) -> _Node | None:
        """The parsed filter (None when it is empty): what a search's probe reads (broker.messages.filtering)."""
        return self._root

    def matches(self, message: Viewed) -> bool:
        """Return True when the message passes the filter.

        Never raises, but FilterTimeSpent once the regular expressions' time (:meth:`limit_regex_time`) is
        spent or a slow comparison passes the deadline (:meth:`stop_at`): values of the wrong type, missing
        paths and undecodable bytes make a comparison false (``!=`` true) instead.
        """
        if self._root is None:
            return True
        # A filter must not break a stream of messages. The helpers are written not to raise, so the
        # handler below is a last resort (for a value that misbehaves); a debug line says when it was needed.
        try:
            return self._root.evaluate(message)
        except FilterTimeSpent:
            raise
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
    2,000 characters, nests deeper than 50 levels, holds more than 4 "matches", or is not valid (an
    unknown field, a bare field with no operator, a bad date compared with timestamp, a bad regular
    expression, ...).
    """
    if len(source) > MAX_SOURCE_LENGTH:
        raise QueryError(
            f"the query is too long ({len(source):,} characters; at most {MAX_SOURCE_LENGTH:,})", MAX_SOURCE_LENGTH
        )
    if not source.strip():
        return Query(source, None)
    parser = _Parser(source)
    return Query(source, parser.parse(), parser.clock)


def describe_syntax() -> str:
    """Return a few lines of help, with examples, for the UI to show under the filter box."""
    return "\n".join(
        [
            "Fields: key, value, headers, timestamp, offset, partition, size, topic, transaction "
            "(committed, aborted, open); "
            'paths such as value.user.id, value.items[0].sku, headers.trace-id, headers["trace id"].',
            "Operators: == != > < >= <= contains startswith endswith matches (regex; at most 4 in a query) "
            "like (% and _) in (...); combine with and, or, not and parentheses; exists value.x tests presence; "
            "on a whole key or value, the string operators read its text as written, JSON included.",
            'Examples: value.status in ("error", "fatal") and offset > 1000',
            '          timestamp >= "2026-11-01T12:30:00Z" and key like "order-%"',
            '          not exists value.user.id or headers["trace id"] startswith "abc"',
            '          value contains "checkout"',
            '          transaction == "aborted"',
        ]
    )
