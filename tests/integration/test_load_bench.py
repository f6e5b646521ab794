"""The load benchmark (bench/bench_load.py) runs, small, against the test cluster: a real console with a
viewer's session, websockets on every kind of live view, and an open-loop mix of pages and API calls.
Speed is the benchmark's business: nothing here asserts a timing."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bench import bench_load
from broker.local import launcher
from tests.conftest import BOOTSTRAP

pytestmark = [
    pytest.mark.kafka,
    pytest.mark.zookeeper("the console's load benchmark does not depend on the cluster's mode: run once"),
]


def run_small(cluster: launcher.ClusterLayout) -> dict[str, Any]:
    return bench_load.run(
        bootstrap=BOOTSTRAP,
        zookeeper=cluster.zookeeper_connect,
        clients=20,
        rate=10,
        duration=5,
        reference=3,
        live_interval=0.5,
        messages_per_partition=500,
        write=False,
    )


def test_the_load_benchmark_runs_without_errors(kafka_cluster: launcher.ClusterLayout) -> None:
    # In a thread of its own: the browser tests' Playwright may hold an event loop in this one.
    with ThreadPoolExecutor(max_workers=1) as pool:
        result = pool.submit(run_small, kafka_cluster).result()

    for phase in ("reference_http_without_websockets", "console_http_with_websockets"):
        figures = result[phase]
        assert figures["errors"] == 0, figures["errors_by_kind"]
        assert (
            figures["requests"] == {"reference_http_without_websockets": 30, "console_http_with_websockets": 50}[phase]
        )
        assert set(figures) >= {"answered_per_s", "p50_ms", "p95_ms", "p99_ms", "max_ms", "errors_by_kind"}

    from console.serve import default_workers

    assert result["console_workers"] == default_workers()  # served as `make run` serves it
    sockets = result["console_websockets"]
    assert sockets["clients"] == 20
    assert sockets["errors"] == 0, sockets["errors_by_kind"]
    assert sockets["disconnects"] == 0, sockets["close_codes"]
    assert sockets["first_fragment"] == 20  # every client got its first fragment ...
    assert sockets["with_pushes"] == 20  # ... and at least one push after it
    assert set(sockets["by_view"]) == {"overview", "groups", "group", "tail"}

    assert set(result["console_rss_mb"]) >= {"start", "end", "max", "second_half_slope_mb_per_min"}
    assert result["console_rss_mb"]["max"] >= result["console_rss_mb"]["start"] > 0
    assert set(result["console_cpu"]["with_websockets"]) == {
        "console_pct_of_one_core",
        "load_generator_pct_of_one_core",
        "machine_pct_of_all_cores",
    }
    assert {"ratio_p50_with_to_without_websockets", "ratio_p99_with_to_without_websockets"} <= set(result)
