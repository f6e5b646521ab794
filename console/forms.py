"""Forms for every change; the JSON API validates its bodies with the same forms."""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any, TypeVar

from django import forms
from django.http import HttpRequest

from broker.decode import DECODINGS, InputError, encode_input
from broker.errors import InvalidInput
from broker.groups.resets import STRATEGIES, ResetError, ResetSpec, parse_spec
from broker.topics.read import check_topic_name
from console.params import INT32_MAX, INT64_MAX, json_object

F = TypeVar("F", bound=forms.Form)

CLEANUP_POLICIES = [
    ("", "default (delete)"),
    ("delete", "delete"),
    ("compact", "compact"),
    ("compact,delete", "compact,delete"),
]
INPUT_FORMATS = [
    ("text", "text"),
    ("json", "JSON, as typed"),
    ("json-compact", "JSON, compacted"),
    ("hex", "hex"),
    ("base64", "base64"),
]


def pair_lines(text: str, what: str) -> list[tuple[int, str, str]]:
    """``name=value`` lines (blank lines and # comments skipped) as (line number, name, value), in order,
    both stripped; raises forms.ValidationError naming the line."""
    pairs = []
    for number, line in enumerate(text.splitlines(), start=1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "=" not in line:
            raise forms.ValidationError(f"Line {number}: expected {what}=value, got {line[:60]!r}.")
        name, value = line.split("=", 1)
        if not name.strip():
            raise forms.ValidationError(f"Line {number}: the {what} is empty.")
        pairs.append((number, name.strip(), value.strip()))
    return pairs


def parse_pairs(text: str, what: str) -> dict[str, str]:
    """``key=value`` lines as a dict (a repeated key: its last value); raises forms.ValidationError."""
    return {name: value for _, name, value in pair_lines(text, what)}


def parse_headers(text: str, fmt: str) -> list[tuple[str, bytes]]:
    """The produce page's ``name=value`` lines as Kafka headers, in order and with repeated names kept;
    values as text (UTF-8) or base64 (``fmt``). Lines are read as the form's text: blank lines and # comments
    skipped, names and values stripped (the API's list of pairs is kept as sent: encode_headers). Raises
    forms.ValidationError."""
    return encode_headers([(f"Line {number}", name, value) for number, name, value in pair_lines(text, "header")], fmt)


def encode_headers(headers: list[tuple[str, str, str]], fmt: str) -> list[tuple[str, bytes]]:
    """(where, name, value) as Kafka headers, names and values exactly as given, values as text (UTF-8) or
    base64 (``fmt``); ``where`` names the item in an error. Raises forms.ValidationError."""
    encoded = []
    for where, name, value in headers:
        try:
            encoded.append((name, encode_input(value, fmt)))
        except InputError as exc:
            raise forms.ValidationError(f"{where} ({name}): {exc}.") from None
    return encoded


class TopicNameField(forms.CharField):
    def clean(self, value: Any) -> str:
        name = str(super().clean(value))
        try:
            return check_topic_name(name)
        except InvalidInput as exc:
            raise forms.ValidationError(str(exc)) from None


class CreateTopicForm(forms.Form):
    name = TopicNameField(max_length=249, widget=forms.TextInput(attrs={"autofocus": True, "autocomplete": "off"}))
    partitions = forms.IntegerField(min_value=1, max_value=10_000, initial=3)
    replication_factor = forms.IntegerField(min_value=1, max_value=32, initial=3)
    retention_ms = forms.IntegerField(
        required=False,
        min_value=-1,
        max_value=INT64_MAX,
        label="retention.ms",
        help_text="-1 keeps messages forever; blank uses the broker's default",
    )
    cleanup_policy = forms.ChoiceField(choices=CLEANUP_POLICIES, required=False, label="cleanup.policy")
    configs = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "max.message.bytes=2097152"}),
        help_text="more topic configs, one key=value per line",
    )

    def clean_configs(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data.get("configs") or "", "config")

    def topic_configs(self) -> dict[str, str]:
        configs = dict(self.cleaned_data["configs"])
        if self.cleaned_data.get("retention_ms") is not None:
            configs["retention.ms"] = str(self.cleaned_data["retention_ms"])
        if self.cleaned_data.get("cleanup_policy"):
            configs["cleanup.policy"] = self.cleaned_data["cleanup_policy"]
        return configs


