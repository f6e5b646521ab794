"""Masking beyond the record pages, without a cluster: an uploaded schema cannot switch a pattern off, and which
rules reach the fields analytics reads (its results hidden, the live figures' keys masked)."""

from __future__ import annotations

import io
import json
from typing import Any

import fastavro
import pytest

from analytics.events import FIELDS
from analytics.live import KEY_FIELDS
from broker.decode import decode, parse_avro_schema
from broker.messages.log import Message
from broker.messages.masking import DEFAULT_REPLACEMENT as R
from broker.messages.masking import Masker, avro_reader, mask_bytes, masked_labels, parse_rules
from console.present.masking import hidden_from_role, masked_fields, reaches_fields

CARD = "4111-2222-3333-4444"
CARDS = parse_rules(json.dumps([{"name": "cards", "regex": r"\d{4}(-\d{4}){3}"}]))


def reader(schema: Any) -> Any:
    return avro_reader(parse_avro_schema(json.dumps(schema)))


def fixed_fields(sizes: list[int]) -> dict[str, Any]:
    fields = [{"name": f"f{i}", "type": {"type": "fixed", "name": f"F{i}", "size": n}} for i, n in enumerate(sizes)]
    return {"type": "record", "name": "Cut", "fields": fields}


# Schemas an operator could upload so that the document of a text value holds no match of the pattern: the
# card cut across four fields, and every byte read as a number (a byte under 0x80 is one varint).
SPLIT = fixed_fields([5, 5, 5, 4])
NUMBERS = {"type": "record", "name": "Nums", "fields": [{"name": f"n{i}", "type": "int"} for i in range(len(CARD))]}


@pytest.mark.parametrize("schema", [SPLIT, NUMBERS], ids=["card cut across fields", "bytes read as numbers"])
def test_a_schema_that_reads_text_otherwise_does_not_switch_a_pattern_off(schema: Any) -> None:
    raw = CARD.encode()
    read = reader(schema)
    assert read(raw) is not None  # the schema does read the bytes, into a document without the card
    assert CARD not in json.dumps(read(raw))
    masked, labels = mask_bytes(raw, CARDS, "", read)
    assert masked == R.encode()
    assert labels == ["~ cards"]
    # On the pages: the masked message decodes, whatever the decoding asked, without the card.
    message = Message("t", 0, 0, 0, 0, b"k", raw, [], len(raw))
    shown = Masker(CARDS, value_reader=read).message(message)
    assert masked_labels(shown) == ("~ cards",)
    for decoding in ("auto", "text", "avro", "hex"):
        assert "4111" not in decode(shown.value, decoding, parse_avro_schema(json.dumps(schema))).text


def test_text_around_the_match_stays_and_a_schema_reading_it_whole_masks_as_before() -> None:
    raw = f"paid with {CARD} today".encode()
    masked, labels = mask_bytes(raw, CARDS, "", reader(fixed_fields([12, len(raw) - 12])))  # "paid with 41" ...
    assert masked == f"paid with {R} today".encode()
    assert labels == ["~ cards"]
    whole = {"type": "fixed", "name": "All", "size": len(raw)}
    masked, labels = mask_bytes(raw, CARDS, "", reader(whole))
    assert json.loads(masked) == f"paid with {R} today"
    assert labels == ["~ cards"]


def test_avro_written_with_the_schema_is_still_masked_as_its_document() -> None:
    schema = {
        "type": "record",
        "name": "Pay",
        "fields": [{"name": "note", "type": "string"}, {"name": "n", "type": "long"}],
    }
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), {"note": f"card {CARD}", "n": 7})
    masked, labels = mask_bytes(out.getvalue(), CARDS, "", reader(schema))
    assert json.loads(masked) == {"note": f"card {R}", "n": 7}
    assert labels == ["~ cards"]
    # A path rule on a value without a match of any pattern: as before, the document only.
    emails = parse_rules(json.dumps([{"name": "notes", "paths": ["$.note"]}, *[r.as_dict() for r in CARDS]]))
    masked, labels = mask_bytes(out.getvalue(), emails, "", reader(schema))
    assert json.loads(masked) == {"note": R, "n": 7}
    assert labels == ["$.note"]


def test_masked_bytes_that_still_read_to_a_document_a_path_reaches_are_replaced_whole() -> None:
    # A fixed of the masked length reads the masked bytes too: a path rule reaching "$" would then see a
    # document the pattern does not: the value is replaced whole, never shown half-masked.
    rules = parse_rules(json.dumps([{"name": "cards", "regex": r"\d{4}(-\d{4}){3}"}, {"name": "all", "paths": ["$"]}]))
    raw = CARD.encode()
    masked, labels = mask_bytes(raw, rules, "", reader(SPLIT))
    assert masked == R.encode()
    assert "~ cards" in labels


RULES = json.dumps(
    [
        {"name": "urls", "topics": "web-*", "paths": ["$.url"]},
        {"name": "emails", "topics": "web-*", "paths": ["$.user.email"]},
        {"name": "keys", "topics": "web-*", "parts": ["key"], "regex": "u-\\d+"},
        {"name": "ops", "topics": "ops-*", "regex": "secret", "level": "operator"},
    ]
)


@pytest.mark.parametrize(
    ("rule", "reaches"),
    [
        ({"paths": ["$.url"]}, True),
        ({"paths": ["$['keyword']"]}, True),
        ({"paths": ["$"]}, True),
        ({"paths": ["$.*"]}, True),
        ({"paths": ["$..password"]}, True),  # an object in a field reads as its JSON text
        ({"paths": ["$.user.email"]}, False),
        ({"paths": ["$[0]"]}, False),
        ({"regex": "x"}, True),
        ({"regex": "x", "parts": ["key", "headers"]}, False),
    ],
)
def test_which_rules_reach_the_fields_analytics_reads(rule: dict[str, Any], reaches: bool) -> None:
    [parsed] = parse_rules(json.dumps([{"name": "r", **rule}]))
    assert reaches_fields(parsed, FIELDS) is reaches


def test_results_are_hidden_from_the_roles_a_reaching_rule_masks_for(settings: Any) -> None:
    settings.KAZAMI_MASKING = parse_rules(RULES)
    hidden = hidden_from_role("viewer", "local", ["web-1", "other"], FIELDS)
    assert hidden is not None
    assert [r.name for r in hidden.rules] == ["urls"]  # emails reach no event field, keys no value
    assert hidden.topics == ("web-1",)
    assert hidden.message.startswith("Masked for your role (viewer): masking rule 'urls' covers topic 'web-1'")
    assert "admin role and above" in hidden.message
    assert hidden_from_role("operator", "local", ["web-1"], FIELDS) is not None
    assert hidden_from_role("admin", "local", ["web-1"], FIELDS) is None
    assert hidden_from_role("viewer", "local", ["other"], FIELDS) is None
    assert hidden_from_role("viewer", "local", ["ops-1"], FIELDS) is not None
    assert hidden_from_role("operator", "local", ["ops-1"], FIELDS) is None


def test_the_live_figures_mask_the_key_fields_rules_reach_for_viewers(settings: Any) -> None:
    settings.KAZAMI_MASKING = parse_rules(RULES)
    assert masked_fields("local", ["web-1"], KEY_FIELDS) == {"url": R}
    assert masked_fields("local", ["other"], KEY_FIELDS) == {}
    # A pattern may match in any field: every key field counts under the replacement.
    assert masked_fields("local", ["ops-1", "other"], KEY_FIELDS) == dict.fromkeys(KEY_FIELDS, R)
