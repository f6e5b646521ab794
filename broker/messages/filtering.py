"""Running a filter over many records fast: what it sees of each (:class:`LazyView`, which decodes only the parts
the filter reads) and the probe (:func:`probe_for`), which passes over whole record batches that cannot hold a
match without decoding them.

The probe. Many filters name a text a match must hold: ``value contains "needle"``, ``key == "order-7"``,
``headers.trace-id == "abc"``. Such a text, when the record holds it, is in the record's bytes, so a batch whose
uncompressed records do not hold it has no match. The probe collects, from the filter's tree, texts of which
every matching record holds at least one (an ``and`` needs one of its parts', an ``or`` all of its parts'), and
only where that is certain:

- the comparison is ``==``, ``contains``, ``startswith``, ``endswith`` or ``in`` on the key, the value or a
  header, not negated, with a string that does not read as a number, ``true`` or ``false`` (those also match
  JSON numbers and booleans, which may be written otherwise: ``1e1`` is 10) and that could not be part of a
  number's text (``"e+2"`` is in the text of ``1E20``);
- the string holds no ``"``, ``\\``, ``/``, control character or U+FFFD: JSON may escape the first ones, and an
  undecodable byte reads as U+FFFD;
- a batch (and a record) holding a ``\\u`` escape is always read: JSON may write any character so.

A masked reader sees texts the records do not hold (a mask's replacement): searches with masking use no probe.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping

from broker.decode import auto_data
from broker.messages.log import Message, PassOver
from broker.messages.query import Query
from broker.messages.query_terms import _And, _Compare, _Literal, _Node, _Or

_PROBED_ROOTS = ("key", "value", "headers")
_PROBED_OPERATORS = ("==", "contains", "startswith", "endswith", "in")
# A JSON writer may escape these in a string (and any character as \uXXXX); an undecodable byte reads as U+FFFD.
_ESCAPABLE = frozenset('"\\/\ufffd') | frozenset(chr(c) for c in range(0x20))
# The characters of Python's text of a JSON number: a string made only of these may be found in a number's text.
_NUMBER_TEXT = frozenset("0123456789.+-eEinfaINFA")
_ESCAPE = b"\\u"


class LazyView:
    """What a filter sees of a message (the fields of broker.messages.query_terms.MessageView), its key, value
    and headers decoded under "auto" when first read, not before."""

    __slots__ = ("_headers", "_key", "_message", "_value")

    def __init__(self, message: Message) -> None:
        self._message = message
        self._key: tuple[str, object] | None = None
        self._value: tuple[str, object] | None = None
        self._headers: dict[str, object] | None = None

    @property
    def topic(self) -> str:
        return self._message.topic

    @property
    def partition(self) -> int:
        return self._message.partition

    @property
    def offset(self) -> int:
        return self._message.offset

    @property
    def timestamp(self) -> int | None:
        return self._message.timestamp

    @property
    def size(self) -> int:
        return self._message.size

    @property
    def transaction(self) -> str | None:
        return self._message.transaction

    def _decoded_key(self) -> tuple[str, object]:
        if self._key is None:
            self._key = auto_data(self._message.key)
        return self._key

    def _decoded_value(self) -> tuple[str, object]:
        if self._value is None:
            self._value = auto_data(self._message.value)
        return self._value

    @property
    def key(self) -> object:
        kind, data = self._decoded_key()
        return data if kind in ("json", "text") else self._message.key

    @property
    def value(self) -> object:
        kind, data = self._decoded_value()
        return data if kind in ("json", "text") else self._message.value

    @property
    def key_text(self) -> str | None:
        """The key's text as written, when it is JSON."""
        raw = self._message.key
        return raw.decode("utf-8", "replace") if raw is not None and self._decoded_key()[0] == "json" else None

    @property
    def value_text(self) -> str | None:
        raw = self._message.value
        return raw.decode("utf-8", "replace") if raw is not None and self._decoded_value()[0] == "json" else None

    @property
    def headers(self) -> Mapping[str, object]:
        if self._headers is None:
            self._headers = {name: _header(raw) for name, raw in self._message.headers}
        return self._headers


def _header(raw: bytes | None) -> object:
    if raw is None:
        return None
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


class Probe:
    """Texts (UTF-8) of which every record matching a filter holds at least one, in its key, value or headers."""

    __slots__ = ("needles",)

    def __init__(self, needles: frozenset[bytes]) -> None:
        self.needles = tuple(sorted(needles, key=len, reverse=True))

    def __repr__(self) -> str:
        return f"Probe({[n.decode() for n in self.needles]})"

    def may_hold(self, data: bytes) -> bool:
        """Whether ``data`` (a batch's records, or one field) may hold a match: it holds a needle, or an escape."""
        return _ESCAPE in data or any(needle in data for needle in self.needles)

    def may_match(self, message: Message) -> bool:
        """Whether ``message`` may match the filter (False: it surely does not)."""
        if message.value is not None and self.may_hold(message.value):
            return True
        if message.key is not None and self.may_hold(message.key):
            return True
        for name, raw in message.headers:
            if (raw is not None and self.may_hold(raw)) or self.may_hold(name.encode("utf-8", "replace")):
                return True
        return False

    def pass_over(self, budget: Callable[[], int]) -> PassOver:
        """For PartitionLog.walk: pass over a batch of records that holds no needle, while ``budget()`` (the
        records a scan may still read) covers all of it."""

        def passes(_first: int, _last: int, count: int, payload: bytes) -> bool:
            return count <= budget() and not self.may_hold(payload)

        return passes


def probe_for(query: Query) -> Probe | None:
    """The probe of ``query``, or None when no text is certain to be in every match (or the filter is empty)."""
    tree = query.tree
    needles = _needles(tree) if tree is not None else None
    return Probe(needles) if needles else None


def _needles(node: _Node) -> frozenset[bytes] | None:
    if isinstance(node, _Or):
        parts = [_needles(child) for child in node.children]
        return None if any(p is None for p in parts) else frozenset().union(*parts)  # type: ignore[arg-type]
    if isinstance(node, _And):
        known = [p for p in (_needles(child) for child in node.children) if p]
        # Any part's texts will do; the one whose shortest text is longest passes over the most.
        return max(known, key=lambda p: min(len(n) for n in p)) if known else None
    if isinstance(node, _Compare):
        return _compare_needles(node)
    return None  # not, exists: no text is certain


def _compare_needles(node: _Compare) -> frozenset[bytes] | None:
    if node.negate or node.path.root not in _PROBED_ROOTS or node.op not in _PROBED_OPERATORS or not node.literals:
        return None
    found = []
    for literal in node.literals:
        text = _certain_text(literal)
        if text is None:
            return None
        found.append(text.encode("utf-8"))
    return frozenset(found)


def _certain_text(literal: _Literal) -> str | None:
    """The literal's string when a value matching it surely holds it as written (see the module's notes)."""
    text = literal.value
    if not isinstance(text, str) or not text or literal.number is not None:
        return None
    if text.strip().lower() in ("true", "false", "null") or set(text) <= _NUMBER_TEXT:
        return None
    if not _ESCAPABLE.isdisjoint(text) or json.dumps(text, ensure_ascii=False)[1:-1] != text:
        return None
    return text