class AddPartitionsForm(forms.Form):
    total = forms.IntegerField(min_value=1, max_value=10_000, label="New total partitions")


class ConfigForm(forms.Form):
    set_configs = forms.CharField(
        required=False,
        label="Set",
        widget=forms.Textarea(attrs={"rows": 3, "placeholder": "retention.ms=604800000"}),
        help_text="one key=value per line",
    )
    reset = forms.CharField(required=False, label="Reset to default", help_text="config names, comma-separated")

    def clean_set_configs(self) -> dict[str, str]:
        return parse_pairs(self.cleaned_data.get("set_configs") or "", "config")

    def clean_reset(self) -> list[str]:
        return [n.strip() for n in (self.cleaned_data.get("reset") or "").split(",") if n.strip()]

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data is not None and not self.errors and not data.get("set_configs") and not data.get("reset"):
            raise forms.ValidationError("Nothing to change: give a key=value to set or a name to reset.")
        return data


class DeleteRecordsForm(forms.Form):
    partition = forms.IntegerField(min_value=0, max_value=INT32_MAX, required=False, help_text="blank: every partition")
    before_offset = forms.IntegerField(min_value=0, max_value=INT64_MAX, label="Delete records before offset")


class DeleteTopicForm(forms.Form):
    confirm = forms.CharField(
        label="Type the topic name to confirm", widget=forms.TextInput(attrs={"autocomplete": "off"})
    )

    def __init__(self, *args: Any, topic: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.topic = topic

    def clean_confirm(self) -> str:
        value = str(self.cleaned_data["confirm"])
        if value != self.topic:
            raise forms.ValidationError("That is not the topic's name; nothing was deleted.")
        return value


SCHEMA_FORMAT = ("schema", "a registry schema (the document as JSON)")
SUBJECTS_LIST = "registry-subjects"  # the produce page's <datalist> of the registry's subjects


def _subject_field(part: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=1000,
        label=f"{part.capitalize()} subject",
        widget=forms.TextInput(attrs={"autocomplete": "off", "list": SUBJECTS_LIST, "spellcheck": "false"}),
    )


def _version_field(part: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=12,
        label=f"{part.capitalize()} version",
        widget=forms.TextInput(attrs={"autocomplete": "off", "placeholder": "latest", "inputmode": "numeric"}),
        help_text="a version number, or latest",
    )


def _message_field(part: str) -> forms.CharField:
    return forms.CharField(
        required=False,
        max_length=1000,
        label=f"{part.capitalize()} Protobuf message",
        widget=forms.TextInput(attrs={"autocomplete": "off", "spellcheck": "false", "list": f"{part}-messages"}),
        help_text="blank: the schema's first message",
    )


class ProduceForm(forms.Form):
    key = forms.CharField(required=False, strip=False, widget=forms.TextInput(attrs={"autocomplete": "off"}))
    key_format = forms.ChoiceField(choices=[("none", "no key (null)"), *INPUT_FORMATS, SCHEMA_FORMAT], initial="text")
    key_subject = _subject_field("key")
    key_version = _version_field("key")
    key_message = _message_field("key")
    value = forms.CharField(required=False, strip=False, widget=forms.Textarea(attrs={"rows": 10}))
    value_format = forms.ChoiceField(
        choices=[*INPUT_FORMATS, ("null", "null (tombstone)"), SCHEMA_FORMAT], initial="text"
    )
    value_subject = _subject_field("value")
    value_version = _version_field("value")
    value_message = _message_field("value")
    headers = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2, "placeholder": "trace-id=abc"}),
        help_text="one name=value per line, in order; a name may repeat",
    )
    header_format = forms.ChoiceField(
        choices=[("text", "values as text"), ("base64", "values in base64")], initial="text", required=False
    )
    partition = forms.IntegerField(
        required=False, min_value=0, max_value=INT32_MAX, help_text="blank: Kafka's default partitioner"
    )

    def __init__(self, *args: Any, header_pairs: list[tuple[str, str]] | None = None, **kwargs: Any) -> None:
        """``header_pairs``: the API's headers as a list of (name, value), kept exactly as sent (no stripping,
        no comments), in place of the ``headers`` lines."""
        super().__init__(*args, **kwargs)
        self.header_pairs = header_pairs
        # The parts written with a registry schema, once encoded (console/changes/messages.py): part -> Encoded
        self.encoded: dict[str, Any] = {}

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data is None or self.errors:
            return data
        data["schemas"] = {}
        for part, nothing in (("key", "none"), ("value", "null")):
            fmt = data[f"{part}_format"]
            if fmt == "schema":
                self._schema_part(data, part)
                continue
            try:
                data[f"{part}_bytes"] = None if fmt == nothing else encode_input(data.get(part) or "", fmt)
            except InputError as exc:
                self.add_error(part, str(exc))
        fmt = data.get("header_format") or "text"
        try:
            if self.header_pairs is not None:
                items = [(f"Item {n}", name, value) for n, (name, value) in enumerate(self.header_pairs, start=1)]
                data["header_list"] = encode_headers(items, fmt)
            else:
                data["header_list"] = parse_headers(data.get("headers") or "", fmt)
        except forms.ValidationError as exc:
            self.add_error("headers", exc)
        return data

    def add_error(self, field: str | None, error: Any) -> None:
        """As Django's, and the first field with an error gets the focus when the page is drawn again (a
        keyboard user lands on what to fix)."""
        super().add_error(field, error)
        if field in self.fields and not any("autofocus" in f.widget.attrs for f in self.fields.values()):
            self.fields[field].widget.attrs["autofocus"] = True

    def _schema_part(self, data: dict[str, Any], part: str) -> None:
        """A key or value written with a registry schema: its subject, version ("latest" or a number) and, for
        Protobuf, message kept in ``data["schemas"][part]``; the bytes come later (console/changes/messages.py
        encodes the document with the registry)."""
        subject = (data.get(f"{part}_subject") or "").strip()
        version = (data.get(f"{part}_version") or "").strip() or "latest"
        if not subject:
            self.add_error(f"{part}_subject", f"Pick the subject whose schema writes the {part}.")
            return
        if version != "latest" and not (version.isdigit() and 0 < int(version) <= INT32_MAX):
            self.add_error(f"{part}_version", "A version is a whole number from 1, or latest.")
            return
        data[f"{part}_bytes"] = None
        data["schemas"][part] = {
            "subject": subject,
            "version": version if version == "latest" else int(version),
            "message": (data.get(f"{part}_message") or "").strip() or None,
        }

    @staticmethod
    def schema_body(body: dict[str, Any]) -> dict[str, Any]:
        """The API's body before the form reads it: a ``key_subject`` / ``value_subject`` without its format
        means the schema format, and with it the document may be any JSON value (a string is its JSON text,
        as the page's field is; null is the document null)."""
        body = dict(body)
        for part in ("key", "value"):
            if body.get(f"{part}_subject") not in (None, "") and f"{part}_format" not in body:
                body[f"{part}_format"] = "schema"
            if body.get(f"{part}_format") == "schema" and not isinstance(body.get(part), str):
                body[part] = json.dumps(body.get(part), ensure_ascii=False)
            if isinstance(body.get(f"{part}_version"), int) and not isinstance(body.get(f"{part}_version"), bool):
                body[f"{part}_version"] = str(body[f"{part}_version"])
        return body

    def audit_params(self) -> dict[str, Any]:
        """What the audit log keeps of a produced message: the key (cut), the value's size, header names, and
        the subject and version of a part written with a registry schema."""
        data = self.cleaned_data
        key, value = data.get("key_bytes"), data.get("value_bytes")
        params = {
            "partition": data.get("partition"),
            "key": None if key is None else key[:100].decode("utf-8", "replace"),
            "value_bytes": None if value is None else len(value),
            "headers": [name for name, _ in data.get("header_list", [])],
        }
        for part, schema in (data.get("schemas") or {}).items():
            params[f"{part}_schema"] = {k: v for k, v in schema.items() if v is not None}
        return params


