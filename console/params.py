"""What a request carries, checked: query-string parameters (a bad one is InvalidInput, HTTP 400, naming it and
saying why), a POST's JSON object, and whether htmx sent it."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

from broker.errors import InvalidInput
from broker.times import parse_time


def is_htmx(request: HttpRequest) -> bool:
    """Whether htmx sent the request (it sends ``HX-Request: true``): the view answers with a fragment."""
    return request.headers.get("HX-Request") == "true"


def json_object(request: HttpRequest, forms: bool = False) -> dict[str, Any]:
    """The JSON object a POST carries; with ``forms``, a form-encoded body is taken too (its fields, the
    last value of each). Raises InvalidInput for a body that is not JSON or not an object."""
    if forms and request.content_type != "application/json":
        return dict(request.POST.items())
    try:
        data = json.loads(request.body or b"{}")
    except ValueError as exc:
        raise InvalidInput(f"The body is not valid JSON: {exc}.") from None
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
    """The integer parameter ``name``, ``default`` when absent or blank."""
    raw = str(_values(request).get(name, "")).strip()
    if raw == "":
        return default
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
