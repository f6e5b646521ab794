"""The search's probe (broker.messages.filtering): the texts it looks for in record bytes, and that it never
passes over a record the filter matches, whatever JSON escapes, numbers or bytes the record holds. Also the lazy
view: a filter sees through it what it saw through the eager MessageView."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from broker.decode import decode
from broker.messages.filtering import LazyView, probe_for
from broker.messages.log import Message
from broker.messages.query import parse_query
from broker.messages.query_terms import MessageView


def clauses(query: str) -> list[list[str]] | None:
    """The probe's clauses: each the texts of which a match holds one (plain, and as inside a JSON string)."""
    probe = probe_for(parse_query(query))
    return None if probe is None else sorted(sorted(n.decode() for n in clause) for clause in probe.clauses)


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ('value contains "needle"', [["needle"]]),
        ('key == "order-7"', [["order-7"]]),
        ('headers.trace-id startswith "abc"', [["abc"]]),
        ('value.user in ("ada", "bob")', [["ada", "bob"]]),
        ('value contains "needle" and offset > 5', [["needle"]]),
        ('value.a == "xy" and value.b == "long-word"', [["long-word"], ["xy"]]),
        ('value contains "cat" or key == "dog"', [["cat", "dog"]]),
        ('value.page == "/products/7"', [["/products/7"]]),
        ('value contains "say \\"hi\\""', [['say "hi"', 'say \\"hi\\"']]),
        # Nothing certain: negations, other fields, numbers, booleans, undecodable bytes, empty texts.
        ('not value contains "needle"', None),
        ('value not contains "needle"', None),
        ('value != "needle"', None),
        ('value contains "needle" or offset > 5', None),
        ('topic == "orders"', None),
        ('value.code == "404"', None),
        ('value.ratio contains "e+2"', None),
        ('value.flag == "True"', None),
        ('value contains "\ufffd"', None),
        ('value contains ""', None),
        ('value matches "needle"', None),
        ('value like "%needle%"', None),
        ("exists value.needle", None),
        ("", None),
    ],
)
def test_it_probes_only_for_texts_every_match_holds(query: str, expected: list[list[str]] | None) -> None:
    assert clauses(query) == expected


def record(
    value: bytes | None, key: bytes | None = None, headers: list[tuple[str, bytes | None]] | None = None
) -> Message:
    return Message("t", 0, 7, 1_700_000_000_000, "CreateTime", key, value, headers or [], None)


def eager_view(message: Message) -> MessageView:
    """The view a filter was given before the lazy one: decoded for display under "auto"."""
    key, value = decode(message.key, "auto", limit=0), decode(message.value, "auto", limit=0)
    return MessageView(
        topic=message.topic,
        partition=message.partition,
        offset=message.offset,
        timestamp=message.timestamp,
        key=key.data if key.kind in ("json", "text") else message.key,
        value=value.data if value.kind in ("json", "text") else message.value,
        headers={n: (None if r is None else _text_or_bytes(r)) for n, r in message.headers},
        size=message.size,
        key_text=None if key.kind != "json" or message.key is None else message.key.decode("utf-8", "replace"),
        value_text=None if value.kind != "json" or message.value is None else message.value.decode("utf-8", "replace"),
        transaction=message.transaction,
    )


def _text_or_bytes(raw: bytes) -> object:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError:
        return raw


TRICKY_VALUES = [
    b'{"note": "ne\\u0065dle"}',  # an escaped letter
    b'{"ne\\u0065dle": 1}',  # in a field name
    b'{"page": "\\/products\\/7"}',  # escaped slashes
    b'{"page": "/products\\/7"}',  # one escaped, one not
    b'{"say": "say \\"hi\\""}',  # quotes, escaped as JSON must
    b'{"ratio": 1E20}',  # a number Python writes otherwise
    b'{"flag": true}',
    b'"needle"',
    b"needle in plain text",
    b"\xff\xfeneedle",  # binary, with the text inside
    b'\xef\xbb\xbf{"note": "needle"}',  # a byte-order mark
    b'["needle", 1]',
    b'{"n": 10}',
]


@pytest.mark.parametrize("value", TRICKY_VALUES)
@pytest.mark.parametrize(
    "query",
    [
        'value contains "needle"',
        'value.note == "needle"',
        'value contains "needle" and value.flag == true',
        'value.ratio contains "e+2"',
        'value.page == "/products/7"',
        'value.n == "10"',
        'value.say == "say \\"hi\\""',
        'value contains "/products/7" and value contains "needle"',
    ],
)
def test_it_never_passes_over_a_match(value: bytes, query: str) -> None:
    parsed = parse_query(query)
    message = record(value)
    matches = parsed.matches(LazyView(message))
    assert matches == parsed.matches(eager_view(message))
    probe = probe_for(parsed)
    if matches and probe is not None:
        assert probe.may_match(message)
        assert probe.may_hold(value)


texts = st.text(alphabet=st.sampled_from(list('neodl /"\\é\u2028x01.')), max_size=12)
documents = st.dictionaries(
    st.sampled_from(["note", "needle", "a", "b"]), texts | st.integers() | st.booleans(), max_size=4
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(document=documents, ascii_only=st.booleans(), slashes=st.sampled_from([0, 1, -1]), word=texts)
def test_a_match_always_holds_a_needle_however_the_json_is_written(
    document: dict[str, Any], ascii_only: bool, slashes: int, word: str
) -> None:
    written = json.dumps(document, ensure_ascii=ascii_only)
    if slashes:  # JSON may escape "/", every one (-1) or some (1)
        written = written.replace("/", "\\/", slashes)
    message = record(written.encode(), key=word.encode(), headers=[("h", word.encode())])
    for query in (
        f"value contains {json.dumps(word)}",
        f"value.note == {json.dumps(word)}",
        f"key startswith {json.dumps(word)}",
        f"headers.h endswith {json.dumps(word)}",
    ):
        parsed = parse_query(query)
        probe = probe_for(parsed)
        matched = parsed.matches(LazyView(message))
        assert matched == parsed.matches(eager_view(message))
        if matched and probe is not None:
            assert probe.may_match(message), (query, written)
