"""Hostile input meets a check before it meets Kafka, the database or Python's limits: JSON bodies nested too
deep or too large (413), whole numbers outside what Kafka carries (400 for query strings and forms, no route
for paths), times outside 0..2**63-1 ms, CSV cells that a spreadsheet would run as formulas, and topic names
an analytics job may ask for. Every route swept with such input, through a real console: the integration test
of the same name."""

from __future__ import annotations

import csv
import io
from typing import Any

import pytest
from django.core.exceptions import RequestDataTooBig
from django.core.handlers.wsgi import WSGIRequest
from django.http import HttpRequest, HttpResponse
from django.test import RequestFactory, override_settings
from django.urls import Resolver404, resolve

from broker.errors import InvalidInput
from broker.security import acls
from broker.security.acls import AclBinding
from broker.times import as_datetime, parse_time
from console.background.job_spec import check_job_request, check_offsets
from console.errors import api_view, page_view
from console.params import (
    INT32_MAX,
    INT64_MAX,
    MAX_JSON_DEPTH,
    BodyTooLarge,
    int_param,
    json_object,
    parse_json,
)
from console.present import spreadsheet

factory = RequestFactory()


def post_json(body: bytes) -> WSGIRequest:
    return factory.post("/api/x/", data=body, content_type="application/json")


# ---------------------------------------------------------------- JSON bodies


def test_a_body_nested_deeper_than_the_limit_is_too_large_before_json_recursion() -> None:
    with pytest.raises(BodyTooLarge, match="more than 64 levels"):
        parse_json(b"[" * 100_000 + b"]" * 100_000)
    with pytest.raises(BodyTooLarge):
        parse_json(b'{"a":' * 1000 + b"1" + b"}" * 1000)


def test_a_body_at_the_limit_is_read_and_brackets_in_strings_do_not_count() -> None:
    deep = "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH
    assert parse_json(deep) is not None
    tricky = '{"a": "' + "[" * 500 + '\\" {{{{ ", "b": [1, {"c": "]]]]"}]}'
    assert parse_json(tricky)["b"][1]["c"] == "]]]]"


def test_bad_json_is_invalid_input_not_a_crash() -> None:
    with pytest.raises(InvalidInput, match="not valid JSON"):
        parse_json(b"{nope")
    request = post_json(b"[1, 2]")
    with pytest.raises(InvalidInput, match="must be a JSON object"):
        json_object(request)


@override_settings(DATA_UPLOAD_MAX_MEMORY_SIZE=1000)
def test_a_body_over_the_upload_limit_is_413_for_the_api_and_for_pages() -> None:
    body = b'{"value": "' + b"x" * 2000 + b'"}'
    with pytest.raises(BodyTooLarge, match="too large"):
        json_object(post_json(body))

    @api_view
    def api(request: HttpRequest) -> dict[str, Any]:
        return json_object(request)

    @page_view
    def page(request: HttpRequest) -> HttpResponse:
        raise RequestDataTooBig("too big")

    answer = api(post_json(body))
    assert answer.status_code == 413
    assert b'"too_large"' in answer.content
    assert b"at most" in answer.content
    page_answer = page(post_json(body))
    assert page_answer.status_code == 413
    assert b"too large" in page_answer.content


def test_a_recursion_error_in_a_view_is_an_answer_not_a_500() -> None:
    @api_view
    def api(request: HttpRequest) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    answer = api(post_json(b"{}"))
    assert answer.status_code == 413
    assert b"nested too deeply" in answer.content


# ---------------------------------------------------------------- whole numbers


