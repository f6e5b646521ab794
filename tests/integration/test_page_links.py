"""The links every page draws from addresses worked out once (the sections of the navigation, per cluster; the
partition picker of a page of messages, from partition 0's address): each leads where it says, for a topic
whose name needs no quoting and for one with dots, dashes and underscores."""

from __future__ import annotations

import re

import pytest

from broker.local import launcher
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


def hrefs(html: str, nav_label: str) -> list[tuple[str, str]]:
    """(address, text) of the links inside the <nav aria-label=...> of ``html``."""
    nav = re.search(rf'<nav[^>]*aria-label="{nav_label}"[^>]*>(.*?)</nav>', html, re.S)
    assert nav is not None, nav_label
    return re.findall(r'<a href="([^"]+)"[^>]*>([^<]+)</a>', nav.group(1))


def test_the_partition_picker_and_the_sections_lead_where_they_say(kafka_cluster: launcher.ClusterLayout) -> None:
    client = logged_in("viewer")
    for topic in (unique("links"), unique("links.with-dots_and-more")):
        create_topic(topic, partitions=3, replication=1)
        produce(topic, [(None, b"v%d" % i) for i in range(3)], partition=1)
        page = client.get(f"/clusters/local/topics/{topic}/partitions/1/")
        assert page.status_code == 200
        picked = hrefs(page.content.decode(), "Partitions")
        assert [text for _, text in picked] == ["0", "1", "2"]
        for href, text in picked:
            assert href == f"/clusters/local/topics/{topic}/partitions/{text}/"
            shown = client.get(href)
            assert shown.status_code == 200
            assert f"<h1>Partition {text} " in shown.content.decode()
    sections = hrefs(page.content.decode(), "Sections")
    assert ("/clusters/local/topics/", "Topics") in sections
    assert len(sections) >= 8
    for href, title in sections:
        # The users page and the audit log are one for every cluster.
        assert href.startswith("/clusters/local/") or href == "/audit/", (href, title)
        answer = client.get(href)
        # 503: a section whose service is not running for this test (Connect, the registry) says so.
        assert answer.status_code in (200, 503), (href, answer.status_code)
        assert "<title>" in answer.content.decode(), href
