"""What a request carries, checked: query-string parameters (a bad one is InvalidInput, HTTP 400, naming it and
saying why), path parameters (whole numbers within Kafka's ranges, else no route: 404), a POST's JSON object
(limited in size and nesting: 413), and whether htmx sent it."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest

from broker.errors import InvalidInput
from broker.times import parse_time

INT32_MAX = 2**31 - 1
INT64_MAX = 2**63 - 1
INT64_MIN = -(2**63)
# The deepest nesting of arrays and objects a JSON body may have (Kafka Connect's configs, ACL lists and
# produce requests need a handful of levels).
MAX_JSON_DEPTH = 64
# Parameters Kafka carries as int32 (partition numbers, broker ids, task numbers); any other whole number
# must fit an int64.
INT32_NAMES = frozenset({"partition", "broker", "task", "replication_factor", "partitions", "count"})


FORM_TYPES = ("application/x-www-form-urlencoded", "multipart/form-data")


class BodyTooLarge(InvalidInput):
    """A request body over the console's size limit or nested deeper than MAX_JSON_DEPTH (HTTP 413)."""


_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def _depth_beyond(text: bytes, limit: int) -> bool:
    """Whether ``text`` nests arrays and objects deeper than ``limit``, counting brackets outside strings;
    a scan that never recurses, so a hostile body cannot exhaust the stack before json.loads sees it."""
    if text.count(b"[") + text.count(b"{") <= limit:
        return False
    brackets = _STRING.sub(b"", text).translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in brackets:
        depth += 1 if byte in (0x5B, 0x7B) else -1
        if depth > limit:
            return True
    return False


def body_of(request: HttpRequest) -> bytes:
    """The request's body; BodyTooLarge (413) past DATA_UPLOAD_MAX_MEMORY_SIZE."""
    try:
        return request.body
    except RequestDataTooBig:
        raise BodyTooLarge(too_large_message()) from None


def too_large_message() -> str:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    size = f"{limit / 1024 / 1024:.1f} MB" if limit else "the console's limit"
    return f"The request body is too large: at most {size} is taken."


def parse_json(text: str | bytes, what: str = "The body") -> Any:
    """JSON from a client, nested at most MAX_JSON_DEPTH levels: BodyTooLarge beyond, InvalidInput when it is
    not JSON."""
    raw = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text
    if _depth_beyond(raw, MAX_JSON_DEPTH):
        raise BodyTooLarge(f"{what} nests arrays and objects more than {MAX_JSON_DEPTH} levels deep.")
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:
        raise InvalidInput(f"{what} is not valid JSON: {exc}.") from None


def is_htmx(request: HttpRequest) -> bool:
    """Whether htmx sent the request (it sends ``HX-Request: true``): the view answers with a fragment."""
    return request.headers.get("HX-Request") == "true"


def json_object(request: HttpRequest, forms: bool = False) -> dict[str, Any]:
    """The JSON object a POST carries; with ``forms``, a form-encoded body is taken too (its fields, the
    last value of each), and a body of any other type is refused rather than ignored. Raises InvalidInput for
    a body that is not JSON or not an object, BodyTooLarge (413) for one too large or nested too deep."""
    if forms and request.content_type in FORM_TYPES:
        try:
            return dict(request.POST.items())
        except RequestDataTooBig:
            raise BodyTooLarge(too_large_message()) from None
    if forms and request.content_type != "application/json" and body_of(request).strip():
        raise InvalidInput(
            f"A body of type {(request.content_type or 'none')[:60]} is not read: send JSON (Content-Type: "
            "application/json) or a form."
        )
    data = parse_json(body_of(request) or b"{}")
    if not isinstance(data, dict):
        raise InvalidInput("The body must be a JSON object.")
    return data


def _values(source: HttpRequest | Mapping[str, Any]) -> Mapping[str, Any]:
    """Query parameters of a request, or a mapping of them already."""
    return source.GET if isinstance(source, HttpRequest) else source


def int_param(
    request: HttpRequest | Mapping[str, Any],
    name: str,
    default: int | None = None,
    minimum: int | None = None,
    maximum: int | None = None,
) -> int | None:
    """The integer parameter ``name``, ``default`` when absent or blank. Without bounds of the caller's, a
    number must fit what Kafka carries: int32 for the names in INT32_NAMES (partitions, brokers, ...), int64
    for any other."""
    raw = str(_values(request).get(name, "")).strip()
    if raw == "":
        return default
    if maximum is None:
        maximum = INT32_MAX if name in INT32_NAMES else INT64_MAX
    if minimum is None:
        minimum = -INT32_MAX - 1 if name in INT32_NAMES else INT64_MIN
    if len(raw) > 40:
        raise InvalidInput(f"{name} must be a whole number between {minimum} and {maximum}.")
    try:
        value = int(raw)
    except ValueError:
        raise InvalidInput(f"{name} must be a whole number, not {raw[:40]!r}.") from None
    if minimum is not None and value < minimum:
        raise InvalidInput(f"{name} must be at least {minimum}, not {value}.")
    if maximum is not None and value > maximum:
        raise InvalidInput(f"{name} must be at most {maximum}, not {value}.")
    return value


def time_param(request: HttpRequest, name: str) -> int | None:
    raw = request.GET.get(name, "").strip()
    return parse_time(raw, name) if raw else None


def choice_param(request: HttpRequest | Mapping[str, Any], name: str, choices: tuple[str, ...], default: str) -> str:
    raw = str(_values(request).get(name, "")).strip() or default
    if raw not in choices:
        raise InvalidInput(f"{name} must be one of {', '.join(choices)}, not {raw[:40]!r}.")
    return raw


class _BoundedInt:
    """A path converter for whole numbers up to ``maximum``: a larger one matches no route (404), so it never
    reaches a Kafka request or the database."""

    regex = "[0-9]+"
    maximum = INT64_MAX

    def to_python(self, value: str) -> int:
        number = int(value) if len(value) <= 20 else self.maximum + 1
        if number > self.maximum:
            raise ValueError(f"{value[:40]} is out of range")
        return number

    def to_url(self, value: int) -> str:
        return str(value)


class Int32Converter(_BoundedInt):
    """``<int32:partition>``: partition numbers, broker ids, task numbers (int32 in Kafka)."""

    maximum = INT32_MAX


class Int64Converter(_BoundedInt):
    """``<int64:offset>``: offsets, file positions, job ids (int64)."""

    maximum = INT64_MAX