class SchemaForm(forms.Form):
    part = forms.ChoiceField(choices=[("value", "value"), ("key", "key")])
    schema = forms.CharField(
        widget=forms.Textarea(
            attrs={"rows": 8, "placeholder": '{"type": "record", "name": "PageView", "fields": [...]}'}
        ),
        max_length=1_000_000,
    )


class BrowseForm(forms.Form):
    """Only drawn (GET parameters are parsed by console.params); keeps the fields' values on the page."""

    offset = forms.IntegerField(required=False, min_value=0, max_value=INT64_MAX)
    timestamp = forms.CharField(required=False, help_text="2026-11-01T12:00:00Z or epoch ms")
    limit = forms.IntegerField(required=False, min_value=1, max_value=500, initial=50)
    key_as = forms.ChoiceField(choices=[(d, d) for d in DECODINGS], required=False)
    value_as = forms.ChoiceField(choices=[(d, d) for d in DECODINGS], required=False)


def form_errors(form: forms.Form) -> dict[str, list[str]]:
    """The form's errors as {field: [messages]} ("__all__" for the form as a whole), for the JSON API."""
    return {field: [str(e) for e in errors] for field, errors in form.errors.items()}


class FormInvalid(InvalidInput):
    """A request body that fails its form; the API answer lists each field's errors under "fields"."""

    def __init__(self, form: forms.Form) -> None:
        self.fields = form_errors(form)
        super().__init__("; ".join(f"{field}: {' '.join(errors)}" for field, errors in form_errors(form).items()))


