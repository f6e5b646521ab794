"""``python -m broker.demo seed [--bootstrap-servers ...]``: the demo data of ``make run``."""

from __future__ import annotations

import argparse
import os
import sys

from broker.demo.seed import seed
from broker.errors import KazamiError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.demo", description="Demo workloads for a Kafka cluster.")
    sub = parser.add_subparsers(dest="command", required=True)
    cmd = sub.add_parser("seed", help="create the demo topics and fill them (once)")
    cmd.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"),
    )
    tasks = sub.add_parser("tasks", help="the task-queue demo: lag grows, then a second worker drains it")
    tasks.add_argument(
        "--bootstrap-servers",
        default=os.environ.get("KAFKA_BOOTSTRAP_SERVERS", "127.0.0.1:9092,127.0.0.1:9093,127.0.0.1:9094"),
    )
    tasks.add_argument(
        "--second-after",
        type=float,
        default=None,
        help="start a second worker after this many seconds (default: never)",
    )
    tasks.add_argument("--duration", type=float, default=0, help="stop after this many seconds (default: run on)")
    args = parser.parse_args(argv)
    try:
        if args.command == "tasks":
            from broker.demo.tasks import run

            run(args.bootstrap_servers.split(","), args.second_after, args.duration)
            return 0
        seed(args.bootstrap_servers)
    except KazamiError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
