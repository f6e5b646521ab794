"""The produce form's registry-schema parts (console/forms.py): what the API's body becomes, what the form checks
before the registry is asked, what the audit keeps, and where the focus goes after an error."""

from __future__ import annotations

import json

from console.forms import ProduceForm


def test_the_api_body_a_subject_alone_means_the_schema_format_and_documents_become_json_text() -> None:
    body = ProduceForm.schema_body(
        {"key": None, "key_subject": "t-key", "value": {"id": 1, "note": "zoë"}, "value_subject": "t-value"}
    )
    assert body["key_format"] == body["value_format"] == "schema"
    assert body["key"] == "null"  # the document null, not a null key
    assert json.loads(body["value"]) == {"id": 1, "note": "zoë"}
    text = ProduceForm.schema_body({"value": '{"id": 1}', "value_subject": "t-value", "value_version": 3})
    assert text["value"] == '{"id": 1}'  # a string is the document's JSON text, kept
    assert text["value_version"] == "3"
    plain = ProduceForm.schema_body({"value": {"a": 1}, "value_format": "json"})
    assert plain["value"] == {"a": 1}  # other formats untouched


def form(**data: str) -> ProduceForm:
    return ProduceForm({"key_format": "none", "value_format": "schema", "header_format": "text", **data})


def test_a_schema_part_needs_a_subject_and_a_version_that_is_a_number_or_latest() -> None:
    missing = form(value="{}")
    assert not missing.is_valid()
    assert missing.errors["value_subject"] == ["Pick the subject whose schema writes the value."]
    assert missing.fields["value_subject"].widget.attrs.get("autofocus") is True  # the field to fix
    bad = form(value="{}", value_subject="t-value", value_version="two")
    assert not bad.is_valid()
    assert bad.errors["value_version"] == ["A version is a whole number from 1, or latest."]
    good = form(value='{"id": 1}', value_subject=" t-value ", value_version="2", value_message="shop.Order")
    assert good.is_valid(), good.errors
    assert good.cleaned_data["schemas"] == {"value": {"subject": "t-value", "version": 2, "message": "shop.Order"}}
    latest = form(value="{}", value_subject="t-value")
    assert latest.is_valid()
    assert latest.cleaned_data["schemas"]["value"]["version"] == "latest"
    latest.cleaned_data["value_bytes"] = b"\x00\x00\x00\x00\x01{}"  # as the change encodes it
    assert latest.audit_params()["value_schema"] == {"subject": "t-value", "version": "latest"}
    assert latest.audit_params()["value_bytes"] == 7


def test_plain_formats_are_as_before() -> None:
    plain = ProduceForm({"key_format": "text", "key": "k", "value_format": "json", "value": '{"a": 1}'})
    assert plain.is_valid(), plain.errors
    assert plain.cleaned_data["key_bytes"] == b"k"
    assert plain.cleaned_data["value_bytes"] == b'{"a": 1}'
    assert plain.cleaned_data["schemas"] == {}
    assert "value_schema" not in plain.audit_params()
