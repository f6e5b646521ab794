"""Numbers for people (console/present/units.py): durations and sizes exact, Kafka's no-limit values said so, a
config value read by its name's unit, and the raw value kept on hover by the template tag."""

from __future__ import annotations

import pytest
from django.template import Context, Template

from console.present.units import config_value, duration, size


@pytest.mark.parametrize(
    ("ms", "shown"),
    [
        (0, "0 ms"),
        (250, "250 ms"),
        (1000, "1 s"),
        (1500, "1.5 s"),
        (60_000, "1 min"),
        (90_000, "1 min 30 s"),
        (5_400_000, "1 h 30 min"),
        (604_800_000, "7 d"),
        (2_592_000_000, "30 d"),
        (86_400_000 + 3_600_000, "1 d 1 h"),
        (86_400_000 + 1, "86,400,001 ms"),
        (300_000, "5 min"),
    ],
)
def test_durations(ms: int, shown: str) -> None:
    assert duration(ms) == shown


@pytest.mark.parametrize(
    ("n", "shown"),
    [
        (0, "0 B"),
        (1023, "1,023 B"),
        (1024, "1 KiB"),
        (104_857_600, "100 MiB"),
        (1_073_741_824, "1 GiB"),
        (1_048_588, "1.00 MiB"),
        (1_049_600, "1,025 KiB"),
        (1_500_000, "1.43 MiB"),
    ],
)
def test_sizes(n: int, shown: str) -> None:
    assert size(n) == shown


@pytest.mark.parametrize(
    ("name", "value", "shown"),
    [
        ("retention.ms", "604800000", "7 d"),
        ("retention.ms", "-1", "unlimited"),
        ("retention.bytes", "-1", "unlimited"),
        ("local.retention.ms", "-2", "as retention.ms"),
        ("log.local.retention.bytes", "-2", "as log.retention.bytes"),
        ("log.retention.bytes", "-1", "unlimited"),
        ("segment.bytes", "1073741824", "1 GiB"),
        ("max.message.bytes", "1048588", "1.00 MiB"),
        ("log.cleaner.delete.retention.ms", "86400000", "1 d"),
        ("max.compaction.lag.ms", "9223372036854775807", "unlimited"),
        ("producer_byte_rate", "1048576", "1 MiB/s"),
        ("leader.replication.throttled.rate", "10000000", "10,000,000"),
        ("min.insync.replicas", "2", None),
        ("cleanup.policy", "delete", None),
        ("message.timestamp.type", "CreateTime", None),
        ("max.connections", "2147483647", "unlimited"),
        ("file.delete.delay.ms", "60000", "1 min"),
        ("segment.ms", "-5", None),
        ("retention.ms", None, None),
    ],
)
def test_config_values(name: str, value: str | None, shown: str | None) -> None:
    assert config_value(name, value) == shown


def test_the_tag_keeps_the_raw_value_on_hover() -> None:
    html = Template("{% load kazami %}{% config_value n v %}").render(Context({"n": "retention.ms", "v": "604800000"}))
    assert html == '<span class="mono" title="604800000" data-raw="604800000">7 d</span>'
    plain = Template("{% load kazami %}{% config_value n v %}").render(Context({"n": "cleanup.policy", "v": "<x>"}))
    assert plain == '<span class="mono">&lt;x&gt;</span>'


def test_parameters_and_offsets_read_as_json_not_python() -> None:
    render = Template("{% load kazami %}{{ v|as_text }}").render
    assert (
        render(Context({"v": {"filename": "/tmp/a", "n": 1}}))
        == "{&quot;filename&quot;: &quot;/tmp/a&quot;, &quot;n&quot;: 1}"
    )
    assert render(Context({"v": ["a", "b"]})) == "[&quot;a&quot;, &quot;b&quot;]"
    assert render(Context({"v": True})) == "true"
    assert render(Context({"v": None})) == "null"
    assert render(Context({"v": "text as is"})) == "text as is"
    assert render(Context({"v": 42})) == "42"