def body_form(
    form_class: type[F],
    request: HttpRequest,
    defaults: dict[str, str] | Callable[[dict[str, Any]], dict[str, str]] | None = None,
    prepare: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
    **kwargs: Any,
) -> F:
    """For the JSON API: a bound, valid ``form_class`` from the request's body (JSON, or form-encoded) over
    ``defaults`` (or what ``defaults(body)`` gives for that body); raises FormInvalid, a 400 answer with every
    field's errors, or InvalidInput. A JSON list or object of ``headers`` (the produce form's) reaches the form
    as ``header_pairs``, exactly as sent, not as its text lines. ``prepare``: the body rewritten before any of
    that (the produce API's documents given as JSON values)."""
    body = json_object(request, forms=True)
    if prepare is not None:
        body = prepare(body)
    data = {**((defaults(body) if callable(defaults) else defaults) or {}), **body}
    if "headers" in form_class.base_fields and isinstance(data.get("headers"), list | dict):
        kwargs["header_pairs"] = _header_pairs(data.pop("headers"))
    # Lists and numbers in JSON arrive as they are; forms want text.
    data = {
        k: (
            "\n".join(f"{a}={b}" for a, b in v.items())
            if isinstance(v, dict)
            else ",".join(str(x) for x in v)
            if isinstance(v, list)
            else v
        )
        for k, v in data.items()
    }
    form = form_class(data, **kwargs)
    if not form.is_valid():
        raise FormInvalid(form)
    return form


def _header_pairs(headers: list[Any] | dict[str, Any]) -> list[tuple[str, str]]:
    """Headers given in JSON, in order: a list of [name, value] pairs or {"name": ..., "value": ...} objects
    (a name may repeat), or one object of names to values; kept exactly as sent (spaces, tabs, line breaks, a
    leading #, empty values). Raises InvalidInput."""
    items: list[Any] = list(headers.items()) if isinstance(headers, dict) else headers
    pairs = []
    for number, item in enumerate(items, start=1):
        pair = (item.get("name"), item.get("value")) if isinstance(item, dict) else item
        if not isinstance(pair, list | tuple) or len(pair) != 2 or not all(isinstance(x, str) for x in pair):
            raise InvalidInput(
                f'headers: item {number} must be ["name", "value"] or {{"name": ..., "value": ...}}, both text.'
            )
        if pair[0] == "":
            raise InvalidInput(f"headers: item {number} has an empty name.")
        pairs.append((pair[0], pair[1]))
    return pairs


