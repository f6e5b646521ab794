"""What an alert posts (plain JSON, Slack, Teams) and which targets it may be posted to, with no network beyond
name resolution of literal addresses."""

from __future__ import annotations

import json

import pytest

from broker.alerts.deliver import DeliveryFailed, body, check_target, send
from broker.errors import InvalidInput

ALERT = {
    "rule": "Lag of orders",
    "state": "firing",
    "severity": "critical",
    "cluster": "prod",
    "group": "orders-app",
    "value": 1200.0,
    "since": "2026-11-27T10:00:00+00:00",
    "link": "https://kazami.example.com/clusters/prod/groups/orders-app/",
    "text": "orders-app is 1,200 records behind (over 1,000)",
}


def test_the_three_formats() -> None:
    assert json.loads(body("json", ALERT)) == ALERT
    slack = json.loads(body("slack", ALERT))
    assert slack["text"].startswith("*[FIRING] Lag of orders on prod*\norders-app is 1,200 records behind")
    assert "<https://kazami.example.com/clusters/prod/groups/orders-app/|open in Kazami>" in slack["text"]
    teams = json.loads(body("teams", {**ALERT, "state": "resolved"}))
    assert teams["@type"] == "MessageCard"
    assert teams["title"] == "[RESOLVED] Lag of orders on prod"
    assert teams["themeColor"] == "2E7D32"
    assert teams["potentialAction"][0]["targets"][0]["uri"] == ALERT["link"]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.1:9/hook",
        "http://10.1.2.3/hook",
        "http://192.168.0.10/hook",
        "http://169.254.169.254/latest/meta-data/",  # a cloud's metadata service
        "http://[::1]:8080/",
        "http://0.0.0.0/",
    ],
)
def test_internal_targets_are_refused_unless_allowed(url: str) -> None:
    with pytest.raises(InvalidInput, match="internal address"):
        check_target(url)
    assert check_target(url, allow="all") == url


def test_loopback_may_be_allowed_alone() -> None:
    assert check_target("http://127.0.0.1:9/hook", allow="loopback") == "http://127.0.0.1:9/hook"
    with pytest.raises(InvalidInput, match="internal address"):
        check_target("http://10.1.2.3/hook", allow="loopback")


@pytest.mark.parametrize("url", ["", "ftp://example.com/", "file:///etc/passwd", "http:///nohost", 42, None])
def test_what_is_not_a_webhook_address(url: object) -> None:
    with pytest.raises(InvalidInput):
        check_target(url)


def test_a_refused_target_is_a_failed_delivery_not_a_request() -> None:
    with pytest.raises(DeliveryFailed, match="internal address"):
        send("http://10.0.0.1/hook", "json", ALERT)
