"""`make bench` / `python -m bench [name ...] [--clients N --rate R --duration S]`: run the benchmarks and
write bench/results/ (the options size the load benchmark)."""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import Any

from bench import (
    bench_analytics,
    bench_backfill,
    bench_copy,
    bench_failover,
    bench_groups,
    bench_idle,
    bench_load,
    bench_messages,
    bench_overview,
    bench_reports,
    bench_schema_decode,
    bench_search,
    bench_segments,
    bench_topics,
    bench_up,
)
from bench.bench_up import DATA
from bench.common import BASE_PORT, REPO, RESULTS, ZOOKEEPER_PORT

BENCHMARKS: dict[str, Callable[[], dict[str, Any]]] = {
    "cluster_up": bench_up.run,
    "overview_latency": bench_overview.run,
    "message_page": bench_messages.run,
    "topic_list": bench_topics.run,
    "group_lag": bench_groups.run,
    "load": bench_load.run,
    "backfill": bench_backfill.run,
    "analytics": bench_analytics.run,
    "segments_dump": bench_segments.run,
    "failover": bench_failover.run,
    "idle": bench_idle.run,
    "search": bench_search.run,
    "schema_decode": bench_schema_decode.run,
    "report_time": bench_reports.run,
    "copy": bench_copy.run,
}
# Benchmarks that start a cluster of their own: the shared one is not started for them (and load stops it,
# so that its brokers take no CPU from the load).
OWN_CLUSTER = {"cluster_up", "load", "failover", "idle"}
# Benchmarks that need no cluster at all (they write the files they read).
NO_CLUSTER = {"segments_dump", "schema_decode"}


def write_summary() -> None:
    lines = [
        "# Benchmark results",
        "",
        "Written by `make bench`; each figure is a ratio to a reference measured "
        "in the same run (see each benchmark's docstring in `bench/`).",
        "",
    ]
    shown = ("ratio_", "console_", "reference_", "groups_", "outputs_")
    for path in sorted(RESULTS.glob("*.json")):
        data: dict[str, Any] = json.loads(path.read_text())
        lines.append(f"## {data['benchmark']} ({data['measured_at']}, {data['machine']['cpus']} CPUs)")
        lines.append("")
        for key, value in data.items():
            if key.startswith(shown) or key.endswith(("_s", "_ms")):
                lines.append(f"- `{key}`: {json.dumps(value)}")
        lines.append("")
    (RESULTS / "summary.md").write_text("\n".join(lines))


def shared_cluster(command: str) -> None:
    subprocess.run(
        [sys.executable, "-m", "broker.local", "--data", str(DATA), command]
        # The benchmarks measure the brokers: no Connect worker or schema registry beside them.
        + (
            ["--no-connect", "--no-registry", "--zookeeper-port", str(ZOOKEEPER_PORT), "--base-port", str(BASE_PORT)]
            if command == "up"
            else []
        ),
        cwd=REPO,
        check=command == "up",
        capture_output=command == "down",
    )


def stop_cleanly(signum: int, frame: object) -> None:
    """SIGTERM (and SIGINT, which a shell's background job ignores) end a run as Ctrl-C does: the consoles and
    clusters it started are stopped on the way out."""
    raise KeyboardInterrupt


def main(argv: list[str]) -> int:
    signal.signal(signal.SIGTERM, stop_cleanly)
    signal.signal(signal.SIGINT, stop_cleanly)
    parser = argparse.ArgumentParser(prog="python -m bench", description="Run the benchmarks (all by default).")
    parser.add_argument("names", nargs="*", metavar="name", help=f"any of: {', '.join(BENCHMARKS)}")
    load = parser.add_argument_group("load benchmark")
    load.add_argument("--clients", type=int, default=bench_load.CLIENTS, help="websocket clients (%(default)s)")
    load.add_argument("--rate", type=float, default=bench_load.RATE, help="HTTP requests a second (%(default)s)")
    load.add_argument("--duration", type=float, default=bench_load.DURATION_S, help="seconds of load (%(default)s)")
    load.add_argument(
        "--reference", type=float, default=bench_load.REFERENCE_S, help="seconds of the reference (%(default)s)"
    )
    load.add_argument("--workers", type=int, default=None, help="console processes (KAZAMI_WORKERS, or one per core)")
    load.add_argument(
        "--live-interval", type=float, default=bench_load.LIVE_INTERVAL_S, help="KAZAMI_LIVE_INTERVAL (%(default)s)"
    )
    args = parser.parse_args(argv)
    chosen = args.names or list(BENCHMARKS)
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        print(f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(BENCHMARKS)}", file=sys.stderr)
        return 2

    def load_sized() -> dict[str, Any]:
        return bench_load.run(
            clients=args.clients,
            rate=args.rate,
            duration=args.duration,
            reference=args.reference,
            live_interval=args.live_interval,
            workers=args.workers,
        )

    benchmarks = {**BENCHMARKS, "load": load_sized}
    shared_up = False
    try:
        for name in chosen:
            if name not in OWN_CLUSTER | NO_CLUSTER and not shared_up:
                shared_cluster("up")
                shared_up = True
            elif name in ("load", "failover", "idle") and shared_up:
                shared_cluster("down")
                shared_up = False
            print(f"== {name}", flush=True)
            print(json.dumps(benchmarks[name](), indent=2), flush=True)
            shared_up = shared_up or name == "cluster_up"  # it leaves the shared cluster running
    finally:
        if any(name not in NO_CLUSTER for name in chosen):
            shared_cluster("down")
    write_summary()
    print(f"results in {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