def reset_spec(strategy: str, value: str | None) -> ResetSpec:
    """A reset of offsets as the reset page's form and the API both read it: the strategy and its value (blank
    or None for earliest, latest, current), at the console's clock. Raises ResetError (InvalidInput)."""
    return parse_spec(strategy, value, int(time.time() * 1000))


class ResetForm(forms.Form):
    """A reset of a group's offsets, as kafka-consumer-groups --reset-offsets offers it."""

    topics = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="none ticked: every topic the group has consumed"
    )
    strategy = forms.ChoiceField(choices=[(s, s) for s in STRATEGIES], initial="latest")
    value = forms.CharField(
        required=False,
        help_text="to-offset: an offset · shift-by: ±N · to-datetime: 2026-11-01T12:00:00Z · by-duration: PT1H or 90m",
    )

    def __init__(self, *args: Any, consumed: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        topics = self.fields["topics"]
        assert isinstance(topics, forms.MultipleChoiceField)
        topics.choices = [(t, t) for t in consumed]

    def clean(self) -> dict[str, Any] | None:
        data = super().clean()
        if data is None or self.errors:
            return data
        try:
            data["spec"] = reset_spec(data["strategy"], data.get("value") or None)
        except ResetError as exc:
            self.add_error("value", str(exc))
        return data


class DeleteGroupForm(forms.Form):
    confirm = forms.CharField(
        label="Type the group id to confirm", widget=forms.TextInput(attrs={"autocomplete": "off"})
    )

    def __init__(self, *args: Any, group: str, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.group = group

    def clean_confirm(self) -> str:
        value = str(self.cleaned_data["confirm"])
        if value != self.group:
            raise forms.ValidationError("That is not the group's id; nothing was deleted.")
        return value


class DeleteOffsetsForm(forms.Form):
    topic = forms.CharField(max_length=249)


ROLE_CHOICES = [("viewer", "viewer"), ("operator", "operator"), ("admin", "admin")]


class NewUserForm(forms.Form):
    username = forms.RegexField(
        regex=r"^[\w.@+-]{1,150}$",
        max_length=150,
        error_messages={"invalid": "Letters, digits and @ . + - _ only."},
    )
    password = forms.CharField(
        widget=forms.PasswordInput,
        strip=False,
        help_text="12 characters or more, not a common password, not only digits, not like the user name",
    )
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial="viewer")

    def clean_username(self) -> str:
        from django.contrib.auth.models import User

        name: str = self.cleaned_data["username"]
        if User.objects.filter(username=name).exists():
            raise forms.ValidationError(f"A user named {name!r} exists already.")
        return name


class UserRoleForm(forms.Form):
    # "" is no global role: the user reads only what its grants reach.
    role = forms.ChoiceField(choices=[*ROLE_CHOICES, ("", "grants only")], required=False)
    active = forms.BooleanField(required=False)


class GrantForm(forms.Form):
    """A scoped role for a user or a team: a role on a cluster, or on its resources of one kind matching a glob."""

    user = forms.CharField(max_length=150, required=False, help_text="a user, or leave empty and name a team")
    team = forms.CharField(max_length=150, required=False, help_text="a group the identity provider or directory names")
    cluster = forms.CharField(max_length=100, initial="*", help_text="a cluster's name, or a glob (* for all)")
    resource = forms.ChoiceField(
        choices=[
            ("topic", "topics"),
            ("group", "consumer groups"),
            ("connector", "connectors"),
            ("subject", "schema subjects"),
            ("cluster", "the whole cluster"),
        ],
        initial="topic",
    )
    pattern = forms.CharField(max_length=255, initial="*", label="Names", help_text="a glob: orders.*, team-a-?")
    role = forms.ChoiceField(choices=ROLE_CHOICES, initial="viewer")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if bool(data.get("user", "").strip()) == bool(data.get("team", "").strip()):
            raise forms.ValidationError("Name a user or a team (one of them).")
        if data.get("resource") == "cluster":
            data["pattern"] = "*"
        return data

    @property
    def spec(self) -> str:
        d = self.cleaned_data
        return f"{d['cluster'].strip()}:{d['resource']}:{d['pattern'].strip()}:{d['role']}"
