"""The lag sampler against the real cluster: history stored, one sampler among several processes, pruning."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.test import Client
from django.utils import timezone

from broker.local import launcher
from console.background import lag_sampler
from console.models import LagSample
from console.present.lag import history_series
from tests.conftest import logged_in
from tests.integration.kafka_helpers import create_topic, produce, unique
from tests.integration.test_groups import commit

pytestmark = [pytest.mark.kafka, pytest.mark.django_db]


@pytest.fixture
def client(kafka_cluster: launcher.ClusterLayout, clusters_reset: None) -> Client:
    return logged_in()


def test_only_one_process_holds_the_sampler_lease_until_it_expires() -> None:
    from console.models import Lease

    Lease.objects.all().delete()
    now = timezone.now()
    assert lag_sampler.acquire_lease("console-a", seconds=30, now=now) is True
    assert lag_sampler.acquire_lease("console-b", seconds=30, now=now + timedelta(seconds=5)) is False
    assert lag_sampler.acquire_lease("console-a", seconds=30, now=now + timedelta(seconds=10)) is True  # renewed
    assert lag_sampler.acquire_lease("console-b", seconds=30, now=now + timedelta(seconds=35)) is False
    assert lag_sampler.acquire_lease("console-b", seconds=30, now=now + timedelta(seconds=41)) is True  # a died
    assert lag_sampler.acquire_lease("console-a", seconds=30, now=now + timedelta(seconds=45)) is False


def test_the_sampler_stores_lag_per_group_and_partition_and_prunes_old_samples(client: Client, settings) -> None:
    name = create_topic(unique("hist"), partitions=2)
    produce(name, [(None, b"x")] * 6, partition=0)
    group = unique("g-hist")
    commit(group, {(name, 0): 1, (name, 1): 0})
    first = timezone.now() - timedelta(minutes=2)
    lag_sampler.sample_once(now=first)
    produce(name, [(None, b"x")] * 4, partition=0)
    lag_sampler.sample_once(now=first + timedelta(seconds=10))
    rows = list(
        LagSample.objects.filter(cluster="local", group=group)
        .order_by("at", "partition")
        .values_list("partition", "committed", "log_end", "lag")
    )
    assert rows == [(0, 1, 6, 5), (1, 0, 0, 0), (0, 1, 10, 9), (1, 0, 0, 0)]
    series = history_series("local", group, "15m")
    assert series["total"] == [5, 9]
    assert series["partitions"][f"{name}-0"] == [5, 9]
    settings.KAZAMI_LAG_RETENTION_HOURS = 1
    LagSample.objects.filter(group=group).update(at=timezone.now() - timedelta(hours=2))
    lag_sampler.prune(timezone.now())
    assert not LagSample.objects.filter(group=group).exists()


def test_the_group_page_charts_the_history(client: Client) -> None:
    name = create_topic(unique("histpage"), partitions=1)
    produce(name, [(None, b"x")] * 3, partition=0)
    group = unique("g-histpage")
    commit(group, {(name, 0): 0})
    lag_sampler.sample_once(now=timezone.now() - timedelta(seconds=30))
    html = client.get(f"/clusters/local/groups/{group}/", {"range": "1h"}).content.decode()
    assert 'id="lag-history"' in html
    assert '"total": [3]' in html
    assert client.get(f"/clusters/local/groups/{group}/", {"range": "forever"}).status_code == 400
