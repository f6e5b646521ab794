"""``python -m analytics``: fetch the connector jars, start or stop the warm Spark, or run one report from a
shell and print it as JSON.

    python -m analytics fetch-jars
    python -m analytics server up [--data var/spark-connect] [--port 15002] [--master local[*]] [--memory 1g]
    python -m analytics server down|status|remote [--data var/spark-connect]
    python -m analytics run pv_uu --topics page-views --bucket hour [--from ISO] [--to ISO]
        [--approximate] [--top-n 20] [--bootstrap-servers H:P,...] [--master local[*]]
        [--schema-registry URL] [--remote sc://host:port/;token=...]

``run`` needs no console: it reads a PLAINTEXT cluster, and the same command runs on a Spark
cluster with ``--master spark://host:7077``. Topics in a schema registry's wire format are read
decoded with the registry at ``--schema-registry`` (default: ``SCHEMA_REGISTRY_URL``).

``server up`` starts the Spark Connect server the console's jobs run in (analytics.server) and prints nothing
secret; ``server remote`` prints the address with its token, what ``KAZAMI_SPARK_REMOTE`` takes.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import uuid
from dataclasses import asdict
from pathlib import Path

from analytics.events import BUCKETS
from analytics.reports import REPORTS
from analytics.runner import JobSpec, check_spec, run_report
from analytics.spark import SparkSettings, connect_session, fetch_jars, start_session
from broker.client.config import ClusterConfig, split_servers
from broker.client.connection import ClusterConnection
from broker.errors import KazamiError
from broker.messages.ranges import get_ranges
from broker.times import parse_time


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m analytics", description="Spark reports over web events.")
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("fetch-jars", help="copy Spark's Kafka connector jars from Maven Central (once)")
    server = sub.add_parser("server", help="start, stop or show the warm Spark (a Spark Connect server)")
    server.add_argument("action", choices=["up", "down", "status", "remote"])
    server.add_argument("--data", default="var/spark-connect", help="its folder: state, token, log")
    server.add_argument("--port", type=int, default=15002, help="its port on 127.0.0.1 (the web UI: port + 1)")
    server.add_argument("--master", default=os.environ.get("KAZAMI_SPARK_MASTER", "local[*]"))
    server.add_argument("--memory", default=os.environ.get("KAZAMI_SPARK_DRIVER_MEMORY", "1g"))
    server.add_argument("--no-ui", action="store_true", help="no Spark web UI")
    run = sub.add_parser("run", help="run one report and print its result as JSON")
    run.add_argument("report", choices=list(REPORTS))
    run.add_argument("--topics", required=True, help="comma-separated topics")
    run.add_argument("--bucket", choices=list(BUCKETS), default="hour")
    run.add_argument("--from", dest="from_", default=None, help="ISO-8601 time or epoch ms (default: the start)")
    run.add_argument("--to", default=None, help="ISO-8601 time or epoch ms, excluded (default: now)")
    run.add_argument("--approximate", action="store_true", help="HyperLogLog unique users")
    run.add_argument("--top-n", type=int, default=20)
    run.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"),
    )
    run.add_argument("--master", default=os.environ.get("KAZAMI_SPARK_MASTER", "local[*]"))
    run.add_argument(
        "--remote",
        default=os.environ.get("KAZAMI_SPARK_REMOTE", ""),
        help="a Spark Connect server to run in (sc://host:port/;token=...) instead of a Spark of its own",
    )
    run.add_argument(
        "--schema-registry",
        default=os.environ.get("SCHEMA_REGISTRY_URL", ""),
        help="the Confluent-compatible base URL of the registry of topics in its wire format",
    )
    args = parser.parse_args(argv)
    try:
        if args.command == "fetch-jars":
            fetch_jars()
            return 0
        if args.command == "server":
            return _server(args)
        spec = JobSpec(
            report=args.report,
            topics=tuple(t for t in args.topics.split(",") if t),
            bucket=args.bucket,
            from_ms=parse_time(args.from_, "--from") if args.from_ else None,
            to_ms=parse_time(args.to, "--to") if args.to else None,
            approximate=args.approximate,
            top_n=args.top_n,
        )
        config = ClusterConfig(name="cli", bootstrap_servers=split_servers(args.bootstrap_servers), timeout=10)
        connection = ClusterConnection(config)
        ranges = get_ranges(connection, list(spec.topics), spec.from_ms, spec.to_ms)
        check_spec(spec, max_points=100_000, first_time_ms=ranges.first_time_ms)
        from analytics.formats import page_values, plan_formats
        from analytics.source import kafka_options
        from broker.schemas.registry import Registry, RegistryConfig

        url = args.schema_registry.strip().rstrip("/")
        registry = Registry(RegistryConfig(url=url)) if url else None
        formats = plan_formats(ranges, page_values(connection), registry)

        if args.remote:
            spark = connect_session(args.remote)
        else:
            spark = start_session(SparkSettings(master=args.master, app_name=f"kazami {spec.report}"))
        with tempfile.TemporaryDirectory() as scratch:
            kafka = kafka_options(config, Path(scratch))
            result = run_report(spark, spec, kafka, ranges, uuid.uuid4().hex, formats=formats)
        print(json.dumps(asdict(result), indent=2))
    except KazamiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


def _server(args: argparse.Namespace) -> int:
    from analytics import server

    if args.action == "up":
        settings = SparkSettings(
            master=args.master,
            driver_memory=args.memory,
            ui=not args.no_ui,
            app_name="Kazami Spark Connect",
            driver_host=os.environ.get("KAZAMI_SPARK_DRIVER_HOST", ""),
        )
        server.start(args.data, port=args.port, settings=settings)
    elif args.action == "down":
        if not server.stop(args.data):
            print("No Spark Connect server was running.")
    elif args.action == "status":
        print(json.dumps(server.status(args.data), indent=2))
    else:
        state = server.ServerState.load(Path(args.data).resolve())
        if state is None:
            print(f"error: no Spark Connect server was started in {args.data}", file=sys.stderr)
            return 2
        print(state.remote(Path(args.data).resolve()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