@pytest.mark.parametrize(
    ("name", "raw", "message"),
    [
        ("partition", str(2**31), "at most 2147483647"),
        ("partition", str(-(2**31) - 1), "at least"),
        ("offset", str(2**63), "at most 9223372036854775807"),
        ("offset", "9" * 5000, "whole number between"),
        ("limit", "1e5", "whole number"),
        ("limit", "²", "whole number"),
    ],
)
def test_int_params_fit_what_kafka_carries(name: str, raw: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        int_param({name: raw}, name)


def test_int_params_in_range_and_the_callers_own_bounds() -> None:
    assert int_param({"partition": str(INT32_MAX)}, "partition") == INT32_MAX
    assert int_param({"offset": str(INT64_MAX)}, "offset") == INT64_MAX
    assert int_param({"offset": "-5"}, "offset") == -5
    with pytest.raises(InvalidInput, match="at most 10"):
        int_param({"limit": "11"}, "limit", maximum=10)


@pytest.mark.parametrize(
    ("path", "kwarg", "value"),
    [
        ("/clusters/local/topics/t/partitions/2147483647/", "partition", INT32_MAX),
        ("/clusters/local/topics/t/partitions/0/offsets/9223372036854775807/", "offset", INT64_MAX),
        ("/api/jobs/9223372036854775807/", "job_id", INT64_MAX),
    ],
)
def test_path_numbers_within_range_resolve(path: str, kwarg: str, value: int) -> None:
    assert resolve(path).kwargs[kwarg] == value


@pytest.mark.parametrize(
    "path",
    [
        "/clusters/local/topics/t/partitions/2147483648/",
        "/clusters/local/topics/t/partitions/99999999999999999999999999/",
        "/clusters/local/topics/t/partitions/0/offsets/9223372036854775808/",
        "/clusters/local/brokers/4294967296/configs/",
        "/api/jobs/9223372036854775808/",
        "/api/clusters/local/connectors/c/n/tasks/2147483648/restart/",
    ],
)
def test_path_numbers_out_of_range_match_no_route(path: str) -> None:
    with pytest.raises(Resolver404):
        resolve(path)


# ---------------------------------------------------------------- times


@pytest.mark.parametrize(
    ("raw", "message"),
    [
        ("99999999999999999999", "at most 9223372036854775807"),
        ("9223372036854775808", "at most"),
        ("-1", "must not be negative"),
        ("0001-01-01", "before 1970"),
        ("1969-12-31T23:59:59Z", "before 1970"),
        ("٣", "epoch milliseconds or a date"),
        ("²", "epoch milliseconds or a date"),
    ],
)
def test_times_outside_kafkas_range_are_refused(raw: str, message: str) -> None:
    with pytest.raises(InvalidInput, match=message):
        parse_time(raw, "timestamp")


def test_times_inside_the_range() -> None:
    assert parse_time("0") == 0
    assert parse_time(str(INT64_MAX)) == INT64_MAX
    assert parse_time("1970-01-01T00:00:00.001Z") == 1
    assert parse_time("2026-11-01T12:30:00Z") == 1_793_536_200_000
    assert as_datetime(0).year == 1970
    assert as_datetime(parse_time("9999-12-31T23:59:59Z")).year == 9999
    with pytest.raises(InvalidInput, match="up to year 9999"):
        as_datetime(INT64_MAX, "since")


# ---------------------------------------------------------------- CSV


def test_formula_cells_get_a_leading_quote_and_numbers_stay() -> None:
    out = io.StringIO()
    writer = spreadsheet.writer(out)
    writer.writerow(["=HYPERLINK(1)", "+1+1", "-2+3", "@SUM(A1)", "\tx", "\rx", "plain", -4, "-4", "+1.5e3", 7])
    assert next(csv.reader(io.StringIO(out.getvalue()))) == [
        "'=HYPERLINK(1)",
        "'+1+1",
        "'-2+3",
        "'@SUM(A1)",
        "'\tx",
        "'\rx",
        "plain",
        "-4",
        "-4",
        "+1.5e3",
        "7",
    ]
    out = io.StringIO()
    dict_writer = spreadsheet.DictWriter(out, fieldnames=["group", "lag"], extrasaction="ignore")
    dict_writer.writeheader()
    dict_writer.writerows([{"group": "=cmd|' /C calc'!A0", "lag": 3, "other": "=x"}])
    assert list(csv.reader(io.StringIO(out.getvalue()))) == [["group", "lag"], ["'=cmd|' /C calc'!A0", "3"]]


def test_acl_csv_escapes_formulas_and_imports_them_back_as_they_were() -> None:
    bindings = [
        AclBinding("GROUP", "=HYPERLINK(evil)", "LITERAL", "User:@admin", "*", "READ", "ALLOW"),
        AclBinding("TOPIC", "-orders", "PREFIXED", "User:bob", "*", "WRITE", "ALLOW"),
        AclBinding("GROUP", "'quoted", "LITERAL", "User:bob", "*", "READ", "ALLOW"),
    ]
    text = acls.to_csv(bindings)
    cells = [c for row in csv.reader(io.StringIO(text)) for c in row]
    assert not [c for c in cells if c.startswith(("=", "+", "-", "@"))], cells
    assert "'=HYPERLINK(evil)" in cells
    assert "'-orders" in cells
    assert "''quoted" in cells
    assert sorted(acls.from_csv(text)) == sorted(bindings)


# ---------------------------------------------------------------- analytics jobs


@pytest.mark.parametrize("topic", ["bad topic", "../etc", "a" * 250, "ünïcode", ".."])
def test_an_analytics_job_refuses_names_kafka_would_refuse(topic: str) -> None:
    with pytest.raises(InvalidInput, match="is not a topic name"):
        check_job_request({"report": "pv_uu", "topics": [topic]})


def test_an_analytics_job_checks_its_numbers() -> None:
    spec = check_job_request({"report": "pv_uu", "topics": ["page-views"], "from": 0})
    assert spec.topics == ("page-views",)
    with pytest.raises(InvalidInput, match="at most"):
        check_job_request({"report": "pv_uu", "topics": ["page-views"], "from": 2**64})
    with pytest.raises(InvalidInput, match="top_n"):
        check_job_request({"report": "pv_uu", "topics": ["page-views"], "top_n": float("inf")})
    with pytest.raises(InvalidInput, match="partition must be at most"):
        check_offsets({"offsets": {"page-views": {str(2**31): [0, None]}}}, spec)
    with pytest.raises(InvalidInput, match="start offset must be at most"):
        check_offsets({"offsets": {"page-views": {"0": [2**63, None]}}}, spec)
