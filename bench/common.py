"""What every benchmark shares: timing, percentiles, a cluster and a console of its own, result files."""

from __future__ import annotations

import json
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from console.devserver import running_console

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
# KAZAMI_BENCH_SLOT=N moves this run's clusters and files N steps away from the default ones, so two
# benchmarks can run side by side (each still measures against its reference in the same run).
SLOT = int(os.environ.get("KAZAMI_BENCH_SLOT", "0"))
BENCH_VAR = REPO / "var" / ("bench" if SLOT == 0 else f"bench-{SLOT}")

# Ports of the benchmark cluster: apart from `make run` (2181, 9092+) and the tests (12181, 19092+).
ZOOKEEPER_PORT = 13181 + 10 * SLOT
BASE_PORT = 13092 + 10 * SLOT


def percentile(samples: list[float], pct: float) -> float:
    """Nearest-rank percentile of ``samples`` (pct in 0..100)."""
    ordered = sorted(samples)
    rank = max(1, min(len(ordered), round(pct / 100 * len(ordered) + 0.5)))
    return ordered[rank - 1]


def summarize_ms(samples_s: list[float]) -> dict[str, float]:
    ms = [s * 1000 for s in samples_s]
    return {
        "n": len(ms),
        "p50_ms": round(percentile(ms, 50), 3),
        "p99_ms": round(percentile(ms, 99), 3),
        "mean_ms": round(statistics.fmean(ms), 3),
        "max_ms": round(max(ms), 3),
    }


def time_calls(fn: Callable[[], object], n: int, warmup: int = 5) -> list[float]:
    for _ in range(warmup):
        fn()
    samples = []
    for _ in range(n):
        started = time.perf_counter()
        fn()
        samples.append(time.perf_counter() - started)
    return samples


def machine() -> dict[str, Any]:
    return {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()}


def write_result(name: str, result: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    result = {
        "benchmark": name,
        "measured_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "machine": machine(),
        **result,
    }
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(result, indent=2) + "\n")
    return path


@contextmanager
def console_server(bootstrap: str) -> Iterator[str]:
    """A real console (Daphne) on a free port showing the cluster at ``bootstrap`` as `local`."""
    var = Path(tempfile.mkdtemp(prefix="kazami-bench-"))
    # The benchmarks only read: anonymous reading spares them a login. They measure one read against the
    # same read by a bare client, so nothing is kept between requests (KAZAMI_MAX_AGE=0); sharing reads
    # between requests is what the load benchmark measures.
    settings = {
        "KAFKA_BOOTSTRAP_SERVERS": bootstrap,
        "KAZAMI_CLUSTERS_FILE": "",
        "KAZAMI_ANONYMOUS_READ": "1",
        "KAZAMI_MAX_AGE": "0",
    }
    with running_console(var, settings) as url:
        yield url


def ratios(name: str, console: dict[str, float], reference: dict[str, float]) -> dict[str, float]:
    """``ratio_<name>_p50_to_bare_p50`` and the same for p99: console figure over the reference's."""
    return {
        f"ratio_{name}_p50_to_bare_p50": round(console["p50_ms"] / reference["p50_ms"], 2),
        f"ratio_{name}_p99_to_bare_p99": round(console["p99_ms"] / reference["p99_ms"], 2),
    }
